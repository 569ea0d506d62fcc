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

import numpy as np

from hdrm.dag.model import Dag
from hdrm.dag.ranks import downward_ranks, optimistic_cost_table, oct_ranks, upward_ranks
from hdrm.dag.schedule import Schedule
from hdrm.errors import ConfigError
from hdrm.registry import Registry

logger = logging.getLogger(__name__)

#: Relative tolerance under which a priority equals the critical path's (CPOP).
CP_REL_TOL = 1e-9


class _Timeline:
    """The busy intervals of one processor, sorted (start and finish lists in step).

    Two bounds spare most searches through a long timeline; both only ever overestimate, as
    placing a task into a gap only shrinks gaps: ``max_gap`` bounds the longest idle gap (the
    gap from time 0 to the first interval included), and ``tail_gap`` the longest idle time
    after ``tail_from`` (learnt from the last search that found no gap). A task longer than
    the bound that applies can only go after the last interval. Appending an interval after a
    gap raises both bounds; a search over every gap makes ``max_gap`` exact.
    """

    __slots__ = ("starts", "finishes", "max_gap", "tail_from", "tail_gap")

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.finishes: list[float] = []
        self.max_gap = 0.0
        self.tail_from, self.tail_gap = math.inf, 0.0

    def fits_nowhere(self, ready: float, duration: float) -> bool:
        """True when no idle gap can take the task: it goes after the last interval."""
        return duration > self.max_gap or (ready >= self.tail_from and duration > self.tail_gap)

    def earliest(self, ready: float, duration: float) -> float:
        """The earliest start >= ``ready`` of an idle gap at least ``duration`` long."""
        starts, finishes = self.starts, self.finishes
        if not starts or ready >= finishes[-1]:
            return ready
        if self.fits_nowhere(ready, duration):
            return finishes[-1]
        k = bisect_right(finishes, ready)  # intervals before k end by `ready`
        whole, widest, usable = k == 0, 0.0, 0.0
        at, end = ready, finishes[k - 1] if k else 0.0
        for k in range(k, len(starts)):
            if at + duration <= starts[k]:
                return at
            if starts[k] - end > widest:
                widest = starts[k] - end
            if starts[k] - at > usable:
                usable = starts[k] - at
            end = finishes[k]
            if end > at:
                at = end
        if whole:
            self.max_gap = widest
        self.tail_from, self.tail_gap = ready, usable
        return at

    def add(self, start: float, finish: float) -> None:
        """Book ``[start, finish)``, which must lie in an idle gap."""
        k = bisect_right(self.finishes, start)
        if k == len(self.finishes):
            gap = start - (self.finishes[-1] if k else 0.0)
            if gap > self.max_gap:
                self.max_gap = gap
            if gap > self.tail_gap:
                self.tail_gap = gap
        self.starts.insert(k, start)
        self.finishes.insert(k, finish)


