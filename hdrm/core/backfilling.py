"""Backfilling passes of the decision core: EASY and conservative, around a head that does not fit.

Mixed into :class:`~hdrm.core.scheduler.DecisionCore` (its attributes: the cluster mirror, the
backfilling mode, the running jobs' expected ends). The rules are those of
:mod:`hdrm.policies.backfill`: EASY starts a later job now if it ends before the head's shadow
time or uses no more than the extra cores; conservative backfilling gives every waiting job, in
order, the earliest reservation that delays no earlier one (per node, with cores and memory, when
memory is bounded).
"""

from __future__ import annotations

import math
from typing import Callable, Iterable

from hdrm.lazy import numpy as np

from hdrm.core.state import FREE, ClusterState
from hdrm.policies.backfill import (
    ExpectedEnds,
    NodeProfile,
    Profile,
    estimated_duration_s,
    head_fits_at_shadow,
    reservation,
)
from hdrm.policies.core_selection import CorePolicy
from hdrm.workload.job import Job

#: A started job and its cores.
Start = tuple[Job, list[int]]


class Backfilling:
    """The backfilling passes of :class:`~hdrm.core.scheduler.DecisionCore`."""

    state: ClusterState
    backfilling: str
    rng: np.random.Generator
    _ends: ExpectedEnds | None
    _start: Callable[[Job, list[int], float], None]
    expected_ends: Callable[[float], list[tuple[float, Job]]]

    def _backfill(self, now: float, head: Job, rest: Iterable[Job], core: CorePolicy
                  ) -> list[Start]:
        """Backfill around ``head`` with the jobs of ``rest`` in their order (read once, as far
        as needed: an iterator over the rest of the order): EASY (written here: most passes are
        EASY ones, one call each) or :meth:`_conservative`."""
        if self.backfilling == "conservative":
            return self._conservative(now, head, rest, core)
        state = self.state
        bounded = state.bounded_memory
        memory_bound = bounded and head.mem_mb > 0
        started: list[Start] = []
        free = state.free_cores  # changes only when a job starts here
        # the reservation is made when a first job could fit (often none does); the running
        # jobs' ends are listed only when memory bounds the head
        shadow: float | None = None
        ends: list[tuple[float, Job]] = []
        for job in rest:
            if free == 0:
                break
            res = job.res
            if res > free:
                continue
            if shadow is None:
                first = self.backfilling == "easy_first"
                if memory_bound or self._ends is None:
                    ends = self.expected_ends(now)
                    shadow, extra = reservation(state, ends, head, now, first)
                else:  # read off the kept ends as far as needed
                    shadow, extra = self._ends.core_reservation(free, head.res, now, first)
            walltime = job.walltime_s  # estimated_duration_s(job), inline
            ends_in_time = now + (walltime if 0.0 < walltime < math.inf else job.run_time_s
                                  ) <= shadow
            if not ends_in_time and res > extra:
                continue
            # res <= free: only memory can keep the job out (ClusterState.fits, inline)
            if bounded and job.mem_mb > 0 and not state.fits(job):
                continue
            cores = core.select(state, job, self.rng)
            if cores is None:
                continue
            if memory_bound and not ends_in_time and not head_fits_at_shadow(
                state, ends, head, shadow, cores, job.mem_mb
            ):
                continue
            self._start(job, cores, now)
            started.append((job, cores))
            free = state.free_cores
            if not ends_in_time:
                extra -= res
            elif memory_bound:
                ends = self.expected_ends(now)  # its cores come back by the shadow time
        return started

    def _conservative(self, now: float, head: Job, rest: Iterable[Job], core: CorePolicy
                      ) -> list[Start]:
        if self.state.bounded_memory:
            return self._conservative_memory(now, head, rest, core)
        state = self.state
        profile = Profile(now, state.free_cores, self.expected_ends(now))
        head_start = profile.earliest(head.res, estimated_duration_s(head))
        profile.reserve(head_start, estimated_duration_s(head), head.res)
        started: list[Start] = []
        for job in rest:
            duration = estimated_duration_s(job)
            t = profile.earliest(job.res, duration)
            if t <= now and state.fits(job):
                cores = core.select(state, job, self.rng)
                if cores is not None:
                    self._start(job, cores, now)
                    started.append((job, cores))
            if math.isfinite(t):
                profile.reserve(max(t, now), duration, job.res)
        return started

    def _conservative_memory(self, now: float, head: Job, rest: Iterable[Job], core: CorePolicy
                             ) -> list[Start]:
        """Conservative backfilling with per-node cores and memory (:class:`NodeProfile`)."""
        state = self.state
        profile = NodeProfile(state, now, self.expected_ends(now))
        duration = estimated_duration_s(head)
        profile.reserve(head, profile.earliest(head, duration), duration)
        started: list[Start] = []
        for job in rest:
            duration = estimated_duration_s(job)
            t = profile.earliest(job, duration)
            take = None
            if t <= now and state.fits(job):
                cores = core.select(state, job, self.rng)
                if cores is not None:
                    cores = _within(cores, profile.capacity_now(job, duration), state)
                    self._start(job, cores, now)
                    started.append((job, cores))
                    take = {}
                    for c in cores:
                        node = state.core_node[c]
                        take[node] = take.get(node, 0) + 1
            profile.reserve(job, max(t, now), duration, take)
        return started


def _within(cores: list[int], capacity, state: ClusterState) -> list[int]:
    """``cores`` if no node gives more than its ``capacity`` (free of later reservations); else
    the same number of free cores taken node by node within the capacities, lowest ids first."""
    node_of = state.core_node
    used: dict[int, int] = {}
    for c in cores:
        used[node_of[c]] = used.get(node_of[c], 0) + 1
    if all(k <= capacity[node] for node, k in used.items()):
        return cores
    chosen: list[int] = []
    left = {node: int(capacity[node]) for node in range(len(capacity)) if capacity[node] > 0}
    for c, owner in enumerate(state.core_job):
        node = node_of[c]
        if owner == FREE and left.get(node, 0) > 0:
            chosen.append(c)
            left[node] -= 1
            if len(chosen) == len(cores):
                break
    return chosen
