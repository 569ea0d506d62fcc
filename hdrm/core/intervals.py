"""A set of integer ids kept as sorted, disjoint runs: what the decision core knows of free cores.

:class:`IntervalSet` holds its ids as one flat sorted list of run boundaries
``[first0, end0, first1, end1, ...]`` (each run half-open, ``end`` excluded), as Batsim and procset
keep resource sets. An id is in the set when an odd number of boundaries lie at or below it, so
membership, taking a run out and putting one back each cost one binary search and a short list
edit: they follow the number of runs, never the number of ids.

:func:`as_disjoint_runs` turns runs of changes applied in turn (``(first, end, change)``, which
may overlap) into the disjoint runs of the mapping ``{id: change}`` they give, in its order.
"""

from __future__ import annotations

import heapq
import itertools
import operator
from bisect import bisect_right
from typing import Any, Iterator

__all__ = ["IntervalSet", "as_disjoint_runs"]

_FIRST = operator.itemgetter(0)
_BOUNDS = operator.itemgetter(0, 1)
_END = operator.itemgetter(1)


class IntervalSet:
    """Integer ids as sorted disjoint half-open runs.

    Args:
        first: the first id of the initial run.
        end: one past its last id (``end <= first``: the set starts empty).
    """

    __slots__ = ("_bounds", "count")

    def __init__(self, first: int = 0, end: int = 0) -> None:
        self._bounds: list[int] = [first, end] if end > first else []
        #: Number of ids in the set.
        self.count = max(0, end - first)

    def __len__(self) -> int:
        return self.count

    def __contains__(self, i: int) -> bool:
        return bisect_right(self._bounds, i) & 1 == 1

    def __iter__(self) -> Iterator[int]:
        bounds = self._bounds
        return itertools.chain.from_iterable(map(range, bounds[0::2], bounds[1::2]))

    @property
    def runs(self) -> list[tuple[int, int]]:
        """The runs ``(first, end)``, in increasing order."""
        bounds = self._bounds
        return list(zip(bounds[0::2], bounds[1::2]))

    def covers(self, first: int, end: int) -> bool:
        """True when every id of ``first..end - 1`` (at least one) is in the set."""
        bounds = self._bounds
        k = bisect_right(bounds, first)
        return first < end and k & 1 == 1 and end <= bounds[k]

    def lowest(self, n: int) -> list[tuple[int, int]] | None:
        """The ``n`` lowest ids (``n >= 1``) as runs ``(first, end)``, or None when the set holds
        fewer; the set is not changed."""
        if n > self.count or n < 1:
            return None
        bounds = self._bounds
        first = bounds[0]
        if bounds[1] - first >= n:  # the first run holds them (mostly)
            return [(first, first + n)]
        runs = []
        for k in range(0, len(bounds), 2):
            first, end = bounds[k], bounds[k + 1]
            if end - first >= n:
                runs.append((first, first + n))
                return runs
            runs.append((first, end))
            n -= end - first
        raise AssertionError("IntervalSet count out of step with its runs")  # pragma: no cover

    def remove(self, first: int, end: int) -> bool:
        """Take ``first..end - 1`` out when the set holds all of them; else change nothing and
        return False."""
        bounds = self._bounds
        k = bisect_right(bounds, first)
        if first >= end or not k & 1 or end > bounds[k]:
            return False
        if bounds[k - 1] == first:  # from the run's start (lowest-first placements)
            if end == bounds[k]:
                del bounds[k - 1:k + 1]
            else:
                bounds[k - 1] = end
        elif end == bounds[k]:
            bounds[k] = first
        else:  # from its middle: the run splits in two
            bounds[k:k] = (first, end)
        self.count -= end - first
        return True

    def add(self, first: int, end: int) -> bool:
        """Put ``first..end - 1`` in when the set holds none of them; else change nothing and
        return False. Runs that touch are merged."""
        bounds = self._bounds
        k = bisect_right(bounds, first)
        size = len(bounds)
        if first >= end or k & 1 or (k < size and bounds[k] < end):
            return False
        joins_left = k > 0 and bounds[k - 1] == first
        joins_right = k < size and bounds[k] == end
        if joins_left and joins_right:
            del bounds[k - 1:k + 1]
        elif joins_left:
            bounds[k - 1] = end
        elif joins_right:
            bounds[k] = first
        else:
            bounds[k:k] = (first, end)
        self.count += end - first
        return True

    def __repr__(self) -> str:
        return f"IntervalSet({self.runs})"


def as_disjoint_runs(runs: list[tuple[int, int, Any]]
                     ) -> list[tuple[int, int, Any]]:
    """Disjoint runs equal to the mapping ``{core: change}`` that applying ``runs`` in order
    gives: a core keeps the place of the first run that named it and the change of the last.

    Runs that do not overlap come back as they are; otherwise a sweep over their bounds (cost in
    the number of runs, not of cores).
    """
    if len(runs) == 2:  # (a job's end and a start, mostly): one comparison each way
        (a_lo, a_hi, _), (b_lo, b_hi, _) = runs
        if a_hi <= b_lo or b_hi <= a_lo:
            return runs
    else:
        ordered = sorted(runs, key=_BOUNDS)
        if all(map(operator.le, map(_END, ordered), map(_FIRST, ordered[1:]))):
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
    out: list[tuple[int, int, Any]] = []
    place = -1
    for first, lo, hi, last in pieces:
        change = runs[last][2]
        if out and first == place and out[-1][1] == lo and out[-1][2] == change:
            out[-1] = (out[-1][0], hi, change)
        else:
            out.append((lo, hi, change))
        place = first
    return out

