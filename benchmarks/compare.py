"""The comparison table: learned policies versus heuristics on the benchmark protocol.

Usage::

    python benchmarks/compare.py --evaluate-only [--json results.json] [--rst docs/results.rst]
        [--models models] [--traces DIR] [--groups protocol,generalisation,hetero]
        [--backend auto|processes|serial|ray] [--max-parallel 2] [--outdir DIR]
    python benchmarks/compare.py            # first trains the missing models of MODEL_COMMANDS (hours)

Rows (:func:`rows`): the 4 protocol rows (Lublin-1 and SDSC-SP2, without and with EASY
backfilling), the generalisation rows (CTC-SP2 and KTH-SP2 at the test start indices, with the
models trained on SDSC-SP2) and the heterogeneous rows (``policy_pair`` on platforms/hetero.json,
objectives average bounded slowdown and energy in MJ). Columns: the queue heuristics under both
decision semantics, RLScheduler's published values, one column per learner with a model in
``--models`` (greedy evaluation; a new learner's model appears as a new column), the best
heuristic, the targets and the utilisation (a table of its own). All protocol settings come from
:mod:`benchmarks.protocol`. The Markdown tables are printed, ``--rst`` writes them as list-tables
and ``--json`` writes ``{"row name": {"column name": value}}``.

Every cell is evaluated once as a run of ``hdrm sweep``'s machinery
(:class:`benchmarks.evaluation.EvalRun`): ``--backend`` and ``--max-parallel`` as there (``auto``:
worker processes, or this process with ``--max-parallel 1``); ``--outdir`` keeps the finished
evaluations, so rerunning the command resumes an interrupted evaluation.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import evaluation, protocol, tables  # noqa: E402
from benchmarks.evaluation import EvalRun, Execution, run_evaluations  # noqa: E402
from benchmarks.protocol import Score  # noqa: E402
from hdrm.errors import ConfigError, HdrmError  # noqa: E402
from hdrm.policies.pairs import ALL_PAIRS, PAIR_JOB_SELECTIONS  # noqa: E402

GROUPS = ("protocol", "generalisation", "hetero")
BF_LABEL = {"none": "no backfilling", "easy": "EASY backfilling"}
TARGET_FACTOR = 0.95
_JOB_PICK = ["--backfill", "none", "--decision", "event", "--pick", "any", "--seed", "0"]
_FITTING = ["--backfill", "none", "--decision", "event", "--pick", "fitting", "--seed", "0"]
#: SDSC-SP2 warm start: imitate SJF with predicted run times and EASY (of the teachers tried,
#: WFP3-pred, UNICEP-pred and SJF-pred, the one whose models validated best), with the
#: observation that shows EASY's reservation under that order and the predicted run times, so
#: the teacher is expressible.
_SJF_PRED = ["--observation", "job_window_predicted", "--reservation", "sjf_pred", "--imitate",
             "sjf_pred", "--imitate-backfill", "easy"]
_HETERO = ["--mode", "policy_pair", "--platform", "platforms/hetero.json", "--trace", "sdsc",
           "--learner", "ppo", "--seed", "0"]
#: HDeepRM's six job selections and the three with predicted run times.
_PRED_SELECTIONS = ",".join(PAIR_JOB_SELECTIONS + protocol.PREDICTED_HEURISTICS)
_NINE_STARTS = ",".join(str(s) for s in protocol.trace_spec("sdsc").validation_starts)
#: The documented training commands of the shipped models (``compare.py`` without
#: ``--evaluate-only`` runs those whose model is missing and whose learner is registered).
MODEL_COMMANDS: dict[str, list[str]] = {
    "ppo-kernel_lublin_none_event.pt": ["--trace", "lublin", "--learner", "ppo", "--network",
                                        "kernel", *_JOB_PICK, "--minutes", "15"],
    "ppo-kernel_sdsc_none_event.pt": ["--trace", "sdsc", "--learner", "ppo", "--network", "kernel",
                                      *_JOB_PICK, *_SJF_PRED, "--imitate-episodes", "60",
                                      "--imitate-epochs", "15", "--agent-json", '{"lr": 3e-5}',
                                      "--window", "256", "--minutes", "0", "--max-steps", "300000"],
    "ppo-attention_lublin_none_event.pt": ["--trace", "lublin", "--learner", "ppo", "--network",
                                           "attention", *_JOB_PICK, "--minutes", "15"],
    "ppo-attention_sdsc_none_event.pt": ["--trace", "sdsc", "--learner", "ppo", "--network",
                                         "attention", *_JOB_PICK, *_SJF_PRED, "--imitate-episodes",
                                         "40", "--imitate-epochs", "3", "--agent-json",
                                         '{"lr": 3e-5}', "--minutes", "0", "--max-steps", "60000"],
    # DQN explores by uniform random valid actions: with pick "any" most of them would be waits,
    # so it chooses among the jobs that fit (work-conserving).
    "dqn_lublin_none_event.pt": ["--trace", "lublin", "--learner", "dqn", *_FITTING,
                                 "--minutes", "15"],
    "dqn_sdsc_none_event.pt": ["--trace", "sdsc", "--learner", "dqn", *_FITTING, "--minutes", "15"],
    # the bounded-slowdown model sees the queue's waiting times and is validated on nine
    # sequences (those of the SDSC-SP2 protocol rows; four gave a model that did worse on nine)
    "ppo_hetero_bsld.pt": [*_HETERO, "--objective", "avg_bounded_slowdown", "--observation",
                           "small_waits", "--minutes", "0", "--max-steps", "2500000",
                           "--validation-starts", _NINE_STARTS],
    # the same with the predicted-run-time pairs as actions too (54 pairs): its own column
    "ppo_hetero_bsld_pred.pt": [*_HETERO, "--objective", "avg_bounded_slowdown", "--observation",
                                "small_waits_predicted", "--job-selections", _PRED_SELECTIONS,
                                "--network", "mlp", "--minutes", "0", "--max-steps", "2000000",
                                "--validation-starts", _NINE_STARTS],
    # retrained under lock-step progress of parallel jobs (Batsim's ptask model), with the step
    # count of the earlier 12-minute run as a fixed budget, so a rerun gives the same model
    "ppo_hetero_energy.pt": [*_HETERO, "--objective", "energy_consumption", "--observation",
                             "small", "--minutes", "0", "--max-steps", "1807901"],
}


@dataclass(frozen=True)
class Row:
    """One row: where policies are evaluated and which models apply."""

    name: str
    group: str
    trace: str
    model_trace: str
    backfill: str = "none"
    objective: str = "avg_bounded_slowdown"


@dataclass(frozen=True)
class Context:
    """Where the inputs are and which sequences are evaluated."""

    traces: str
    cache: str
    starts: tuple[int, ...] = protocol.TEST_STARTS
    nb_jobs: int = protocol.SEQUENCE_JOBS


@dataclass(frozen=True)
class Model:
    """A model file and what its metadata says."""

    path: str
    column: str
    meta: dict[str, Any]

    @property
    def setting(self) -> dict[str, Any]:
        """The training setting (trace, backfill, decision, mode, objective, pick ...)."""
        return self.meta["setting"]


def rows(groups: tuple[str, ...] = GROUPS) -> list[Row]:
    """The rows of the requested groups, in table order."""
    out = []
    if "protocol" in groups:
        out += [Row(f"{protocol.TRACES[t].label}, {BF_LABEL[b]}", "protocol", t, t, b)
                for b in protocol.BACKFILLS for t in protocol.TRAINABLE]
    if "generalisation" in groups:
        out += [Row(f"{protocol.TRACES[t].label} (SDSC-SP2 models), {BF_LABEL[b]}",
                    "generalisation", t, "sdsc", b) for t in ("ctc", "kth") for b in protocol.BACKFILLS]
    if "hetero" in groups:
        unit = {"energy_consumption": " (MJ)"}
        out += [Row(f"hetero, SDSC-SP2 x{protocol.HETERO_LOAD_FACTOR:g} load, {o}{unit.get(o, '')}",
                    "hetero", "sdsc", "sdsc", "none", o) for o in protocol.HETERO_OBJECTIVES]
    return out


def heuristic_column(policy: str, decision: str) -> str:
    """``"SJF (event)"``; ``"SJF-pred (event)"`` for ``sjf_pred``."""
    base, _, pred = policy.partition("_")
    return f"{base.upper()}{'-' + pred if pred else ''} ({decision})"


#: The reference columns of the heuristics with predicted run times (not the targets' heuristics).
PREDICTED_COLUMNS = tuple(heuristic_column(p, "event") for p in protocol.PREDICTED_HEURISTICS)


# ---------------------------------------------------------------------------------- evaluation
def heuristic_run(ctx: Context, trace: str, backfill: str, decision: str, policy: str) -> EvalRun:
    """The evaluation of a queue heuristic over the test sequences of ``trace``."""
    return EvalRun("heuristic", policy, ctx.traces, ctx.cache, ctx.starts, ctx.nb_jobs, trace,
                   backfill, decision)


def pair_run(ctx: Context, pair: str) -> EvalRun:
    """The evaluation of a fixed policy pair over the heterogeneous test sequences."""
    return EvalRun("pair", pair, ctx.traces, ctx.cache, ctx.starts, ctx.nb_jobs)


def model_eval_run(ctx: Context, model: Model, row: Row) -> EvalRun:
    """The evaluation of a model's greedy policy over the row's test sequences."""
    return evaluation.model_run(model.path, ctx.traces, ctx.cache, ctx.starts, ctx.nb_jobs,
                                row.trace, row.backfill, row.group, row.objective)


def heuristic_score(ctx: Context, trace: str, backfill: str, decision: str, policy: str) -> Score:
    """Mean score of a queue heuristic over the test sequences of ``trace`` (in this process)."""
    return evaluation.evaluate(heuristic_run(ctx, trace, backfill, decision, policy))


def pair_score(ctx: Context, pair: str) -> Score:
    """Mean score of a fixed policy pair over the heterogeneous test sequences (in this process)."""
    return evaluation.evaluate(pair_run(ctx, pair))


def model_score(ctx: Context, model: Model, row: Row) -> Score:
    """Mean score of a model's greedy policy over the row's test sequences (in this process)."""
    return evaluation.evaluate(model_eval_run(ctx, model, row))


# ---------------------------------------------------------------------------------- models
def discover_models(models_dir: str | Path) -> list[Model]:
    """The benchmark models in ``models_dir`` (``*.pt`` written by ``benchmarks/train.py``).

    Models whose learner is not registered here are left out with a message on stderr.
    """
    from hdrm.agents import get_agent_class
    from hdrm.agents.checkpoint import read_checkpoint

    found = []
    for path in sorted(Path(models_dir).glob("*.pt")):
        meta = read_checkpoint(path)["options"]
        if not isinstance(meta, dict) or "setting" not in meta or "learner" not in meta:
            print(f"note: {path} has no benchmark metadata; skipped", file=sys.stderr)
            continue
        try:
            get_agent_class(meta["learner"], f"{path}: learner")
        except ConfigError as exc:
            print(f"note: skipped {path}: {exc}", file=sys.stderr)
            continue
        found.append(Model(str(path), learner_column(meta), meta))
    return found


def learner_column(meta: dict[str, Any]) -> str:
    """A model's column: ``"PPO-kernel (event)"``; a ``policy_pair`` learner given other pairs
    than HDeepRM's 36 gets its own column, ``"PPO-mlp, 54 pairs (event)"``."""
    setting = meta["setting"]
    pairs = ""
    if setting["mode"] == "policy_pair" and setting.get("job_selections"):
        pairs = f", {_pair_count(setting)} pairs"
    return f"{meta['label']}{pairs} ({setting['decision']})"


