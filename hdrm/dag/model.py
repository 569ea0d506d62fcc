"""The DAG model: tasks, edges with data sizes, a task x processor cost matrix and a network.

A :class:`Network` names the processors and gives the bandwidth (MB/s) and latency (s) between
each pair of distinct processors; data sent from a task to a successor on the same processor costs
nothing. A :class:`Dag` holds the tasks, the edges (predecessor, successor, data in MB) and the
computation cost of every task on every processor in seconds (a heterogeneous cost matrix; related
machines are the special case cost = work / speed). The graph is checked once when it is built: a
cycle, a bad cost or a bad edge raises :class:`~hdrm.errors.WorkloadError` naming the task.

Tasks and processors are numbered in the order given; the schedulers work on these indices and
keep the names for output. Everything is held in plain tuples and lists, which keeps the hot loops
of the schedulers free of attribute and array look-ups.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from hdrm.errors import WorkloadError
from hdrm.workload.dependencies import kahn_order

logger = logging.getLogger(__name__)

#: An edge: (predecessor index, successor index, data in MB).
Edge = tuple[int, int, float]


@dataclass(frozen=True)
class Network:
    """Processors and the links between them.

    Attributes:
        processors: processor names, index = processor id.
        bandwidth_mb_s: ``bandwidth_mb_s[p][q]``, MB/s from ``p`` to ``q`` (the diagonal is unused).
        latency_s: ``latency_s[p][q]``, seconds added to every transfer from ``p`` to ``q``.
    """

    processors: tuple[str, ...]
    bandwidth_mb_s: tuple[tuple[float, ...], ...]
    latency_s: tuple[tuple[float, ...], ...]
    _inverse: tuple[tuple[float, ...], ...] = field(init=False, repr=False, compare=False)
    _means: tuple[float, float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        n = len(self.processors)
        if n == 0:
            raise WorkloadError("network: no processors; give at least one")
        if len(set(self.processors)) != n:
            twice = sorted({p for p in self.processors if self.processors.count(p) > 1})
            raise WorkloadError(f"network: processor name {twice[0]!r} given twice; names must "
                                f"differ")
        matrices = (("bandwidth_mb_s", self.bandwidth_mb_s), ("latency_s", self.latency_s))
        for what, matrix in matrices:
            if len(matrix) != n or any(len(row) != n for row in matrix):
                raise WorkloadError(f"network: {what} must be a {n} x {n} matrix (one row and "
                                    f"column per processor)")
        for p, q in ((p, q) for p in range(n) for q in range(n) if p != q):
            bandwidth, latency = self.bandwidth_mb_s[p][q], self.latency_s[p][q]
            if not bandwidth > 0:
                raise WorkloadError(f"network: bandwidth_mb_s from {self.processors[p]!r} to "
                                    f"{self.processors[q]!r} is {bandwidth!r}; it must be > 0")
            if not 0 <= latency < math.inf:
                raise WorkloadError(f"network: latency_s from {self.processors[p]!r} to "
                                    f"{self.processors[q]!r} is {latency!r}; it must be finite "
                                    f"and >= 0")
        inverse = tuple(tuple(0.0 if p == q else 1.0 / self.bandwidth_mb_s[p][q] for q in range(n))
                        for p in range(n))
        object.__setattr__(self, "_inverse", inverse)
        means = (_off_diagonal_mean(self.bandwidth_mb_s, math.inf),
                 _off_diagonal_mean(self.latency_s, 0.0))
        object.__setattr__(self, "_means", means)

    @classmethod
    def uniform(cls, processors: Sequence[str] | int, bandwidth_mb_s: float = 1.0,
                latency_s: float = 0.0) -> "Network":
        """Every pair of distinct processors joined by the same link.

        Args:
            processors: names, or a count (names ``p0``, ``p1`` ...).
            bandwidth_mb_s: bandwidth of every link in MB/s.
            latency_s: latency of every link in seconds.
        """
        names = tuple(f"p{i}" for i in range(processors)) if isinstance(processors, int) \
            else tuple(processors)
        n = len(names)
        return cls(names, tuple((float(bandwidth_mb_s),) * n for _ in range(n)),
                   tuple((float(latency_s),) * n for _ in range(n)))

    @property
    def size(self) -> int:
        """Number of processors."""
        return len(self.processors)

    def comm_s(self, data_mb: float, src: int, dst: int) -> float:
        """Transfer time of ``data_mb`` from processor ``src`` to ``dst``: 0 on the same one."""
        if src == dst:
            return 0.0
        return self.latency_s[src][dst] + data_mb * self._inverse[src][dst]

    def mean_comm_s(self, data_mb: float) -> float:
        """Mean transfer time of ``data_mb`` between distinct processors, as HEFT's ranks use it:
        mean latency + data / mean bandwidth over the ordered pairs (0 with one processor)."""
        if self.size < 2:
            return 0.0
        return self._means[1] + data_mb / self._means[0]

    @property
    def mean_bandwidth_mb_s(self) -> float:
        """Mean bandwidth over the ordered pairs of distinct processors (inf with one processor)."""
        return self._means[0]

    @property
    def mean_latency_s(self) -> float:
        """Mean latency over the ordered pairs of distinct processors (0 with one processor)."""
        return self._means[1]

    @property
    def inverse_bandwidth(self) -> tuple[tuple[float, ...], ...]:
        """``1 / bandwidth_mb_s`` (s per MB), 0 on the diagonal: a transfer to oneself is free."""
        return self._inverse


def _off_diagonal_mean(matrix: tuple[tuple[float, ...], ...], alone: float) -> float:
    n = len(matrix)
    if n < 2:
        return alone
    return math.fsum(matrix[p][q] for p in range(n) for q in range(n) if p != q) / (n * (n - 1))


@dataclass(frozen=True, eq=False)
class Dag:
    """A task graph with its costs on a network of processors.

    Attributes:
        tasks: task names, index = task id.
        costs_s: ``costs_s[t][p]``, computation time of task ``t`` on processor ``p`` in seconds.
        edges: (predecessor, successor, data in MB) by task index.
        network: the processors and links.
        name: a name for messages and outputs.
        succ: per task, its (successor, data in MB) pairs (derived).
        pred: per task, its (predecessor, data in MB) pairs (derived).
        order: the task indices in a topological order (derived; ties by task index).
    """

    tasks: tuple[str, ...]
    costs_s: tuple[tuple[float, ...], ...]
    edges: tuple[Edge, ...]
    network: Network
    name: str = "dag"
    succ: tuple[tuple[tuple[int, float], ...], ...] = field(init=False, repr=False)
    pred: tuple[tuple[tuple[int, float], ...], ...] = field(init=False, repr=False)
    order: tuple[int, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._check_tasks_and_costs()
        succ: list[list[tuple[int, float]]] = [[] for _ in self.tasks]
        pred: list[list[tuple[int, float]]] = [[] for _ in self.tasks]
        seen: set[tuple[int, int]] = set()
        for src, dst, data in self.edges:
            self._check_edge(src, dst, data, seen)
            succ[src].append((dst, float(data)))
            pred[dst].append((src, float(data)))
        object.__setattr__(self, "succ", tuple(tuple(s) for s in succ))
        object.__setattr__(self, "pred", tuple(tuple(p) for p in pred))
        object.__setattr__(self, "order", self._topological_order())

    @classmethod
    def from_names(cls, costs_s: Mapping[str, Sequence[float]],
                   edges: Iterable[tuple[str, str, float]], network: Network,
                   name: str = "dag") -> "Dag":
        """Build a DAG from task names: ``costs_s[task]`` is its row of costs (one per processor)
        and each edge is ``(predecessor, successor, data_mb)``."""
        tasks = tuple(costs_s)
        index = {task: i for i, task in enumerate(tasks)}
        rows = tuple(tuple(float(c) for c in costs_s[t]) for t in tasks)
        numbered = []
        for src, dst, data in edges:
            for end in (src, dst):
                if end not in index:
                    raise WorkloadError(f"{name}: edge {src!r} -> {dst!r} names task {end!r}, "
                                        f"which has no costs; give its costs or remove the edge")
            numbered.append((index[src], index[dst], float(data)))
        return cls(tasks, rows, tuple(numbered), network, name)

    @property
    def size(self) -> int:
        """Number of tasks."""
        return len(self.tasks)

    @property
    def entries(self) -> list[int]:
        """Tasks without predecessors, by index."""
        return [t for t in range(self.size) if not self.pred[t]]

    @property
    def exits(self) -> list[int]:
        """Tasks without successors, by index."""
        return [t for t in range(self.size) if not self.succ[t]]

    def _check_tasks_and_costs(self) -> None:
        if len(set(self.tasks)) != len(self.tasks):
            twice = next(t for i, t in enumerate(self.tasks) if t in self.tasks[:i])
            raise WorkloadError(f"{self.name}: task {twice!r} given twice; task names must differ")
        width = self.network.size
        if len(self.costs_s) != len(self.tasks):
            raise WorkloadError(f"{self.name}: {len(self.costs_s)} cost rows for {len(self.tasks)} "
                                f"tasks; give one row per task")
        for task, row in zip(self.tasks, self.costs_s):
            if len(row) != width:
                raise WorkloadError(f"{self.name}: task {task!r} has {len(row)} costs for {width} "
                                    f"processors; give one cost per processor")
            for proc, cost in zip(self.network.processors, row):
                if not 0 <= cost < math.inf:
                    raise WorkloadError(f"{self.name}: task {task!r} costs {cost!r} s on processor "
                                        f"{proc!r}; a cost must be finite and >= 0")

    def _check_edge(self, src: int, dst: int, data: float, seen: set[tuple[int, int]]) -> None:
        n = self.size
        if not (0 <= src < n and 0 <= dst < n):
            raise WorkloadError(f"{self.name}: edge {src} -> {dst} names a task index outside "
                                f"0..{n - 1}")
        label = f"{self.tasks[src]!r} -> {self.tasks[dst]!r}"
        if src == dst:
            raise WorkloadError(f"{self.name}: task {self.tasks[src]!r} depends on itself; remove "
                                f"the edge {label}")
        if (src, dst) in seen:
            raise WorkloadError(f"{self.name}: edge {label} given twice; give each edge once (add "
                                f"up the data)")
        if not 0 <= data < math.inf:
            raise WorkloadError(f"{self.name}: edge {label} carries {data!r} MB; data must be "
                                f"finite and >= 0")
        seen.add((src, dst))

    def _topological_order(self) -> tuple[int, ...]:
        """Kahn's algorithm, smallest ready index first (shared with job dependencies:
        :func:`hdrm.workload.dependencies.kahn_order`); a cycle raises naming a task on it."""
        order, missing = kahn_order([len(p) for p in self.pred],
                                    [[nxt for nxt, _ in succ] for succ in self.succ])
        if len(order) < self.size:
            cycle = self._a_cycle(missing)
            path = " -> ".join(repr(self.tasks[t]) for t in cycle)
            raise WorkloadError(f"{self.name}: the graph has a cycle through task "
                                f"{self.tasks[cycle[0]]!r} ({path}); remove one of these edges")
        return tuple(order)

    def _a_cycle(self, missing: list[int]) -> list[int]:
        """A cycle among the tasks Kahn's algorithm left (each has a blocked predecessor)."""
        task = min(t for t in range(self.size) if missing[t])
        visited: dict[int, int] = {}
        walk: list[int] = []
        while task not in visited:
            visited[task] = len(walk)
            walk.append(task)
            task = min(p for p, _ in self.pred[task] if missing[p])
        cycle = walk[visited[task]:]
        cycle.reverse()  # the walk followed predecessors; print in edge direction
        first = cycle.index(min(cycle))  # from its first task by index
        cycle = cycle[first:] + cycle[:first]
        return cycle + [cycle[0]]
