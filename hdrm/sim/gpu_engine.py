"""The built-in engine on a GPU platform: the same event loop over the GPU decision core.

``Simulation(platform, workload, config)`` on a platform with accelerators makes a
:class:`GpuSimulation`: the engine's loop (submissions and ends, one decision per instant,
:meth:`~hdrm.sim.engine.Simulation.next_decision` / ``decide`` / ``pick`` for environments) is
:class:`~hdrm.sim.engine.Simulation`'s own; only its parts differ: the decision core is a
:class:`~hdrm.core.gpu_scheduler.GpuDecisionCore`, the machine a
:class:`~hdrm.sim.gpu_machine.GpuMachine`, and policies are GPU policies (``"ORDER-PLACEMENT"``,
:func:`~hdrm.core.gpu_scheduler.resolve_gpu_policy`).

After each decision the engine records (``record_timeline``) the usual timeline row (``busy_cores``
is the CPU held, in whole cores) and a :class:`GpuTimelineRow`: the allocated milli-GPU of each
model and the cluster's FGD fragmentation (:mod:`hdrm.policies.gpu_frag`, against the workload's
typical task types) at that instant. Fragmentation is event-driven and exact: each node's value is
kept with the node's version and recomputed only for nodes that changed since the last instant.

Timeline or not, the report carries the integrals over ``[0, makespan]`` of the allocated milli-GPU
per model (kept by the machine at each start and end) and of the fragmentation (read after each
decision instant), so the summary's averages are the same either way.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from hdrm.core.gpu_scheduler import (
    GpuDecisionCore,
    GpuPlacement,
    GpuPolicy,
    Start,
    resolve_gpu_policy,
)
from hdrm.platform.model import Platform
from hdrm.policies.gpu_frag import FragMeter
from hdrm.policies.gpu_price import platform_prices
from hdrm.policies.gpu_state import GpuCluster
from hdrm.results.gpu_metrics import StepIntegral
from hdrm.results.overutil import Overutilizations
from hdrm.results.timeline import TimelineRow
from hdrm.sim.engine import Simulation, SimulationConfig, SimulationResult
from hdrm.sim.gpu_machine import GpuMachine
from hdrm.workload.job import Job, Workload


@dataclass(slots=True)
class GpuTimelineRow:
    """The GPUs after one decision instant.

    Attributes:
        time: the instant (s).
        queue_size: waiting tasks.
        running_jobs: running tasks.
        allocated_milli: allocated milli-GPU per model (the report's model order).
        frag_milli: the cluster's fragmentation (milli-GPU).
        power_w: the platform's power after the decision.
    """

    time: float
    queue_size: int
    running_jobs: int
    allocated_milli: tuple[int, ...]
    frag_milli: float
    power_w: float


@dataclass
class GpuReport:
    """What a GPU run adds to a :class:`~hdrm.sim.engine.SimulationResult` (``result.gpu``).

    Attributes:
        model_names: GPU models, in the order of the per-model columns.
        model_milli: milli-GPU of each model in the platform.
        price_usd_per_hour: per model, one GPU's price for one hour.
        placements: per task index, where and how long it ran.
        timeline: one row per decision instant (empty without ``record_timeline``).
        policy: the GPU policy's name.
        allocated_milli_s: per model, allocated milli-GPU integrated over ``[0, makespan]``
            (milli-GPU seconds).
        frag_milli_s: the fragmentation integrated over ``[0, makespan]`` (milli-GPU seconds).
    """

    model_names: list[str]
    model_milli: list[int]
    price_usd_per_hour: dict[str, float]
    placements: dict[int, GpuPlacement]
    timeline: list[GpuTimelineRow] = field(default_factory=list)
    policy: str = ""
    allocated_milli_s: list[float] = field(default_factory=list)
    frag_milli_s: float = 0.0


class FragTracker:
    """The cluster's fragmentation, updated for the nodes that changed since the last reading.

    A node's fragmentation depends on its model, free CPU and free GPU shares only, and traces
    bring nodes back to the same few states, so the values of a few changed nodes come from a
    memo of node states (at most :attr:`MEMO_SIZE`); the others are measured in one call.
    """

    #: Node states remembered (the memo starts again when full).
    MEMO_SIZE = 1 << 16
    #: Up to this many changed nodes are looked up one by one in the memo.
    FEW = 16

    def __init__(self, cluster: GpuCluster, meter: FragMeter) -> None:
        self.cluster, self.meter = cluster, meter
        self._frag = meter.of_cluster(cluster)
        self._version = cluster.version.copy()
        self.total = float(self._frag.sum())
        self._memo: dict[tuple[int, int, bytes], float] = {}

    def read(self) -> float:
        """The fragmentation now (milli-GPU)."""
        c = self.cluster
        stale = (c.version != self._version).nonzero()[0]
        if not len(stale):
            return self.total
        if len(stale) <= self.FEW:
            frag = self._frag
            for n, value in zip(stale.tolist(), self._measure(stale)):
                self.total += value - float(frag[n])
                frag[n] = value
        else:
            new = self.meter.of_cluster(c, stale)
            self.total += float(new.sum() - self._frag[stale].sum())
            self._frag[stale] = new
        self._version[stale] = c.version[stale]
        return self.total

    def _measure(self, nodes: np.ndarray) -> list[float]:
        """The fragmentation of a few nodes, from the memo where their state was seen."""
        c, memo = self.cluster, self._memo
        keys = [(int(c.model[n]), int(c.cpu_left[n]), c.gpu_left[n].tobytes()) for n in nodes]
        missing = [i for i, key in enumerate(keys) if key not in memo]
        if missing:
            if len(memo) + len(missing) > self.MEMO_SIZE:
                memo.clear()
            values = self.meter.of_cluster(c, nodes[missing])
            for i, value in zip(missing, values.tolist()):
                memo[keys[i]] = value
        return [memo[key] for key in keys]


class GpuSimulation(Simulation):
    """:class:`~hdrm.sim.engine.Simulation` on a GPU platform (see the module docstring).

    Args:
        platform: a platform with accelerators.
        workload: the tasks.
        config: engine settings (``backfilling`` ``"none"`` or ``"greedy"``; contention and
            walltime kills do not apply: tasks last their run time).
        ties: the placer's tie rule (``"shuffled"``: the FGD simulator's, seeded by ``config``).
    """

    def __init__(self, platform: Platform, workload: Workload,
                 config: SimulationConfig | None = None, ties: str = "shuffled") -> None:
        self.ties = ties
        super().__init__(platform, workload, config)
        cluster = self.core.cluster
        types = self.core.types
        self.frag = FragTracker(cluster, FragMeter(cluster, types)) if types is not None else None
        self.gpu_timeline: list[GpuTimelineRow] = []
        #: the fragmentation's running integral (milli-GPU seconds)
        self.frag_integral = StepIntegral(0.0)
        self._policy_name = ""

    def _make_parts(self) -> tuple[GpuDecisionCore, GpuMachine]:
        config = self.config
        core = GpuDecisionCore(self.platform, self.workload.jobs, config.backfilling, self.rng,
                               self.ties, config.decision)
        return core, GpuMachine(self.platform, core.cluster.model_names)

    def resolve(self, name: str) -> GpuPolicy:
        """The GPU policy of a name (``"ORDER-PLACEMENT"``)."""
        return resolve_gpu_policy(name)

    def decide(self, pair: GpuPolicy) -> list[Start]:
        """One decision with a GPU policy at the current instant (its name goes in the report)."""
        self._policy_name = pair.name
        return super().decide(pair)

    def place_on(self, job: Job, node: int, placement: str) -> list[Start]:
        """Start a queued task now on a chosen node, its GPUs there chosen by ``placement``
        (:meth:`~hdrm.core.gpu_scheduler.GpuDecisionCore.start_on`); empty when it does not
        fit on the node now (nothing starts)."""
        devices = self.core.start_on(job, node, placement, self.now)
        starts: list[Start] = [] if devices is None else [(job, devices)]
        self._apply(starts)
        return starts

    def _apply(self, starts: list[Start]) -> None:
        self.decisions += 1
        machine, running = self.machine, self.core.running
        for job, devices in starts:
            placed = running[job.idx]
            machine.start(job.idx, placed.node, placed.devices, placed.shape.cpu_milli,
                          placed.shape.milli, placed.run_s)
        frag = self._read_frag()
        if self.config.record_timeline:
            self._record_instant(frag)

    def _flush_changes(self) -> None:
        """Nothing to hand over: GPU tasks are not re-timed by power states."""

    def _read_frag(self) -> float:
        """The fragmentation now, accrued into :attr:`frag_integral` (marked at a task end)."""
        frag = self.frag.read() if self.frag is not None else 0.0
        self.frag_integral.set(self.now, frag)
        if self.machine.last_end_s == self.now:
            self.frag_integral.mark()
        return frag

    def _record_instant(self, frag: float) -> None:
        machine = self.machine
        queue, running, power = len(self.core.queue), machine.running, machine.power_w
        busy = machine.cpu_milli // 1000
        self.timeline.append(TimelineRow(self.now, queue, running, busy, 0, power,
                                         machine.energy_j()))
        self.gpu_timeline.append(GpuTimelineRow(self.now, queue, running,
                                                tuple(machine.allocated.tolist()),
                                                frag, power))

    def result(self) -> SimulationResult:
        """The finished (or stopped) run, with its :class:`GpuReport` as ``result.gpu``."""
        outcomes = [self.outcomes[j.idx] for j in self._jobs if j.idx in self.outcomes]
        makespan = max((o.finish_s for o in outcomes), default=0.0)
        machine = self.machine
        self._read_frag()  # ends since the last decision instant
        span = max(makespan, 0.0)
        prices = platform_prices(self.platform)
        result = SimulationResult(
            platform=self.platform, workload=self.workload, outcomes=outcomes,
            timeline=self.timeline, overutilizations=Overutilizations(),
            energy_j=machine.energy_j(), makespan_s=max(makespan, 0.0),
            wall_s=time.perf_counter() - self._wall0, decisions=self.decisions,
            decision_s=self.decision_s)
        result.gpu = GpuReport(machine.model_names, [int(m) for m in machine.model_milli],
                               prices, self.core.placements, self.gpu_timeline,
                               self._policy_name,
                               [float(v) for v in machine.allocation.integral_to(span)],
                               float(self.frag_integral.integral_to(span)))
        return result