class _Placer:
    """Places tasks one by one and remembers where; turns into a :class:`Schedule`.

    The ready times and lower bounds of a task are computed for every processor at once (numpy);
    the exact insertion-based start is then searched processor by processor in increasing order
    of the lower bound ``ready + cost (+ bonus)``, stopping once that bound exceeds the best
    finish found: the same choice as trying every processor, at a fraction of the work.
    """

    def __init__(self, dag: Dag) -> None:
        self.dag = dag
        width = dag.network.size
        self.lines = [_Timeline() for _ in range(width)]
        self.costs = np.asarray(dag.costs_s, dtype=float).reshape(dag.size, width)
        latency = np.array(dag.network.latency_s, dtype=float)
        np.fill_diagonal(latency, 0.0)
        self.latency = latency
        self.inverse = np.array(dag.network.inverse_bandwidth, dtype=float)
        # per processor, mirrored from its timeline for numpy: last finish and the gap bounds
        self.last, self.gap = np.zeros(width), np.zeros(width)
        self.tail_from, self.tail_gap = np.full(width, math.inf), np.zeros(width)
        self.proc = [-1] * dag.size
        self.start = [0.0] * dag.size
        self.finish = [0.0] * dag.size

    def ready_times(self, task: int) -> np.ndarray:
        """Per processor, when the last input of ``task`` would arrive there."""
        ready = np.zeros(self.dag.network.size)
        for prev, data in self.dag.pred[task]:
            proc = self.proc[prev]
            arrival = self.finish[prev] + self.latency[proc] + data * self.inverse[proc]
            np.maximum(ready, arrival, out=ready)
        return ready

    def place(self, task: int, only: int | None = None, bonus: np.ndarray | None = None) -> None:
        """Put ``task`` on the processor of least EFT (+ ``bonus[p]``), or on ``only``; ties go
        to the lowest processor index."""
        ready, cost = self.ready_times(task), self.costs[task]
        if only is not None:
            proc, start = only, self._earliest(only, float(ready[only]), float(cost[only]))
        else:
            proc, start = self._best(ready, cost, bonus)
        finish = start + float(cost[proc])
        line = self.lines[proc]
        line.add(start, finish)
        self.last[proc] = line.finishes[-1]
        self._mirror(proc)
        self.proc[task], self.start[task], self.finish[task] = proc, start, finish

    def _earliest(self, proc: int, ready: float, duration: float) -> float:
        start = self.lines[proc].earliest(ready, duration)
        self._mirror(proc)
        return start

    def _mirror(self, proc: int) -> None:
        line = self.lines[proc]
        self.gap[proc], self.tail_from[proc], self.tail_gap[proc] = \
            line.max_gap, line.tail_from, line.tail_gap

    def _best(self, ready: np.ndarray, cost: np.ndarray,
              bonus: np.ndarray | None) -> tuple[int, float]:
        # where the task cannot fit into a gap its start is known: max(ready, last finish)
        known = (ready >= self.last) | (cost > self.gap) | \
            ((ready >= self.tail_from) & (cost > self.tail_gap))
        bound = np.where(known, np.maximum(ready, self.last), ready) + cost
        if bonus is not None:
            bound += bonus
        ready_l, cost_l, bound_l, known_l = ready.tolist(), cost.tolist(), bound.tolist(), \
            known.tolist()
        extra = bonus.tolist() if bonus is not None else [0.0] * len(cost_l)
        best_key, best_p, best_start = math.inf, -1, 0.0
        for p in np.argsort(bound, kind="stable").tolist():
            if bound_l[p] > best_key:
                break
            if known_l[p]:
                start = max(ready_l[p], float(self.last[p]))
            else:
                start = self._earliest(p, ready_l[p], cost_l[p])
            key = start + cost_l[p] + extra[p]
            if key < best_key or (key == best_key and p < best_p):
                best_key, best_p, best_start = key, p, start
        return best_p, best_start

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
    placer = _Placer(dag)
    position = {task: i for i, task in enumerate(dag.order)}
    for task in sorted(range(dag.size), key=lambda t: (-rank[t], position[t])):
        if any(placer.proc[p] < 0 for p, _ in dag.pred[task]):
            raise ConfigError(f"heft on {dag.name}: task {dag.tasks[task]!r} comes before one of "
                              f"its predecessors in the rank order; ranks must decrease along "
                              f"edges")
        placer.place(task)
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
    _ready_order(dag, priority, lambda t: placer.place(t, cp_proc if t in on_path else None))
    return placer.schedule("cpop")


def peft(dag: Dag) -> Schedule:
    """PEFT: the ready task of highest ``rank_oct``, on the processor of least EFT + OCT."""
    table = optimistic_cost_table(dag)
    placer, bonus = _Placer(dag), np.asarray(table, dtype=float)
    _ready_order(dag, oct_ranks(table), lambda t: placer.place(t, bonus=bonus[t]))
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
