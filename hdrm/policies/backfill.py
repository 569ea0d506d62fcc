"""Backfilling: starting jobs out of order without delaying reserved ones.

Reservations use requested times (walltimes): a running job is expected to end at
``start + walltime`` (or its run time when it has no walltime), never before now.

``none``
    Strict head of line: the scheduler stops at the first job that does not fit.
``easy``
    EASY (Lifka 1995; Mu'alem and Feitelson 2001): the first job that does not fit (the head) gets a
    reservation at the *shadow time*, the earliest time enough cores are free for it; the *extra*
    cores are those free at the shadow time beyond the head's need. A later job may start now if it
    fits now and either ends before the shadow time or uses no more than the extra cores (which it
    then consumes).
``conservative``
    Every waiting job, in queue order, gets the earliest reservation that delays no earlier one; a
    job starts now when its reservation is now.

On a heterogeneous platform a reservation counts the cores that can hold the job's memory: the
release of running jobs is replayed node by node and the cores whose node has enough free memory
are counted.
"""

from __future__ import annotations

import bisect
import math
from typing import Iterator

from hdrm.core.state import ClusterState
from hdrm.registry import Registry
from hdrm.workload.job import Job

BACKFILLING: Registry[str] = Registry("backfilling mode")
for _name in ("none", "easy", "conservative"):
    BACKFILLING.add(_name, _name)


def estimated_duration_s(job: Job) -> float:
    """The duration the scheduler assumes: the walltime, or the run time when there is none."""
    return job.walltime_s if job.has_walltime else job.run_time_s


def reservation(
    state: ClusterState, ends: list[tuple[float, Job]], head: Job, now: float
) -> tuple[float, int]:
    """Shadow time and extra cores for ``head``.

    Args:
        state: the cluster now.
        ends: running jobs with their expected end times, sorted by end time.
        head: the job to reserve for.
        now: current time.

    Returns:
        ``(shadow_s, extra)``; ``(inf, 0)`` when the head cannot fit even on an empty cluster.
    """
    shadow = math.inf
    avail = 0
    for end, avail_after in _availability(state, ends, head):
        if shadow < math.inf and end > shadow:
            break  # jobs ending at the shadow time itself all count towards the extra cores
        avail = avail_after
        if shadow == math.inf and avail >= head.res:
            shadow = max(end, now)
    if shadow == math.inf:
        return math.inf, 0
    return shadow, avail - head.res


def _availability(
    state: ClusterState, ends: list[tuple[float, Job]], head: Job
) -> Iterator[tuple[float, int]]:
    """``(time, cores available to head)`` now and after each running job's expected end."""
    mem_mb = head.mem_mb
    if mem_mb <= 0 or not state.bounded_memory:
        avail = state.free_cores
        yield -math.inf, avail
        for end, job in ends:
            avail += job.res
            yield end, avail
        return
    free = list(state.node_free_cores)
    mem = list(state.node_free_mem)
    core_node = state.core_node
    yield -math.inf, state.allocatable(mem_mb)
    for end, job in ends:
        for c in state.alloc[job.idx]:
            node = core_node[c]
            free[node] += 1
            mem[node] += job.mem_mb
        yield end, sum(min(f, int(m // mem_mb)) for f, m in zip(free, mem) if f)


class Profile:
    """Free cores over time, a step function used by conservative backfilling.

    ``times[i]`` starts a segment with ``free[i]`` free cores, up to ``times[i + 1]``.
    """

    def __init__(self, now: float, free_now: int, ends: list[tuple[float, Job]]) -> None:
        self.times = [now]
        self.free = [free_now]
        for end, job in ends:
            end = max(end, now)
            if end == self.times[-1]:
                self.free[-1] += job.res
            else:
                self.times.append(end)
                self.free.append(self.free[-1] + job.res)

    def earliest(self, res: int, duration_s: float) -> float:
        """Earliest start time at which ``res`` cores stay free for ``duration_s``."""
        times, free = self.times, self.free
        n = len(times)
        for i in range(n):
            if free[i] < res:
                continue
            start = times[i]
            end = start + duration_s
            j = i + 1
            while j < n and times[j] < end and free[j] >= res:
                j += 1
            if j == n or times[j] >= end:
                return start
        return math.inf

    def reserve(self, start: float, duration_s: float, res: int) -> None:
        """Take ``res`` cores from ``start`` for ``duration_s``."""
        if not math.isfinite(start):
            return
        end = start + duration_s
        self._split(start)
        if math.isfinite(end):
            self._split(end)
        for i, t in enumerate(self.times):
            if start <= t < end:
                self.free[i] -= res

    def _split(self, t: float) -> None:
        times = self.times
        i = bisect.bisect_right(times, t)
        if i and times[i - 1] == t:
            return
        times.insert(i, t)
        self.free.insert(i, self.free[i - 1] if i else 0)
