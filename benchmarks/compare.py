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
and ``--json`` writes ``{"row name": {"column name": value}}``. The models (their training
commands, how they are found, named and matched to rows) are :mod:`benchmarks.compare_models`,
whose names stay importable from here.

Every cell is evaluated once as a run of ``hdrm sweep``'s machinery
(:class:`benchmarks.evaluation.EvalRun`): ``--backend`` and ``--max-parallel`` as there (``auto``:
worker processes, or this process with ``--max-parallel 1``); ``--outdir`` keeps the finished
evaluations, so rerunning the command resumes an interrupted evaluation.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import evaluation, protocol, tables  # noqa: E402
from benchmarks.compare_models import (  # noqa: E402,F401 (importable from here, as before)
    MODEL_COMMANDS,
    Model,
    discover_models,
    learner_column,
    models_for,
    train_missing,
    training_rows,
)
from benchmarks.evaluation import EvalRun, Execution, run_evaluations  # noqa: E402
from benchmarks.protocol import Score  # noqa: E402
from hdrm.errors import ConfigError, HdrmError  # noqa: E402
from hdrm.policies.pairs import ALL_PAIRS  # noqa: E402

GROUPS = ("protocol", "generalisation", "hetero")
BF_LABEL = {"none": "no backfilling", "easy": "EASY backfilling"}
TARGET_FACTOR = 0.95


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
