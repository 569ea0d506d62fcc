"""The built-in engine's instants, rebuilt from Batsim's messages: where the adapter decides.

The built-in engine decides once per instant: it takes every job end and every submission dated
at one time ``t`` (equal floats), then runs one decision. The real Batsim may deliver the events of
one instant in several messages: each event is an actor of SimGrid waking up and sending a message
to Batsim's server, which answers the scheduler as soon as its mailbox is empty, so a job end whose
message arrives a moment later (a parallel task that SimGrid ends just after the other events of
its date, a message crossing a link) opens a message of its own. Batsim 4.2.1 refuses a
CALL_ME_LATER at the current time ("awaken in the past"), so the adapter cannot ask to be called
once the instant is over; and a later call would delay every decision.

:class:`InstantGrouper` runs the built-in engine's machine model alongside Batsim (the same
:class:`~hdrm.sim.machine.Machine`, fed the same power-state changes and job starts), so it knows
which jobs end and which jobs are submitted at each instant of the built-in engine. The adapter
hands it every event Batsim reports and decides only when an instant is complete: all of its ends
and submissions have arrived, in however many messages. Events are then given to the decision core
in the built-in engine's order (ends in end order, then submissions in submission order), at the
instant's own time. Batsim's times still rule the run (the jobs start when Batsim says, and Batsim
times them); the model only says which events belong together.

When the model and Batsim disagree by more than :data:`TOLERANCE_S` (a job ends elsewhere in
Batsim, an expected event does not come), the grouper raises :class:`Diverged`; the adapter then
falls back to deciding at every message, as a plain PyBatsim scheduler does.
"""

from __future__ import annotations

import heapq
import logging
from dataclasses import dataclass, field
from typing import Iterator

from hdrm.platform.model import Platform
from hdrm.sim.job_end import start_job
from hdrm.sim.machine import JobEnd, machine_for
from hdrm.workload.job import PROFILE_DELAY, Job

logger = logging.getLogger(__name__)

#: Seconds by which Batsim's time may differ from the model's before the grouping is given up.
TOLERANCE_S = 0.01


class Diverged(Exception):
    """Batsim and the machine model no longer agree on when events happen."""


@dataclass
class Instant:
    """The events of one instant of the built-in engine.

    Attributes:
        time_s: the instant.
        ends: the jobs that end then, in the machine's end order.
        arrivals: the jobs submitted then, in submission order.
        releases: dependent jobs released then (:mod:`hdrm.batsim.dependents`), in release order.
    """

    time_s: float
    ends: list[JobEnd] = field(default_factory=list)
    arrivals: list[Job] = field(default_factory=list)
    releases: list[Job] = field(default_factory=list)


