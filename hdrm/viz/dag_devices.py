"""Rows of the DAG gantt chart for a periodic run on a platform with GPUs.

The GPU engine gives a CPU task a share of its node's cores (``cpu_milli``) rather than core
numbers, and a GPU task the indices of its GPUs (``gpu_indices``), so ``allocated_resources``
names no core. Here each GPU is a row (``NODE gpu I``) and the CPU tasks of a node are laid on
*lanes* (``NODE cpu K``): a task takes the lowest lane free at its start, so tasks that overlap
in time never share a row and the lanes used are as many as the node ran CPU tasks at once.
A lane is a drawing row, not a core the engine named.
"""

from __future__ import annotations

import csv
import logging
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

#: The columns of a GPU replay's out_jobs.csv that the rows are made from.
DEVICE_COLUMNS = ("node", "gpu_indices")


@dataclass(frozen=True)
class Placed:
    """A completed task on a drawing row: its job id, row label, start and finish."""

    job_id: str
    row: str
    start_s: float
    finish_s: float


def has_device_columns(jobs_csv: Path) -> bool:
    """Whether ``jobs_csv`` is the out_jobs.csv of a replay on a GPU platform."""
    with jobs_csv.open(newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle), [])
    return all(column in header for column in DEVICE_COLUMNS)


def device_rows(jobs_csv: Path) -> list[Placed]:
    """Each completed task of a GPU run on its GPU row or on a CPU lane of its node.

    Rows are sorted per node: its CPU lanes, then its GPUs.
    """
    cpu_tasks: list[tuple[float, float, str, str]] = []
    placed: list[Placed] = []
    with jobs_csv.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["final_state"] != "COMPLETED_SUCCESSFULLY" or not row["starting_time"]:
                continue
            start, finish = float(row["starting_time"]), float(row["finish_time"])
            gpus = row["gpu_indices"].split()
            if gpus:
                placed.append(Placed(row["job_id"], f"{row['node']} gpu {int(gpus[0])}",
                                     start, finish))
            else:
                cpu_tasks.append((start, finish, row["job_id"], row["node"]))
    return placed + _lanes(cpu_tasks)


def _lanes(tasks: list[tuple[float, float, str, str]]) -> list[Placed]:
    """CPU tasks ``(start, finish, job id, node)``, each on its node's lowest lane free at start."""
    lane_ends: dict[str, list[float]] = {}
    placed = []
    for start, finish, job_id, node in sorted(tasks):
        ends = lane_ends.setdefault(node, [])
        lane = next((i for i, end in enumerate(ends) if end <= start), len(ends))
        if lane == len(ends):
            ends.append(finish)
        else:
            ends[lane] = finish
        placed.append(Placed(job_id, f"{node} cpu {lane}", start, finish))
    return placed


def row_order(label: str) -> tuple[str, int, int]:
    """Sort key of a row label: node, CPU lanes before GPUs, then the number."""
    node, kind, number = label.rsplit(" ", 2)
    return node, 0 if kind == "cpu" else 1, int(number)
