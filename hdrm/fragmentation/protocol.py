"""The placement-only protocol (Weng et al., ATC'23): tasks arrive and never end.

For one seed: the task list, in name order, is shuffled; then it is resampled with replacement
(``tuning_ratio``, 1.3 in the paper) up to ``tuning_ratio`` times the cluster's GPUs (copies drawn
uniformly from the original list are appended until a copy's per-GPU share would pass the target,
the paper's rule; a list already above the target loses random tasks until it is not). The
shuffle, the tuning and the tie order of the nodes come from a numpy generator seeded with the
seed, or from the paper's own draws for that seed (``draws="paper"``,
:mod:`hdrm.fragmentation.paper_draws`: then every seed is the paper's experiment of that seed). Tasks arrive one by one in that order; each is
placed by the policy or, fitting nowhere, fails and is skipped. After each arrival the curve
records the arrived GPU requests (placed or not) and the allocated GPU share, both as % of the
cluster's milli-GPU, and the cluster's fragmentation (amount in milli-GPU, and as % of the free
GPU share) against the workload's typical task types.

The value at 100% arrived workload follows the paper's analysis: the mean allocation over the
arrivals whose arrived % rounds to 100 (each allocation rounded to 2 decimals), or, if none does,
over those whose rounded arrived % is within 1 of it; unallocated = 100 - that.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from hdrm.errors import ConfigError
from hdrm.fragmentation.paper_draws import load_stream, paper_order
from hdrm.policies.gpu_frag import FragMeter, TaskTypes
from hdrm.policies.gpu_placer import Placer
from hdrm.policies.gpu_state import GpuCluster, TaskShape
from hdrm.policies.placement import make_placement

logger = logging.getLogger(__name__)

#: The paper's workload tuning ratio: GPU requests resampled to 130% of the cluster's GPUs.
DEFAULT_TUNING_RATIO = 1.3
#: Where the arrival and tie orders come from (see :func:`run_seed`).
DRAWS = ("numpy", "paper")

CURVE_COLUMNS = ("arrival", "task", "node", "arrived_gpu_milli", "allocated_gpu_milli",
                 "arrived_pct", "allocation_pct", "frag_gpu_milli", "frag_ratio_pct")


@dataclass
class SeedRun:
    """The outcome of one seed.

    Attributes:
        seed: the seed.
        tasks: per arrival, the index of the task in the original list.
        nodes: per arrival, the node it went to (-1: failed).
        arrived_milli, allocated_milli, frag_milli: per arrival, after it (milli-GPU).
        total_milli: the cluster's milli-GPU.
    """

    seed: int
    tasks: np.ndarray
    nodes: np.ndarray
    arrived_milli: np.ndarray
    allocated_milli: np.ndarray
    frag_milli: np.ndarray
    total_milli: int

    @property
    def arrived_pct(self) -> np.ndarray:
        return percent_of(self.arrived_milli, self.total_milli)

    @property
    def allocation_pct(self) -> np.ndarray:
        return percent_of(self.allocated_milli, self.total_milli)

    @property
    def frag_ratio_pct(self) -> np.ndarray:
        idle = self.total_milli - self.allocated_milli
        return np.divide(100.0 * self.frag_milli, idle, out=np.zeros(len(idle)), where=idle > 0)

    @property
    def failed(self) -> int:
        return int((self.nodes < 0).sum())

    def unallocated_pct(self, arrived: float = 100.0) -> float:
        """100 - the allocation % at ``arrived`` % arrived workload (see the module docs)."""
        return 100.0 - allocation_at(self.arrived_pct, self.allocation_pct, arrived)

    def curve_rows(self) -> list[tuple]:
        """The curve as rows of :data:`CURVE_COLUMNS`."""
        return [(i, int(t), int(n), int(a), int(u), round(float(p), 4), round(float(q), 4),
                 round(float(f), 2), round(float(r), 4))
                for i, (t, n, a, u, p, q, f, r) in enumerate(zip(
                    self.tasks, self.nodes, self.arrived_milli, self.allocated_milli,
                    self.arrived_pct, self.allocation_pct, self.frag_milli,
                    self.frag_ratio_pct))]


def percent_of(milli: np.ndarray, total_milli: float) -> np.ndarray:
    """Milli-GPU as % of the cluster's, computed as the paper's analysis does (milli / GPUs /
    10: the floats, and so the roundings of :func:`allocation_at`, are the same)."""
    return milli / (total_milli / 1000) / 10


class JumpedOver(ValueError):
    """No arrival near the asked arrived %: one arrival passed it by more than 1%."""


def allocation_at(arrived_pct: np.ndarray, allocation_pct: np.ndarray, arrived: float) -> float:
    """Mean allocation % over the arrivals whose arrived % rounds to ``arrived`` (else within 1).

    The roundings are the paper's analysis' (pandas): each arrived % to an integer and each
    allocation % to 2 decimals as Python's ``round`` does (the exact binary value decides a
    half), their mean to 2 decimals as numpy's.

    Raises:
        ValueError: the curve never comes near ``arrived``; :class:`JumpedOver` when an arrival
            passes it from more than 1% below to more than 1% above.
    """
    rounded = np.round(arrived_pct)
    rows = rounded == arrived
    if not rows.any():
        rows = (rounded >= arrived - 1) & (rounded <= arrived + 1)
    if not rows.any():
        above = np.flatnonzero(arrived_pct > arrived)
        if len(above):  # passed it between two arrivals: one task asks more than 1%
            below = float(arrived_pct[above[0] - 1]) if above[0] else 0.0
            raise JumpedOver(f"the arrived workload jumps over {arrived:g}% (from {below:.1f}% "
                             f"to {float(arrived_pct[above[0]]):.1f}% in one arrival)")
        raise ValueError(f"the arrived workload never reaches {arrived:g}% "
                         f"(last {float(arrived_pct[-1]) if len(arrived_pct) else 0:.1f}%)")
    values = np.array([round(v, 2) for v in allocation_pct[rows].tolist()])
    return float(np.round(values.mean(), 2))


def arrival_order(shapes: Sequence[TaskShape], names: Sequence[str], total_milli: int,
                  ratio: float, rng: np.random.Generator) -> np.ndarray:
    """Indices into ``shapes`` in arrival order (shuffled, then tuned to ``ratio``)."""
    by_name = np.array(sorted(range(len(shapes)), key=lambda i: names[i]), dtype=np.int64)
    order = list(by_name[rng.permutation(len(by_name))])
    if ratio <= 0:
        return np.array(order, dtype=np.int64)
    milli = np.array([s.total_milli for s in shapes], dtype=np.int64)
    target = ratio * total_milli
    requested = int(milli.sum())
    if not requested:  # copies of GPU-less tasks would be appended for ever
        raise ValueError("no task asks a GPU: the requests can never be tuned to "
                         f"{ratio:g} x the cluster's GPUs")
    while requested > target and order:
        requested -= int(milli[order.pop(int(rng.integers(len(order))))])
    share = np.array([s.milli for s in shapes], dtype=np.int64)
    while requested < target:
        pick = int(by_name[rng.integers(len(by_name))])
        if requested + share[pick] > target:  # the paper's rule: the per-GPU share
            break
        order.append(pick)
        requested += int(milli[pick])
    return np.array(order, dtype=np.int64)


def _node_frag(meter: FragMeter, cluster: GpuCluster, node: int, memo: dict) -> float:
    """The node's fragmentation now, memoised by its state (states repeat across nodes)."""
    key = (int(cluster.cpu_left[node]), int(cluster.model[node]),
           cluster.gpu_left[node].tobytes())
    value = memo.get(key)
    if value is None:
        value = memo[key] = float(meter.of_cluster(cluster, slice(node, node + 1))[0])
    return value


