"""Processors and nodes of N identical one-core nodes (:meth:`Platform.homogeneous
<hdrm.platform.model.Platform.homogeneous>`), made when asked for.

Such a platform keeps no processor, node or core object: each is made from the one type and its
index when read, so its memory follows its few types, not its cores (issue 25, point 6). The
decision core reads the flat per-core tables and never walks these; they compare equal to the
tuples of the objects they make.
"""

from __future__ import annotations

import math

from hdrm.platform.model import Node, NodeType, Processor, ProcessorType, _MadeOnDemand

__all__ = ["OneCoreNodes", "OneCoreProcessors"]


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
