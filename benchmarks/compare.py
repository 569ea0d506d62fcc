"""The comparison table: learned policies versus heuristics on the benchmark protocol.

Usage::

    python benchmarks/compare.py --evaluate-only [--json results.json] [--rst docs/results.rst]
        [--models models] [--traces DIR] [--groups protocol,generalisation,hetero]
        [--backend auto|processes|serial|ray] [--max-parallel 2] [--outdir DIR]
        [--extra-trace NAME=PATH[:PROCS] ...] [--allow-leaky]
    python benchmarks/compare.py     # first trains the missing seeds of MODEL_COMMANDS (hours)

Rows (:mod:`benchmarks.compare_rows`): the 4 protocol rows (Lublin-1 and SDSC-SP2, without and
with EASY backfilling, at RLScheduler's test windows), the generalisation rows (every shipped
trace and every ``--extra-trace``, at evenly spaced windows, with the models trained on the other
traces) and the heterogeneous rows (``policy_pair`` on platforms/hetero.json, objectives average
bounded slowdown and energy in MJ). Columns: the queue heuristics under both decision semantics
and with predicted run times, RLScheduler's published values, one column per learner (the mean
over its training seeds, its min-max beside it), the best heuristic, the flags and the targets
(:mod:`benchmarks.compare_summary`); each row also gets what the mean hides (p95 and max bounded
slowdown, max wait, makespan, utilisation, share of long waits). A model that records no
no-leakage rule, or that saw jobs of a row's windows, is refused in one line
(:mod:`benchmarks.protocol_rule`) unless ``--allow-leaky`` is given; then its column is marked
``[pre-rule]`` or ``[leaky]`` and never meets a target. All protocol settings come from
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

from benchmarks import cli_lists, evaluation, protocol, tables  # noqa: E402
from benchmarks.compare_models import (  # noqa: E402,F401 (importable from here, as before)
    MODEL_COMMANDS,
    Model,
    discover_models,
    learner_column,
    models_for,
    train_missing,
    training_rows,
)
from benchmarks.compare_rows import (  # noqa: E402,F401 (importable from here, as before)
    BF_LABEL,
    GROUPS,
    Row,
    parse_extra_trace,
    row_trace_file,
    rows,
)
from benchmarks.compare_summary import (  # noqa: E402,F401
    TAIL_METRICS,
    TARGET_FACTOR,
    seed_mean,
    spread_text,
    summarise,
)
from benchmarks.evaluation import EvalRun, Execution, run_evaluations  # noqa: E402
from benchmarks.protocol import Score  # noqa: E402
from benchmarks.protocol_rule import (  # noqa: E402
    LEAKY,
    check_evaluation,
    test_windows,
    traces_label,
)
from hdrm.durable import write_text_atomically  # noqa: E402
from hdrm.errors import ConfigError, HdrmError  # noqa: E402
from hdrm.policies.pairs import ALL_PAIRS  # noqa: E402
from hdrm.cli import script as cli  # noqa: E402


@dataclass(frozen=True)
class Context:
    """Where the inputs are and which sequences are evaluated."""

    traces: str
    cache: str
    starts: tuple[int, ...] = protocol.TEST_STARTS
    nb_jobs: int = protocol.SEQUENCE_JOBS
    allow_leaky: bool = False


def heuristic_column(policy: str, decision: str) -> str:
    """``"SJF (event)"``; ``"SJF-pred (event)"`` for ``sjf_pred``."""
    base, _, pred = policy.partition("_")
    return f"{base.upper()}{'-' + pred if pred else ''} ({decision})"


#: The columns of the heuristics with predicted run times (among the best heuristic's candidates).
PREDICTED_COLUMNS = tuple(heuristic_column(p, "event") for p in protocol.PREDICTED_HEURISTICS)


# ---------------------------------------------------------------------------------- evaluation
def heuristic_run(ctx: Context, trace: str, backfill: str, decision: str, policy: str,
                  row: Row | None = None) -> EvalRun:
    """The evaluation of a queue heuristic over the test sequences of ``trace`` (or over the
    windows of a generalisation ``row``)."""
    if row is not None and row.trace_file:
        return EvalRun("heuristic", policy, ctx.traces, ctx.cache, row.starts, ctx.nb_jobs,
                       trace, backfill, decision, trace_file=row.trace_file, procs=row.procs)
    return EvalRun("heuristic", policy, ctx.traces, ctx.cache, ctx.starts, ctx.nb_jobs, trace,
                   backfill, decision)


def row_starts(ctx: Context, row: Row) -> tuple[int, ...]:
    """The start indices of ``row``'s sequences: its own windows, else the context's."""
    return row.starts or ctx.starts


def pair_run(ctx: Context, pair: str) -> EvalRun:
    """The evaluation of a fixed policy pair over the heterogeneous test sequences."""
    return EvalRun("pair", pair, ctx.traces, ctx.cache, ctx.starts, ctx.nb_jobs)


def model_eval_run(ctx: Context, model: Model, row: Row) -> EvalRun:
    """The evaluation of a model's greedy policy over the row's test sequences.

    An ``event``-driven ``job_pick`` learner only starts jobs that fit, so backfilling never acts
    on its schedule (nor on what it observes): it is evaluated once per trace, without
    backfilling, and that run fills both backfilling rows (:func:`evaluation.model_backfill`).
    A ``commit`` learner runs with the row's backfilling (only rows of its own backfilling take
    it: :func:`benchmarks.compare_models.models_for`).
    """
    st = model.setting
    return evaluation.model_run(model.path, ctx.traces, ctx.cache, row_starts(ctx, row),
                                ctx.nb_jobs, row.trace, evaluation.model_backfill(st, row.backfill),
                                row.group, row.objective, row.trace_file, row.procs,
                                ctx.allow_leaky, st["decision"])


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
    tasks = {heuristic_column(p, d): heuristic_run(ctx, row.trace, row.backfill, d, p, row)
             for d in protocol.DECISIONS for p in protocol.HEURISTICS}
    tasks.update({heuristic_column(p, "event"): heuristic_run(ctx, row.trace, row.backfill,
                                                              "event", p, row)
                  for p in protocol.PREDICTED_HEURISTICS})
    return tasks


def model_cells(row: Row, ctx: Context, models: list[Model]
                ) -> dict[str, tuple[list[Model], list[EvalRun]]]:
    """The learner columns of ``row``: their models (one per seed) and evaluations.

    Raises:
        ConfigError: a model records no no-leakage rule or saw jobs of the row's windows
            (without ``ctx.allow_leaky``; one line naming the model file and the overlap).
    """
    windows = test_windows(row_starts(ctx, row), ctx.nb_jobs)
    trace_file = row_trace_file(row, ctx.traces)
    out: dict[str, tuple[list[Model], list[EvalRun]]] = {}
    for col, group in models_for(row, models).items():
        marks = {check_evaluation(m.path, m.meta, trace_file, windows, ctx.allow_leaky)
                 for m in group}
        name = f"{col} [{LEAKY}]" if LEAKY in marks else col
        out[name] = (group, [model_eval_run(ctx, m, row) for m in group])
    return out


def build_table(row_list: list[Row], ctx: Context, models: list[Model],
                execution: Execution | int = Execution()
                ) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Evaluate everything; returns the table ``{row: {column: value}}`` and cell provenance notes.

    ``execution`` may be a number of worker processes (the former ``jobs`` argument). Besides
    ``{row}``, each row has ``{row} [metric]`` lines for the metrics of :data:`TAIL_METRICS`.
    """
    if isinstance(execution, int):
        execution = Execution(max_parallel=execution)
    plan: list[tuple[Row, dict[str, EvalRun], dict[str, tuple[list[Model], list[EvalRun]]]]] = []
    runs: list[EvalRun] = []
    for row in row_list:
        fixed, learned = policy_tasks(row, ctx), model_cells(row, ctx, models)
        plan.append((row, fixed, learned))
        runs += list(fixed.values()) + [r for _, rs in learned.values() for r in rs]
    scores = dict(zip([r.name for r in runs], run_evaluations(runs, execution)))
    table: dict[str, dict[str, Any]] = {}
    notes: dict[str, str] = {}
    for row, fixed, learned in plan:
        cells = {col: scores[run.name] for col, run in fixed.items()}
        per_seed = {col: [scores[r.name] for r in rs] for col, (_, rs) in learned.items()}
        cells.update({col: seed_mean(values) for col, values in per_seed.items()})
        fill_row(table, row, cells, per_seed)
        notes.update({f"{row.name} / {col}": model_note(group)
                      for col, (group, _) in learned.items()})
    return table, notes


