"""The GPU comparison (issue 20): learned schedulers versus every queue order x placement pair.

Usage::

    python benchmarks/compare_gpu.py --evaluate-only [--json OUT] [--seeds 3] [--quick]
        [--workloads openb,gavel] [--pairs all|P1,P2] [--backfills none,greedy]
        [--models models/gpu]
        [--traces DIR] [--backend auto|processes|serial|ray] [--max-parallel 2] [--outdir DIR]
        [--rst docs/results_gpu.rst] [--measure-load]
    python benchmarks/compare_gpu.py   # first trains the missing models (benchmarks/gpu_train.py)

Rows: one per workload of :data:`benchmarks.gpu_protocol.WORKLOADS` (openb's default trace on a
sample of its nodes, Gavel's trace on a K80/P100/V100 cluster), evaluated on the test windows of
the split by submission time, under the workload's load factor. Columns: every pair through the
engine, over ``--seeds`` tie orders, with backfilling ``none`` (``sjf-fgd``: a task that fits
nowhere stops the decision) and ``greedy`` (``sjf-fgd (greedy)``: every later task that fits
starts, work-conserving as the learners are), and every model of ``--models`` trained on that
workload (through the multi-agent environment, greedy decisions, over the same seeds; mean, and
the spread as its own column); the best pair, the best learner, the target and whether it is
met, and the flags (:func:`benchmarks.gpu_tables.judge`); one row per other metric. Every cell is
a run of ``hdrm sweep``'s machinery (:mod:`benchmarks.gpu_evaluation`): ``--outdir`` keeps
finished runs, so a rerun resumes. ``--measure-load`` also measures the load factor each
workload's rule picks (:func:`benchmarks.gpu_protocol.choose_load_factor`) and reports it beside
the one in use.
``--quick`` is a smoke run: one test window of 3 tasks, one seed, no load measurement.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import gpu_page, gpu_protocol, gpu_seeds, gpu_tables  # noqa: E402
from benchmarks.evaluation import Execution  # noqa: E402
from benchmarks.gpu_evaluation import GpuEvalRun, model_run, run_gpu_evaluations  # noqa: E402
from benchmarks.gpu_learners import GpuModel, applies, discover_models  # noqa: E402
from benchmarks.gpu_protocol import Setting  # noqa: E402
from hdrm.core.gpu_scheduler import gpu_pairs, resolve_gpu_policy  # noqa: E402
from hdrm.durable import staged  # noqa: E402
from hdrm.errors import ConfigError, HdrmError  # noqa: E402
from hdrm.cli import script as cli  # noqa: E402


def row_name(setting: Setting, label: str) -> str:
    """``"openb default, x20 load, 4 test windows of 400 tasks"``."""
    return (f"{label}, x{setting.load_factor:g} load, {len(setting.test_starts)} test windows "
            f"of {setting.window_tasks} tasks")


def choose_pairs(text: str) -> list[str]:
    """``all`` (every order x placement pair) or a comma-separated list (each checked)."""
    if text == "all":
        return gpu_pairs()
    names = [p.strip() for p in text.split(",") if p.strip()]
    return [resolve_gpu_policy(n, "--pairs").name for n in names]


def pair_column(pair: str, backfill: str) -> str:
    """``"sjf-fgd"`` (backfilling none) or ``"sjf-fgd (greedy)"``."""
    return pair if backfill == "none" else f"{pair} ({backfill})"


def choose_backfills(text: str) -> tuple[str, ...]:
    """The comma-separated backfilling modes of the pairs (each checked)."""
    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    bad = [m for m in modes if m not in gpu_protocol.PAIR_BACKFILLS]
    if bad or not modes:
        raise ConfigError(f"--backfills: unknown mode {bad[0] if bad else text!r}; choose among: "
                          f"{', '.join(gpu_protocol.PAIR_BACKFILLS)}")
    return modes


def build_table(settings: dict[str, Setting], pairs: list[str], models: list[GpuModel],
                seeds: tuple[int, ...], execution: Execution,
                backfills: tuple[str, ...] = gpu_protocol.PAIR_BACKFILLS
                ) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Evaluate every pair (under each backfilling mode) and model on every setting; the table
    and its row names."""
    keys, runs = [], []
    columns = gpu_seeds.file_columns(models)
    for key, setting in settings.items():
        for pair in pairs:
            for backfill in backfills:
                keys.append((key, "pair", pair_column(pair, backfill)))
                runs.append(GpuEvalRun("pair", pair, setting, seeds, backfill=backfill))
        for model in models:
            if applies(model, setting):
                keys.append((key, "model", columns[model.path]))
                runs.append(model_run(model.path, setting, seeds))
    summaries = run_gpu_evaluations(runs, execution)
    table: dict[str, dict[str, Any]] = {}
    names = {}
    for key, setting in settings.items():
        found = {(kind, col): s for (k, kind, col), s in zip(keys, summaries) if k == key}
        names[key] = row_name(setting, gpu_protocol.WORKLOADS[key].label)
        per_file = {c: s for (kind, c), s in found.items() if kind == "model"}
        table.update(gpu_tables.row_cells(
            names[key], {c: s for (kind, c), s in found.items() if kind == "pair"},
            gpu_seeds.combine(per_file), gpu_seeds.seeded(per_file)))
    return table, names


