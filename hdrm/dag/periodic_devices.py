"""Periodic pipelines on a platform's CPU cores and GPU devices, and their priority rules.

:func:`expand_on` turns a :class:`~hdrm.dag.periodic.TaskSet` into the jobs of a given platform:

* on a platform **without accelerators** every task runs on one core for its CPU time (the jobs
  of :func:`hdrm.dag.periodic.expand`, unchanged);
* on a platform **with accelerators** (the GPU model of :mod:`hdrm.platform`: node-level devices)
  a task with a GPU time is pinned to the device type GPU: its job asks one whole GPU
  (:class:`~hdrm.workload.job.AcceleratorDemand` of count 1) and a host share of
  :data:`GPU_HOST_MILLI` milli-core, and runs for its GPU time; a CPU-only task asks one core
  (1000 milli-core) and no GPU, and runs for its CPU time. The engine then runs them through its GPU
  decision core (:class:`~hdrm.sim.gpu_engine.GpuSimulation`), whose placements only put a task
  with a GPU demand on a node's GPUs and a task without one on CPU shares: the same event loop and
  dependency release as on CPU platforms, no second simulator.

A task's *cost* is the time it runs on the device type it is pinned to (:func:`task_costs`).
Four priority rules order ready tasks (:data:`RULES`); each is the earliest absolute deadline
first except least laxity, and within an instance (one deadline) a list scheduler's priority:

* ``heft_edf``: the larger upward rank first (``rank_u``: the task's cost plus the longest path
  of costs and transfers to an exit of its graph), HEFT's priority;
* ``cpop_edf``: the larger ``rank_u + rank_d`` first (``rank_d``: the longest path from an
  entry to the task, itself excluded), CPOP's priority, so the critical path goes first;
* ``peft_edf``: the larger ``rank_oct`` first: PEFT's optimistic cost table computed over the
  platform's device types (``cpu``, and ``gpu`` when it has accelerators) where a task can run
  on its own type only and a transfer is paid between two tasks of different types; ``rank_oct``
  is the mean of the task's row over the types it can run on (its own);
* ``llf``: least laxity first: ``deadline - now - rank_u`` is the slack left if the rest of the
  instance's critical path ran from now on; ``now`` is common to every ready task, so the order is
  that of ``deadline - rank_u`` (ties: the larger ``rank_u``).

Remaining ties go by job index. Each job's ``extra`` holds its position in every rule's order
(keys :data:`RULE_KEYS`; ``heft_edf`` and ``llf`` under the ``dag_edf`` and ``dag_llf`` keys of the
job selections of the same names), its ranks ``rank_u_s``, ``rank_d_s`` and ``rank_oct_s``, its
``device`` (``"cpu"`` or ``"gpu"``), ``cost_s`` and the task's ``cpu_s`` and ``gpu_s``.
"""

from __future__ import annotations

import dataclasses
import logging

from hdrm.dag.periodic import EDF_KEY, LLF_KEY, TaskGraph, TaskSet, expand
from hdrm.platform.model import Platform
from hdrm.workload.job import AcceleratorDemand, Job, Workload

logger = logging.getLogger(__name__)

#: The priority rules, in their action order.
RULES = ("heft_edf", "cpop_edf", "peft_edf", "llf")
#: ``Job.extra`` key of each rule's position.
RULE_KEYS = {"heft_edf": EDF_KEY, "cpop_edf": "dag_cpop_edf", "peft_edf": "dag_peft_edf",
             "llf": LLF_KEY}
#: Milli-core of host CPU held by a task running on a GPU (it feeds the device; 1/1000 core, so
#: that GPU tasks never keep CPU-only tasks off the cores).
GPU_HOST_MILLI = 1
CPU, GPU = "cpu", "gpu"


def on_gpu(graph: TaskGraph, gpus: bool) -> list[bool]:
    """Per task of ``graph``, whether it runs on a GPU: it has a GPU time and ``gpus`` (the
    platform has accelerators)."""
    return [gpus and task.gpu_s is not None for task in graph.tasks]


def task_costs(graph: TaskGraph, gpus: bool) -> list[float]:
    """Per task, its run time on the device type it is pinned to (see the module)."""
    return [t.gpu_s if g else t.cpu_s for t, g in zip(graph.tasks, on_gpu(graph, gpus))]