def model_note(group: list[Model]) -> str:
    """Which model files gave a learner cell, and their training setting."""
    st = group[0].setting
    files = ", ".join(Path(m.path).name for m in group)
    return (f"{files} (trained on {traces_label(st['trace'])}, "
            f"{BF_LABEL[st['backfill']]}, {st['mode']}, pick {st.get('pick', 'env')})")


def fill_row(table: dict[str, dict[str, Any]], row: Row, cells: dict[str, Score],
             per_seed: dict[str, list[Score]]) -> None:
    """Write a row's values (a learner's mean over seeds, its min-max beside it), its tail
    lines (a learner's mean over seeds) and its summary cells into ``table``; flags look at a
    learner's worst seed."""
    main: dict[str, Any] = {}
    for col, score in cells.items():
        main[col] = score.value(row.objective)
        if col in per_seed:
            main[f"{col} [min-max]"] = spread_text([s.value(row.objective) for s in per_seed[col]])
    tail = {metric: {col: getattr(sc, metric) for col, sc in cells.items()}
            for metric in TAIL_METRICS}
    table[row.name] = main
    for metric, values in tail.items():
        table[f"{row.name} [{metric}]"] = dict(values)
    learners = list(per_seed)
    eligible = [c for c in learners if "[pre-rule]" not in c and f"[{LEAKY}]" not in c]
    seeds = {col: len(values) for col, values in per_seed.items()}
    worst = {metric: dict(values, **{col: max(getattr(s, metric) for s in per_seed[col])
                                     for col in learners})
             for metric, values in tail.items()}  # a learner is flagged by its worst seed
    summarise(row, main, learners, eligible, seeds, worst, reference_columns(row))


