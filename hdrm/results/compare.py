"""Headline metrics of several runs side by side, as rows for a Markdown or CSV table.

Every value is recomputed from each run's out_jobs.csv (so Batsim's runs and ours are measured
the same way, bounded slowdown included); the energy comes from the run's timeline or
out_schedule.csv (see :meth:`hdrm.results.run.Run.energy_j`) and is nan when unknown.

Runs of GPU replays (their folder holds ``out_gpu_summary.json``) add four columns when any run of
the table has them (:data:`GPU_METRICS`: mean JCT over the tasks that ran, GPU allocation rate,
mean fragmentation, GPU cost, as that summary gives them; nan for the other runs).
Runs replayed with tenants (their folder holds ``out_sla.csv``) add the overall SLA columns
(:data:`hdrm.results.sla.COMPARE_COLUMNS`) in the same way.

Runs are comparable when they scheduled the same jobs on a platform of the same size. A run folder
records its inputs in its outputs: out_jobs.csv lists every job with its id, submission time,
requested cores and requested time (the workload and the selection taken from it), and
out_schedule.csv the platform's number of cores. :func:`input_differences` says what differs;
:func:`compare_rows` refuses runs that differ unless ``allow_mismatch=True``.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from hdrm.errors import ConfigError
from hdrm.results.run import Run
from hdrm.results.sla import COMPARE_COLUMNS, sla_columns

#: Job ids shown as examples in a difference.
NB_EXAMPLES = 3


@dataclass(frozen=True)
class Metric:
    """One compared metric.

    Attributes:
        key: the column of :func:`hdrm.results.metrics.summarize` it comes from.
        column: the table column name (with its unit).
        title: the plot title.
        unit: the unit, for axis labels ("ratio" or "fraction" for pure numbers).
    """

    key: str
    column: str
    title: str
    unit: str


#: The compared metrics, in table and grid order.
METRICS = (
    Metric("makespan", "makespan_s", "Makespan", "s"),
    Metric("consumed_joules", "energy_j", "Energy", "J"),
    Metric("mean_waiting_time", "mean_waiting_s", "Mean waiting time", "s"),
    Metric("max_waiting_time", "max_waiting_s", "Max waiting time", "s"),
    Metric("mean_turnaround_time", "mean_turnaround_s", "Mean turnaround time", "s"),
    Metric("mean_slowdown", "mean_slowdown", "Mean slowdown", "ratio"),
    Metric("mean_bounded_slowdown", "mean_bounded_slowdown", "Mean bounded slowdown", "ratio"),
    Metric("utilization", "utilization", "Utilisation", "fraction of core time"),
)

#: The summary of a GPU replay, in a run folder.
GPU_SUMMARY_FILE = "out_gpu_summary.json"


@dataclass(frozen=True)
class GpuMetric(Metric):
    """A GPU column: ``key`` is the key of ``out_gpu_summary.json``, ``scale`` turns its value
    into the column's unit."""

    scale: float = 1.0


#: The GPU columns, in table and chart order.
GPU_METRICS = (
    GpuMetric("mean_jct_s", "mean_jct_s", "Mean JCT", "s"),
    GpuMetric("gpu_allocation_rate_all", "gpu_allocation", "GPU allocation rate",
              "fraction of GPU time"),
    GpuMetric("mean_frag_milli", "mean_frag_gpus", "Mean fragmentation", "GPUs", 1e-3),
    GpuMetric("cost_usd", "gpu_cost_usd", "GPU cost", "USD"),
)


def gpu_columns(run: Run) -> dict[str, float]:
    """The GPU columns of a run (empty for a run without ``out_gpu_summary.json``).

    Raises:
        ConfigError: the summary is not JSON or lacks a key (one line naming the file).
    """
    path = run.path / GPU_SUMMARY_FILE
    if not path.is_file():
        return {}
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
        return {m.column: float(summary[m.key]) * m.scale for m in GPU_METRICS}
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: not a GPU replay summary ({type(exc).__name__}: {exc}); "
                          "write it again with hdrm replay") from None


def as_runs(run_dirs: Sequence[str | Path | Run]) -> list[Run]:
    """Open run folders, labelling each by its folder name (numbered when names repeat).

    Raises:
        ConfigError: a folder does not exist.
    """
    runs = [d if isinstance(d, Run) else Run(d) for d in run_dirs]
    counts = Counter(run.label for run in runs)
    seen: Counter = Counter()
    for run in runs:
        if counts[run.label] > 1:
            seen[run.label] += 1
            run.label = f"{run.label}#{seen[run.label]}"
    return runs


@dataclass(frozen=True)
class RecordedInputs:
    """What a run folder's outputs record about the run's inputs.

    Attributes:
        nb_jobs: jobs in out_jobs.csv.
        nb_cores: the platform's cores (out_schedule.csv's nb_computing_machines).
        jobs: job id -> (submission time after the run's first submission, requested cores,
            requested time or -1), times rounded to the millisecond.
    """

    nb_jobs: int
    nb_cores: int
    jobs: dict[str, tuple[float, int, float]]


def recorded_inputs(run: Run) -> RecordedInputs:
    """The inputs ``run``'s out_jobs.csv and out_schedule.csv record."""
    results = run.jobs()
    origin = min((r.submission_time for r in results), default=0.0)
    jobs = {
        r.job_id: (round(r.submission_time - origin, 3), int(r.requested_number_of_resources),
                   round(r.requested_time, 3) if 0 < r.requested_time < math.inf else -1.0)
        for r in results
    }
    return RecordedInputs(len(results), run.nb_resources(), jobs)


