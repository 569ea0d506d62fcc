"""Task priorities of list scheduling: upward and downward ranks, and PEFT's optimistic cost table.

Definitions (Topcuoglu, Hariri and Wu, IEEE TPDS 13(3), 2002; Arabnejad and Barbosa, IEEE TPDS
25(3), 2014), with ``w̄(i)`` the mean cost of task ``i`` over the processors and ``c̄(i, j)`` the
mean transfer time of edge ``i -> j`` between distinct processors
(:meth:`~hdrm.dag.model.Network.mean_comm_s`):

* upward rank: ``rank_u(i) = w̄(i) + max over successors j of (c̄(i, j) + rank_u(j))``, and
  ``w̄(exit)`` for an exit task: the length of the longest path from ``i`` to an exit, ``i``
  included;
* downward rank: ``rank_d(i) = max over predecessors j of (rank_d(j) + w̄(j) + c̄(j, i))``, and 0
  for an entry task: the longest path from an entry to ``i``, ``i`` excluded;
* optimistic cost table: ``OCT(i, p) = max over successors j of min over processors q of
  (OCT(j, q) + w(j, q) + c̄(i, j) if q != p else 0)``, 0 for an exit task; ``rank_oct(i)`` is the
  mean of ``OCT(i, p)`` over the processors.

Every function returns plain lists indexed by task.
"""

from __future__ import annotations

import math

from hdrm.dag.model import Dag


def mean_costs(dag: Dag) -> list[float]:
    """``w̄(i)``: the mean computation time of each task over the processors."""
    width = dag.network.size
    return [math.fsum(row) / width for row in dag.costs_s]


def upward_ranks(dag: Dag) -> list[float]:
    """``rank_u`` of every task (HEFT's priority)."""
    mean_w, comm = mean_costs(dag), dag.network.mean_comm_s
    rank = [0.0] * dag.size
    for task in reversed(dag.order):
        tail = max((comm(data) + rank[nxt] for nxt, data in dag.succ[task]), default=0.0)
        rank[task] = mean_w[task] + tail
    return rank


def downward_ranks(dag: Dag) -> list[float]:
    """``rank_d`` of every task."""
    mean_w, comm = mean_costs(dag), dag.network.mean_comm_s
    rank = [0.0] * dag.size
    for task in dag.order:
        rank[task] = max((rank[prev] + mean_w[prev] + comm(data) for prev, data in dag.pred[task]),
                         default=0.0)
    return rank


def optimistic_cost_table(dag: Dag) -> list[list[float]]:
    """``OCT(i, p)`` for every task and processor (PEFT)."""
    width, comm, costs = dag.network.size, dag.network.mean_comm_s, dag.costs_s
    table = [[0.0] * width for _ in range(dag.size)]
    for task in reversed(dag.order):
        row = table[task]
        for nxt, data in dag.succ[task]:
            through = [o + w for o, w in zip(table[nxt], costs[nxt])]
            moved = min(through) + comm(data)  # best elsewhere; never below staying put
            for p in range(width):
                best = through[p] if through[p] < moved else moved
                if best > row[p]:
                    row[p] = best
    return table


def oct_ranks(table: list[list[float]]) -> list[float]:
    """``rank_oct(i)``: the mean of a task's row of the optimistic cost table."""
    return [math.fsum(row) / len(row) for row in table]


def longest_min_path_s(dag: Dag) -> float:
    """The critical path when every task takes its least cost and transfers are free: the lower
    bound of any schedule's makespan that the schedule length ratio (SLR) divides by."""
    best = [min(row) for row in dag.costs_s]
    finish = [0.0] * dag.size
    for task in dag.order:
        finish[task] = best[task] + max((finish[p] for p, _ in dag.pred[task]), default=0.0)
    return max(finish, default=0.0)
