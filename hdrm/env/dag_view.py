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
from hdrm.dag.periodic import TaskSet
from hdrm.dag.periodic_devices import graph_priorities, task_costs
from hdrm.policies.core_selection import CorePolicy
from hdrm.policies.gpu_placer import Placer
from hdrm.policies.gpu_state import TaskShape
from hdrm.policies.placement import Placement
from hdrm.workload.job import Job

#: Features per ready task (see :func:`task_features`).
TASK_FEATURES = 10
#: Features per processor (see :meth:`Processors.features`).
PROC_FEATURES = 3
#: The time features that grow with the episode (a task's age and negative laxity, the clock
#: past the horizon) saturate at this many longest deadlines: an instance that late has missed
#: its deadline long ago, and the observation space keeps finite bounds.
TIME_CAP = 10.0


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

    def features(self, now: float, scale_s: float, ends: dict[int, float],
                 most: float = math.inf) -> np.ndarray:
        """Per processor: ``[is_gpu, free share, time until its next task end / scale]``
        (``ends``: the expected end of each running task by job index, on cores; the last
        column at most ``most``: the longest task, against rounding)."""
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
                out[p, 2] = 0.0 if end == math.inf else min(max(end - now, 0.0) / scale_s,
                                                             most)
            return out
        busy = self.sim.core.state.core_job
        for p, idx in enumerate(busy):
            out[p, 1] = idx == FREE
            if idx != FREE and idx in ends:
                out[p, 2] = min(max(ends[idx] - now, 0.0) / scale_s, most)
        return out


def task_features(job: Job | None, now: float, scale_s: float) -> list[float]:
    """One ready task's row (zeros for an empty slot): ``[present, rank_u, rank_d, rank_oct,
    laxity, cost, cpu time, gpu time, on GPU, age]``, times over ``scale_s``; laxity is
    ``deadline - now - rank_u`` and age ``now - release`` of its instance."""
    if job is None:
        return [0.0] * TASK_FEATURES
    e = job.extra
    gpu_s = e.get("gpu_s") or 0.0
    laxity = (e["deadline_s"] - now - e["rank_u_s"]) / scale_s
    age = (now - e["release_s"]) / scale_s
    return [1.0, e["rank_u_s"] / scale_s, e["rank_d_s"] / scale_s, e["rank_oct_s"] / scale_s,
            laxity if -TIME_CAP <= laxity <= 1.0 else min(max(laxity, -TIME_CAP), 1.0),
            e["cost_s"] / scale_s, e.get("cpu_s", e["cost_s"]) / scale_s, gpu_s / scale_s,
            float(job.accel is not None), age if age <= TIME_CAP else TIME_CAP]


def observation_bounds(tasksets: list[TaskSet], gpus: bool, window: int,
                       nb_procs: int) -> tuple[np.ndarray, np.ndarray]:
    """The lowest and highest value of every observation entry over ``tasksets`` played on a
    platform with (``gpus``) or without accelerators (the layout of :mod:`hdrm.env.dag_env`).

    Fractions (presence, shares, the miss ratio, device flags) lie in [0, 1]; a task's ranks and
    times over the longest deadline in [0, their largest value in the sets]; the queue over the
    window in [0, the most tasks of a set / window]; laxity in [-TIME_CAP, 1] (it is at most the
    relative deadline over the longest one, as a queued task's instance is released), age in
    [0, TIME_CAP]; the clock over the horizon in [0, 1 + TIME_CAP x longest deadline / horizon];
    a processor's time to its next end in [0, the longest task over the longest deadline]."""
    top = dict.fromkeys(("rank_u", "rank_d", "rank_oct", "cost", "cpu", "gpu"), 0.0)
    clock = queue = 0.0
    for taskset in tasksets:
        scale_s = max(g.deadline_s for g in taskset.graphs)
        tasks = 0
        for graph in taskset.graphs:
            tasks += len(graph.releases(taskset.horizon_s)) * len(graph.tasks)
            ranks = graph_priorities(graph, gpus)
            values = {"cost": task_costs(graph, gpus), "cpu": [t.cpu_s for t in graph.tasks],
                      "gpu": [t.gpu_s or 0.0 for t in graph.tasks],
                      **{k: ranks[k] for k in ("rank_u", "rank_d", "rank_oct")}}
            for key, column in values.items():
                top[key] = max(top[key], max(v / scale_s for v in column))
        clock = max(clock, (taskset.horizon_s + TIME_CAP * scale_s) / taskset.horizon_s)
        queue = max(queue, tasks / window)
    task_low = [0.0, 0.0, 0.0, 0.0, -TIME_CAP, 0.0, 0.0, 0.0, 0.0, 0.0]
    task_high = [1.0, top["rank_u"], top["rank_d"], top["rank_oct"], 1.0, top["cost"],
                 top["cpu"], top["gpu"], 1.0, TIME_CAP]
    low = [0.0] * 4 + task_low * window + [0.0] * PROC_FEATURES * nb_procs
    high = [clock, queue, 1.0, 1.0] + task_high * window + [1.0, 1.0, top["cost"]] * nb_procs
    return np.array(low, dtype=np.float32), np.array(high, dtype=np.float32)