def input_differences(runs: Sequence[str | Path | Run]) -> list[str]:
    """What differs between the first run's inputs and each other run's, one sentence a run.

    Returns:
        ``"B differs from A in job count (100 vs 468), ..."`` for each run B whose recorded
        inputs differ from the first run A's (job count, platform size, job ids, job requests);
        empty when every run scheduled the same jobs on a platform of the same size.
    """
    opened = as_runs(runs)
    if not opened:
        return []
    first = opened[0]
    reference = recorded_inputs(first)
    sentences = []
    for run in opened[1:]:
        found = _differences(reference, recorded_inputs(run), first.label, run.label)
        if found:
            sentences.append(f"{run.label} differs from {first.label} in {', '.join(found)}")
    return sentences


def _differences(a: RecordedInputs, b: RecordedInputs, name_a: str, name_b: str) -> list[str]:
    """The differences between two runs' recorded inputs, in words."""
    found = []
    if a.nb_jobs != b.nb_jobs:
        found.append(f"job count ({b.nb_jobs} vs {a.nb_jobs})")
    if a.nb_cores != b.nb_cores:
        found.append(f"platform size ({b.nb_cores} vs {a.nb_cores} cores)")
    only_b = [i for i in b.jobs if i not in a.jobs]
    only_a = [i for i in a.jobs if i not in b.jobs]
    if only_a or only_b:
        sides = [f"{len(ids)} only in {name} ({_examples(ids)})"
                 for ids, name in ((only_b, name_b), (only_a, name_a)) if ids]
        found.append(f"job ids, {' and '.join(sides)}")
    changed = [i for i in b.jobs if i in a.jobs and a.jobs[i] != b.jobs[i]]
    if changed:
        job = changed[0]
        found.append(
            f"the requests of {len(changed)} job{'s' if len(changed) > 1 else ''} with the same id"
            f" (e.g. job {job}: "
            f"{_request(b.jobs[job])} vs {_request(a.jobs[job])})"
        )
    return found


def _examples(ids: list[str]) -> str:
    return ", ".join(ids[:NB_EXAMPLES]) + (", ..." if len(ids) > NB_EXAMPLES else "")


def _request(job: tuple[float, int, float]) -> str:
    submit, cores, walltime = job
    return f"submitted at +{submit:g} s, {cores} cores, {walltime:g} s requested"


def check_comparable(runs: Sequence[str | Path | Run], how_to_allow: str) -> list[str]:
    """Raise when the runs' inputs differ; returns :func:`input_differences` (empty).

    Args:
        runs: the runs.
        how_to_allow: how the caller compares them anyway (``"pass --allow-mismatch"``).

    Raises:
        ConfigError: the runs differ; one line naming every difference and ``how_to_allow``.
    """
    differences = input_differences(runs)
    if differences:
        raise ConfigError(
            f"the runs are not comparable: {'; '.join(differences)}; compare runs of the same "
            f"jobs (trace, conventions, selection) on platforms of the same size, or "
            f"{how_to_allow} to compare them anyway"
        )
    return differences


def compare_rows(
    runs: Sequence[str | Path | Run], allow_mismatch: bool = False
) -> list[dict[str, Any]]:
    """One row per run: ``run``, ``nb_jobs``, then one column per metric of :data:`METRICS`.

    Raises:
        ConfigError: the runs' inputs differ (:func:`input_differences`) and ``allow_mismatch``
            is False.
    """
    opened = as_runs(runs)
    if not allow_mismatch:
        check_comparable(opened, "pass allow_mismatch=True")
    rows = []
    for run in opened:
        summary = run.summary()
        row: dict[str, Any] = {"run": run.label, "nb_jobs": summary["nb_jobs"]}
        row.update({m.column: float(summary[m.key]) for m in METRICS})
        row.update(gpu_columns(run))
        row.update(sla_columns(run.path))
        rows.append(row)
    if any(GPU_METRICS[0].column in row for row in rows):
        for row in rows:
            for metric in GPU_METRICS:
                row.setdefault(metric.column, math.nan)
    if any(COMPARE_COLUMNS[0] in row for row in rows):  # runs with tenants: their SLA columns
        for row in rows:
            for column in COMPARE_COLUMNS:
                row.setdefault(column, math.nan)
    return rows


def _columns(rows: Sequence[dict[str, Any]] = ()) -> list[str]:
    """The table's columns, in order (the GPU ones when the rows have them)."""
    gpu = ([m.column for m in GPU_METRICS] if any(GPU_METRICS[0].column in r for r in rows)
           else [])
    sla = list(COMPARE_COLUMNS) if any(COMPARE_COLUMNS[0] in r for r in rows) else []
    return ["run", "nb_jobs"] + [m.column for m in METRICS] + gpu + sla


def _text(value: Any, decimals: int) -> str:
    """A table cell: numbers with ``decimals`` decimals, nan as ``n/a``."""
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else f"{value:.{decimals}f}"
    return str(value)


def format_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """A GitHub-flavoured Markdown table (3 decimals; nan as ``n/a``), ending in a newline."""
    columns = _columns(rows)
    lines = [
        "| " + " | ".join(columns) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(columns) - 1)) + "|",
    ]
    for row in rows:
        lines.append("| " + " | ".join(_text(row.get(c, math.nan), 3) for c in columns) + " |")
    return "\n".join(lines) + "\n"


def format_csv(rows: Sequence[dict[str, Any]]) -> str:
    """CSV text (6 decimals as Batsim writes; nan as an empty field), ending in a newline."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    columns = _columns(rows)
    writer.writerow(columns)
    for row in rows:
        cells = [_text(row.get(c, math.nan), 6) for c in columns]
        writer.writerow(["" if cell == "n/a" else cell for cell in cells])
    return out.getvalue()
