"""Headline metrics of several runs side by side, as rows for a Markdown or CSV table.

Every value is recomputed from each run's out_jobs.csv (so Batsim's runs and ours are measured
the same way, bounded slowdown included); the energy comes from the run's timeline or
out_schedule.csv (see :meth:`hdrm.results.run.Run.energy_j`) and is nan when unknown.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from hdrm.results.run import Run


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


def compare_rows(runs: Sequence[str | Path | Run]) -> list[dict[str, Any]]:
    """One row per run: ``run``, ``nb_jobs``, then one column per metric of :data:`METRICS`."""
    rows = []
    for run in as_runs(runs):
        summary = run.summary()
        row: dict[str, Any] = {"run": run.label, "nb_jobs": summary["nb_jobs"]}
        row.update({m.column: float(summary[m.key]) for m in METRICS})
        rows.append(row)
    return rows


def _columns() -> list[str]:
    """The table's columns, in order."""
    return ["run", "nb_jobs"] + [m.column for m in METRICS]


def _text(value: Any, decimals: int) -> str:
    """A table cell: numbers with ``decimals`` decimals, nan as ``n/a``."""
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else f"{value:.{decimals}f}"
    return str(value)


def format_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """A GitHub-flavoured Markdown table (3 decimals; nan as ``n/a``), ending in a newline."""
    columns = _columns()
    lines = [
        "| " + " | ".join(columns) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(columns) - 1)) + "|",
    ]
    for row in rows:
        lines.append("| " + " | ".join(_text(row[c], 3) for c in columns) + " |")
    return "\n".join(lines) + "\n"


def format_csv(rows: Sequence[dict[str, Any]]) -> str:
    """CSV text (6 decimals as Batsim writes; nan as an empty field), ending in a newline."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    columns = _columns()
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if _text(row[c], 6) == "n/a" else _text(row[c], 6) for c in columns])
    return out.getvalue()
