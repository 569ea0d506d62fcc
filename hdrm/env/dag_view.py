"""What the periodic DAG environment sees and where it may place a task.

:class:`Processors` lists the processors a ready task may be given, on the engine's own state:

* on a platform without accelerators, every core (``NODE/cCORE``, as :mod:`hdrm.dag.machines`
  names them); a task runs on one core;
* on a platform with accelerators, per node its CPU (``NODE/cpu``: the node's cores, shared by
  milli-core) and, when it has GPUs, its GPUs (``NODE/gpu``); the GPU decision core picks the
  device inside the node (the free one of lowest index).

A task may go to a processor of its device type only (a task pinned to GPUs on a ``gpu`` entry,
any other on a core or ``cpu`` entry) that can hold it now. :func:`task_features` and
:meth:`Processors.features` are the observation's parts (:mod:`hdrm.env.dag_env` documents
them index by index).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from hdrm.core.state import FREE
from hdrm.policies.core_selection import CorePolicy
from hdrm.policies.gpu_placer import Placer
from hdrm.policies.gpu_state import TaskShape
from hdrm.policies.placement import Placement
from hdrm.workload.job import Job

#: Features per ready task (see :func:`task_features`).
TASK_FEATURES = 10
#: Features per processor (see :meth:`Processors.features`).
PROC_FEATURES = 3


@dataclasses.dataclass(frozen=True)
class PinnedCore(CorePolicy):
    """A core selection that takes one given core (when it is free)."""

    core: int = 0

    def select(self, state, job, rng):  # noqa: D102 - see CorePolicy.select
        return [self.core] if job.res == 1 and state.core_job[self.core] == FREE else None


class PinnedNode(Placement):
    """A GPU placement that takes one given node (when the task fits there)."""

    name = "pinned"

    def __init__(self, cluster, node: int) -> None:
        super().__init__(cluster)
        self.node = node

    def node_scores(self, shape: TaskShape, nodes: np.ndarray) -> np.ndarray:
        """0 on the pinned node, -inf elsewhere."""
        return np.where(nodes == self.node, 0.0, -np.inf)


class Processors:
    """The processors of a simulation (see the module).

    Args:
        sim: the episode's simulation (:class:`~hdrm.sim.engine.Simulation`, or its GPU kind).
    """

    def __init__(self, sim) -> None:
        self.sim = sim
        platform = sim.platform
        self.gpu = bool(platform.accelerators)
        if self.gpu:
            cluster = sim.core.cluster
            self.names, self.kinds, self.nodes = [], [], []
            for n, node in enumerate(platform.nodes):
                for kind in ("cpu", "gpu"):
                    if (cluster.cpu_cap[n] if kind == "cpu" else cluster.nb_gpus[n]) > 0:
                        self.names.append(f"{node.name}/{kind}")
                        self.kinds.append(kind)
                        self.nodes.append(n)
        else:
            first: dict[int, int] = {}
            self.names = []
            for core in range(platform.nb_cores):
                node = platform.nodes[platform.core_node[core]]
                first.setdefault(node.id, core)
                self.names.append(f"{node.name}/c{core - first[node.id]}")
            self.kinds = ["cpu"] * platform.nb_cores
            self.nodes = list(platform.core_node)
        self.is_gpu = np.array([k == "gpu" for k in self.kinds])
        self._pins: dict[int, object] = {}

    def __len__(self) -> int:
        return len(self.names)

    def mask(self, job: Job) -> np.ndarray:
        """Per processor, whether ``job`` may start there now."""
        wants_gpu = job.accel is not None
        ok = self.is_gpu == wants_gpu
        if self.gpu:
            shape = self.sim.core.shape(job)
            ok &= self.sim.core.cluster.feasible(shape, np.asarray(self.nodes))
        else:
            ok &= np.array([j == FREE for j in self.sim.core.state.core_job])
        return ok

    def start(self, job: Job, p: int) -> list:
        """Start ``job`` on processor ``p`` now (it must be valid); returns the engine's starts.
        On a GPU platform the engine's ``place_on`` (a chosen node) is used where it exists."""
        if self.gpu and hasattr(self.sim, "place_on"):
            return self.sim.place_on(job, self.nodes[p], "best_fit")
        return self.sim.pick(job, self._pin(p), hold=False)

    def _pin(self, p: int):
        pin = self._pins.get(p)
        if pin is None:
            if self.gpu:  # the GPU core places by placement name: give it this node's placer
                pin = f"pinned:{self.nodes[p]}"
                placement = PinnedNode(self.sim.core.cluster, self.nodes[p])
                self.sim.core._placers[pin] = Placer(placement, self.sim.core.rng, "name")
            else:
                pin = PinnedCore(f"core{p}", None, False, "one given core", core=p)
            self._pins[p] = pin
        return pin

    def features(self, now: float, scale_s: float, ends: dict[int, float]) -> np.ndarray:
        """Per processor: ``[is_gpu, free share, time until its next task end / scale]``
        (``ends``: the expected end of each running task by job index, on cores)."""
        out = np.zeros((len(self), PROC_FEATURES), dtype=np.float32)
        out[:, 0] = self.is_gpu
        if self.gpu:
            c = self.sim.core.cluster
            ends = np.full(len(c.cpu_cap), math.inf), np.full(len(c.cpu_cap), math.inf)
            for placed in self.sim.core.running.values():
                which = ends[1] if placed.gpus else ends[0]
                which[placed.node] = min(which[placed.node], placed.start_s + placed.run_s)
            for p, (kind, n) in enumerate(zip(self.kinds, self.nodes)):
                if kind == "gpu":
                    out[p, 1] = float((c.gpu_left[n] == 1000).sum()) / max(c.nb_gpus[n], 1)
                else:
                    out[p, 1] = c.cpu_left[n] / max(c.cpu_cap[n], 1)
                end = ends[1 if kind == "gpu" else 0][n]
                out[p, 2] = 0.0 if end == math.inf else max(end - now, 0.0) / scale_s
            return out
        busy = self.sim.core.state.core_job
        for p, idx in enumerate(busy):
            out[p, 1] = idx == FREE
            if idx != FREE and idx in ends:
                out[p, 2] = max(ends[idx] - now, 0.0) / scale_s
        return out


def task_features(job: Job | None, now: float, scale_s: float) -> list[float]:
    """One ready task's row (zeros for an empty slot): ``[present, rank_u, rank_d, rank_oct,
    laxity, cost, cpu time, gpu time, on GPU, age]``, times over ``scale_s``; laxity is
    ``deadline - now - rank_u`` and age ``now - release`` of its instance."""
    if job is None:
        return [0.0] * TASK_FEATURES
    e = job.extra
    gpu_s = e.get("gpu_s") or 0.0
    return [1.0, e["rank_u_s"] / scale_s, e["rank_d_s"] / scale_s, e["rank_oct_s"] / scale_s,
            (e["deadline_s"] - now - e["rank_u_s"]) / scale_s, e["cost_s"] / scale_s,
            e.get("cpu_s", e["cost_s"]) / scale_s, gpu_s / scale_s,
            float(job.accel is not None), (now - e["release_s"]) / scale_s]