def run_seed(cluster: GpuCluster, shapes: Sequence[TaskShape], names: Sequence[str],
             types: TaskTypes, policy: str, seed: int,
             ratio: float = DEFAULT_TUNING_RATIO, ties: str = "shuffled",
             draws: str = "numpy", prices: Mapping[str, float] | None = None) -> SeedRun:
    """One seed of the protocol on a fresh copy of the cluster's state.

    ``draws``: ``"numpy"`` draws the arrival order and the tie order from a numpy generator seeded
    with ``seed``; ``"paper"`` takes them from the FGD paper's own draws for that seed
    (:mod:`hdrm.fragmentation.paper_draws`; with ``ties="shuffled"``), so that each seed is the
    paper's experiment of that seed. A random policy's own choices come from the numpy generator
    either way. ``prices``: per GPU-hour by model, for ``price_aware`` (None: the type
    library's).
    """
    cluster.reset()
    rng = np.random.default_rng(seed)
    tie_rank = None
    if draws == "paper":
        order, tie_rank = paper_order(shapes, names, cluster.total_gpu_milli, ratio,
                                      cluster.nb_nodes, load_stream(seed))
    elif draws == "numpy":
        order = arrival_order(shapes, names, cluster.total_gpu_milli, ratio, rng)
    else:
        raise ConfigError(f"--draws: unknown {draws!r}; choose one of: {', '.join(DRAWS)}")
    placer = Placer(make_placement(policy, cluster, types, prices=prices), rng, ties, tie_rank)
    meter = FragMeter(cluster, types)
    node_frag = meter.of_cluster(cluster)
    frag_total = float(node_frag.sum())
    n = len(order)
    nodes = np.full(n, -1, dtype=np.int64)
    arrived, allocated, frag = (np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64),
                                np.zeros(n))
    arrived_sum = allocated_sum = 0
    memo: dict = {}
    for i, task in enumerate(order):
        shape = shapes[task]
        arrived_sum += shape.total_milli
        choice = placer.place(shape)
        if choice is not None:
            node = nodes[i] = choice[0]
            allocated_sum += shape.total_milli
            new = _node_frag(meter, cluster, node, memo)
            frag_total += new - node_frag[node]
            node_frag[node] = new
        arrived[i], allocated[i], frag[i] = arrived_sum, allocated_sum, frag_total
    logger.info("%s seed %d: %d arrivals, %d failed", policy, seed, n, int((nodes < 0).sum()))
    return SeedRun(seed, order, nodes, arrived, allocated, frag, cluster.total_gpu_milli)
