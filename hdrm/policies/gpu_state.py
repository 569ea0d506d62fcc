"""The free resources of a GPU cluster, node by node, as numpy arrays (the placement state mirror).

Each node has CPU (milli-cores), memory (MiB, the platform's MB) and 0..G GPUs of one model; each
GPU has 1,000 milli-GPU that several tasks may share while their shares fit. ``gpu_left[n, g]`` is
the free share of GPU ``g`` of node ``n`` (columns past a node's GPU count stay 0, so they never
fit a request). A :class:`TaskShape` is what a task asks: CPU, memory, and GPUs (count, share of
each, allowed models). ``version[n]`` grows whenever node ``n`` changes, so that placement
policies can cache per-node scores and recompute only the nodes that changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from hdrm.errors import ConfigError

#: Milli-GPU in one whole GPU.
MILLI = 1000


@dataclass(frozen=True, slots=True)
class TaskShape:
    """A task's demand vector: CPU milli-cores, memory MiB, GPU count, share of each, models.

    ``milli`` is 0 when ``gpus`` is 0; ``models`` empty means any model. ``speeds``: the task's
    relative speed per GPU model, ``((model, speed), ...)`` sorted by model, 1.0 on its fastest
    (a Gavel job's measured throughputs); empty when unknown (openb).
    """

    cpu_milli: int
    memory_mib: int = 0
    gpus: int = 0
    milli: int = 0
    models: tuple[str, ...] = ()
    speeds: tuple[tuple[str, float], ...] = ()

    @property
    def total_milli(self) -> int:
        """Milli-GPU asked in all."""
        return self.gpus * self.milli

    @property
    def is_shared(self) -> bool:
        """True for a fraction of one GPU."""
        return self.gpus == 1 and self.milli < MILLI

    @property
    def affinity(self) -> int:
        """The task's GPU class: -1 none, 0 a shared GPU, k for k whole GPUs."""
        if self.gpus == 0:
            return -1
        return 0 if self.is_shared else self.gpus

    @classmethod
    def of_job(cls, job) -> "TaskShape":
        """The shape of a :class:`~hdrm.workload.job.Job` (``cpu_milli`` or ``res`` cores)."""
        cpu = job.cpu_milli or job.res * 1000
        memory = int(round(job.mem_mb * job.res))
        accel = job.accel
        if accel is None or accel.count == 0:
            return cls(cpu, memory)
        return cls(cpu, memory, accel.count, accel.milli, accel.models, relative_speeds(job))


def relative_speeds(job) -> tuple[tuple[str, float], ...]:
    """A job's speed per GPU model relative to its fastest model, from its run time per model
    (``extra["gavel"]["run_time_s"]``); rounded to 6 digits so that jobs of one type and scale
    share a shape. Empty when the job gives no run time per model."""
    times = job.extra.get("gavel", {}).get("run_time_s") if job.extra else None
    if not times:
        return ()
    fastest = min(times.values())
    return tuple((model, round(fastest / t, 6)) for model, t in sorted(times.items()))


class GpuCluster:
    """Free CPU, memory and GPU shares of every node (see the module docstring).

    Args:
        cpu_milli, memory_mib, gpus: per-node capacities.
        models: per-node GPU model name ("" for a node without GPUs).
        names: per-node names (for outputs).
    """

    def __init__(self, cpu_milli: Sequence[int], memory_mib: Sequence[int],
                 gpus: Sequence[int], models: Sequence[str],
                 names: Sequence[str] | None = None) -> None:
        self.nb_nodes = len(cpu_milli)
        if not self.nb_nodes:
            raise ConfigError("a GPU cluster needs at least one node")
        self.names = list(names) if names is not None else [f"n{i}" for i in range(self.nb_nodes)]
        self.cpu_cap = np.asarray(cpu_milli, dtype=np.int64)
        self.mem_cap = np.asarray(memory_mib, dtype=np.int64)
        self.nb_gpus = np.asarray(gpus, dtype=np.int64)
        self.model_names = sorted({m for m, g in zip(models, gpus) if g})
        index = {m: i for i, m in enumerate(self.model_names)}
        self.model = np.array([index[m] if g else -1 for m, g in zip(models, gpus)],
                              dtype=np.int64)
        width = max(1, int(self.nb_gpus.max()))
        self.gpu_cap = (np.arange(width)[None, :] < self.nb_gpus[:, None]) * MILLI
        self.max_cpu = int(self.cpu_cap.max())
        self.max_gpu_milli = max(MILLI, int(self.nb_gpus.max()) * MILLI)
        self._allowed_cache: dict[tuple[str, ...], np.ndarray] = {}
        #: each node's rank in name order (ties between equal scores may go to the first name)
        self.name_rank = np.empty(self.nb_nodes, dtype=np.int64)
        self.name_rank[sorted(range(self.nb_nodes), key=self.names.__getitem__)] = np.arange(
            self.nb_nodes)
        self.reset()

    def reset(self) -> None:
        """Free everything."""
        self.cpu_left = self.cpu_cap.copy()
        self.mem_left = self.mem_cap.copy()
        self.gpu_left = self.gpu_cap.astype(np.int64).copy()
        # tasks per node by GPU class: column 0 shared, column k k whole GPUs
        self.affinity = np.zeros((self.nb_nodes, self.gpu_left.shape[1] + 1), dtype=np.int64)
        # versions only grow, so that scores cached before a reset are never taken as fresh
        old = getattr(self, "version", None)
        self.version = np.zeros(self.nb_nodes, dtype=np.int64) if old is None else old + 1

    @property
    def total_gpu_milli(self) -> int:
        """Milli-GPU of the whole cluster."""
        return int(self.nb_gpus.sum()) * MILLI

    def allowed_models(self, shape: TaskShape) -> np.ndarray:
        """Per model index: may the task run on it (all True without a constraint); read-only."""
        return self._allowed(shape.models)[:-1]

    def _allowed(self, models: tuple[str, ...]) -> np.ndarray:
        """:meth:`allowed_models` with False appended (model index -1: no GPU), made once per
        constraint."""
        table = self._allowed_cache.get(models)
        if table is None:
            table = np.array([not models or m in models for m in self.model_names] + [False],
                             dtype=bool)
            table.flags.writeable = False
            self._allowed_cache[models] = table
        return table

    def feasible(self, shape: TaskShape, nodes: np.ndarray | slice = slice(None)) -> np.ndarray:
        """For the given nodes: can the task be placed there now (CPU, memory, model, GPUs)."""
        ok = (self.cpu_left[nodes] >= shape.cpu_milli) & (self.mem_left[nodes] >= shape.memory_mib)
        if shape.gpus == 0:
            return ok
        fits = (self.gpu_left[nodes] >= shape.milli).sum(axis=1) >= shape.gpus
        return ok & self._allowed(shape.models)[self.model[nodes]] & fits

    def allocate(self, node: int, shape: TaskShape, gpus: Sequence[int]) -> None:
        """Give the task its CPU, memory and ``shape.milli`` of each of ``gpus`` on ``node``.

        Raises:
            ValueError: the resources are not free, the GPU count is wrong or the model is not
                allowed (a placement policy's bug, never silently accepted).
        """
        self._check(node, shape, gpus)
        self.cpu_left[node] -= shape.cpu_milli
        self.mem_left[node] -= shape.memory_mib
        for g in gpus:
            self.gpu_left[node, g] -= shape.milli
        if shape.gpus:
            self.affinity[node, shape.affinity] += 1
        self.version[node] += 1

    def release(self, node: int, shape: TaskShape, gpus: Sequence[int]) -> None:
        """Give back what :meth:`allocate` took.

        Raises:
            ValueError: more would be free than the node has (nothing changes then).
        """
        back = np.zeros_like(self.gpu_left[node])
        back[list(gpus)] = shape.milli
        if (self.cpu_left[node] + shape.cpu_milli > self.cpu_cap[node]
                or self.mem_left[node] + shape.memory_mib > self.mem_cap[node]
                or (self.gpu_left[node] + back > self.gpu_cap[node]).any()):
            raise ValueError(f"node {node}: released more than was allocated")
        self.cpu_left[node] += shape.cpu_milli
        self.mem_left[node] += shape.memory_mib
        self.gpu_left[node] += back
        if shape.gpus:
            self.affinity[node, shape.affinity] -= 1
        self.version[node] += 1

    def _check(self, node: int, shape: TaskShape, gpus: Sequence[int]) -> None:
        if len(set(gpus)) != len(gpus) or len(gpus) != shape.gpus:
            raise ValueError(f"node {node}: {len(gpus)} distinct GPUs given for {shape}")
        if self.cpu_left[node] < shape.cpu_milli or self.mem_left[node] < shape.memory_mib:
            raise ValueError(f"node {node}: not enough CPU or memory for {shape}")
        if gpus and not self.allowed_models(shape)[self.model[node]]:
            raise ValueError(f"node {node}: model {self.model_names[self.model[node]]} not "
                             f"allowed for {shape}")
        if any(g >= self.nb_gpus[node] or self.gpu_left[node, g] < shape.milli for g in gpus):
            raise ValueError(f"node {node}: GPUs {list(gpus)} cannot hold {shape}")

    @classmethod
    def from_openb(cls, nodes) -> "GpuCluster":
        """The cluster of an openb node list (:func:`hdrm.workload.openb.read_openb_nodes`)."""
        return cls([n.cpu_milli for n in nodes], [n.memory_mib for n in nodes],
                   [n.gpus for n in nodes], [n.model for n in nodes], [n.name for n in nodes])

    @classmethod
    def from_platform(cls, platform) -> "GpuCluster":
        """The cluster of a :class:`~hdrm.platform.model.Platform` with accelerators; a node's
        GPUs must be of one model (as in openb)."""
        cpu, mem, gpus, models = [], [], [], []
        for node in platform.nodes:
            kinds = {platform.accelerators[i].type.name for i in node.accelerator_ids}
            if len(kinds) > 1:
                raise ConfigError(f"{platform.source}: node {node.name} mixes GPU models "
                                  f"{sorted(kinds)}; placement needs one model per node")
            cpu.append(len(node.core_ids) * 1000)
            mem.append(int(node.memory_mb))
            gpus.append(len(node.accelerator_ids))
            models.append(kinds.pop() if kinds else "")
        return cls(cpu, mem, gpus, models, [n.name for n in platform.nodes])
