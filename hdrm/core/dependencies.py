"""The decision core's hold on dependent jobs: released when their preceding jobs have ended.

A :class:`DependencyGate` is built from a workload's
:class:`~hdrm.workload.dependencies.Dependencies`. Engines give it every job outcome
(:meth:`DependencyGate.ended`: completed, killed or rejected, at that time); it answers with the
jobs whose last preceding job just ended and their release times (end + think time). The
built-in engine submits them at that time; the Batsim adapter submits them once Batsim has
submitted them too and their release time has come.

A released job enters the queue as a copy of the workload's job whose ``submit_s`` is its release
time (:func:`released_copy`): policies measure its wait from then, and ``out_jobs.csv`` reports
the release time as its submission time. The workload's own jobs are never changed.
"""

from __future__ import annotations

import dataclasses
import logging

from hdrm.lazy import numpy as np

from hdrm.workload.dependencies import Dependencies
from hdrm.workload.job import Job

logger = logging.getLogger(__name__)


class DependencyGate:
    """Which jobs wait for preceding jobs, and when they are released.

    Args:
        deps: the workload's dependencies (job indices).
    """

    def __init__(self, deps: Dependencies) -> None:
        order = np.argsort(deps.pred, kind="stable")
        self._pred = deps.pred[order]
        self._job = deps.job[order].tolist()
        self._think = deps.think_s[order].tolist()
        jobs, counts = np.unique(deps.job, return_counts=True)
        #: Per waiting job, how many of its preceding jobs have not ended yet.
        self._pending: dict[int, int] = dict(zip(jobs.tolist(), counts.tolist()))
        self.dependent = frozenset(self._pending)
        self._release: dict[int, float] = {}

    def holds(self, idx: int) -> bool:
        """True when job ``idx`` waits for preceding jobs (whether released yet or not)."""
        return idx in self.dependent

    @property
    def waiting(self) -> int:
        """Jobs not released yet."""
        return len(self._pending)

    def ended(self, idx: int, now: float) -> list[tuple[float, int]]:
        """Job ``idx`` ended (or was rejected) at ``now``: the jobs this releases, as
        ``(release time, job index)`` in the order of their dependencies."""
        lo, hi = np.searchsorted(self._pred, [idx, idx + 1])
        if lo == hi:
            return []
        out = []
        release, pending = self._release, self._pending
        for k in range(int(lo), int(hi)):
            job = self._job[k]
            at = now + self._think[k]
            if at > release.get(job, -np.inf):
                release[job] = at
            pending[job] -= 1
            if not pending[job]:
                del pending[job]
                out.append((release.pop(job), job))
        return out


def released_copy(job: Job, release_s: float) -> Job:
    """A copy of ``job`` submitted at ``release_s`` (the workload's job stays as it was)."""
    return dataclasses.replace(job, submit_s=release_s, extra=job.extra)
