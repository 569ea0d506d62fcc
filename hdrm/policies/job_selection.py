"""Job selection policies: in which order the queue is considered.

Each policy orders the waiting jobs; the scheduler tries them in that order. Sorting is stable, so
ties keep submission order. ``w = now - submit`` is the real waiting time, ``r`` the requested time
(walltime), ``n`` the requested processors, ``s`` the submission time in the trace's own clock.
The ``*_pred`` variants put a predicted run time in place of ``r`` (the mean run time of the
user's last two ended jobs, at most the requested time: :mod:`hdrm.core.predictor`); they order
with a predictor the decision core passes to :meth:`JobPolicy.order`.

HDeepRM's selections: ``random``, ``first`` (FCFS), ``shortest`` (requested time), ``smallest``
(processors), ``low_mem`` (memory per core), ``low_mem_bw`` (memory bandwidth per core).
Queue heuristics of the literature: ``fcfs``, ``sjf``, ``ljf``, ``wfp3``, ``unicep``, ``f1``;
with predicted run times: ``sjf_pred``, ``wfp3_pred``, ``unicep_pred``.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Any, Callable

from hdrm.lazy import numpy as np

from hdrm.registry import Registry
from hdrm.workload.job import Job

KeyFn = Callable[[Job, float], float]
#: The key of a ``*_pred`` policy: ``(job, now, r)`` with ``r`` the predicted run time (s).
PredictedKeyFn = Callable[[Job, float, float], float]


@dataclass(frozen=True)
class JobPolicy:
    """An ordering of the queue.

    Attributes:
        name: registered name.
        key: sort key of a job at time ``now`` (smallest first); None for random and FCFS.
        dynamic: the key depends on ``now`` (the order must be recomputed at every decision).
        doc: definition and source.
        predicted: the key is a :data:`PredictedKeyFn`: it takes the job's predicted run time.
    """

    name: str
    key: KeyFn | PredictedKeyFn | None
    dynamic: bool
    doc: str
    predicted: bool = False

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickle a registered policy by its name, so that the copy is the registered object
        (its key may be a lambda); any other policy field by field."""
        if self.name in JOB_POLICIES and JOB_POLICIES.get(self.name) is self:
            return (_registered, (self.name,))
        return super().__reduce_ex__(protocol)

    @property
    def static(self) -> bool:
        """True when the order depends only on the jobs (a key that ignores ``now``, draws no
        random number and needs no prediction): :class:`StaticOrder` can keep it."""
        return self.key is not None and not self.dynamic and not self.predicted

    def order(self, queue: list[Job], now: float, rng: np.random.Generator,
              predict: Callable[[Job], float] | None = None) -> list[Job]:
        """Return the queue in this policy's order (``queue`` itself when already ordered).

        ``predict`` gives a job's predicted run time; the ``*_pred`` policies need it.
        """
        if self.name == "random":
            if len(queue) <= 1:
                return queue
            return [queue[i] for i in rng.permutation(len(queue))]
        if self.key is None:
            return queue
        key = self.key
        if self.predicted:
            if predict is None:
                raise ValueError(f"job policy {self.name!r} orders by predicted run times: "
                                 "pass a predictor")
            return sorted(queue, key=lambda job: key(job, now, max(predict(job), 1.0)))
        return sorted(queue, key=lambda job: key(job, now))


