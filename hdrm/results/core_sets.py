"""Interval sets of cores: the text form Batsim and procset use, and runs of consecutive ids.

Interval sets are the text form Batsim and procset use for resource sets: sorted, merged ranges
separated by one space, a range written ``lo-hi`` and a single id written alone (``"0-3 8"``).
In memory, a job's cores are a :class:`CoreRuns`: runs of consecutive ids in their order, so a
record costs what its runs cost, not one integer per core. (Re-exported by
:mod:`hdrm.results.records`, where they lived before.)
"""

from __future__ import annotations

import itertools
import operator
import sys
from collections.abc import Sequence
from typing import Any, Iterable, Iterator

from hdrm.lazy import numpy as np

from hdrm.errors import ConfigError

__all__ = ["CoreRuns", "consecutive_runs", "format_interval_set", "format_runs", "interval_ranges",
           "parse_interval_ranges", "parse_interval_set", "sorted_runs"]


def consecutive_runs(cores: Sequence[int] | np.ndarray) -> list[tuple[int, int]]:
    """``cores`` as runs of consecutive ids ``(first, last + 1)``, in their order.

    ``[4, 5, 6, 0, 1, 9] -> [(4, 7), (0, 2), (9, 10)]``; long lists and numpy arrays are split
    in numpy; a :class:`CoreRuns` gives its runs.
    """
    if isinstance(cores, CoreRuns):
        return cores.runs
    n = len(cores)
    if n == 0:
        return []
    if _numpy_array_or_long(cores, n, 256):  # numpy pays off on long lists only
        if isinstance(cores, np.ndarray):
            ids = cores
        else:
            ids = np.fromiter(cores, dtype=np.int64, count=n)
        cut = np.flatnonzero(np.diff(ids) != 1) + 1
        starts = np.concatenate(([0], cut))
        ends = np.concatenate((cut, [n]))
        return list(zip(ids[starts].tolist(), (ids[ends - 1] + 1).tolist()))
    runs = []
    lo = prev = cores[0]
    for c in cores[1:]:
        if c != prev + 1:
            runs.append((lo, prev + 1))
            lo = c
        prev = c
    runs.append((lo, prev + 1))
    return runs


def _numpy_array_or_long(ids: Any, n: int, long: int) -> bool:
    """True for a numpy array, and for more than ``long`` ids once numpy is loaded (a short
    replay never loads it for this: a Python pass costs about what numpy's does at these
    sizes, without its import)."""
    numpy = sys.modules.get("numpy")
    return numpy is not None and (n > long or isinstance(ids, numpy.ndarray))


class CoreRuns(Sequence):
    """A job's core ids kept as runs of consecutive ids, in the order they were given.

    A read-only stand-in for the tuple of the ids that costs two integers per run: a job on
    100,000 consecutive cores keeps ``(lo, hi)``. Iteration, ``len``, indexing and ``in`` behave
    as on the tuple; it equals (and hashes as) the tuple of its ids, and any sequence of the
    same ids in the same order.

    Args:
        runs: ``(first, last + 1)`` pairs in order; empty runs are dropped and a run that
            continues the previous one is merged into it.
    """

    __slots__ = ("_bounds", "_len")

    def __init__(self, runs: Iterable[tuple[int, int]] = ()) -> None:
        bounds: list[int] = []
        size = 0
        for lo, hi in runs:
            if hi <= lo:
                continue
            if bounds and bounds[-1] == lo:
                bounds[-1] = hi
            else:
                bounds += (lo, hi)
            size += hi - lo
        self._bounds = tuple(bounds)
        self._len = size

    @classmethod
    def of(cls, cores: Sequence[int] | np.ndarray) -> CoreRuns:
        """``cores`` (ids, or a numpy array of ids) as runs; itself when it already is a
        :class:`CoreRuns`."""
        if isinstance(cores, CoreRuns):
            return cores
        return cls(consecutive_runs(cores))

    @property
    def runs(self) -> list[tuple[int, int]]:
        """The runs ``(first, last + 1)``, in order (a new list each time)."""
        bounds = self._bounds
        if len(bounds) == 2:  # one run (most wide jobs): its bounds are the pair
            return [bounds]
        return list(zip(bounds[0::2], bounds[1::2]))

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[int]:
        bounds = self._bounds
        return itertools.chain.from_iterable(map(range, bounds[0::2], bounds[1::2]))

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self)[index]
        i = range(self._len)[index]  # negative indices; IndexError as a tuple gives it
        bounds = self._bounds
        for k in range(0, len(bounds), 2):
            size = bounds[k + 1] - bounds[k]
            if i < size:
                return bounds[k] + i
            i -= size
        raise IndexError(index)  # unreachable: i < len(self)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """The ids as a numpy array (numpy indexing and ``np.asarray``), made run by run in C."""
        bounds = self._bounds
        ids = (np.concatenate([np.arange(lo, hi) for lo, hi in zip(bounds[0::2], bounds[1::2])])
               if bounds else np.zeros(0, dtype=np.int64))
        return ids if dtype is None else ids.astype(dtype, copy=False)

    def __contains__(self, core: object) -> bool:
        bounds = self._bounds
        return any(bounds[k] <= core < bounds[k + 1] for k in range(0, len(bounds), 2))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CoreRuns):
            return self._bounds == other._bounds
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return self._len == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"CoreRuns({self.runs})"