def reference_columns(row: Row) -> tuple[str, ...]:
    """The row's predicted-run-time columns (among the best heuristic's candidates)."""
    return protocol.PREDICTED_PAIRS if row.group == "hetero" else PREDICTED_COLUMNS


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
    p.add_argument("--nb-jobs", type=cli.count(1), default=protocol.SEQUENCE_JOBS,
                   help="jobs per sequence")
    p.add_argument("--extra-trace", action="append", default=[], metavar="NAME=PATH[:PROCS]",
                   help="add a generalisation row for this SWF trace (PROCS: processors, "
                        "default its MaxProcs); repeatable")
    p.add_argument("--allow-leaky", action="store_true",
                   help="evaluate models trained before the no-leakage rule or on jobs of a "
                        "row's windows (legacy studies): their columns are marked and never "
                        "meet a target")
    a = p.parse_args(argv)
    groups = tuple(g.strip() for g in a.groups.split(",") if g.strip())
    try:
        bad = [g for g in groups if g not in GROUPS]
        if bad:
            raise ConfigError(f"--groups: unknown group {bad[0]!r}; choose among: {', '.join(GROUPS)}")
        starts = (tuple(cli_lists.ints(a.starts, "--starts", "1981,2756", minimum=0)) if a.starts
                  else protocol.TEST_STARTS)
        if not a.evaluate_only:
            train_missing(Path(a.models), a.traces)
        extra = [parse_extra_trace(text) for text in a.extra_trace]
        ctx = Context(a.traces, a.cache, starts, a.nb_jobs, a.allow_leaky)
        models = discover_models(a.models)
        row_list = rows(groups, a.traces, extra, len(starts), a.nb_jobs)
        table, notes = build_table(row_list, ctx, models,
                                   Execution(a.backend, a.max_parallel, a.outdir))
    except HdrmError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    table.update(training_rows(models))
    grouped = {g: [r.name for r in row_list if r.group == g] for g in GROUPS}
    parts = tables.sections(table, grouped, TAIL_METRICS)
    print("\n".join(tables.markdown(t, g) for t, g in parts))
    commands = {Path(m.path).name: m.meta.get("training", {}).get("command", "") for m in models}
    if a.rst:  # whole or not at all: Ctrl-C while writing keeps the previous page
        write_text_atomically(a.rst, tables.rst(parts, notes, commands, tables.INTRO))
    if a.json:
        write_text_atomically(a.json, json.dumps(table, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
