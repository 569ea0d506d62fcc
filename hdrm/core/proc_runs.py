"""Jobs on processors of several cores, taken and freed run by run (platform files).

The cluster mirror's core-by-core rules (:mod:`hdrm.core.power_states`) cost a few Python steps
per core of a job; a job of 500,000 cores on 40-core nodes costs seconds and a mapping of one
change per core. When a job charges no memory, demands no bandwidth and no processor is slowed
by contention, those rules reduce to facts about processors: a taken core runs, the first taken
core of a sleeping processor wakes its free cores (idle), a freed core idles, and the last freed
core of a processor puts all its cores to sleep. :class:`ProcRuns` applies them to runs of
consecutive cores, processor by processor, with list slices for the cores' values, and queues
the changes as runs whose order, cores and values are exactly those of the core-by-core
mapping (so the machine adds the same powers in the same order: the same bits).

:func:`as_disjoint_runs` turns runs queued by several jobs, which may overlap (a core freed and
taken again before the engine reads the changes), into disjoint runs equal to the mapping that
applying them one by one would give.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from typing import Sequence

from hdrm.core.contention import ContentionModel
from hdrm.core.runs import WIDE, CoreRuns, core_runs
from hdrm.platform.power import IDLE, RUNNING, SLEEPING

__all__ = ["ProcRuns", "as_disjoint_runs", "processor_bounds"]

FREE = -1
_RUN, _IDLE, _SLEEP = (RUNNING, 1.0), (IDLE, 1.0), (SLEEPING, 1.0)
#: A change run ``(first, end, change)`` and the state its cores had before it.
_Piece = list  # [first, end, change, old_state]


def processor_bounds(proc_cores: Sequence[Sequence[int]], nb_cores: int,
                     contention: ContentionModel, capacities: Sequence[float]) -> list[int] | None:
    """The first core of each processor and ``nb_cores`` last, when processor ``p`` holds the
    consecutive cores ``bounds[p] .. bounds[p + 1] - 1`` (cores numbered in processor order, as
    platform files number them) and an idle processor runs at full speed under ``contention``;
    else None (the run-by-run path is then never taken)."""
    bounds = [0]
    for cores in proc_cores:
        if not isinstance(cores, range) or cores.step != 1 or cores.start != bounds[-1]:
            if list(cores) != list(range(bounds[-1], bounds[-1] + len(cores))):
                return None
        bounds.append(bounds[-1] + len(cores))
    if bounds[-1] != nb_cores:
        return None
    if any(contention.speed_fraction(0.0, cap) != 1.0 for cap in set(capacities)):
        return None
    return bounds


class ProcRuns:
    """The run-by-run path of :class:`~hdrm.core.state.ClusterState` (its attributes, set
    there): jobs that charge no memory and demand no bandwidth while no core is slowed."""

    nb_cores: int
    free_cores: int
    contended: int
    alloc: dict[int, Sequence[int]]
    proc_node: Sequence[int]
    _nominal: bool
    _core_job: list[int]
    _core_state: list[int]
    _proc_free: list[int]
    _proc_running: list[int]
    _proc_demand: list[float]
    _node_free_cores: list[int]
    _pending_runs: list[tuple[int, int, tuple[int, float]]]
    #: First core of each processor, ``nb_cores`` last (:func:`processor_bounds`); None: off.
    _proc_first: list[int] | None = None
    #: The runs of cores of each job taken on this path (given back at its end).
    _proc_held: dict[int, list[tuple[int, int]]]

    def _runs_allocate(self, key: int, cores: Sequence[int], mem_mb: float,
                       bw_gbps: float) -> bool:
        """Give ``cores`` to job ``key`` run by run when the path applies and every core is a
        free, known core, in increasing order; else change nothing and return False (the
        core-by-core rules then decide, and name any culprit)."""
        first = self._proc_first
        if first is None or mem_mb != 0 or bw_gbps != 0 or self.contended:
            return False
        runs = getattr(cores, "runs", None)
        runs = core_runs(cores) if runs is None else runs
        core_job, end = self._core_job, -1
        for lo, hi in runs:
            if lo <= end or hi > self.nb_cores or core_job[lo:hi].count(FREE) != hi - lo:
                return False
            end = hi
        if not runs:
            return False
        for lo, hi in runs:
            core_job[lo:hi] = [key] * (hi - lo)
        pieces: list[_Piece] = []
        for p, segs in _by_processor(runs, first):
            self._take_processor(p, segs, first[p], first[p + 1], pieces)
        self._queue(pieces)
        n = sum(hi - lo for lo, hi in runs)
        self.free_cores -= n
        self.alloc[key] = CoreRuns(runs) if n > WIDE else tuple(cores)
        self._proc_held[key] = runs
        return True

    def _runs_release(self, key: int) -> Sequence[int] | None:
        """Free the cores of job ``key`` run by run when it was given them on this path and no
        core is slowed now; returns them, or None with nothing changed."""
        runs = self._proc_held.get(key)
        if runs is None or self.contended:
            return None
        del self._proc_held[key]
        first, core_job = self._proc_first, self._core_job
        assert first is not None
        for lo, hi in runs:
            core_job[lo:hi] = [FREE] * (hi - lo)
        pieces: list[_Piece] = []
        for p, segs in _by_processor(runs, first):
            self._free_processor(p, segs, first[p], first[p + 1], pieces)
        self._queue(pieces)
        cores = self.alloc.pop(key)
        self.free_cores += len(cores)
        return cores

    # ------------------------------------------------------------------ one processor
    def _take_processor(self, p: int, segs: list[tuple[int, int]], lo: int, hi: int,
                        pieces: list[_Piece]) -> None:
        """Count ``segs`` (cores of processor ``p`` = ``lo..hi - 1``) as taken and add their
        changes, in the order of the core-by-core rules (the demand, ``+ 0.0``, is unchanged)."""
        k = sum(b - a for a, b in segs)
        was = self._proc_running[p]
        self._proc_running[p] = was + k
        self._proc_free[p] -= k
        self._node_free_cores[self.proc_node[p]] -= k
        if was:
            for a, b in segs:
                _add(pieces, a, b, _RUN, IDLE)
            return
        if self._nominal:  # the first core runs, wakes its free siblings, then the others run
            a0, b0 = segs[0]
            _add(pieces, a0, a0 + 1, _RUN, SLEEPING)
            _add_gaps(pieces, lo, hi, segs, _IDLE, SLEEPING)
            _add(pieces, a0 + 1, b0, _RUN, SLEEPING)
            for a, b in segs[1:]:
                _add(pieces, a, b, _RUN, SLEEPING)
            return
        for a, b in segs:  # the taken cores run, then the processor's free cores wake
            _add(pieces, a, b, _RUN, SLEEPING)
        _add_gaps(pieces, lo, hi, segs, _IDLE, SLEEPING)

    def _free_processor(self, p: int, segs: list[tuple[int, int]], lo: int, hi: int,
                        pieces: list[_Piece]) -> None:
        """Count ``segs`` (cores of processor ``p`` = ``lo..hi - 1``) as freed and add their
        changes, in the order of the core-by-core rules."""
        k = sum(b - a for a, b in segs)
        left = self._proc_running[p] - k
        self._proc_running[p] = left
        self._proc_free[p] += k
        self._node_free_cores[self.proc_node[p]] += k
        if left:
            for a, b in segs:
                _add(pieces, a, b, _IDLE, RUNNING)
            return
        self._proc_demand[p] = 0.0  # the last running core left
        if self._nominal:  # each freed core idles; the last one puts the processor to sleep
            last = segs[-1][1] - 1
            early = segs[:-1] + [(segs[-1][0], last)]
            for a, b in early:
                _add(pieces, a, b, _SLEEP, RUNNING)
            _add_gaps(pieces, lo, last, early, _SLEEP, IDLE)
            _add(pieces, last, last + 1, _SLEEP, RUNNING)
            _add_gaps(pieces, last + 1, hi, [], _SLEEP, IDLE)
            return
        at = lo  # every core of the processor sleeps, in order
        for a, b in segs:
            _add(pieces, at, a, _SLEEP, IDLE)
            _add(pieces, a, b, _SLEEP, RUNNING)
            at = b
        _add(pieces, at, hi, _SLEEP, IDLE)

    def _queue(self, pieces: list[_Piece]) -> None:
        """Write the new states of ``pieces`` and queue them as change runs."""
        core_state, queue = self._core_state, self._pending_runs
        for lo, hi, change, _ in pieces:
            core_state[lo:hi] = [change[0]] * (hi - lo)
            queue.append((lo, hi, change))


def _by_processor(runs: list[tuple[int, int]], first: list[int]):
    """``(processor, its parts of runs)`` for ascending disjoint ``runs``, processors in order."""
    p, segs = -1, []
    for lo, hi in runs:
        q = bisect_right(first, lo) - 1
        while lo < hi:
            end = min(hi, first[q + 1])
            if q != p:
                if segs:
                    yield p, segs
                p, segs = q, []
            segs.append((lo, end))
            lo, q = end, q + 1
    if segs:
        yield p, segs


def _add(pieces: list[_Piece], lo: int, hi: int, change: tuple[int, float], old: int) -> None:
    """Append the change of cores ``lo..hi - 1`` (in state ``old``), merged into the last piece
    when it continues it with the same change from the same state."""
    if lo >= hi:
        return
    if pieces:
        last = pieces[-1]
        if last[1] == lo and last[3] == old and last[2] == change:
            last[1] = hi
            return
    pieces.append([lo, hi, change, old])


def _add_gaps(pieces: list[_Piece], lo: int, hi: int, segs: list[tuple[int, int]],
              change: tuple[int, float], old: int) -> None:
    """Add the change of the cores of ``lo..hi - 1`` outside ``segs`` (ascending), in order."""
    at = lo
    for a, b in segs:
        _add(pieces, at, min(a, hi), change, old)
        at = max(at, b)
    _add(pieces, at, hi, change, old)


def as_disjoint_runs(runs: list[tuple[int, int, tuple[int, float]]]
                     ) -> list[tuple[int, int, tuple[int, float]]]:
    """Disjoint runs equal to the mapping ``{core: change}`` that applying ``runs`` in order
    gives: a core keeps the place of the first run that named it and the change of the last.

    Runs that do not overlap come back as they are; otherwise a sweep over their bounds (cost in
    the number of runs, not of cores).
    """
    ordered = sorted((lo, hi) for lo, hi, _ in runs)
    if all(a[1] <= b[0] for a, b in zip(ordered, ordered[1:])):
        return runs
    points = sorted({x for lo, hi, _ in runs for x in (lo, hi)})
    starts = sorted(range(len(runs)), key=lambda i: runs[i][0])
    lows: list[int] = []  # active runs, smallest index first (stale ones dropped when read)
    highs: list[int] = []  # the same, largest index first (negated)
    pieces: list[tuple[int, int, int, int]] = []  # (first run, lo, hi, last run)
    k = 0
    for x, nxt in zip(points, points[1:]):
        while k < len(starts) and runs[starts[k]][0] <= x:
            heapq.heappush(lows, starts[k])
            heapq.heappush(highs, -starts[k])
            k += 1
        while lows and runs[lows[0]][1] <= x:
            heapq.heappop(lows)
        while highs and runs[-highs[0]][1] <= x:
            heapq.heappop(highs)
        if lows:
            pieces.append((lows[0], x, nxt, -highs[0]))
    pieces.sort()
    out: list[tuple[int, int, tuple[int, float]]] = []
    place = -1
    for first, lo, hi, last in pieces:
        change = runs[last][2]
        if out and first == place and out[-1][1] == lo and out[-1][2] == change:
            out[-1] = (out[-1][0], hi, change)
        else:
            out.append((lo, hi, change))
        place = first
    return out