def interval_ranges(core_ids: Iterable[int]) -> list[tuple[int, int]]:
    """Merge core ids into sorted, disjoint, inclusive ``(lo, hi)`` ranges.

    Args:
        core_ids: non-negative core ids, in any order, duplicates allowed (a
            :class:`CoreRuns` is merged run by run).

    Returns:
        The maximal runs of consecutive ids, e.g. ``[0, 1, 2, 3, 8] -> [(0, 3), (8, 8)]``.
    """
    if isinstance(core_ids, CoreRuns):
        return _merged(sorted(core_ids.runs))
    ordered = sorted(set(map(int, core_ids)))
    ranges: list[tuple[int, int]] = []
    if not ordered:
        return ranges
    if _numpy_array_or_long(ordered, len(ordered), 64):  # wide jobs: find the breaks in C
        ids = np.fromiter(ordered, dtype=np.int64, count=len(ordered))
        breaks = np.flatnonzero(np.diff(ids) != 1)
        los = np.concatenate(([ids[0]], ids[breaks + 1])).tolist()
        his = np.concatenate((ids[breaks], [ids[-1]])).tolist()
        return list(zip(los, his))
    lo = prev = ordered[0]
    for core in ordered[1:]:  # one pass, no tuple rebuilt per core: wide jobs hold 1000s of cores
        if core != prev + 1:
            ranges.append((lo, prev))
            lo = core
        prev = core
    ranges.append((lo, prev))
    return ranges


def _merged(runs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted ``(first, last + 1)`` runs merged where they touch or overlap, as inclusive ranges."""
    ranges: list[tuple[int, int]] = []
    for lo, hi in runs:
        if ranges and lo <= ranges[-1][1] + 1:
            if hi - 1 > ranges[-1][1]:
                ranges[-1] = (ranges[-1][0], hi - 1)
        else:
            ranges.append((lo, hi - 1))
    return ranges


def sorted_runs(cores: Iterable[int]) -> list[tuple[int, int]]:
    """The ids of ``cores`` as sorted, merged, half-open runs ``(first, last + 1)``.

    ``[8, 0, 1, 2, 3] -> [(0, 4), (8, 9)]``. What placements mostly give costs C-level passes
    and one step per run: a :class:`CoreRuns` whose runs ascend with gaps between them returns
    its runs; a list or tuple of ascending ints is split where ids skip (one comparison when
    they are consecutive); anything else goes through :func:`interval_ranges`.
    """
    kind = type(cores)
    if kind is CoreRuns:
        bounds = cores._bounds
        if len(bounds) == 2 or all(map(operator.lt, bounds[1:-1:2], bounds[2::2])):
            return list(zip(bounds[0::2], bounds[1::2]))
    elif kind is tuple or kind is list:
        n = len(cores)
        if n and type(cores[0]) is int:
            first = cores[0]
            if cores[-1] - first == n - 1 and cores == kind(range(first, first + n)):
                return [(first, first + n)]
            if all(map(operator.lt, cores, cores[1:])):
                return consecutive_runs(cores)
    return [(lo, hi + 1) for lo, hi in interval_ranges(cores)]


def format_interval_set(core_ids: Iterable[int]) -> str:
    """Write core ids as an interval set, exactly as ``str(procset.ProcSet(...))`` does.

    Example: ``format_interval_set([8, 0, 1, 2, 3]) == "0-3 8"``; no ids give ``""``. The runs
    are those of :func:`sorted_runs` (C-level passes for what placements mostly give).
    """
    return format_runs(sorted_runs(core_ids))


def format_runs(runs: Sequence[tuple[int, int]]) -> str:
    """The interval set of sorted, merged runs ``(first, last + 1)`` (as :func:`sorted_runs`
    gives them): ``[(0, 4), (8, 9)] -> "0-3 8"``."""
    if len(runs) == 1:
        lo, hi = runs[0]
        return str(lo) if lo == hi - 1 else f"{lo}-{hi - 1}"
    return " ".join([str(lo) if lo == hi - 1 else f"{lo}-{hi - 1}" for lo, hi in runs])


def parse_interval_ranges(text: str) -> list[tuple[int, int]]:
    """Read an interval set (``"0-3 8"``) into sorted, merged, inclusive ``(lo, hi)`` ranges.

    Raises:
        ConfigError: a part is not ``N`` or ``LO-HI`` with ``LO <= HI``.
    """
    ranges: list[tuple[int, int]] = []
    for part in text.split():
        lo_text, dash, hi_text = part.partition("-")
        # isdecimal: the digits a regex's \d matches in a str, without a regex
        if not lo_text.isdecimal() or (dash and not hi_text.isdecimal()):
            raise ConfigError(
                f"bad interval set {text!r}: part {part!r} is not 'N' or 'LO-HI' "
                f"(write core ids like '0-3 8')"
            )
        lo = int(lo_text)
        hi = int(hi_text) if dash else lo
        if hi < lo:
            raise ConfigError(f"bad interval set {text!r}: range {part!r} ends before it starts")
        ranges.append((lo, hi))
    ranges.sort()
    merged: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged


def parse_interval_set(text: str) -> list[int]:
    """Read an interval set into the sorted list of its core ids: ``"0-3 8" -> [0, 1, 2, 3, 8]``.

    Raises:
        ConfigError: the text is not an interval set.
    """
    return [core for lo, hi in parse_interval_ranges(text) for core in range(lo, hi + 1)]
