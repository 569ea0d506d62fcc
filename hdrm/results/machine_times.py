"""Batsim's ``time_computing`` and ``time_idle`` of a run, job by job, in the cost of its runs.

Each core computes during the jobs it runs and is idle from 0 to the end of its last job
otherwise (Batsim books nothing after a core's last job). So ``time_idle`` is the sum over cores
of (last end - busy time), where a core's busy time is the sum of its jobs' execution times in
job order and its last end the largest end of its jobs (0 for an unused core).

:class:`MachineTimes` takes the jobs one by one as the outputs are written; the cost follows the
runs of consecutive cores, not the cores of each job:

* without numpy loaded (a short replay never loads it), the cores are kept as segments that
  every run so far covered whole or not at all (cut at each run's ends): all the cores of a
  segment received the same additions in the same order, so one value per segment is each
  core's busy time exactly, and one maximum its last end (a nan end spreads, as
  ``np.maximum`` does). A run costs the segments it covers, one C-level pass;
* with numpy loaded, or past :data:`SEGMENTS_MAX` segments, per-core arrays: short runs add
  item by item, long ones by numpy slices (the same additions); last ends are taken
  :data:`RUNS_AT_ONCE` runs at a time by a segment tree (:func:`_raise_to_covering_max`);
* the idle sum is numpy's pairwise summation, written out (:func:`pairwise_sum`), so the float
  is the same on both paths.
"""

from __future__ import annotations

import math
import operator
import sys
from array import array
from bisect import bisect_right
from itertools import chain, repeat
from typing import Iterable

from hdrm.lazy import numpy as np

__all__ = ["MachineTimes", "machine_times_of", "pairwise_sum"]

#: Runs of at most this many cores add their time item by item (numpy's call costs more).
SHORT_RUN = 16
#: Runs whose ends are kept before numpy raises the cores' last ends, all at once.
RUNS_AT_ONCE = 8192
#: Most segments kept before the per-core arrays take over.
SEGMENTS_MAX = 1 << 15
#: A cut past every core id: the last segment runs to it.
_END = 1 << 62


def machine_times_of(
    spans: Iterable[tuple[float, float, Iterable[tuple[int, int]]]],
    segments: bool | None = None,
) -> tuple[float, float]:
    """``(time_computing, time_idle)`` from ``(execution_time, finish_time, runs)`` of the
    jobs that ran, in job order, each job's cores as sorted, merged runs ``(first, last + 1)``
    (``segments``: see :class:`MachineTimes`)."""
    times = MachineTimes(segments)
    add = times.add
    for run_s, end_s, runs in spans:
        add(run_s, end_s, runs)
    return times.totals()


class MachineTimes:
    """:func:`machine_times_of` made job by job: :meth:`add` each job that ran, in job order,
    then read :meth:`totals`.

    Args:
        segments: start with segments (True) or per-core arrays (False); by default segments
            unless numpy is loaded already. Both give the same floats.
    """

    def __init__(self, segments: bool | None = None) -> None:
        if segments is None:
            segments = "numpy" not in sys.modules
        self._computing = array("d")  # run_s * cores of each run, summed by fsum at the end
        self._size = 0
        # segments (while numpy is not loaded): cuts, and each segment's busy time and last end
        self._cuts: list[int] | None = [0, _END]
        self._seg_busy, self._seg_last = [0.0], [0.0]
        self._nan_last = False  # a segment's last end may be nan (a nan end was added)
        # per-core arrays (numpy loaded, or too many segments)
        self._busy = array("d")
        self._last_end = None if segments else np.zeros(0)
        self._los, self._his, self._ends = array("q"), array("q"), array("d")
        if not segments:
            self._cuts = None

    def add(self, run_s: float, end_s: float, runs: Iterable[tuple[int, int]]) -> None:
        """Book a job that ran ``run_s`` seconds, ended at ``end_s``, on the cores of ``runs``
        (sorted, merged ``(first, last + 1)``)."""
        cuts = self._cuts
        if cuts is not None:
            self._add_to_segments(run_s, end_s, runs)
            if len(cuts) > SEGMENTS_MAX:
                self._to_arrays()
            return
        busy = self._busy
        los, his, ends, computing = self._los, self._his, self._ends, self._computing
        for lo, hi in runs:
            if hi > self._size:
                self._size = hi
                if hi > len(busy):
                    busy.frombytes(bytes(8 * (max(hi, 2 * len(busy)) - len(busy))))
            if hi - lo <= SHORT_RUN:
                for c in range(lo, hi):
                    busy[c] += run_s
            else:
                np.frombuffer(busy)[lo:hi] += run_s
            los.append(lo)
            his.append(hi)
            ends.append(end_s)
            computing.append(run_s * (hi - lo))
            if len(los) == RUNS_AT_ONCE:
                self._take_runs()

    def totals(self) -> tuple[float, float]:
        """``(time_computing, time_idle)`` of the jobs added so far."""
        if not self._computing:
            return 0.0, 0.0
        size = self._size
        if self._cuts is not None:
            busy, last = self._per_core(self._seg_busy), self._per_core(self._seg_last)
        else:
            self._take_runs()
            busy, last = self._busy, self._last_end[:size].tolist()
        return (math.fsum(self._computing),
                pairwise_sum([last[c] - busy[c] for c in range(size)]))

    def _add_to_segments(self, run_s: float, end_s: float,
                         runs: Iterable[tuple[int, int]]) -> None:
        """Add a job to the segments: cut them at its runs' ends, then add its time to the
        busy time of each segment it covers and raise their last ends to its end (``max`` keeps
        the first of equals and a nan already there; a nan end is written as it is)."""
        cuts, seg_busy, seg_last = self._cuts, self._seg_busy, self._seg_last
        nan_end = end_s != end_s
        computing = self._computing.append
        size = self._size
        for lo, hi in runs:
            if hi > size:
                size = self._size = hi
            computing(run_s * (hi - lo))
            first = bisect_right(cuts, lo) - 1
            if cuts[first] != lo:  # cut the segment holding lo
                first += 1
                cuts.insert(first, lo)
                seg_busy.insert(first, seg_busy[first - 1])
                seg_last.insert(first, seg_last[first - 1])
            last = bisect_right(cuts, hi, first) - 1
            if cuts[last] != hi:
                last += 1
                cuts.insert(last, hi)
                seg_busy.insert(last, seg_busy[last - 1])
                seg_last.insert(last, seg_last[last - 1])
            if last - first == 1:
                seg_busy[first] += run_s
                if end_s > seg_last[first] or nan_end:
                    seg_last[first] = end_s
            else:
                seg_busy[first:last] = map(operator.add, seg_busy[first:last], repeat(run_s))
                if nan_end or (not self._nan_last and end_s > max(seg_last[first:last])):
                    # (above every last end there, none nan: max keeps end_s everywhere)
                    seg_last[first:last] = repeat(end_s, last - first)
                else:
                    seg_last[first:last] = map(max, seg_last[first:last], repeat(end_s))
        if nan_end:
            self._nan_last = True

    def _per_core(self, values: list[float]) -> list[float]:
        """Segment values repeated over their cores, for cores ``0 .. size - 1``."""
        cuts, size = self._cuts, self._size
        return list(chain.from_iterable(
            repeat(v, min(b, size) - a) for v, a, b in zip(values, cuts, cuts[1:]) if a < size))

    def _to_arrays(self) -> None:
        """Leave the segments for per-core arrays (the same values, core by core)."""
        size = self._size
        self._busy = array("d", self._per_core(self._seg_busy))
        self._last_end = np.array(self._per_core(self._seg_last) + [0.0] * (len(self._busy) - size))
        self._cuts = None

    def _take_runs(self) -> None:
        """Raise the per-core last ends by the runs kept, and forget them."""
        if self._last_end.size < len(self._busy):
            self._last_end = np.concatenate(
                (self._last_end, np.zeros(len(self._busy) - self._last_end.size)))
        _raise_to_covering_max(self._last_end, self._los, self._his, self._ends)
        del self._los[:], self._his[:], self._ends[:]