def training_rows(models: list[GpuModel]) -> dict[str, dict[str, Any]]:
    """One row per model: its role, workload and training budget and figures."""
    out = {}
    for model in models:
        tr = model.meta.get("training", {})
        out[f"training: {Path(model.path).name}"] = {
            "learner": model.column, "workload": model.workload,
            "budget (min)": tr.get("budget_min"), "wall time (min)": tr.get("wall_min"),
            "CPU time (min)": tr.get("cpu_min"), "best at episode": tr.get("best_episode"),
            "best validation JCT (s)": tr.get("best_validation"),
            "episodes": tr.get("episodes"), "env steps": tr.get("env_steps"),
            "seed": model.meta["setting"].get("seed"), "warm start": warm_start_cell(tr),
            "command": tr.get("command", "")}
    return out


def warm_start_cell(training: dict[str, Any]) -> str:
    """The imitation warm start of a model's training, in words ("" without one)."""
    imitation = training.get("imitation")
    if not imitation:
        return ""
    return (f"{imitation['pair']}: {imitation['episodes']} episodes, {imitation['epochs']} "
            f"epochs, agreement {imitation['agreement']:.1%}, {imitation['cpu_min']} CPU min")


def resolve_settings(keys: list[str], traces: str, cache: str, quick: bool) -> dict[str, Setting]:
    """The settings of the requested workloads (``quick``: one window of 3 tasks)."""
    out = {}
    for key in keys:
        spec = gpu_protocol.workload_spec(key)
        out[key] = gpu_protocol.resolve(spec, traces, cache,
                                        **(gpu_protocol.QUICK if quick else {}))
    return out


def measure_loads(settings: dict[str, Setting], pairs: list[str]) -> dict[str, Any]:
    """What :func:`~benchmarks.gpu_protocol.choose_load_factor` measures for each setting."""
    out = {}
    for key, setting in settings.items():
        factor, steps = gpu_protocol.choose_load_factor(setting, pairs)
        out[key] = {"chosen": factor, "in use": setting.load_factor,
                    "steps": [list(s) for s in steps]}
    return out


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--evaluate-only", action="store_true", help="use the shipped models only")
    p.add_argument("--json", help="write {row: {column: value}} to this file")
    p.add_argument("--rst", default=str(gpu_protocol.ROOT / "docs" / "results_gpu.rst"),
                   help="results page to write ('' for none)")
    p.add_argument("--seeds", type=cli.count(1), default=3,
                   help="seeds 0..N-1 (tie orders, episodes)")
    p.add_argument("--quick", action="store_true", help="smoke run: one 3-task window, 1 seed")
    p.add_argument("--workloads", default=",".join(gpu_protocol.WORKLOADS))
    p.add_argument("--pairs", default="all", help="'all' or a comma-separated list of pairs")
    p.add_argument("--backfills", default=",".join(gpu_protocol.PAIR_BACKFILLS),
                   help="the pairs' backfilling modes (none, greedy)")
    p.add_argument("--models", default=str(gpu_protocol.MODELS_DIR))
    p.add_argument("--traces", default=str(gpu_protocol.DEFAULT_TRACES))
    p.add_argument("--cache", default=str(gpu_protocol.CACHE_DIR), help="node lists written here")
    p.add_argument("--max-parallel", type=cli.count(1), default=2, help="evaluations at a time")
    p.add_argument("--backend", default="auto", choices=("auto", "ray", "processes", "serial"))
    p.add_argument("--outdir", help="keep finished evaluations here; a rerun resumes from them")
    p.add_argument("--measure-load", action="store_true",
                   help="also measure the load factor of each workload on its validation windows")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    a = parse(argv)
    started = time.perf_counter()
    try:
        if a.seeds < 1:
            raise ConfigError(f"--seeds: expected a number >= 1, got {a.seeds}")
        seeds = (0,) if a.quick else tuple(range(a.seeds))
        keys = [k.strip() for k in a.workloads.split(",") if k.strip()]
        pairs = choose_pairs(a.pairs)
        backfills = choose_backfills(a.backfills)
        settings = resolve_settings(keys, a.traces, a.cache, a.quick)
        if not a.evaluate_only:
            from benchmarks.gpu_train import train_missing

            train_missing(Path(a.models), a.traces, a.cache)
        models = discover_models(a.models)
        loads = measure_loads(settings, pairs) if a.measure_load and not a.quick else {}
        table, names = build_table(settings, pairs, models, seeds,
                                   Execution(a.backend, a.max_parallel, a.outdir), backfills)
    except HdrmError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    table.update(training_rows(models))
    wall_s = time.perf_counter() - started
    rows = [names[k] for k in keys]
    print(gpu_tables.markdown("Targets", gpu_tables.summary_grid(table, rows)))
    texts = {}
    if a.rst:
        columns = [pair_column(p, b) for p in pairs for b in backfills]
        texts[a.rst] = gpu_page.page(table, rows, settings, names, columns, models, loads,
                                     seeds, wall_s, a)
    if a.json:
        texts[a.json] = json.dumps(table, indent=1) + "\n"
    with staged() as stage:  # whole and together: a stop keeps the previous page and JSON
        for path, text in texts.items():
            stage.path(path).write_text(text, encoding="utf-8", newline="")
    return 0


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
