"""Per-core tables of platform files kept as runs of one value (:class:`RunTable`).

A platform file numbers its cores node by node and processor by processor, so each per-core
table (speed, power, processor, node, cluster) is a few runs of one value: one run per processor
for ``core_processor``, one per node for ``core_node``, one per stretch of one processor type
for the speeds and powers. :class:`RunTable` keeps those runs (memory in processors and nodes,
not cores) and reads as the tuple of the values it stands for: indexing (a binary search),
slicing, iteration and ``numpy.asarray`` (both at C speed), equality and hash.
"""

from __future__ import annotations

import itertools
import math
from bisect import bisect_right
from typing import Any, Iterator, Sequence

from hdrm.lazy import numpy as np

from hdrm.platform.model import _MadeOnDemand

__all__ = ["RunTable"]


class RunTable(_MadeOnDemand):
    """``values[k]`` repeated ``ends[k] - ends[k - 1]`` times (``ends[-1]`` items in all).

    Args:
        values: the value of each run.
        ends: one past the last index of each run, increasing; consecutive runs of equal
            values are merged.
    """

    __slots__ = ("_values", "_ends")

    def __init__(self, values: Sequence[Any], ends: Sequence[int]) -> None:
        if len(values) != len(ends):
            raise ValueError("a run table needs one end per value")
        kept_values: list[Any] = []
        kept_ends: list[int] = []
        last = 0
        for value, end in zip(values, ends):
            if end < last:
                raise ValueError(f"run ends must not decrease: {end} after {last}")
            if end == last:
                continue
            if kept_values and _same(kept_values[-1], value):
                kept_ends[-1] = end
            else:
                kept_values.append(value)
                kept_ends.append(end)
            last = end
        self._values, self._ends = tuple(kept_values), tuple(kept_ends)

    @property
    def runs(self) -> list[tuple[Any, int]]:
        """``(value, count)`` of each run, in order."""
        return list(zip(self._values, self._counts()))

    def _counts(self) -> list[int]:
        ends = self._ends
        return [b - a for a, b in zip((0,) + ends[:-1], ends)]

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def _item(self, i: int) -> Any:
        return self._values[bisect_right(self._ends, i)]

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            first, end, step = index.indices(len(self))
            if step == 1:  # a span: its runs repeated in C
                return tuple(self.span(first, end))
        return super().__getitem__(index)

    def span(self, first: int, end: int) -> Iterator[Any]:
        """The items ``first .. end - 1`` (``0 <= first``, ``end <= len``), run by run."""
        ends, values = self._ends, self._values
        k = bisect_right(ends, first)
        pieces = []
        while first < end:
            stop = min(end, ends[k])
            pieces.append(itertools.repeat(values[k], stop - first))
            first, k = stop, k + 1
        return itertools.chain.from_iterable(pieces)

    def __iter__(self) -> Iterator[Any]:
        return itertools.chain.from_iterable(map(itertools.repeat, self._values, self._counts()))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """``np.asarray`` in one repeat."""
        return np.repeat(np.asarray(self._values, dtype=dtype), self._counts())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RunTable):
            return self._ends == other._ends and self._values == other._values
        return super().__eq__(other)

    __hash__ = _MadeOnDemand.__hash__


def _same(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` are equal values of one type (floats of one sign), so one may
    stand for the other in a run."""
    if type(a) is not type(b) or a != b:
        return False
    return not isinstance(a, float) or math.copysign(1.0, a) == math.copysign(1.0, b)
