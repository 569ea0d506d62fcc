"""Placements: one scoring interface over feasible (node, GPUs), registered by name.

A placement scores every node for a task (:meth:`Placement.score`, vectorised over nodes with
numpy; ``-inf`` where the task does not fit) and, on the chosen node, picks the GPUs
(:meth:`Placement.choose_gpus`). The node with the highest score wins; ties follow the
:class:`~hdrm.policies.gpu_placer.Placer`'s rule (by default in the protocol, the FGD simulator's:
the first node of a random order drawn once per run). A score depends only on the
node's own state and the task, so :class:`~hdrm.policies.gpu_placer.Placer` caches it per
(node, task shape) and recomputes only nodes that changed.

The six policies of the FGD paper follow the definitions of its simulator
(``hkust-adsl/kubernetes-scheduler-simulator``, score plugins), including their integer scores
0..100 (which decide the ties); ``cpu_norm`` and ``gpu_norm`` are the largest node's CPU and GPU
capacity (128 cores and 8 GPUs on openb):

* ``random``: any feasible node; a shared task gets a random GPU that fits.
* ``dot_product``: ``100 * (1 - (free . demand) / 2)`` with both vectors (CPU, GPU milli) divided
  by the norms: the node whose free resources align least with the demand.
* ``gpu_clustering``: nodes already running tasks of the same GPU class (shared, 1, 2 ... GPUs)
  first (75 + ...), then mixed nodes (50 +), idle nodes (25 +), others; + 25 x used GPU share.
* ``gpu_packing``: a GPU already shared (100 - its free share / 100), then free GPUs of a used
  node (50 - GPUs opened), then an idle node (33 - its GPUs).
* ``best_fit``: ``100 * (1 - (free CPU - demand) / cpu_norm / 2 - (free GPU - demand) /
  gpu_norm / 2)``: the least free resources left.
* ``fgd``: ``100 * sigmoid((frag before - frag after) / 1000)``: the node and GPU whose
  assignment increases fragmentation (:mod:`hdrm.policies.gpu_frag`) the least.

two classic ones, ``first_fit`` (the lowest node id that fits) and ``load_balance`` (the most
free CPU and GPU share, as fractions of the node, left after placing), and the
heterogeneity-aware ``price_aware`` (:mod:`hdrm.policies.gpu_price`: the GPU model where the task
gets the most work done per dollar, then best fit). Within a node a shared task
takes the GPU with the least free share that fits (best fit; ``random`` and ``fgd`` choose their
own), and whole GPUs are the free ones of lowest index. A GPU-model constraint is a feasibility
rule, so no policy can break it.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from hdrm.policies.gpu_frag import FragMeter, TaskTypes
from hdrm.policies.gpu_state import MILLI, GpuCluster, TaskShape
from hdrm.registry import Registry

NodeIds = np.ndarray


def exclusive_gpus(left: np.ndarray, count: int) -> tuple[int, ...]:
    """The ``count`` wholly free GPUs of lowest index in one node's ``left`` row."""
    return tuple(int(g) for g in np.flatnonzero(left == MILLI)[:count])


def best_fit_gpu(left: np.ndarray, milli: int) -> int:
    """The GPU with the least free share that still holds ``milli`` (lowest index on ties)."""
    masked = np.where(left >= milli, left, np.iinfo(np.int64).max)
    return int(np.argmin(masked))


class Placement:
    """Base class: override :meth:`node_scores`; :meth:`gpu_for_share` for a GPU choice."""

    #: registered name
    name = ""
    #: the tie rule this policy imposes (None: the placer's); ``random`` draws among equals
    ties: str | None = None

    def __init__(self, cluster: GpuCluster, types: TaskTypes | None = None,
                 prices: Mapping[str, float] | None = None) -> None:
        self.cluster = cluster
        self.types = types
        self.prices = prices

    def score(self, shape: TaskShape, nodes: NodeIds) -> np.ndarray:
        """Scores of ``nodes`` for the task, ``-inf`` where it does not fit (higher is better)."""
        scores = np.full(len(nodes), -np.inf)
        ok = self.cluster.feasible(shape, nodes)
        if ok.any():
            scores[ok] = self.node_scores(shape, nodes[ok])
        return scores

    def node_scores(self, shape: TaskShape, nodes: NodeIds) -> np.ndarray:
        """Scores of feasible ``nodes``."""
        raise NotImplementedError

    def choose_gpus(self, node: int, shape: TaskShape,
                    rng: np.random.Generator) -> tuple[int, ...]:
        """The GPUs the task takes on ``node`` (where it fits)."""
        left = self.cluster.gpu_left[node]
        if shape.gpus == 0:
            return ()
        if shape.is_shared:
            return (self.gpu_for_share(node, shape, rng),)
        return exclusive_gpus(left, shape.gpus)

    def gpu_for_share(self, node: int, shape: TaskShape, rng: np.random.Generator) -> int:
        """The GPU a shared task takes on ``node``: best fit."""
        return best_fit_gpu(self.cluster.gpu_left[node], shape.milli)