class StaticOrder:
    """The queue in a :attr:`JobPolicy.static` policy's order, kept sorted as jobs come and go.

    :meth:`JobPolicy.order` sorts stably, so jobs with equal keys keep their queue order, which is
    their order of arrival. Here every job is filed under ``(key, arrival number)`` when it
    arrives, which gives the same order without sorting the queue at every decision.

    Args:
        policy: a static policy.
    """

    def __init__(self, policy: JobPolicy) -> None:
        self.policy = policy
        #: The queued jobs in the policy's order.
        self.jobs: list[Job] = []
        self._entries: list[tuple[float, int]] = []
        self._entry: dict[Job, tuple[float, int]] = {}

    def add(self, job: Job, arrival: int) -> bool:
        """File ``job`` (its ``arrival`` number orders equal keys); False, and nothing filed,
        when its key is not a number that orders totally (NaN, or not a number at all)."""
        key = self.policy.key(job, 0.0)
        if not isinstance(key, (int, float)) or key != key:
            return False
        entry = (key, arrival)
        i = bisect.bisect_right(self._entries, entry)
        self._entries.insert(i, entry)
        self.jobs.insert(i, job)
        self._entry[job] = entry
        return True

    def remove(self, job: Job) -> None:
        """Take ``job`` out (it started); a job never filed is ignored."""
        entry = self._entry.pop(job, None)
        if entry is None:
            return
        i = bisect.bisect_left(self._entries, entry)
        del self._entries[i]
        del self.jobs[i]
        if not self.jobs:
            self._entry = {}  # a dict keeps its largest table after deletions: let it go


def _registered(name: str) -> Any:
    """The policy registered as ``name`` (how pickled policies come back)."""
    return JOB_POLICIES.get(name)


JOB_POLICIES: Registry[JobPolicy] = Registry("job selection policy")


def _add(name: str, key: KeyFn | None, dynamic: bool, doc: str, *aliases: str) -> None:
    JOB_POLICIES.add(name, JobPolicy(name, key, dynamic, doc), *aliases)


def _add_predicted(name: str, key: PredictedKeyFn, doc: str) -> None:
    # dynamic: predictions change as jobs end, even where the key does not depend on ``now``
    JOB_POLICIES.add(name, JobPolicy(name, key, True, doc, predicted=True))


def _requested(job: Job) -> float:
    r = job.walltime_s
    return r if math.isfinite(r) and r > 0 else max(job.run_time_s, 1.0)


def _wfp3(job: Job, now: float, r: float) -> float:
    return -(((now - job.submit_s) / r) ** 3) * job.res


def _unicep(job: Job, now: float, r: float) -> float:
    return -(now - job.submit_s) / (max(1.0, math.log2(job.res)) * r)


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
_add("wfp3", lambda j, now: _wfp3(j, now, _requested(j)), True,
     "WFP3: largest (w / r)^3 * n first; favours jobs that waited long relative to their length "
     "(Tang et al., 'Fault-aware, utility-based job scheduling on Blue Gene/P systems', "
     "CLUSTER 2009).")
_add("unicep", lambda j, now: _unicep(j, now, _requested(j)), True,
     "UNICEP: largest w / (log2(n) * r) first, log2(n) floored at 1 so serial jobs stay finite "
     "(Tang et al., CLUSTER 2009).")
_add("f1", _f1, False,
     "F1: smallest log10(r) * n + 870 * log10(s) first, s the submission time in the trace's clock "
     "(Carastan-Santos and de Camargo, 'Obtaining dynamic scheduling policies with simulation and "
     "machine learning', SC17).")
_PREDICTION = ("Tsafrir, Etsion and Feitelson, 'Backfilling using system-generated predictions "
               "rather than user runtime estimates', IEEE TPDS 2007")
_add_predicted("sjf_pred", lambda j, now, r: r,
               f"SJF with the predicted run time for r: shortest predicted first ({_PREDICTION}).")
_add_predicted("wfp3_pred", _wfp3,
               f"WFP3 with the predicted run time for r: largest (w / r)^3 * n first ({_PREDICTION}).")
_add_predicted("unicep_pred", _unicep,
               f"UNICEP with the predicted run time for r: largest w / (log2(n) * r) first "
               f"({_PREDICTION}).")
_add("dag_edf", lambda j, now: j.extra.get("dag_edf", math.inf), False,
     "Periodic DAG instances, earliest absolute deadline first; within an instance the larger "
     "HEFT upward rank first (positions made by hdrm.dag.periodic.expand; other jobs last, FCFS).")
_add("dag_llf", lambda j, now: j.extra.get("dag_llf", math.inf), False,
     "Periodic DAG instances, least laxity first: deadline - now - upward rank, i.e. smallest "
     "deadline - rank (positions made by hdrm.dag.periodic.expand; other jobs last, FCFS).")
