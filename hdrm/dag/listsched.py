"""HEFT, CPOP and PEFT: insertion-based list scheduling of a DAG on heterogeneous processors.

All three repeat the same step: take the next task by priority and put it on a processor at the
earliest time its inputs have arrived *and* an idle gap of the processor is long enough
(insertion: a task may go into a hole left between two tasks already placed, not only after the
last one). They differ in the priority and in the processor chosen:

``heft`` (Topcuoglu et al. 2002)
    tasks in decreasing upward rank; each on the processor where it finishes earliest (EFT).
``cpop`` (Topcuoglu et al. 2002)
    the ready task with the highest ``rank_u + rank_d``; the tasks of one critical path (from the
    entry with the highest priority, each next one a successor with the same priority) all go on
    the processor that runs that path fastest, the others on their EFT processor.
``peft`` (Arabnejad and Barbosa 2014)
    the ready task with the highest ``rank_oct``; each on the processor minimising EFT + OCT.

Tie-breaks (documented, deterministic): equal priorities go in topological order
(:attr:`~hdrm.dag.model.Dag.order`, which numbers ties by task index); equal finish times go to
the lowest processor index. Two priorities count as equal on the critical path within a relative
1e-9 (:data:`CP_REL_TOL`), rounding of sums only.
"""

from __future__ import annotations

import heapq
import logging
import math
from bisect import bisect_right
from collections.abc import Callable, Sequence

from hdrm.dag.model import Dag
from hdrm.dag.ranks import downward_ranks, optimistic_cost_table, oct_ranks, upward_ranks
from hdrm.dag.schedule import Schedule
from hdrm.errors import ConfigError
from hdrm.registry import Registry

logger = logging.getLogger(__name__)

#: Relative tolerance under which a priority equals the critical path's (CPOP).
CP_REL_TOL = 1e-9


class _Timeline:
    """The busy intervals of one processor, sorted (start and finish lists in step)."""

    __slots__ = ("starts", "finishes")

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.finishes: list[float] = []

    def earliest(self, ready: float, duration: float) -> float:
        """The earliest start >= ``ready`` of an idle gap at least ``duration`` long."""
        starts, finishes = self.starts, self.finishes
        k = bisect_right(finishes, ready)  # intervals before k end by `ready`
        at = ready
        while k < len(starts):
            if at + duration <= starts[k]:
                return at
            if finishes[k] > at:
                at = finishes[k]
            k += 1
        return at

    def add(self, start: float, finish: float) -> None:
        """Book ``[start, finish)``, which must lie in an idle gap."""
        k = bisect_right(self.finishes, start)
        self.starts.insert(k, start)
        self.finishes.insert(k, finish)


class _Placer:
    """Places tasks one by one and remembers where; turns into a :class:`Schedule`."""

    def __init__(self, dag: Dag) -> None:
        self.dag = dag
        width = dag.network.size
        self.lines = [_Timeline() for _ in range(width)]
        self.rows = [dag.network.comm_row(p) for p in range(width)]
        self.proc = [-1] * dag.size
        self.start = [0.0] * dag.size
        self.finish = [0.0] * dag.size

    def ready_times(self, task: int) -> list[float]:
        """Per processor, when the last input of ``task`` would arrive there."""
        ready = [0.0] * self.dag.network.size
        for prev, data in self.dag.pred[task]:
            done = self.finish[prev]
            latency, inverse = self.rows[self.proc[prev]]
            for p, (lat, inv) in enumerate(zip(latency, inverse)):
                arrival = done + lat + data * inv
                if arrival > ready[p]:
                    ready[p] = arrival
        return ready

    def place(self, task: int, processors: Sequence[int],
              bonus: Sequence[float] | None = None) -> None:
        """Put ``task`` on the processor of least EFT (+ ``bonus[p]``); ties to the lowest index."""
        ready, costs = self.ready_times(task), self.dag.costs_s[task]
        best_key, best = math.inf, (-1, 0.0)
        for p in processors:
            start = self.lines[p].earliest(ready[p], costs[p])
            key = start + costs[p] + (bonus[p] if bonus is not None else 0.0)
            if key < best_key:
                best_key, best = key, (p, start)
        proc, start = best
        self.lines[proc].add(start, start + costs[proc])
        self.proc[task], self.start[task], self.finish[task] = proc, start, start + costs[proc]

    def schedule(self, policy: str) -> Schedule:
        """The schedule made so far (every task must have been placed)."""
        return Schedule(self.dag, policy, tuple(self.proc), tuple(self.start), tuple(self.finish))