PLACEMENTS: Registry[type[Placement]] = Registry("placement policy")
#: FGD memoises the fragmentation of node states when scoring at most this many at once.
_MEMO_ROWS = 64
#: ... and forgets them all past this many states (a bound on memory).
_MEMO_SIZE = 200_000


def _sorted_tuple(values: list) -> tuple:
    return tuple(sorted(values))


def make_placement(name: str, cluster: GpuCluster, types: TaskTypes | None = None,
                   where: str = "--policy",
                   prices: Mapping[str, float] | None = None) -> Placement:
    """The placement registered as ``name`` for this cluster (``types`` for FGD; ``prices`` per
    GPU-hour by model for ``price_aware``, else the type library's).

    Raises:
        ConfigError: unknown name (close names suggested), or a model without a price.
        ValueError: FGD without task types.
    """
    cls = PLACEMENTS.get(name, where)
    return cls(cluster, types, prices)


def _register(cls: type[Placement]) -> type[Placement]:
    PLACEMENTS.add(cls.name, cls)
    return cls


@_register
class RandomPlacement(Placement):
    name = "random"
    ties = "random"  # every feasible node scores the same: draw one uniformly

    def node_scores(self, shape, nodes):
        return np.zeros(len(nodes))

    def gpu_for_share(self, node, shape, rng):
        return int(rng.choice(np.flatnonzero(self.cluster.gpu_left[node] >= shape.milli)))


@_register
class FirstFit(Placement):
    name = "first_fit"

    def node_scores(self, shape, nodes):
        return -nodes.astype(float)


@_register
class LoadBalance(Placement):
    name = "load_balance"

    def node_scores(self, shape, nodes):
        c = self.cluster
        cpu = (c.cpu_left[nodes] - shape.cpu_milli) / c.cpu_cap[nodes]
        gpu_cap = np.maximum(c.nb_gpus[nodes] * MILLI, 1)
        return cpu + (c.gpu_left[nodes].sum(axis=1) - shape.total_milli) / gpu_cap


@_register
class DotProduct(Placement):
    name = "dot_product"

    def node_scores(self, shape, nodes):
        c = self.cluster
        cpu = c.cpu_left[nodes] / c.max_cpu * (shape.cpu_milli / c.max_cpu)
        gpu = c.gpu_left[nodes].sum(axis=1) / c.max_gpu_milli * (shape.total_milli
                                                                 / c.max_gpu_milli)
        return np.floor(100 * (1 - (cpu + gpu) / 2))


@_register
class BestFit(Placement):
    name = "best_fit"

    def node_scores(self, shape, nodes):
        c = self.cluster
        cpu = (c.cpu_left[nodes] - shape.cpu_milli) / c.max_cpu * 0.5
        gpu = (c.gpu_left[nodes].sum(axis=1) - shape.total_milli) / c.max_gpu_milli * 0.5
        return np.floor((1 - (cpu + gpu)) * 100)


@_register
class GpuClustering(Placement):
    name = "gpu_clustering"

    def node_scores(self, shape, nodes):
        c = self.cluster
        if shape.gpus == 0:
            return np.zeros(len(nodes))
        used = (25 * (c.max_gpu_milli - c.gpu_left[nodes].sum(axis=1))) // c.max_gpu_milli
        classes = c.affinity[nodes]
        same = classes[:, shape.affinity] > 0
        kinds = (classes > 0).sum(axis=1)
        base = np.where(same, np.where(kinds == 1, 75, 50), np.where(kinds == 0, 25, 0))
        return (used + base).astype(float)