def graph_priorities(graph: TaskGraph, gpus: bool) -> dict[str, list[float]]:
    """``rank_u``, ``rank_d`` and ``rank_oct`` of every task of ``graph`` (see the module)."""
    costs = task_costs(graph, gpus)
    types = [GPU if g else CPU for g in on_gpu(graph, gpus)]
    succ: list[list[tuple[int, float]]] = [[] for _ in graph.tasks]
    pred: list[list[tuple[int, float]]] = [[] for _ in graph.tasks]
    for src, dst, transfer in graph.edges:
        succ[src].append((dst, transfer))
        pred[dst].append((src, transfer))
    rank_u = [0.0] * len(costs)
    for task in reversed(graph.order):
        rank_u[task] = costs[task] + max((c + rank_u[n] for n, c in succ[task]), default=0.0)
    rank_d = [0.0] * len(costs)
    for task in graph.order:
        rank_d[task] = max((rank_d[p] + costs[p] + c for p, c in pred[task]), default=0.0)
    return {"rank_u": rank_u, "rank_d": rank_d,
            "rank_oct": _oct_ranks(graph, costs, types, succ, gpus)}


def _oct_ranks(graph: TaskGraph, costs: list[float], types: list[str],
               succ: list[list[tuple[int, float]]], gpus: bool) -> list[float]:
    """PEFT's ``OCT(i, type)`` over the device types, then each task's value on its own type
    (the mean over the types it can run on, which is its one type)."""
    kinds = (CPU, GPU) if gpus else (CPU,)
    table = [dict.fromkeys(kinds, 0.0) for _ in costs]
    for task in reversed(graph.order):
        row = table[task]
        for kind in kinds:
            row[kind] = max((table[n][types[n]] + costs[n] + (0.0 if types[n] == kind else c)
                             for n, c in succ[task]), default=0.0)
    return [table[task][types[task]] for task in range(len(costs))]


def expand_on(taskset: TaskSet, platform: Platform) -> Workload:
    """The jobs of ``taskset`` on ``platform`` (see the module's description)."""
    workload = expand(taskset)
    gpus = bool(platform.accelerators)
    graphs = {g.name: g for g in taskset.graphs}
    info = {name: (graph_priorities(g, gpus), task_costs(g, gpus), on_gpu(g, gpus),
                   {t.name: i for i, t in enumerate(g.tasks)}) for name, g in graphs.items()}
    jobs = []
    for job in workload.jobs:
        prio, costs, pinned, index = info[job.extra["graph"]]
        t = index[job.extra["task"]]
        task = graphs[job.extra["graph"]].tasks[t]
        extra = dict(job.extra, rank_u_s=prio["rank_u"][t], rank_d_s=prio["rank_d"][t],
                     rank_oct_s=prio["rank_oct"][t], device=GPU if pinned[t] else CPU,
                     cost_s=costs[t], cpu_s=task.cpu_s, gpu_s=task.gpu_s)
        if pinned[t]:
            job = dataclasses.replace(job, run_time_s=costs[t], cpu_milli=GPU_HOST_MILLI,
                                      accel=AcceleratorDemand(1), extra=extra)
        elif gpus:
            job = dataclasses.replace(job, cpu_milli=1000, extra=extra)
        else:
            job = dataclasses.replace(job, extra=extra)
        jobs.append(job)
    for rule, positions in rule_positions(jobs).items():
        for job, pos in zip(jobs, positions):
            job.extra[RULE_KEYS[rule]] = pos
    logger.info("%s on %s: %d tasks, %d on GPUs", taskset.name, platform.name, len(jobs),
                sum(j.accel is not None for j in jobs))
    return dataclasses.replace(workload, jobs=jobs)


def rule_keys(job: Job) -> dict[str, tuple[float, float]]:
    """Each rule's sort key of a job, before the job index: (primary, tie-break)."""
    e = job.extra
    deadline, rank_u = e["deadline_s"], e["rank_u_s"]
    return {"heft_edf": (deadline, -rank_u), "cpop_edf": (deadline, -(rank_u + e["rank_d_s"])),
            "peft_edf": (deadline, -e["rank_oct_s"]), "llf": (deadline - rank_u, -rank_u)}


def rule_positions(jobs: list[Job]) -> dict[str, list[int]]:
    """Each job's position in every rule's order (ties by job index)."""
    keys = [rule_keys(job) for job in jobs]
    result = {}
    for rule in RULES:
        order = sorted(range(len(jobs)), key=lambda i: (*keys[i][rule], i))
        pos = [0] * len(jobs)
        for p, i in enumerate(order):
            pos[i] = p
        result[rule] = pos
    return result

