"""Processors and nodes of N identical one-core nodes (:meth:`Platform.homogeneous
<hdrm.platform.model.Platform.homogeneous>`), made when asked for.

Such a platform keeps no processor, node or core object: each is made from the one type and its
index when read, so its memory follows its few types, not its cores (issue 25, point 6). The
decision core reads the flat per-core tables and never walks these; they compare equal to the
tuples of the objects they make. Its flat per-core tables are :class:`Same` (one value ``n``
times) and :class:`Ids` (``0 .. n - 1``): equal to, and hashed as, the tuples they stand for.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Iterator

from hdrm.lazy import numpy as np

from hdrm.platform.model import Node, NodeType, Processor, ProcessorType, _MadeOnDemand

__all__ = ["Ids", "OneCoreNodes", "OneCoreProcessors", "Same"]


class Same(_MadeOnDemand):
    """``n`` times one ``value``: the tuple ``(value,) * n`` in constant memory."""

    __slots__ = ("_n", "value")

    def __init__(self, value: Any, n: int) -> None:
        self.value, self._n = value, n

    def __len__(self) -> int:
        return self._n

    def _item(self, i: int) -> Any:
        return self.value

    def __iter__(self) -> Iterator[Any]:
        return itertools.repeat(self.value, self._n)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """``np.asarray`` in one fill."""
        return np.full(self._n, self.value, dtype=dtype)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Same):
            return self._n == other._n and (self._n == 0 or self.value == other.value)
        return super().__eq__(other)

    __hash__ = _MadeOnDemand.__hash__


class Ids(_MadeOnDemand):
    """The ids ``0 .. n - 1``: the tuple ``tuple(range(n))`` in memory that follows use.

    Items and slices are read from a pool of int objects made up to the highest id asked for,
    so that the lists of core ids that jobs keep share one object per id (as the tuple's items
    were shared) instead of each holding new ones.
    """

    __slots__ = ("_n", "_pool")

    def __init__(self, n: int) -> None:
        self._n = n
        self._pool: list[int] = []

    def __len__(self) -> int:
        return self._n

    def _item(self, i: int) -> int:
        return self[i]

    def upto(self, end: int) -> list[int]:
        """The pool of id objects, made up to id ``end - 1`` at least (item ``i`` is ``i``):
        callers that read many slices slice it directly (read only)."""
        return self._upto(end)

    def _upto(self, end: int) -> list[int]:
        """The pool, made up to id ``end - 1`` at least."""
        pool = self._pool
        if end > len(pool):
            pool.extend(range(len(pool), end))
        return pool

    def __getitem__(self, index: Any) -> Any:
        ids = range(self._n)[index]  # negative indices, IndexError as a tuple gives them
        if isinstance(ids, int):
            return self._upto(ids + 1)[ids]
        if ids.step == 1:
            return tuple(self._upto(ids.stop)[ids.start:ids.stop])
        return tuple(ids)

    def __iter__(self) -> Iterator[int]:
        return iter(range(self._n))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """``np.asarray`` in one pass."""
        return np.arange(self._n, dtype=dtype)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Ids):
            return self._n == other._n
        return super().__eq__(other)

    __hash__ = _MadeOnDemand.__hash__


class OneCoreProcessors(_MadeOnDemand):
    """Processors of N one-core nodes of one type: processor ``i`` (of node ``i``, core ``i``)
    made when asked for."""

    __slots__ = ("_n", "one_core_type")

    def __init__(self, n: int, processor_type: ProcessorType) -> None:
        self._n, self.one_core_type = n, processor_type

    def __len__(self) -> int:
        return self._n

    def _item(self, i: int) -> Processor:
        return Processor(i, i, 0, self.one_core_type, (i,))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, OneCoreProcessors):
            return (self._n, self.one_core_type) == (other._n, other.one_core_type)
        return super().__eq__(other)

    __hash__ = _MadeOnDemand.__hash__


class OneCoreNodes(_MadeOnDemand):
    """Nodes of N one-core nodes of one type with unbounded memory: node ``i`` (``n{i}``, its
    processor and core ``i``) made when asked for."""

    __slots__ = ("_n", "one_core_type")

    def __init__(self, n: int, node_type: NodeType) -> None:
        self._n, self.one_core_type = n, node_type

    def __len__(self) -> int:
        return self._n

    def _item(self, i: int) -> Node:
        return Node(i, 0, f"n{i}", self.one_core_type, math.inf, (i,), (i,))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, OneCoreNodes):
            return (self._n, self.one_core_type) == (other._n, other.one_core_type)
        return super().__eq__(other)

    __hash__ = _MadeOnDemand.__hash__