class InstantGrouper:
    """Groups the events Batsim reports into the built-in engine's instants.

    Args:
        platform: the platform Batsim runs.
        jobs: the workload's jobs (Batsim's submissions), the decision core's own objects.
    """

    def __init__(self, platform: Platform, jobs: list[Job]) -> None:
        self.machine = machine_for(platform, kill_on_walltime=True)
        #: Power states only re-time jobs that compute; a delay job's end ignores them.
        self._timed_by_states = any(job.profile_type != PROFILE_DELAY for job in jobs)
        self._by_idx = {job.idx: job for job in jobs}
        self._arrivals = sorted(jobs, key=lambda j: j.submit_s)  # stable, as the built-in engine
        self._next = 0
        self._open: Instant | None = None
        self._ended: set[int] = set()
        self._submitted: set[int] = set()
        #: Reported events not yet given to the decision core, in Batsim's order: (kind, job).
        self.unprocessed: list[tuple[str, Job]] = []
        self._problem: str | None = None
        #: Releases of dependent jobs after their instant: (time, order, job).
        self._releases: list[tuple[float, int, Job]] = []

    # ------------------------------------------------------------------ Batsim's events
    def submitted(self, job: Job) -> None:
        """Batsim submitted ``job``."""
        self._submitted.add(job.idx)
        self.unprocessed.append(("submit", job))

    def ended(self, job: Job, now: float) -> None:
        """Batsim reported the end of ``job`` at ``now``."""
        self._ended.add(job.idx)
        self.unprocessed.append(("end", job))
        opened = self._open is not None and any(e.key == job.idx for e in self._open.ends)
        if opened:
            return
        if not self.machine.is_running(job.idx):
            self._problem = f"job {job.id} ended in Batsim at {now:.6f}, not running in the model"
        elif self.machine.expected_end_s(job.idx) > now + TOLERANCE_S:
            self._problem = (f"job {job.id} ended in Batsim at {now:.6f}, in the model at "
                             f"{self.machine.expected_end_s(job.idx):.6f}")

    def release(self, time_s: float, order: int, job: Job) -> None:
        """A dependent job is released at ``time_s``: an instant then (Batsim calls then)."""
        heapq.heappush(self._releases, (time_s, order, job))

    # ------------------------------------------------------------------ the model
    def apply_states(self, changes: dict[int, tuple[int, float]]) -> None:
        """The decision core's power-state changes, applied to the model now."""
        if self._timed_by_states:
            self.machine.apply_states(changes)

    def start(self, job: Job, cores: list[int]) -> None:
        """The decision core started ``job`` on ``cores`` at the current instant."""
        start_job(self.machine.start, job, cores)

    def complete_instants(self, now: float) -> Iterator[Instant]:
        """The instants whose events have all arrived, in order, once Batsim's time is ``now``.

        Give each one to the decision core (and its starts to :meth:`start`) before asking for
        the next.

        Raises:
            Diverged: Batsim and the model disagree (the message says how).
        """
        while True:
            if self._problem is not None:
                raise Diverged(self._problem)
            instant = self._open or self._open_next()
            if instant is None:
                return
            if instant.releases and instant.time_s > now + TOLERANCE_S:
                return  # Batsim calls the adapter at the release
            if not self._arrived(instant):
                if now > instant.time_s + TOLERANCE_S:
                    raise Diverged(f"Batsim is at {now:.6f} and events of {instant.time_s:.6f} "
                                   "have not come")
                if self._ended and instant.time_s > now + TOLERANCE_S:
                    raise Diverged(f"Batsim ended jobs at {now:.6f} that end at "
                                   f"{instant.time_s:.6f} or later in the model")
                return
            self._open = None
            for end in instant.ends:
                self._ended.discard(end.key)
            for job in instant.arrivals:
                self._submitted.discard(job.idx)
            done = {end.key for end in instant.ends} | {job.idx for job in instant.arrivals}
            self.unprocessed = [(k, j) for k, j in self.unprocessed if j.idx not in done]
            yield instant

    def _open_next(self) -> Instant | None:
        arrivals = self._arrivals
        t_sub = arrivals[self._next].submit_s if self._next < len(arrivals) else float("inf")
        t = min(t_sub, self.machine.next_time())
        if self._releases:
            t = min(t, self._releases[0][0])
        if t == float("inf"):
            return None
        instant = Instant(t, self.machine.advance(t))
        while self._releases and self._releases[0][0] <= t:
            instant.releases.append(heapq.heappop(self._releases)[2])
        while self._next < len(arrivals) and arrivals[self._next].submit_s <= t:
            instant.arrivals.append(arrivals[self._next])
            self._next += 1
        self._open = instant
        return instant

    @property
    def pending_releases(self) -> list[tuple[float, int, Job]]:
        """Releases not yet in an instant, as ``(time, order, job)`` (a heap)."""
        return self._releases

    def _arrived(self, instant: Instant) -> bool:
        ended, submitted = self._ended, self._submitted
        return (all(end.key in ended for end in instant.ends)
                and all(job.idx in submitted for job in instant.arrivals))

    def job(self, idx: int) -> Job:
        """The workload's job of index ``idx``."""
        return self._by_idx[idx]
