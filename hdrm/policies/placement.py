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
#: FGD forgets its interned node states and kept scores past this many (a bound on memory).
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
    """FGD's scores, computed once per distinct (node state, task demand).

    A node's score depends only on its state (free CPU, model, free GPU shares up to their
    order) and the task's (CPU, share, GPU count), and node states repeat a great deal (about
    1,200 openb nodes are in some 16 states at a time). Each node's state is interned to an id
    when the node changes; the nodes asked about are grouped by id, and a score is computed by
    :class:`FragMeter` once per (state id, demand) and kept, so every node in one state gets
    the same float it would get alone.
    """

    name = "fgd"

    def __init__(self, cluster: GpuCluster, types: TaskTypes | None = None,
                 prices: Mapping[str, float] | None = None) -> None:
        super().__init__(cluster, types, prices)
        if types is None:
            raise ValueError("fgd needs the workload's task types")
        self.meter = FragMeter(cluster, types)
        self._forget()

    def _forget(self) -> None:
        """Drop every interned state and kept score (a bound on memory)."""
        self._state_version = np.full(self.cluster.nb_nodes, -1, dtype=np.int64)
        self._state = np.zeros(self.cluster.nb_nodes, dtype=np.int64)  # node -> state id
        self._ids: dict[tuple, int] = {}  # state -> id
        self._state_frag: list[float] = []  # state id -> its fragmentation
        self._kept: dict[tuple, float] = {}  # (state id, demand[, GPU share]) -> score

    def _states(self, nodes: NodeIds) -> np.ndarray:
        """The nodes' state ids, interning the states of nodes changed since last asked."""
        c = self.cluster
        if len(self._ids) + len(self._kept) > _MEMO_SIZE:
            self._forget()
        stale = nodes[self._state_version[nodes] != c.version[nodes]]
        if len(stale):
            cpu, model = c.cpu_left[stale], c.model[stale]
            left = c.gpu_left[stale]
            keys = zip(cpu.tolist(), model.tolist(), map(_sorted_tuple, left.tolist()))
            ids, new, sids = self._ids, [], []
            for i, key in enumerate(keys):
                sid = ids.get(key)
                if sid is None:
                    sid = ids[key] = len(ids)
                    new.append(i)
                sids.append(sid)
            if new:
                self._state_frag.extend(
                    self.meter.frag(cpu[new], left[new], model[new]).tolist())
            self._state[stale] = sids
            self._state_version[stale] = c.version[stale]
        return self._state[nodes]

    def _scores(self, before, cpu, left, model):
        after = self.meter.frag(cpu, left, model)
        # the simulator's arithmetic: int(sigmoid(x) * 100), x the fragmentation saved / 1000
        return np.floor(1 / (1 + np.exp(-((before - after) / 1000))) * 100)

    def _kept_scores(self, keys: list[tuple], compute) -> np.ndarray:
        """The scores kept for ``keys``; ``compute(indices)`` gives those of the others."""
        kept = self._kept
        out = [kept.get(key) for key in keys]
        missing = [i for i, value in enumerate(out) if value is None]
        if missing:
            for i, value in zip(missing, compute(np.array(missing)).tolist()):
                kept[keys[i]] = out[i] = value
        return np.array(out, dtype=float)

    def per_gpu(self, shape: TaskShape, nodes: NodeIds) -> np.ndarray:
        """``[node, gpu]`` scores of a shared task on each GPU (``-inf`` where it cannot go)."""
        c = self.cluster
        left = c.gpu_left[nodes]
        out = np.full(left.shape, -np.inf)
        rows, gpus = np.nonzero(left >= shape.milli)  # every (node, GPU) that fits, one batch
        if not len(rows):
            return out
        # a GPU's score depends on its node's state and its own free share only: score the
        # first (node, GPU) of each such pair, then spread
        sid = self._states(nodes)
        pairs = sid[rows] * (MILLI + 1) + left[rows, gpus]
        uniq, pick, spread = np.unique(pairs, return_index=True, return_inverse=True)
        r, g = rows[pick], gpus[pick]
        demand = (shape.cpu_milli, shape.milli, shape.gpus)
        sids = sid[r].tolist()

        def compute(idx: np.ndarray) -> np.ndarray:
            n, gi = nodes[r[idx]], g[idx]
            moved = c.gpu_left[n]
            moved[np.arange(len(n)), gi] -= shape.milli
            before = np.array([self._state_frag[sids[i]] for i in idx.tolist()])
            return self._scores(before, c.cpu_left[n] - shape.cpu_milli, moved, c.model[n])

        keys = [(s, demand, share) for s, share in zip(sids, (uniq % (MILLI + 1)).tolist())]
        out[rows, gpus] = self._kept_scores(keys, compute)[spread.ravel()]
        return out

    def node_scores(self, shape, nodes):
        if shape.is_shared:
            return self.per_gpu(shape, nodes).max(axis=1)
        c = self.cluster
        sid = self._states(nodes)
        uniq, pick, spread = np.unique(sid, return_index=True, return_inverse=True)
        reps = nodes[pick]
        demand = (shape.cpu_milli, shape.milli, shape.gpus)

        def compute(idx: np.ndarray) -> np.ndarray:
            n = reps[idx]
            left = c.gpu_left[n]
            if shape.gpus:
                whole = left == MILLI
                left = np.where(whole & (np.cumsum(whole, axis=1) <= shape.gpus), 0, left)
            before = np.array([self._state_frag[s] for s in uniq[idx].tolist()])
            return self._scores(before, c.cpu_left[n] - shape.cpu_milli, left, c.model[n])

        keys = [(s, demand) for s in uniq.tolist()]
        return self._kept_scores(keys, compute)[spread.ravel()]

    def gpu_for_share(self, node, shape, rng):
        return int(np.argmax(self.per_gpu(shape, np.array([node]))[0]))


# registers ``price_aware`` (its own module; imported last: it builds on the classes above)
from hdrm.policies import gpu_price  # noqa: E402,F401
