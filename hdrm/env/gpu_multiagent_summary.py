"""The figures of a finished multi-agent GPU episode, as ``hdrm replay`` computes them.

:func:`episode_summary` reads :func:`~hdrm.sim.gpu_outputs.gpu_summary` (the replay's own
summary: mean JCT, makespan, GPU allocation rate, cost) and adds, from the same job rows
(:func:`~hdrm.sim.outputs.job_results`), the 95th percentile of the JCT (nearest rank,
:func:`~hdrm.results.sla.nearest_rank`) and the longest wait, over the tasks that ran.
"""

from __future__ import annotations

import numpy as np

from hdrm.results.sla import nearest_rank
from hdrm.sim.engine import REJECTED, SimulationResult
from hdrm.sim.gpu_outputs import gpu_summary
from hdrm.sim.outputs import job_results

#: Keys of :func:`episode_summary`, with their units.
SUMMARY_KEYS = {"avg_jct": "s", "p95_jct": "s", "max_wait": "s", "makespan": "s",
                "gpu_allocation_rate": "fraction of the cluster's milli-GPU",
                "gpu_cost": "USD", "nb_finished": "tasks", "nb_rejected": "tasks"}


def episode_summary(result: SimulationResult) -> dict[str, float]:
    """``avg_jct``, ``p95_jct``, ``max_wait``, ``makespan`` (seconds), ``gpu_allocation_rate``
    (time average over the makespan of the allocated share of all milli-GPU), ``gpu_cost``
    (USD), ``nb_finished`` and ``nb_rejected`` of a (finished) GPU run."""
    s = gpu_summary(result)
    ran = [r for r in job_results(result) if r.final_state != REJECTED]
    jct = np.array([r.turnaround_time for r in ran], dtype=float)
    return {
        "avg_jct": float(s["mean_jct_s"]),
        "p95_jct": nearest_rank(jct, 0.95) if len(jct) else 0.0,
        "max_wait": max((r.waiting_time for r in ran), default=0.0),
        "makespan": float(s["makespan_s"]),
        "gpu_allocation_rate": float(s["gpu_allocation_rate_all"]),
        "gpu_cost": float(s["cost_usd"]),
        "nb_finished": s["nb_finished"],
        "nb_rejected": s["nb_rejected"],
    }
