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
``easy_first``
    EASY with the extra cores counted the way RLScheduler-derived simulators count them: running
    jobs are released one at a time in expected-end order (smaller jobs first among equal ends) and
    the count stops at the first release after which the head fits, so cores of other jobs expected
    to end at that same instant are not counted as extra. The shadow time is the same as ``easy``;
    only the extra cores can be fewer. This is the variant behind the event-driven EASY values of
    RLScheduler's protocol (``benchmarks/reproduce_rlscheduler.py``).
``conservative``
    Every waiting job, in queue order, gets the earliest reservation that delays no earlier one; a
    job starts now when its reservation is now.

On a platform with bounded node memory a reservation counts the cores that can hold the job's
memory: the release of running jobs is replayed node by node and the cores whose node has enough
free memory are counted. EASY then backfills a job on the extra cores only if the head still fits,
memory included, with that job's cores held at the shadow time; conservative backfilling keeps free
cores and memory per node over time (:class:`NodeProfile`).
"""

from __future__ import annotations

import bisect
import math
import operator
from typing import Iterable, Iterator

from hdrm.lazy import numpy as np

from hdrm.core.state import ClusterState
from hdrm.registry import Registry
from hdrm.workload.job import Job

#: The expected end of an :class:`ExpectedEnds` entry.
_END = operator.itemgetter(0)

BACKFILLING: Registry[str] = Registry("backfilling mode")
for _name in ("none", "easy", "easy_first", "conservative"):
    BACKFILLING.add(_name, _name)


def estimated_duration_s(job: Job) -> float:
    """The duration the scheduler assumes: the walltime, or the run time when there is none
    (:attr:`~hdrm.workload.job.Job.has_walltime`: finite and positive, tested inline here)."""
    walltime = job.walltime_s
    return walltime if 0.0 < walltime < math.inf else job.run_time_s


class ExpectedEnds:
    """Running jobs by expected end, kept sorted as jobs start and end (what reservations read).

    :meth:`at` gives what sorting the running jobs (in start order) by ``max(end, now)`` would
    give, stably: jobs whose expected end has passed all end "now", in start order, then the
    others by end, equal ends in start order. With ``by_size`` (``easy_first``, whose count of
    extra cores depends on the order of equal ends) equal ends go smaller jobs first, then in
    start order. Entries are ``(end, start number)`` (``(end, cores, start number)`` by size).

    Args:
        by_size: order equal ends by the jobs' cores.
    """

    def __init__(self, by_size: bool = False) -> None:
        self.by_size = by_size
        self._entries: list[tuple] = []
        self._jobs: list[Job] = []
        self._entry: dict[Job, tuple] = {}
        self._started = 0

    def __len__(self) -> int:
        return len(self._jobs)

    def add(self, job: Job, end_s: float) -> None:
        """``job`` started and is expected to end at ``end_s``."""
        self._started += 1
        entry = (end_s, job.res, self._started) if self.by_size else (end_s, self._started)
        i = bisect.bisect_right(self._entries, entry)
        self._entries.insert(i, entry)
        self._jobs.insert(i, job)
        self._entry[job] = entry

    def remove(self, job: Job) -> None:
        """``job`` ended."""
        i = bisect.bisect_left(self._entries, self._entry.pop(job))
        del self._entries[i]
        del self._jobs[i]
        if not self._jobs:
            self._entry = {}  # a dict keeps its largest table after deletions: let it go

    def at(self, now: float) -> list[tuple[float, Job]]:
        """``(expected end, job)`` in end order, ends before ``now`` counted at ``now``."""
        entries, jobs = self._entries, self._jobs
        past = bisect.bisect_right(entries, (now, math.inf, math.inf) if self.by_size else (now, math.inf))
        if not past:
            return list(zip([e[0] for e in entries], jobs))
        overdue = sorted(range(past), key=lambda i: entries[i][1:])  # by (cores,) start number
        ends = [(now, jobs[i]) for i in overdue]
        ends += zip([entries[i][0] for i in range(past, len(entries))], jobs[past:])
        return ends


    def core_reservation(self, free: int, res: int, now: float, first_release: bool
                         ) -> tuple[float, int]:
        """:func:`reservation` of a job of ``res`` cores with no memory bound, ``free`` cores
        free now: the kept entries are read as far as the shadow time, without making
        :meth:`at`'s list (made when an expected end has passed: its order matters then)."""
        entries = self._entries
        if entries and entries[0][0] <= now:
            return _core_reservation(free, self.at(now), res, now, first_release)
        return _core_reservation(free, zip(map(_END, entries), self._jobs), res, now,
                                 first_release)


def reservation(
    state: ClusterState, ends: list[tuple[float, Job]], head: Job, now: float,
    first_release: bool = False,
) -> tuple[float, int]:
    """Shadow time and extra cores for ``head``.

    Args:
        state: the cluster now.
        ends: running jobs with their expected end times, sorted by end time (smaller jobs first
            among equal ends).
        head: the job to reserve for.
        now: current time.
        first_release: count the extra cores at the first release after which the head fits
            (``easy_first``) instead of all releases at the shadow time (``easy``).

    Returns:
        ``(shadow_s, extra)``; ``(inf, 0)`` when the head cannot fit even on an empty cluster.
    """
    if head.mem_mb <= 0 or not state.bounded_memory:
        return _core_reservation(state.free_cores, ends, head.res, now, first_release)
    shadow = math.inf
    avail = 0
    for end, avail_after in _availability(state, ends, head):
        if shadow < math.inf and (first_release or end > shadow):
            break  # easy: jobs ending at the shadow time itself all count towards the extra cores
        avail = avail_after
        if shadow == math.inf and avail >= head.res:
            shadow = max(end, now)
    if shadow == math.inf:
        return math.inf, 0
    return shadow, avail - head.res