@_register
class GpuPacking(Placement):
    name = "gpu_packing"

    def node_scores(self, shape, nodes):
        c = self.cluster
        if shape.gpus == 0:
            return np.zeros(len(nodes))
        left = c.gpu_left[nodes]
        free = (left == MILLI).sum(axis=1)
        idle = free == c.nb_gpus[nodes]
        scores = np.where(idle, np.maximum(33 - free, free), 0)
        if shape.is_shared:
            fits = np.where(left >= shape.milli, left, np.iinfo(np.int64).max)
            chosen = fits.min(axis=1)  # best fit
            shared = np.maximum(100 - (chosen * 100 // MILLI) // 10, 50)
            opened = np.where(chosen == MILLI, 49, shared)
        else:
            opened = np.full(len(nodes), max(50 - shape.gpus, 33))
        return np.where(idle, scores, opened).astype(float)


@_register
class Fgd(Placement):
    name = "fgd"

    def __init__(self, cluster: GpuCluster, types: TaskTypes | None = None,
                 prices: Mapping[str, float] | None = None) -> None:
        super().__init__(cluster, types, prices)
        if types is None:
            raise ValueError("fgd needs the workload's task types")
        self.meter = FragMeter(cluster, types)
        # every node's fragmentation now, kept with the node version it was computed at
        self._frag = np.zeros(cluster.nb_nodes)
        self._frag_version = np.full(cluster.nb_nodes, -1, dtype=np.int64)
        self._memo: dict[tuple, float] = {}  # node state -> fragmentation (see frag_of)

    def _before(self, nodes: NodeIds) -> np.ndarray:
        """The nodes' fragmentation as they are (cached until a node changes)."""
        c = self.cluster
        stale = nodes[self._frag_version[nodes] != c.version[nodes]]
        if len(stale):
            self._frag[stale] = self.frag_of(c.cpu_left[stale], c.gpu_left[stale],
                                             c.model[stale])
            self._frag_version[stale] = c.version[stale]
        return self._frag[nodes]

    def _scores(self, before, cpu, left, model):
        after = self.frag_of(cpu, left, model)
        # the simulator's arithmetic: int(sigmoid(x) * 100), x the fragmentation saved / 1000
        return np.floor(1 / (1 + np.exp(-((before - after) / 1000))) * 100)

    def frag_of(self, cpu: np.ndarray, left: np.ndarray, model: np.ndarray) -> np.ndarray:
        """:meth:`FragMeter.frag` of B node states; a few states (a step of a replay: the nodes
        that changed) are memoised by state, since node states repeat across nodes and time. A
        node's fragmentation does not depend on the order of its GPUs, so a state's key holds
        its free shares sorted."""
        if len(cpu) > _MEMO_ROWS:
            return self.meter.frag(cpu, left, model)
        memo = self._memo
        keys = list(zip(cpu.tolist(), model.tolist(), map(_sorted_tuple, left.tolist())))
        out = [memo.get(key) for key in keys]
        missing = [i for i, value in enumerate(out) if value is None]
        if missing:
            if len(memo) > _MEMO_SIZE:
                memo.clear()
            values = self.meter.frag(cpu[missing], left[missing], model[missing]).tolist()
            for i, value in zip(missing, values):
                memo[keys[i]] = out[i] = value
        return np.array(out)

    def per_gpu(self, shape: TaskShape, nodes: NodeIds) -> np.ndarray:
        """``[node, gpu]`` scores of a shared task on each GPU (``-inf`` where it cannot go)."""
        c = self.cluster
        cpu, left, model = c.cpu_left[nodes], c.gpu_left[nodes], c.model[nodes]
        before = self._before(nodes)
        out = np.full(left.shape, -np.inf)
        rows, gpus = np.nonzero(left >= shape.milli)  # every (node, GPU) that fits, one batch
        if not len(rows):
            return out
        # GPUs of one node with the same free share give the same node state up to the order
        # of its GPUs, hence the same score: score the first of each, then spread
        pick, spread = slice(None), slice(None)
        if len(rows) > _MEMO_ROWS:
            _, pick, spread = np.unique(rows * (MILLI + 1) + left[rows, gpus], return_index=True,
                                        return_inverse=True)
        r, g = rows[pick], gpus[pick]
        moved = left[r]
        moved[np.arange(len(r)), g] -= shape.milli
        scores = self._scores(before[r], cpu[r] - shape.cpu_milli, moved, model[r])
        out[rows, gpus] = scores[spread]
        return out

    def node_scores(self, shape, nodes):
        if shape.is_shared:
            return self.per_gpu(shape, nodes).max(axis=1)
        c = self.cluster
        cpu, left, model = c.cpu_left[nodes], c.gpu_left[nodes], c.model[nodes]
        before = self._before(nodes)
        if shape.gpus:
            whole = left == MILLI
            left = np.where(whole & (np.cumsum(whole, axis=1) <= shape.gpus), 0, left)
        return self._scores(before, cpu - shape.cpu_milli, left, model)

    def gpu_for_share(self, node, shape, rng):
        return int(np.argmax(self.per_gpu(shape, np.array([node]))[0]))


# registers ``price_aware`` (its own module; imported last: it builds on the classes above)
from hdrm.policies import gpu_price  # noqa: E402,F401
