"""What the GPU environment reads of the cluster at every step, kept up to date incrementally.

The cluster (:class:`~hdrm.policies.gpu_state.GpuCluster`) bumps a node's version whenever the
node changes; between two steps only the nodes where tasks started or ended change. So the
per-node aggregates an observation needs (free CPU, memory, milli-GPU and wholly free GPUs, and
FGD's fragmentation against the workload's typical task types) are kept per node and summed per
GPU model, and only the nodes whose version moved are read again (:meth:`GpuClusterView.refresh`): a step costs what changed, not
the size of the cluster. Node states repeat (many nodes of one shape hold the same tasks), so
fragmentation is memoised by node state. Whether a task shape fits somewhere is kept the same
way, per shape (:meth:`GpuClusterView.fits`).
"""

from __future__ import annotations

import numpy as np

from hdrm.policies.gpu_frag import FragMeter, TaskTypes
from hdrm.policies.gpu_state import MILLI, GpuCluster, TaskShape


class GpuClusterView:
    """Aggregates of a :class:`GpuCluster`, refreshed for the nodes that changed.

    Args:
        cluster: the episode's cluster state.
        types: the workload's typical task types (None: fragmentation stays 0).

    Attributes:
        cpu_left, mem_left: free CPU milli-cores and memory MiB of the cluster.
        free_by_model, whole_by_model: per GPU model (name order), free milli-GPU and wholly free
            GPUs (lists).
        model_milli: per GPU model, its milli-GPU.
        frag_milli: the cluster's fragmentation (milli-GPU) at the last :meth:`refresh`.
    """

    def __init__(self, cluster: GpuCluster, types: TaskTypes | None) -> None:
        self.cluster = cluster
        self.meter = FragMeter(cluster, types) if types is not None else None
        m = len(cluster.model_names)
        self._slot = np.where(cluster.model >= 0, cluster.model, m)  # last slot: no GPU
        self.model_milli = np.bincount(self._slot, weights=cluster.nb_gpus * MILLI,
                                       minlength=m + 1)[:m]
        n = cluster.nb_nodes
        self._seen = np.full(n, -1, dtype=np.int64)
        # per node, as Python numbers (a step reads a few nodes: list access beats numpy there)
        self._cpu, self._mem, self._free, self._whole = [0] * n, [0] * n, [0] * n, [0] * n
        self._frag = [0.0] * n
        self._slots = self._slot.tolist()
        self._models = cluster.model.tolist()
        self.cpu_left = self.mem_left = 0
        self._free_slots = [0] * (m + 1)
        self._whole_slots = [0] * (m + 1)
        self.frag_milli = 0.0
        self._memo: dict[tuple, float] = {}
        self._fits: dict[TaskShape, list] = {}
        self.refresh()

    @property
    def free_by_model(self) -> list[int]:
        return self._free_slots[:-1]

    @property
    def whole_by_model(self) -> list[int]:
        return self._whole_slots[:-1]

    @property
    def free_milli(self) -> float:
        """Free milli-GPU of the cluster."""
        return float(sum(self._free_slots) - self._free_slots[-1])

    def refresh(self) -> None:
        """Read again the nodes that changed since the last call (fragmentation included)."""
        c = self.cluster
        stale = (c.version != self._seen).nonzero()[0]
        if not len(stale):
            return
        self._seen[stale] = c.version[stale]
        cpus, mems, rows = (c.cpu_left[stale].tolist(), c.mem_left[stale].tolist(),
                            c.gpu_left[stale].tolist())
        nodes = stale.tolist()
        for k, node in enumerate(nodes):
            row = rows[k]
            free, whole, slot = sum(row), row.count(MILLI), self._slots[node]
            self.cpu_left += cpus[k] - self._cpu[node]
            self.mem_left += mems[k] - self._mem[node]
            self._free_slots[slot] += free - self._free[node]
            self._whole_slots[slot] += whole - self._whole[node]
            self._cpu[node], self._mem[node] = cpus[k], mems[k]
            self._free[node], self._whole[node] = free, whole
        if self.meter is not None:
            frags = self._node_frag(stale, cpus, rows)
            old = self._frag
            self.frag_milli += sum(frags) - sum(old[node] for node in nodes)
            for k, node in enumerate(nodes):
                old[node] = frags[k]

    def fragmentation(self) -> float:
        """The cluster's fragmentation now (milli-GPU; 0 without task types)."""
        self.refresh()
        return self.frag_milli

    #: the interface of the engine's :class:`~hdrm.sim.gpu_engine.FragTracker`, which the
    #: environment replaces with its view (one memoised reading per instant serves both)
    read = fragmentation

    def _node_frag(self, nodes: np.ndarray, cpus: list, rows: list) -> list[float]:
        """Fragmentation of the nodes as they are, memoised by node state."""
        models = self._models
        # a node's fragmentation does not depend on the order of its GPUs
        keys = [(cpus[k], models[node], tuple(sorted(rows[k])))
                for k, node in enumerate(nodes.tolist())]
        memo = self._memo
        missing = [k for k, key in enumerate(keys) if key not in memo]
        if missing:
            c = self.cluster
            sub = nodes[missing]
            values = self.meter.frag(c.cpu_left[sub], c.gpu_left[sub], c.model[sub])
            for k, value in zip(missing, values.tolist()):
                memo[keys[k]] = value
        return [memo[key] for key in keys]

    def fits(self, shape: TaskShape) -> bool:
        """Whether some node could hold the task now (kept per shape; changed nodes are read
        again only when no unchanged node already holds it)."""
        c = self.cluster
        entry = self._fits.get(shape)
        if entry is None:
            ok = c.feasible(shape)
            entry = self._fits[shape] = [ok, c.version.copy(), int(ok.sum())]
            return entry[2] > 0
        ok, seen, count = entry
        stale = (seen != c.version).nonzero()[0]
        if len(stale):
            if count > int(ok[stale].sum()):  # an unchanged node holds it
                return True
            now = c.feasible(shape, stale)
            entry[2] = count + int(now.sum()) - int(ok[stale].sum())
            ok[stale] = now
            seen[stale] = c.version[stale]
        return entry[2] > 0
