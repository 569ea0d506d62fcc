"""The Batsim adapter's dependent jobs: held by the decision core until their release.

Batsim submits every job of its workload file at its ``subtime``; a job with ``"dependencies"``
(:mod:`hdrm.workload.dependencies`) is then held, not queued, until its preceding jobs have ended
plus its think time, as on the built-in engine. ``hdrm replay --engine batsim`` writes such jobs
with the ``subtime`` of their predecessors, so Batsim has submitted them by their release; with a
workload file of one's own, a job released before Batsim submits it enters the queue when Batsim
submits it.

Releases later than the current instant need a decision at their time, when Batsim may have no
event: the adapter asks Batsim to call it then (CALL_ME_LATER) and the instant grouper
(:mod:`hdrm.batsim.instants`) opens an instant there. Ties between releases of one instant are
broken in the order they were made, as on the built-in engine.
"""

from __future__ import annotations

import heapq
import logging
from collections import deque
from collections.abc import Iterator

from hdrm.core.dependencies import DependencyGate, released_copy
from hdrm.workload.job import Job, Workload

logger = logging.getLogger(__name__)


class DependentJobs:
    """Which jobs the adapter holds, which are released, and which are due now.

    Args:
        workload: the workload Batsim runs (its dependencies must be set).
    """

    def __init__(self, workload: Workload) -> None:
        self.gate = DependencyGate(workload.dependencies)
        self._jobs = workload.jobs
        self._made = 0
        self._in_batsim: set[int] = set()
        self._waiting: dict[int, float] = {}
        #: Released jobs to queue at the current instant, in release order.
        self.due: deque[tuple[float, Job]] = deque()
        #: The queued copies of released jobs, by index (their ``submit_s``: the release time).
        self.copies: dict[int, Job] = {}
        #: Later releases kept here when the adapter decides at every message (no instants).
        self.later: list[tuple[float, int, Job]] = []

    @classmethod
    def of(cls, workload: Workload) -> DependentJobs | None:
        """The dependent jobs of ``workload``; None when it has no dependencies."""
        deps = workload.dependencies
        return cls(workload) if deps is not None and len(deps) else None

    def submitted(self, job: Job) -> bool:
        """Batsim submitted ``job``; True when it is a dependent job (held, not to be queued)."""
        if not self.gate.holds(job.idx):
            return False
        self._in_batsim.add(job.idx)
        if job.idx in self._waiting:  # released before Batsim submitted it: queue it now
            self._waiting.pop(job.idx)
            self.due.append((-1.0, job))
        return True

    def ended(self, idx: int, now: float) -> list[tuple[float, int, Job]]:
        """Job ``idx`` ended or was rejected at ``now``; returns the releases after ``now`` as
        ``(time, order, job)`` (the caller asks Batsim to call then); those at ``now`` are due."""
        later = []
        for release_s, job_idx in self.gate.ended(idx, now):
            self._made += 1
            job = self._jobs[job_idx]
            if release_s <= now:
                self.release(job, release_s)
            else:
                later.append((release_s, self._made, job))
        return later

    def release(self, job: Job, release_s: float) -> None:
        """``job``'s time has come: due now if Batsim has submitted it, else when it does."""
        if job.idx in self._in_batsim:
            self.due.append((release_s, job))
        else:
            self._waiting[job.idx] = release_s

    def due_jobs(self, now: float) -> Iterator[Job]:
        """The jobs to queue at ``now``, as copies submitted then, in release order (jobs
        released while they are queued, after a rejection, come too)."""
        while self.later and self.later[0][0] <= now:
            release_s, _, job = heapq.heappop(self.later)
            self.release(job, release_s)
        while self.due:
            _, job = self.due.popleft()
            copy = self.copies[job.idx] = released_copy(job, now)
            yield copy

    def current(self, job: Job) -> Job:
        """The object the decision core knows for ``job`` (its released copy, if any)."""
        return self.copies.get(job.idx, job)
