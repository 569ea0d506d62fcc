"""Per-instance results of a periodic DAG run: response times, deadline misses, jitter.

An instance *finishes* when its last task ends; its *response time* is that finish minus its
release; it *meets* its deadline when it finishes no later than the absolute deadline. An
instance with a task that never completed (rejected, killed, or unfinished) has no finish and
counts as a miss; it is left out of the response-time figures. Per task graph, the *jitter* is
the largest minus the smallest response time of its finished instances (0 with one).
The p99 is numpy's linear-interpolation percentile of the finished instances' responses.

An instance's *schedule length ratio* (SLR) is its response time over its graph's critical-path
lower bound (:func:`critical_path_s`): the longest path through the graph where each task costs
its shortest run time over the device types that can run it (its CPU time, or its GPU time when
that is shorter and the platform has GPUs) and each edge its transfer time. The periodic model
pays a transfer whatever devices the two tasks run on (it is the successor's release delay), so
transfers belong to the bound; no schedule finishes an instance sooner, and SLR >= 1, 1 when the
instance ran at the pace of its critical path. The bound depends on the graph and the platform
only, not on the policy, so SLRs of different policies compare.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hdrm.dag.periodic import TaskGraph, TaskSet
from hdrm.durable import replacing
from hdrm.workload.job import Job

#: Columns of ``out_instances.csv``.
COLUMNS = ("graph", "instance", "release_s", "deadline_s", "finish_s", "response_s",
           "deadline_met", "slr")


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
        slr: ``response_s`` over the graph's critical-path lower bound (nan when unfinished or
            without a bound).
    """

    graph: str
    instance: int
    release_s: float
    deadline_s: float
    finish_s: float
    response_s: float
    deadline_met: bool
    slr: float = math.nan


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
        slr_mean: mean schedule length ratio of the finished instances (nan if none).
        slr_max: their largest (nan if none).
    """

    instances: int
    missed: int
    miss_ratio: float
    response_mean_s: float
    response_p99_s: float
    response_max_s: float
    jitter_s: dict[str, float]
    slr_mean: float = math.nan
    slr_max: float = math.nan

    def lines(self) -> list[str]:
        """Human-readable summary lines."""
        jitter = ", ".join(f"{g} {j:.3f}" for g, j in self.jitter_s.items())
        return [f"instances: {self.instances}, missed deadlines: {self.missed} "
                f"(miss ratio {self.miss_ratio:.4f})",
                f"response time (s): mean {self.response_mean_s:.3f}, p99 "
                f"{self.response_p99_s:.3f}, max {self.response_max_s:.3f}",
                f"schedule length ratio: mean {self.slr_mean:.3f}, max {self.slr_max:.3f}",
                f"jitter (s): {jitter}"]


def critical_path_s(graph: TaskGraph, gpus: bool) -> float:
    """The critical-path lower bound of an instance of ``graph`` (see the module).

    Args:
        graph: the task graph.
        gpus: the platform has GPUs, so a task with a GPU time may cost it.

    Returns:
        The longest path's length: task costs ``min(cpu_s, gpu_s)`` (``cpu_s`` for a CPU-only
        task or without GPUs) plus the transfers of its edges.
    """
    cost = [min(t.cpu_s, t.gpu_s) if gpus and t.gpu_s is not None else t.cpu_s
            for t in graph.tasks]
    succ: list[list[tuple[int, float]]] = [[] for _ in graph.tasks]
    for src, dst, transfer in graph.edges:
        succ[src].append((dst, transfer))
    tail = [0.0] * len(cost)  # longest path from a task's start to an exit's end
    for task in reversed(graph.order):
        tail[task] = cost[task] + max((c + tail[n] for n, c in succ[task]), default=0.0)
    return max(tail)


def critical_paths_s(taskset: TaskSet, gpus: bool) -> dict[str, float]:
    """Per graph name, its :func:`critical_path_s`."""
    return {g.name: critical_path_s(g, gpus) for g in taskset.graphs}


def instance_rows(jobs: Sequence[Job], finish_s: Sequence[float],
                  bounds_s: Mapping[str, float] | None = None) -> list[InstanceRow]:
    """One row per instance, by release then graph order of appearance.

    Args:
        jobs: the jobs of :func:`hdrm.dag.periodic.expand` (``extra`` holds graph, instance,
            release and deadline).
        finish_s: per job index, when it completed (nan when it did not).
        bounds_s: per graph name, its critical-path lower bound (:func:`critical_paths_s`), for
            the rows' SLR; without it, SLR is nan.
    """
    ends: dict[tuple[str, int], list] = {}
    for job in jobs:
        extra = job.extra
        key = (extra["graph"], extra["instance"])
        slot = ends.setdefault(key, [extra["release_s"], extra["deadline_s"], -math.inf])
        end = finish_s[job.idx]
        slot[2] = math.nan if end != end or slot[2] != slot[2] else max(slot[2], end)
    rows = []
    bounds_s = bounds_s or {}
    for (graph, k), (release, deadline, end) in ends.items():
        done = end == end
        response = end - release if done else math.nan
        slr = response / bounds_s.get(graph, math.nan)
        rows.append(InstanceRow(graph, k, release, deadline, end, response,
                                done and end <= deadline, slr))
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
    slrs = np.array([r.slr for r in rows if r.slr == r.slr])
    return PeriodicSummary(
        instances=len(rows), missed=missed, miss_ratio=missed / len(rows) if rows else nan,
        response_mean_s=float(responses.mean()) if len(responses) else nan,
        response_p99_s=float(np.percentile(responses, 99)) if len(responses) else nan,
        response_max_s=float(responses.max()) if len(responses) else nan,
        jitter_s={g: max(v) - min(v) for g, v in by_graph.items()},
        slr_mean=float(slrs.mean()) if len(slrs) else nan,
        slr_max=float(slrs.max()) if len(slrs) else nan)


def write_instances_csv(rows: Sequence[InstanceRow], path: str | Path) -> Path:
    """Write ``out_instances.csv`` (columns :data:`COLUMNS`; deadline_met as 1/0)."""
    path = Path(path)
    with replacing(path) as scratch, scratch.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)  # whole or not at all (hdrm.durable.replacing)
        out.writerow(COLUMNS)
        for r in rows:
            out.writerow([r.graph, r.instance, repr(r.release_s), repr(r.deadline_s),
                          repr(r.finish_s), repr(r.response_s), int(r.deadline_met),
                          repr(r.slr)])
    return path