def _core_reservation(
    free: int, ends: Iterable[tuple[float, Job]], res: int, now: float, first_release: bool
) -> tuple[float, int]:
    """:func:`reservation` when only cores count: ``free`` now, each end gives its cores back."""
    shadow = now if free >= res else math.inf
    avail = free
    for end, job in ends:
        if shadow < math.inf and (first_release or end > shadow):
            break
        avail += job.res
        if shadow == math.inf and avail >= res:
            shadow = max(end, now)
    if shadow == math.inf:
        return math.inf, 0
    return shadow, avail - res


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


def _after(end: float, now: float) -> float:
    """A running job's expected end for a profile: strictly after now (it still holds its cores
    now, even when its estimate says it should be done)."""
    return end if end > now else math.nextafter(now, math.inf)


class Profile:
    """Free cores over time, a step function used by conservative backfilling.

    ``times[i]`` starts a segment with ``free[i]`` free cores, up to ``times[i + 1]``.
    """

    def __init__(self, now: float, free_now: int, ends: list[tuple[float, Job]]) -> None:
        self.times = [now]
        self.free = [free_now]
        for end, job in ends:
            end = _after(end, now)
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


class NodeProfile:
    """Free cores and free memory of every node over time (conservative backfilling with memory).

    Segment ``i`` starts at ``times[i]`` and has ``cores[i][n]`` free cores and ``mem[i][n]`` MB of
    free memory on node ``n``. A reservation holds the same nodes for its whole interval, so a job
    fits an interval when, node by node, the minimum over the interval of free cores and of the
    cores its memory allows add up to its request.
    """

    def __init__(self, state: ClusterState, now: float, ends: list[tuple[float, Job]]) -> None:
        self.times = [now]
        self.cores = [np.asarray(state.node_free_cores, dtype=float)]
        self.mem = [np.asarray(state.node_free_mem, dtype=float)]
        node_of = state.core_node
        for end, job in ends:
            end = _after(end, now)
            if end != self.times[-1]:
                self.times.append(end)
                self.cores.append(self.cores[-1].copy())
                self.mem.append(self.mem[-1].copy())
            for c in state.alloc[job.idx]:
                self.cores[-1][node_of[c]] += 1
                self.mem[-1][node_of[c]] += job.mem_mb

    def _capacity(self, i: int, end: float, mem_mb: float) -> np.ndarray:
        """Cores per node a job of ``mem_mb`` per core can hold over ``[times[i], end)``."""
        cores = self.cores[i].copy()
        mem = self.mem[i].copy()
        j = i + 1
        while j < len(self.times) and self.times[j] < end:
            np.minimum(cores, self.cores[j], out=cores)
            np.minimum(mem, self.mem[j], out=mem)
            j += 1
        if mem_mb > 0:
            with np.errstate(invalid="ignore"):
                np.minimum(cores, np.floor(mem / mem_mb), out=cores)
        return cores

    def capacity_now(self, job: Job, duration_s: float) -> np.ndarray:
        """Cores per node ``job`` may take from now for ``duration_s`` without breaking a
        reservation."""
        return self._capacity(0, self.times[0] + duration_s, job.mem_mb)

    def earliest(self, job: Job, duration_s: float) -> float:
        """Earliest segment start at which ``job`` fits for ``duration_s``."""
        for i, start in enumerate(self.times):
            if self._capacity(i, start + duration_s, job.mem_mb).sum() >= job.res:
                return start
        return math.inf

    def reserve(self, job: Job, start: float, duration_s: float,
                take: dict[int, int] | None = None) -> None:
        """Hold ``job``'s cores and memory over ``[start, start + duration_s)``.

        Args:
            take: cores per node actually given (a started job); else the first nodes that fit.
        """
        if not math.isfinite(start):
            return
        end = start + duration_s
        i = self._split(start)
        if take is None:
            capacity = self._capacity(i, end, job.mem_mb)
            take, need = {}, job.res
            for node in np.flatnonzero(capacity > 0):
                k = int(min(capacity[node], need))
                take[int(node)] = k
                need -= k
                if need == 0:
                    break
        if math.isfinite(end):
            self._split(end)
        for seg, t in enumerate(self.times):
            if start <= t < end:
                for node, k in take.items():
                    self.cores[seg][node] -= k
                    self.mem[seg][node] -= k * job.mem_mb

    def _split(self, t: float) -> int:
        """Make ``t`` a segment start; returns its index."""
        i = bisect.bisect_right(self.times, t)
        if i and self.times[i - 1] == t:
            return i - 1
        self.times.insert(i, t)
        self.cores.insert(i, self.cores[i - 1].copy())
        self.mem.insert(i, self.mem[i - 1].copy())
        return i


def head_fits_at_shadow(
    state: ClusterState, ends: list[tuple[float, Job]], head: Job, shadow: float,
    cores: list[int], mem_mb: float,
) -> bool:
    """Whether ``head`` still fits at ``shadow`` if ``cores`` (of ``mem_mb`` each) stay busy.

    The memory-aware check of EASY's extra-cores rule: replays the releases expected by the
    shadow time with a candidate's cores held, and counts the cores that can hold the head's memory.
    """
    free = list(state.node_free_cores)
    mem = list(state.node_free_mem)
    node_of = state.core_node
    for c in cores:
        free[node_of[c]] -= 1
        mem[node_of[c]] -= mem_mb
    for end, job in ends:
        if end > shadow:
            break
        for c in state.alloc[job.idx]:
            free[node_of[c]] += 1
            mem[node_of[c]] += job.mem_mb
    need = head.mem_mb
    total = sum(min(f, int(m // need)) for f, m in zip(free, mem) if f > 0)
    return total >= head.res
