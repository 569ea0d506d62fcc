"""The simulated GPU machine: task ends, GPU allocation per model, power and energy.

On a GPU platform tasks last a fixed time (their run time on the GPU model they got, decided by
the decision core) and share nodes by CPU milli-cores and GPUs by milli-GPU shares, so there is no
per-core host to re-time: the machine keeps a heap of ends (ties broken by a sequence number) and
the power of the platform.

Power model (assumptions, stated in docs/gpu.rst):

* a GPU draws its type's ``idle_w`` plus ``(busy_w - idle_w)`` times its allocated share (a
  shared GPU at 500 milli draws half way between idle and busy);
* hosts stay awake: every core draws :data:`~hdrm.platform.power.IDLE_POWER_FRACTION` of its
  full power (the processor type's TDP / cores), plus the rest of it times the CPU share tasks
  hold (a task of 2,500 milli-CPU adds 2.5 cores' worth).

The total energy integrates the total power over time; a task's own energy is the power it adds
above idle times its run time. The allocated milli-GPU of each model is integrated over time the
same way (:attr:`GpuMachine.allocation`), so allocation rates need no timeline.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from hdrm.errors import SimulationError
from hdrm.platform.model import Platform
from hdrm.platform.power import IDLE_POWER_FRACTION
from hdrm.results.gpu_metrics import StepIntegral
from hdrm.sim.machine import COMPLETED_SUCCESSFULLY, JobEnd


@dataclass(slots=True)
class _Run:
    start_s: float
    end_s: float
    devices: tuple[int, ...]
    model: int
    gpu_milli: int
    cpu_milli: int
    power_w: float


class GpuMachine:
    """Running tasks of a GPU platform and the platform's power.

    Args:
        platform: the platform (accelerator types and core powers).
        model_names: the GPU model names, in the index order allocation rates are kept in.
    """

    def __init__(self, platform: Platform, model_names: list[str]) -> None:
        self.model_names = list(model_names)
        index = {m: i for i, m in enumerate(self.model_names)}
        types = [a.type for a in platform.accelerators]
        self._gpu_dyn_w = [t.busy_w - t.idle_w for t in types]
        self._device_model = [index[t.name] for t in types]
        #: milli-GPU of each model in the platform
        self.model_milli = np.zeros(len(self.model_names), dtype=np.int64)
        for m in self._device_model:
            self.model_milli[m] += 1000
        #: milli-GPU of each model allocated now
        self.allocated = np.zeros(len(self.model_names), dtype=np.int64)
        #: milli-GPU seconds of each model allocated from time 0 (marked at each task end)
        self.allocation = StepIntegral(self.allocated)
        #: time of the latest task end (-1 before any)
        self.last_end_s = -1.0
        #: milli-CPU held by running tasks now
        self.cpu_milli = 0
        core_w = platform.core_power_w
        self._core_dyn_w = [0.0] * len(platform.nodes)
        for node in platform.nodes:
            ids = node.core_ids
            full = math.fsum(core_w[c] for c in ids)
            self._core_dyn_w[node.id] = (1 - IDLE_POWER_FRACTION) * full / max(len(ids), 1)
        self.idle_w = (math.fsum(t.idle_w for t in types)
                       + IDLE_POWER_FRACTION * math.fsum(core_w))
        self.now = 0.0
        self._power = self.idle_w
        self._energy = 0.0
        self._t = 0.0
        self._runs: dict[int, _Run] = {}
        self._heap: list[tuple[float, int, int]] = []
        self._seq = 0

    @property
    def running(self) -> int:
        """Number of running tasks."""
        return len(self._runs)

    @property
    def power_w(self) -> float:
        """Current power of the platform (W)."""
        return self._power

    def energy_j(self) -> float:
        """Energy consumed from time 0 to now (J)."""
        return self._energy + self._power * (self.now - self._t)

    def next_time(self) -> float:
        """Time of the next task end, or ``math.inf``."""
        return self._heap[0][0] if self._heap else math.inf

    def start(self, key: int, node: int, devices: tuple[int, ...], cpu_milli: int,
              gpu_milli: int, run_s: float) -> None:
        """Start task ``key`` now on ``node``'s ``devices`` (``gpu_milli`` of each) for ``run_s``.

        Raises:
            SimulationError: the task already runs, or its run time is negative.
        """
        if key in self._runs:
            raise SimulationError(f"task {key} is already running")
        if not run_s >= 0:
            raise SimulationError(f"task {key}: run time {run_s} s, expected >= 0")
        share = gpu_milli / 1000
        power = cpu_milli / 1000 * self._core_dyn_w[node]
        power += math.fsum(self._gpu_dyn_w[d] * share for d in devices)
        model = self._device_model[devices[0]] if devices else -1
        self._set_power(self._power + power)  # accrues the allocation before it changes
        if model >= 0:
            self.allocated[model] += gpu_milli * len(devices)
        run = _Run(self.now, self.now + run_s, devices, model, gpu_milli * len(devices),
                   cpu_milli, power)
        self.cpu_milli += cpu_milli
        self._runs[key] = run
        heapq.heappush(self._heap, (run.end_s, self._seq, key))
        self._seq += 1

    def note_event(self, t: float) -> None:
        """:meth:`hdrm.sim.machine.Machine.note_event`'s place: nothing to do here (Batsim's
        walltime ties concern its parallel tasks; GPU platforms do not run under Batsim)."""

    def advance(self, t: float) -> list[JobEnd]:
        """Move time to ``t``; the tasks that end at or before ``t``, in end order.

        Raises:
            SimulationError: ``t`` is before the current time.
        """
        if t < self.now:
            raise SimulationError(f"time cannot go back from {self.now} to {t}")
        ended = []
        heap = self._heap
        while heap and heap[0][0] <= t:
            end, _, key = heapq.heappop(heap)
            self.now = end
            run = self._runs.pop(key)
            self._set_power(self._power - run.power_w)
            if run.model >= 0:
                self.allocated[run.model] -= run.gpu_milli
            self.allocation.mark()
            self.last_end_s = end
            self.cpu_milli -= run.cpu_milli
            ended.append(JobEnd(key, COMPLETED_SUCCESSFULLY, run.start_s, end, run.devices,
                                run.power_w * (end - run.start_s), 1.0))
        self.now = t
        return ended

    def _set_power(self, power_w: float) -> None:
        """Accrue energy and allocation up to now, then change the power."""
        self.allocation.advance(self.now)
        self._energy += self._power * (self.now - self._t)
        self._t = self.now
        self._power = power_w
