"""Periodic task graphs (DAG pipelines) and their instances as jobs of a workload.

A :class:`TaskGraph` is released every ``period_s`` seconds from ``offset_s`` on; instance ``k``
is released at ``offset_s + k * period_s`` and must finish every task by its absolute deadline,
the release plus ``deadline_s``. Each task has a CPU time (seconds on a core of the platform's
reference speed) and a GPU time, or none ("CPU only"); an edge may carry a transfer time that the
successor waits for after its predecessor ends.

:func:`expand` turns a :class:`TaskSet` into a :class:`~hdrm.workload.job.Workload`: one job per
task and instance (one core, a ``delay`` profile of the task's CPU time), submitted at the
instance's release, with the graph's edges as job dependencies whose think time is the transfer
time. The built-in engine's dependency release does the rest (a task enters the queue when its
last predecessor has ended plus the transfer), so there is no second simulator. These jobs run every
task on a core for its CPU time; :func:`hdrm.dag.periodic_devices.expand_on` makes the jobs of a
platform with GPUs, where tasks with a GPU time ask a GPU instead.

Each job's ``extra`` holds ``graph``, ``instance``, ``task``, ``release_s``, ``deadline_s``
(absolute), ``rank_u_s`` (HEFT's upward rank on CPU times and transfers: the longest path from the
task to an exit of its graph, itself included) and the job's positions in the two orders of
:mod:`hdrm.policies.job_selection`'s ``dag_edf`` and ``dag_llf`` (see :func:`priority_positions`).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numpy as np

from hdrm.dag.model import Dag, Network
from hdrm.errors import WorkloadError
from hdrm.workload.dependencies import Dependencies
from hdrm.workload.job import Job, Workload

logger = logging.getLogger(__name__)

#: ``Job.extra`` keys of the two priority positions.
EDF_KEY, LLF_KEY = "dag_edf", "dag_llf"


@dataclass(frozen=True)
class PeriodicTask:
    """A task of a periodic graph.

    Attributes:
        name: the task's name, unique in its graph.
        cpu_s: run time on a core of the reference speed (> 0).
        gpu_s: run time on a GPU, or None for a CPU-only task.
    """

    name: str
    cpu_s: float
    gpu_s: float | None = None


@dataclass(frozen=True, eq=False)
class TaskGraph:
    """A task graph released periodically.

    Attributes:
        name: the graph's name, unique in its task set.
        period_s: time between two releases (> 0).
        deadline_s: relative deadline: each instance must end by its release plus this (> 0).
        tasks: the tasks.
        edges: ``(predecessor index, successor index, transfer_s)``.
        offset_s: release of instance 0 (>= 0).
        ranks_s: per task, its upward rank on CPU times and transfers (derived).
        order: the task indices in a topological order (derived).
    """

    name: str
    period_s: float
    deadline_s: float
    tasks: tuple[PeriodicTask, ...]
    edges: tuple[tuple[int, int, float], ...] = ()
    offset_s: float = 0.0
    ranks_s: tuple[float, ...] = field(init=False, repr=False)
    order: tuple[int, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for key, value in (("period_s", self.period_s), ("deadline_s", self.deadline_s)):
            if not 0 < value < math.inf:
                raise WorkloadError(f"task graph {self.name!r}: {key} is {value!r}; it must be "
                                    f"finite and > 0")
        if not 0 <= self.offset_s < math.inf:
            raise WorkloadError(f"task graph {self.name!r}: offset_s is {self.offset_s!r}; it "
                                f"must be finite and >= 0")
        if not self.tasks:
            raise WorkloadError(f"task graph {self.name!r}: no tasks; give at least one")
        for task in self.tasks:
            gpu_ok = task.gpu_s is None or 0 < task.gpu_s < math.inf
            if not (0 < task.cpu_s < math.inf and gpu_ok):
                raise WorkloadError(f"task graph {self.name!r}: task {task.name!r} has cpu_s "
                                    f"{task.cpu_s!r}, gpu_s {task.gpu_s!r}; times must be finite "
                                    f"and > 0 (gpu_s null for a CPU-only task)")
        dag = self.as_dag()
        object.__setattr__(self, "order", dag.order)
        object.__setattr__(self, "ranks_s", _upward_ranks(dag))

    def as_dag(self) -> Dag:
        """The graph as a :class:`~hdrm.dag.model.Dag` of CPU times on one processor, each edge's
        data its transfer time (at 1 MB/s); building it checks names, edges and cycles."""
        network = Network(("cpu",), ((1.0,),), ((0.0,),))
        return Dag(tuple(t.name for t in self.tasks), tuple((t.cpu_s,) for t in self.tasks),
                   tuple(self.edges), network, self.name)

    @property
    def cpu_work_s(self) -> float:
        """Sum of the tasks' CPU times."""
        return math.fsum(t.cpu_s for t in self.tasks)

    @property
    def utilisation(self) -> float:
        """CPU work over period."""
        return self.cpu_work_s / self.period_s

    def releases(self, horizon_s: float) -> list[float]:
        """Releases of the instances before ``horizon_s``: ``offset_s + k * period_s``."""
        count = max(0, math.ceil((horizon_s - self.offset_s) / self.period_s))
        return [self.offset_s + k * self.period_s for k in range(count)]


