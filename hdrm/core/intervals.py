"""A set of integer ids kept as sorted, disjoint runs: what the decision core knows of free cores.

:class:`IntervalSet` holds its ids as one flat sorted list of run boundaries
``[first0, end0, first1, end1, ...]`` (each run half-open, ``end`` excluded), as Batsim and procset
keep resource sets. An id is in the set when an odd number of boundaries lie at or below it, so
membership, taking a run out and putting one back each cost one binary search and a short list
edit: they follow the number of runs, never the number of ids.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from typing import Iterator

__all__ = ["IntervalSet"]


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
        low, high = bounds[k - 1], bounds[k]
        kept = ([low, first] if low < first else []) + ([end, high] if end < high else [])
        bounds[k - 1:k + 1] = kept
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