def _pair_count(setting: dict[str, Any]) -> int:
    """How many policy pairs a ``policy_pair`` setting's learner chooses among."""
    return len(protocol.hetero_pairs(setting.get("job_selections")))


def models_for(row: Row, models: list[Model]) -> dict[str, Model]:
    """The model of each learner column that applies to ``row`` (same backfilling preferred)."""
    chosen: dict[str, Model] = {}
    for model in models:
        st = model.setting
        if row.group == "hetero":
            fits = st["mode"] == "policy_pair" and st["objective"] == row.objective
        else:
            fits = st["mode"] == "job_pick" and st["trace"] == row.model_trace
        if not fits:
            continue
        old = chosen.get(model.column)
        if old is None or (old.setting["backfill"] != row.backfill
                           and st["backfill"] == row.backfill):
            chosen[model.column] = model
    return chosen


# ---------------------------------------------------------------------------------- table
def policy_tasks(row: Row, ctx: Context) -> dict[str, EvalRun]:
    """The fixed-policy columns of ``row`` and their evaluations."""
    if row.group == "hetero":
        return {pair: pair_run(ctx, pair) for pair in ALL_PAIRS + protocol.PREDICTED_PAIRS}
    tasks = {heuristic_column(p, d): heuristic_run(ctx, row.trace, row.backfill, d, p)
             for d in protocol.DECISIONS for p in protocol.HEURISTICS}
    tasks.update({heuristic_column(p, "event"): heuristic_run(ctx, row.trace, row.backfill,
                                                              "event", p)
                  for p in protocol.PREDICTED_HEURISTICS})
    return tasks