@dataclass(frozen=True)
class TaskSet:
    """Periodic task graphs released until a horizon.

    Attributes:
        graphs: the graphs (distinct names).
        horizon_s: no instance is released at or after this time (> 0).
        name: a name for outputs.
    """

    graphs: tuple[TaskGraph, ...]
    horizon_s: float
    name: str = "taskset"

    def __post_init__(self) -> None:
        if not 0 < self.horizon_s < math.inf:
            raise WorkloadError(f"task set {self.name!r}: horizon_s is {self.horizon_s!r}; it "
                                f"must be finite and > 0")
        names = [g.name for g in self.graphs]
        if not names or len(set(names)) != len(names):
            raise WorkloadError(f"task set {self.name!r}: graph names {names}; give at least one "
                                f"graph, names distinct")

    @property
    def utilisation(self) -> float:
        """Sum of the graphs' utilisations."""
        return math.fsum(g.utilisation for g in self.graphs)


def expand(taskset: TaskSet) -> Workload:
    """The jobs of every instance released before the horizon (see the module's description)."""
    entries = []  # (release, graph, instance, task)
    for g, graph in enumerate(taskset.graphs):
        for k, release in enumerate(graph.releases(taskset.horizon_s)):
            entries.extend((release, g, k, t) for t in graph.order)
    entries.sort()
    jobs, index = [], {}
    for idx, (release, g, k, t) in enumerate(entries):
        graph = taskset.graphs[g]
        task = graph.tasks[t]
        extra = {"graph": graph.name, "instance": k, "task": task.name, "release_s": release,
                 "deadline_s": release + graph.deadline_s, "rank_u_s": graph.ranks_s[t]}
        jobs.append(Job(idx, f"{graph.name}#{k}/{task.name}", release, 1, math.inf, task.cpu_s,
                        trace_submit_s=release, profile=f"{graph.name}/{task.name}",
                        extra=extra))
        index[(g, k, t)] = idx
    job_l, pred_l, think_l = [], [], []
    instances = sorted({(g, k) for g, k, _ in index})
    for g, k in instances:
        for src, dst, transfer in taskset.graphs[g].edges:
            job_l.append(index[(g, k, dst)])
            pred_l.append(index[(g, k, src)])
            think_l.append(float(transfer))
    for key, position in zip((EDF_KEY, LLF_KEY), priority_positions(jobs)):
        for job, pos in zip(jobs, position):
            job.extra[key] = pos
    deps = Dependencies(np.array(job_l, dtype=np.int64), np.array(pred_l, dtype=np.int64),
                        np.array(think_l, dtype=np.float64)) if job_l else None
    logger.info("%s: %d jobs of %d graphs", taskset.name, len(jobs), len(taskset.graphs))
    return Workload(jobs, name=taskset.name, source=taskset.name, nb_res=None, dependencies=deps)


def _upward_ranks(dag: Dag) -> tuple[float, ...]:
    """HEFT's upward rank with one processor type: ``cpu_s(i) + max over successors j of
    (transfer(i, j) + rank(j))`` (the edge's data is its transfer time)."""
    rank = [0.0] * dag.size
    for task in reversed(dag.order):
        tail = max((data + rank[nxt] for nxt, data in dag.succ[task]), default=0.0)
        rank[task] = dag.costs_s[task][0] + tail
    return tuple(rank)


def priority_positions(jobs: list[Job]) -> tuple[list[int], list[int]]:
    """Each job's position in the EDF order and in the least-laxity order.

    EDF: earliest absolute deadline first; within an instance (same deadline), the larger upward
    rank first (HEFT's order). Least laxity: the laxity of a ready task at ``now`` is
    ``deadline - now - rank_u``, the slack left if the rest of its instance's critical path ran
    from now on; ``now`` is common to every queued task, so the order is that of
    ``deadline - rank_u``, smallest first, ties by the larger rank. Remaining ties: job index.
    """
    def positions(key) -> list[int]:
        order = sorted(range(len(jobs)), key=key)
        pos = [0] * len(jobs)
        for p, i in enumerate(order):
            pos[i] = p
        return pos

    def info(i: int) -> tuple[float, float]:
        return jobs[i].extra["deadline_s"], jobs[i].extra["rank_u_s"]

    edf = positions(lambda i: (info(i)[0], -info(i)[1], i))
    llf = positions(lambda i: (info(i)[0] - info(i)[1], -info(i)[1], i))
    return edf, llf
