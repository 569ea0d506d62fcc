"""A WfCommons workflow as dependent jobs of the engine, for the queue policies.

List schedulers (:mod:`hdrm.dag.listsched`) place a whole workflow known in advance. Here each
task is instead a one-core job submitted at 0 whose work is its recorded run time at the
platform's reference speed (``ops_gflop = run time x reference GFLOP/s``, so a core of relative
speed ``s`` runs it in run time / ``s``, as ``hdrm dag schedule`` counts), and each edge ``a -> b`` a job
dependency: ``b`` is released once every parent has ended plus that edge's transfer time
(:mod:`hdrm.workload.dependencies`). The engine then serves the ready tasks with any queue
policy (FCFS, SJF ...), as it serves independent jobs.

The engine releases a job a fixed time after its predecessor ends, before it knows where the job
will run, so a transfer cannot depend on the placement: every edge pays ``latency + data /
bandwidth`` over the platform's *slowest* link between two cores (:func:`slowest_link`): the
network between nodes (the lower of two clusters' networks, with both latencies), or, on a
one-node platform, the lower memory bandwidth of its processors. That is an upper bound of the
transfer the list schedulers compute per pair of cores.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from hdrm.dag.model import Network
from hdrm.dag.ranks import longest_min_path_s
from hdrm.dag.wfformat import Workflow, to_dag
from hdrm.platform.model import Platform
from hdrm.workload.dependencies import Dependencies
from hdrm.workload.job import PROFILE_PARALLEL_HOMOGENEOUS, Job, Workload

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Link:
    """A link's bandwidth (MB/s) and latency (s)."""

    bandwidth_mb_s: float
    latency_s: float

    def transfer_s(self, data_mb: float) -> float:
        """Seconds to send ``data_mb`` MB (0 for no data)."""
        return self.latency_s + data_mb / self.bandwidth_mb_s if data_mb > 0 else 0.0


def slowest_link(platform: Platform) -> Link:
    """The slowest link between two cores of ``platform`` (see the module)."""
    if len(platform.nodes) <= 1:
        return Link(min(platform.processor_mem_bw_gbps) * 1000.0, 0.0)
    nets = [c.network for c in platform.clusters]
    latency_us = sum(sorted(n.latency_us for n in nets)[-2:]) if len(nets) > 1 else \
        nets[0].latency_us
    return Link(min(n.bandwidth_gbps for n in nets) * 1000.0 / 8.0, latency_us / 1e6)


def workflow_workload(workflow: Workflow, platform: Platform) -> Workload:
    """The workflow's tasks as dependent one-core jobs (see the module).

    Job ``i`` is task ``i`` (its id the task's id, submitted at 0, no walltime).
    """
    link = slowest_link(platform)
    ref = platform.reference_gflops
    jobs = [Job(i, name, 0.0, 1, math.inf, float(run_s), ops_gflop=float(run_s) * ref,
                req_ops_gflop=math.inf, trace_submit_s=0.0, profile=name,
                profile_type=PROFILE_PARALLEL_HOMOGENEOUS, extra={"task": name})
            for i, (name, run_s) in enumerate(zip(workflow.tasks, workflow.runtime_s))]
    deps = None
    if workflow.edges:
        parent, child, data = (np.array(column) for column in zip(*workflow.edges))
        think = np.array([link.transfer_s(float(mb)) for mb in data], dtype=np.float64)
        deps = Dependencies(child.astype(np.int64), parent.astype(np.int64), think)
    logger.info("%s: %d tasks as jobs, %d dependencies, transfers over %.1f MB/s",
                workflow.name, len(jobs), len(workflow.edges), link.bandwidth_mb_s)
    return Workload(jobs, name=workflow.name, source=workflow.name, nb_res=None,
                    dependencies=deps)


def critical_path_s(workflow: Workflow, speed: float) -> float:
    """The longest path of run times over ``speed`` with free transfers (SLR's lower bound).

    Raises:
        WorkloadError: the workflow has a cycle (one line naming a task on it).
    """
    return longest_min_path_s(to_dag(workflow, Network.uniform(1), [speed]))