def build_table(row_list: list[Row], ctx: Context, models: list[Model],
                execution: Execution | int = Execution()
                ) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Evaluate everything; returns the table ``{row: {column: value}}`` and cell provenance notes.

    ``execution`` may be a number of worker processes (the former ``jobs`` argument).
    """
    if isinstance(execution, int):
        execution = Execution(max_parallel=execution)
    keys, runs = [], []
    for row in row_list:
        cells = dict(policy_tasks(row, ctx))
        cells.update({col: model_eval_run(ctx, m, row)
                      for col, m in models_for(row, models).items()})
        for col, run in cells.items():
            keys.append((row, col, len(runs)))  # hetero pairs are shared by both objectives:
            runs.append(run)                    # the same run, evaluated once
    scores = run_evaluations(runs, execution)
    table: dict[str, dict[str, Any]] = {}
    notes: dict[str, str] = {}
    for row, col, index in keys:
        table.setdefault(row.name, {})[col] = scores[index].value(row.objective)
        table.setdefault(f"{row.name} [utilisation]", {})[col] = scores[index].utilisation
    for row in row_list:
        for col, model in models_for(row, models).items():
            st = model.setting
            notes[f"{row.name} / {col}"] = (
                f"{Path(model.path).name} (trained on {protocol.TRACES[st['trace']].label}, "
                f"{BF_LABEL[st['backfill']]}, {st['mode']}, pick {st.get('pick', 'env')})")
        summarise(row, table[row.name], list(models_for(row, models)))
    return table, notes


def reference_columns(row: Row) -> tuple[str, ...]:
    """The row's predicted-run-time columns: reported, never among the targets' heuristics."""
    return protocol.PREDICTED_PAIRS if row.group == "hetero" else PREDICTED_COLUMNS


def summarise(row: Row, cells: dict[str, Any], learners: list[str]) -> None:
    """Add the published values, the best heuristic, the targets and whether they are met.

    The targets' heuristics are the issue's five (requested run times) on the protocol and
    generalisation rows, HDeepRM's 36 pairs on the heterogeneous rows; the best of the
    predicted-run-time columns (:func:`reference_columns`) is reported beside them, with whether
    the best learner beats it.
    """
    predicted = {c: cells[c] for c in reference_columns(row) if c in cells}
    fixed = {c: v for c, v in cells.items() if c not in learners and c not in predicted}
    if row.group == "protocol":
        for name, value in protocol.PUBLISHED[(row.trace, row.backfill)].items():
            cells[f"{name} (RLScheduler, published)"] = value
    best_col = min(fixed, key=fixed.get)
    cells["best heuristic"] = fixed[best_col]
    cells["best heuristic name"] = best_col
    if predicted:
        best_pred = min(predicted, key=predicted.get)
        cells["best predicted-time heuristic"] = predicted[best_pred]
        cells["best predicted-time heuristic name"] = best_pred
    if learners:
        best_learner = min(learners, key=lambda c: cells[c])
        cells["best learner"] = cells[best_learner]
        cells["best learner name"] = best_learner
        if predicted:
            cells["best learner beats predicted-time heuristics"] = bool(
                cells["best learner"] < predicted[best_pred])
    if row.group == "protocol":
        cells[f"target ({TARGET_FACTOR} x best heuristic)"] = TARGET_FACTOR * fixed[best_col]
        ppo = protocol.PUBLISHED[(row.trace, row.backfill)]["PPO"]
        if learners:
            cells["target met"] = bool(cells["best learner"] <= TARGET_FACTOR * fixed[best_col]
                                       and cells["best learner"] <= ppo)
    elif row.group == "hetero" and learners:
        cells["target met"] = bool(cells["best learner"] < fixed[best_col])


def training_rows(models: list[Model]) -> dict[str, dict[str, Any]]:
    """One row per model: its learner, setting and training figures."""
    out = {}
    for model in models:
        st, tr = model.setting, model.meta.get("training", {})
        out[f"training: {Path(model.path).name}"] = {
            "learner": model.column, "trained on": protocol.TRACES[st["trace"]].label,
            "backfilling": st["backfill"], "decision": st["decision"], "action mode": st["mode"],
            "pick": st.get("pick", "env"), "observation": _observation(st),
            "actions": _actions(st),
            "objective": st["objective"], "seed": st["seed"],
            "warm start": st.get("imitate") or "none",
            "wall time (min)": round(float(tr.get("wall_s", math.nan)) / 60, 1),
            "env steps": tr.get("env_steps"), "episodes": tr.get("episodes"),
            "best at (env steps)": tr.get("best_env_steps"),
            "best validation": tr.get("best_validation"), "command": tr.get("command", ""),
        }
    return out


def _actions(setting: dict[str, Any]) -> str:
    """What a setting's learner chooses: a job of its window, or one of its policy pairs."""
    if setting["mode"] != "policy_pair":
        return f"one of {setting.get('window') or protocol.WINDOW} queued jobs"
    extra = [j for j in setting.get("job_selections") or () if j not in PAIR_JOB_SELECTIONS]
    return f"{_pair_count(setting)} pairs" + (f" (with {', '.join(extra)})" if extra else "")