def pairwise_sum(values: list[float]) -> float:
    """``float(numpy.sum(values))`` for float64 values, computed the way numpy sums a
    contiguous array (blocks of up to 128 values with eight partial sums, halved above that),
    so the same bits with or without numpy."""
    return 0.0 + _pairwise(values, 0, len(values))


def _pairwise(a: list[float], lo: int, n: int) -> float:
    if n < 8:
        total = 0.0
        for i in range(lo, lo + n):
            total += a[i]
        return total
    if n <= 128:
        r0, r1, r2, r3, r4, r5, r6, r7 = a[lo:lo + 8]
        end = lo + n - n % 8
        for i in range(lo + 8, end, 8):
            r0 += a[i]
            r1 += a[i + 1]
            r2 += a[i + 2]
            r3 += a[i + 3]
            r4 += a[i + 4]
            r5 += a[i + 5]
            r6 += a[i + 6]
            r7 += a[i + 7]
        total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        for i in range(end, lo + n):
            total += a[i]
        return total
    half = n // 2
    half -= half % 8
    return _pairwise(a, lo, half) + _pairwise(a, lo + half, n - half)


def _raise_to_covering_max(target: np.ndarray, los: array, his: array, values: array) -> None:
    """Raise each core's ``target`` to the largest ``values[k]`` over the runs
    ``los[k]..his[k] - 1`` that hold it (as ``np.maximum(target[lo:hi], value)`` run by run:
    nan spreads, ties keep ``target``); ``target`` is >= 0 or nan where no run holds a core.

    The runs' ends cut the cores into segments that every run covers whole or not at all; a
    segment tree over them takes each run as O(log) nodes, all runs at once per level (numpy),
    then each node passes its maximum down to its segments.
    """
    if not los:
        return
    lo = np.frombuffer(los, dtype=np.int64)
    hi = np.frombuffer(his, dtype=np.int64)
    value = np.frombuffer(values)
    cuts, index = np.unique(np.concatenate((lo, hi)), return_inverse=True)
    nb_segments = cuts.size - 1
    width = 1 << max(nb_segments - 1, 0).bit_length()
    tree = np.zeros(2 * width)
    left, right = index[:lo.size] + width, index[lo.size:] + width
    while True:  # bottom-up: a run's node at each end of its span, level by level
        active = left < right
        if not active.any():
            break
        take = active & (left & 1 == 1)
        np.maximum.at(tree, left[take], value[take])
        left += take
        take = active & (right & 1 == 1) & (left < right)
        right -= take
        np.maximum.at(tree, right[take], value[take])
        left >>= 1
        right >>= 1
    level = 1
    while level < width:  # each node's maximum down to its two children
        children = tree[2 * level:4 * level].reshape(-1, 2)
        np.maximum(children, tree[level:2 * level, None], out=children)
        level *= 2
    span = target[cuts[0]:cuts[-1]]  # a view: written in place
    np.maximum(span, np.repeat(tree[width:width + nb_segments], np.diff(cuts)), out=span)
