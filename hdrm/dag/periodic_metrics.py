"""Per-instance results of a periodic DAG run: response times, deadline misses, jitter.

An instance *finishes* when its last task ends; its *response time* is that finish minus its
release; it *meets* its deadline when it finishes no later than the absolute deadline. An
instance with a task that never completed (rejected, killed, or unfinished) has no finish and
counts as a miss; it is left out of the response-time figures. Per task graph, the *jitter* is
the largest minus the smallest response time of its finished instances (0 with one).
The p99 is numpy's linear-interpolation percentile of the finished instances' responses.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hdrm.workload.job import Job

#: Columns of ``out_instances.csv``.
COLUMNS = ("graph", "instance", "release_s", "deadline_s", "finish_s", "response_s",
           "deadline_met")


@dataclass(frozen=True)
class InstanceRow:
    """One instance of a task graph.

    Attributes:
        graph: the graph's name.
        instance: the instance number (0 first).
        release_s: release time.
        deadline_s: absolute deadline.
        finish_s: end of its last task (nan when a task did not complete).
        response_s: ``finish_s - release_s`` (nan likewise).
        deadline_met: finished by the deadline.
    """

    graph: str
    instance: int
    release_s: float
    deadline_s: float
    finish_s: float
    response_s: float
    deadline_met: bool


@dataclass(frozen=True)
class PeriodicSummary:
    """Figures over every instance.

    Attributes:
        instances: number of instances.
        missed: instances that missed their deadline.
        miss_ratio: ``missed / instances``.
        response_mean_s: mean response time of the finished instances (nan if none).
        response_p99_s: their 99th percentile (nan if none).
        response_max_s: their maximum (nan if none).
        jitter_s: per graph, max - min response time of its finished instances.
    """

    instances: int
    missed: int
    miss_ratio: float
    response_mean_s: float
    response_p99_s: float
    response_max_s: float
    jitter_s: dict[str, float]

    def lines(self) -> list[str]:
        """Human-readable summary lines."""
        jitter = ", ".join(f"{g} {j:.3f}" for g, j in self.jitter_s.items())
        return [f"instances: {self.instances}, missed deadlines: {self.missed} "
                f"(miss ratio {self.miss_ratio:.4f})",
                f"response time (s): mean {self.response_mean_s:.3f}, p99 "
                f"{self.response_p99_s:.3f}, max {self.response_max_s:.3f}",
                f"jitter (s): {jitter}"]


def instance_rows(jobs: Sequence[Job], finish_s: Sequence[float]) -> list[InstanceRow]:
    """One row per instance, by release then graph order of appearance.

    Args:
        jobs: the jobs of :func:`hdrm.dag.periodic.expand` (``extra`` holds graph, instance,
            release and deadline).
        finish_s: per job index, when it completed (nan when it did not).
    """
    ends: dict[tuple[str, int], list] = {}
    for job in jobs:
        extra = job.extra
        key = (extra["graph"], extra["instance"])
        slot = ends.setdefault(key, [extra["release_s"], extra["deadline_s"], -math.inf])
        end = finish_s[job.idx]
        slot[2] = math.nan if end != end or slot[2] != slot[2] else max(slot[2], end)
    rows = []
    for (graph, k), (release, deadline, end) in ends.items():
        done = end == end
        rows.append(InstanceRow(graph, k, release, deadline, end, end - release if done
                                else math.nan, done and end <= deadline))
    rows.sort(key=lambda r: (r.release_s, r.graph, r.instance))
    return rows


def summarise(rows: Sequence[InstanceRow]) -> PeriodicSummary:
    """The :class:`PeriodicSummary` of instance rows."""
    missed = sum(1 for r in rows if not r.deadline_met)
    responses = np.array([r.response_s for r in rows if r.response_s == r.response_s])
    by_graph: dict[str, list[float]] = {}
    for r in rows:
        if r.response_s == r.response_s:
            by_graph.setdefault(r.graph, []).append(r.response_s)
    nan = math.nan
    return PeriodicSummary(
        instances=len(rows), missed=missed, miss_ratio=missed / len(rows) if rows else nan,
        response_mean_s=float(responses.mean()) if len(responses) else nan,
        response_p99_s=float(np.percentile(responses, 99)) if len(responses) else nan,
        response_max_s=float(responses.max()) if len(responses) else nan,
        jitter_s={g: max(v) - min(v) for g, v in by_graph.items()})


def write_instances_csv(rows: Sequence[InstanceRow], path: str | Path) -> Path:
    """Write ``out_instances.csv`` (columns :data:`COLUMNS`; deadline_met as 1/0)."""
    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(COLUMNS)
        for r in rows:
            out.writerow([r.graph, r.instance, repr(r.release_s), repr(r.deadline_s),
                          repr(r.finish_s), repr(r.response_s), int(r.deadline_met)])
    return path