def _observation(setting: dict[str, Any]) -> str:
    """The observation of a setting, with the reservation order where it has one."""
    name = setting.get("observation") or "job_window"
    if name in ("job_window_reservation", "job_window_predicted"):
        return f"{name} ({setting.get('reservation', 'fcfs')})"
    return name


def train_missing(models_dir: Path, traces: str) -> None:
    """Train the documented models that are missing (long: see MODEL_COMMANDS)."""
    script = Path(__file__).resolve().parent / "train.py"
    for name, argv in MODEL_COMMANDS.items():
        out = models_dir / name
        if out.exists():
            continue
        cmd = [sys.executable, str(script), *argv, "--traces", traces, "--out", str(out)]
        print("training:", " ".join(cmd), flush=True)
        if subprocess.run(cmd, check=False, cwd=protocol.ROOT).returncode != 0:
            print(f"note: training {name} failed; its column stays empty", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--evaluate-only", action="store_true", help="use the shipped models only")
    p.add_argument("--json", help="write {row: {column: value}} to this file")
    p.add_argument("--rst", default=str(protocol.ROOT / "docs" / "results.rst"),
                   help="results page to write ('' for none)")
    p.add_argument("--models", default=str(protocol.MODELS_DIR))
    p.add_argument("--traces", default=str(protocol.DEFAULT_TRACES))
    p.add_argument("--cache", default=str(protocol.CACHE_DIR), help="derived workloads folder")
    p.add_argument("--max-parallel", "--jobs", dest="max_parallel", type=int, default=2,
                   help="evaluations at a time (--jobs: the former name)")
    p.add_argument("--backend", default="auto", choices=("auto", "ray", "processes", "serial"),
                   help="hdrm sweep's backend (auto: processes, or serial with --max-parallel 1)")
    p.add_argument("--outdir", help="keep finished evaluations here; a rerun resumes from them "
                   "(default: a temporary folder, no resume)")
    p.add_argument("--groups", default=",".join(GROUPS))
    p.add_argument("--starts", help="comma-separated start indices (default: the test ones)")
    p.add_argument("--nb-jobs", type=int, default=protocol.SEQUENCE_JOBS, help="jobs per sequence")
    a = p.parse_args(argv)
    groups = tuple(g.strip() for g in a.groups.split(",") if g.strip())
    try:
        bad = [g for g in groups if g not in GROUPS]
        if bad:
            raise ConfigError(f"--groups: unknown group {bad[0]!r}; choose among: {', '.join(GROUPS)}")
        starts = tuple(int(s) for s in a.starts.split(",")) if a.starts else protocol.TEST_STARTS
        if not a.evaluate_only:
            train_missing(Path(a.models), a.traces)
        ctx = Context(a.traces, a.cache, starts, a.nb_jobs)
        models = discover_models(a.models)
        row_list = rows(groups)
        table, notes = build_table(row_list, ctx, models,
                                   Execution(a.backend, a.max_parallel, a.outdir))
    except HdrmError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    table.update(training_rows(models))
    grouped = {g: [r.name for r in row_list if r.group == g] for g in GROUPS}
    parts = tables.sections(table, grouped)
    print("\n".join(tables.markdown(t, g) for t, g in parts))
    commands = {Path(m.path).name: m.meta.get("training", {}).get("command", "") for m in models}
    if a.rst:
        Path(a.rst).write_text(tables.rst(parts, notes, commands, tables.INTRO), encoding="utf-8")
    if a.json:
        Path(a.json).write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
