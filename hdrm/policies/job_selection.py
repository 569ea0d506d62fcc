"""Job selection policies: in which order the queue is considered.

Each policy orders the waiting jobs; the scheduler tries them in that order. Sorting is stable, so
ties keep submission order. ``w = now - submit`` is the real waiting time, ``r`` the requested time
(walltime), ``n`` the requested processors, ``s`` the submission time in the trace's own clock.

HDeepRM's selections: ``random``, ``first`` (FCFS), ``shortest`` (requested time), ``smallest``
(processors), ``low_mem`` (memory per core), ``low_mem_bw`` (memory bandwidth per core).
Queue heuristics of the literature: ``fcfs``, ``sjf``, ``ljf``, ``wfp3``, ``unicep``, ``f1``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from hdrm.registry import Registry
from hdrm.workload.job import Job

KeyFn = Callable[[Job, float], float]


@dataclass(frozen=True)
class JobPolicy:
    """An ordering of the queue.

    Attributes:
        name: registered name.
        key: sort key of a job at time ``now`` (smallest first); None for random and FCFS.
        dynamic: the key depends on ``now`` (the order must be recomputed at every decision).
        doc: definition and source.
    """

    name: str
    key: KeyFn | None
    dynamic: bool
    doc: str

    def order(self, queue: list[Job], now: float, rng: np.random.Generator) -> list[Job]:
        """Return the queue in this policy's order (``queue`` itself when already ordered)."""
        if self.name == "random":
            if len(queue) <= 1:
                return queue
            return [queue[i] for i in rng.permutation(len(queue))]
        if self.key is None:
            return queue
        key = self.key
        return sorted(queue, key=lambda job: key(job, now))


JOB_POLICIES: Registry[JobPolicy] = Registry("job selection policy")


def _add(name: str, key: KeyFn | None, dynamic: bool, doc: str, *aliases: str) -> None:
    JOB_POLICIES.add(name, JobPolicy(name, key, dynamic, doc), *aliases)


def _requested(job: Job) -> float:
    r = job.walltime_s
    return r if math.isfinite(r) and r > 0 else max(job.run_time_s, 1.0)


def _wfp3(job: Job, now: float) -> float:
    r = _requested(job)
    return -(((now - job.submit_s) / r) ** 3) * job.res


def _unicep(job: Job, now: float) -> float:
    return -(now - job.submit_s) / (max(1.0, math.log2(job.res)) * _requested(job))


def _f1(job: Job, now: float) -> float:
    r = max(_requested(job), 0.1)
    s = job.trace_submit_s if job.trace_submit_s > 0 else 0.1
    return math.log10(r) * job.res + 870.0 * math.log10(s)


_add("random", None, True, "A uniformly random order at every decision (seeded).")
_add("first", None, False, "First come, first served: submission order (HDeepRM's 'first').", "fcfs")
_add("shortest", lambda j, now: _requested(j), False,
     "Shortest requested time first (HDeepRM's 'shortest').")
_add("smallest", lambda j, now: j.res, False, "Fewest requested processors first (HDeepRM).")
_add("low_mem", lambda j, now: j.mem_mb, False, "Lowest memory per core first (HDeepRM).")
_add("low_mem_bw", lambda j, now: j.mem_bw_gbps, False,
     "Lowest memory bandwidth per core first (HDeepRM).")
_add("sjf", lambda j, now: _requested(j), False,
     "Shortest Job First: smallest requested time r first.")
_add("ljf", lambda j, now: -_requested(j), False, "Longest Job First: largest requested time r first.")
_add("wfp3", _wfp3, True,
     "WFP3: largest (w / r)^3 * n first; favours jobs that waited long relative to their length "
     "(Tang et al., 'Fault-aware, utility-based job scheduling on Blue Gene/P systems', "
     "CLUSTER 2009).")
_add("unicep", _unicep, True,
     "UNICEP: largest w / (log2(n) * r) first, log2(n) floored at 1 so serial jobs stay finite "
     "(Tang et al., CLUSTER 2009).")
_add("f1", _f1, False,
     "F1: smallest log10(r) * n + 870 * log10(s) first, s the submission time in the trace's clock "
     "(Carastan-Santos and de Camargo, 'Obtaining dynamic scheduling policies with simulation and "
     "machine learning', SC17).")
