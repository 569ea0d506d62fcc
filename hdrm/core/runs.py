"""Runs of consecutive core ids: how wide allocations are kept and applied in C-level passes.

:func:`core_runs` splits a list of ids into runs; :class:`CoreRuns` keeps a job's cores as
runs (both live with the interval sets of :mod:`hdrm.results.records`, which the outputs write).
:class:`Repeated` and :class:`OneEach` are per-processor tables of one-core nodes that hold no
item per processor (read-only; items made when read).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, Iterator

from hdrm.results.core_sets import CoreRuns, consecutive_runs

#: Allocations of more cores than this are kept run by run on one-core nodes (below it, the
#: core-by-core loops cost less than the C-level passes' setup).
WIDE = 64



def core_runs(cores: Sequence[int]) -> list[tuple[int, int]]:
    """``cores`` as runs of consecutive ids ``(first, last + 1)``, in their order:
    ``[4, 5, 6, 0, 1, 9] -> [(4, 7), (0, 2), (9, 10)]``.

    A list or tuple of consecutive ascending ids (what placements mostly give) is recognised by
    one C-level comparison; anything else is split by
    :func:`~hdrm.results.core_sets.consecutive_runs`.
    """
    kind = type(cores)
    if kind is list or kind is tuple:
        n = len(cores)
        if n:
            first = cores[0]
            if cores[-1] - first == n - 1 and cores == kind(range(first, first + n)):
                return [(first, first + n)]
    return consecutive_runs(cores)

__all__ = ["WIDE", "CoreRuns", "OneEach", "Repeated", "core_runs"]


class _Table(Sequence):
    """A read-only sequence of ``n`` items made when read (``_item(i)``); slices are tuples."""

    __slots__ = ("_n",)

    def __init__(self, n: int) -> None:
        self._n = n

    def __len__(self) -> int:
        return self._n

    def _item(self, i: int) -> Any:
        raise NotImplementedError

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(map(self._item, range(self._n)[index]))
        return self._item(range(self._n)[index])  # negative indices, IndexError as a tuple

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # compares as the list of its items

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._n} items)"


class Repeated(_Table):
    """``n`` times the same ``value`` (``[value] * n``, read-only), in constant memory."""

    __slots__ = ("value",)

    def __init__(self, value: Any, n: int) -> None:
        super().__init__(n)
        self.value = value

    def _item(self, i: int) -> Any:
        return self.value

    def __iter__(self) -> Iterator[Any]:
        return itertools.repeat(self.value, self._n)


class OneEach(_Table):
    """Item ``i`` is ``(i,)``: the core ids of processor ``i`` on one-core nodes."""

    __slots__ = ()

    def _item(self, i: int) -> tuple[int]:
        return (i,)