def _ready_order(dag: Dag, priority: Sequence[float], place: Callable[[int], None]) -> None:
    """Place ready tasks, highest priority first (ties in topological order), until all are."""
    position = {task: i for i, task in enumerate(dag.order)}
    missing = [len(p) for p in dag.pred]
    heap = [(-priority[t], position[t], t) for t in range(dag.size) if not missing[t]]
    heapq.heapify(heap)
    while heap:
        task = heapq.heappop(heap)[2]
        place(task)
        for nxt, _ in dag.succ[task]:
            missing[nxt] -= 1
            if not missing[nxt]:
                heapq.heappush(heap, (-priority[nxt], position[nxt], nxt))


def heft(dag: Dag, ranks: Sequence[float] | None = None) -> Schedule:
    """HEFT: decreasing upward rank, each task on its earliest-finish processor.

    Args:
        dag: the DAG.
        ranks: the priorities to use instead of :func:`~hdrm.dag.ranks.upward_ranks` (they must
            decrease along every edge, as upward ranks do with positive costs).
    """
    rank = upward_ranks(dag) if ranks is None else ranks
    placer, everywhere = _Placer(dag), range(dag.network.size)
    position = {task: i for i, task in enumerate(dag.order)}
    for task in sorted(range(dag.size), key=lambda t: (-rank[t], position[t])):
        if any(placer.proc[p] < 0 for p, _ in dag.pred[task]):
            raise ConfigError(f"heft on {dag.name}: task {dag.tasks[task]!r} comes before one of "
                              f"its predecessors in the rank order; ranks must decrease along edges")
        placer.place(task, everywhere)
    return placer.schedule("heft")


def critical_path(dag: Dag, priority: Sequence[float]) -> list[int]:
    """CPOP's critical path: from the entry of highest priority, each next task the first
    successor (topological order) whose priority equals the path's, until none does."""
    entries = dag.entries
    if not entries:
        return []
    length = max(priority[t] for t in entries)
    tol = CP_REL_TOL * max(1.0, abs(length))
    task = next(t for t in dag.order if not dag.pred[t] and priority[t] >= length - tol)
    position = {t: i for i, t in enumerate(dag.order)}
    path = [task]
    while True:
        on_path = [n for n, _ in dag.succ[task] if abs(priority[n] - length) <= tol]
        if not on_path:
            return path
        task = min(on_path, key=position.__getitem__)
        path.append(task)


def cpop(dag: Dag, priority: Sequence[float] | None = None) -> Schedule:
    """CPOP: the critical path on the processor that runs it fastest, the rest by EFT.

    Args:
        dag: the DAG.
        priority: the priorities to use instead of ``rank_u + rank_d``.
    """
    if priority is None:
        priority = [u + d for u, d in zip(upward_ranks(dag), downward_ranks(dag))]
    path = critical_path(dag, priority)
    width = dag.network.size
    cp_proc = min(range(width), key=lambda p: (math.fsum(dag.costs_s[t][p] for t in path), p))
    on_path, placer = set(path), _Placer(dag)
    everywhere, only_cp = range(width), (cp_proc,)
    _ready_order(dag, priority,
                 lambda t: placer.place(t, only_cp if t in on_path else everywhere))
    return placer.schedule("cpop")


def peft(dag: Dag) -> Schedule:
    """PEFT: the ready task of highest ``rank_oct``, on the processor of least EFT + OCT."""
    table = optimistic_cost_table(dag)
    placer, everywhere = _Placer(dag), range(dag.network.size)
    _ready_order(dag, oct_ranks(table), lambda t: placer.place(t, everywhere, table[t]))
    return placer.schedule("peft")


#: The DAG schedulers by name.
DAG_POLICIES: Registry[Callable[[Dag], Schedule]] = Registry("DAG scheduling policy")
DAG_POLICIES.add("heft", heft)
DAG_POLICIES.add("cpop", cpop)
DAG_POLICIES.add("peft", peft)


def schedule_dag(dag: Dag, policy: str) -> Schedule:
    """Schedule ``dag`` with the policy named ``policy`` (``heft``, ``cpop``, ``peft``)."""
    result = DAG_POLICIES.get(policy)(dag)
    logger.debug("%s on %s: makespan %.6g s", policy, dag.name, result.makespan_s)
    return result
