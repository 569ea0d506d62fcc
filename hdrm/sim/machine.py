"""Simulated compute resources: the physics both Batsim and our engines agree on.

A :class:`Machine` holds one host per core. Each host is in a power state (a Batsim P-state) with a
speed in GFLOP/s and a power in watts. Jobs run on sets of hosts:

* ``delay`` jobs last a fixed time whatever the hosts' speeds (Batsim's ``delay`` profile);
* ``parallel_homogeneous`` jobs give every host the same amount of work (GFLOP); each host
  progresses at its current speed and the job ends when its slowest host is done (Batsim's
  ``parallel_homogeneous`` profile with no communication).

Changing a host's state re-times the job running on it, as SimGrid does. A job that reaches its
walltime is killed then (``COMPLETED_WALLTIME_REACHED``) unless walltime kills are disabled. Energy is
integrated per host from its state's power over time; a job's energy is what its hosts consumed
while it ran (Batsim's ``consumed_energy``).

The machine keeps no scheduling logic: engines (the built-in simulator, the Batsim-protocol server)
decide what runs where and when states change.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from hdrm.errors import SimulationError
from hdrm.platform.model import Platform
from hdrm.platform.power import SLEEPING, state_power_w, state_speeds_gflops
from hdrm.workload.job import PROFILE_DELAY, Job

COMPLETED_SUCCESSFULLY = "COMPLETED_SUCCESSFULLY"
COMPLETED_WALLTIME_REACHED = "COMPLETED_WALLTIME_REACHED"
COMPLETED_KILLED = "COMPLETED_KILLED"

_FREE = -1


@dataclass(slots=True)
class JobEnd:
    """How and when a job left the machine."""

    key: int
    state: str
    start_s: float
    finish_s: float
    cores: tuple[int, ...]
    energy_j: float
    progress: float


class _Running:
    """Book-keeping of one running job (internal)."""

    __slots__ = (
        "key", "cores", "start_s", "wall_end_s", "delay_s", "ops_gflop", "remaining",
        "updated_s", "end_s", "version", "energy_j", "power_w", "energy_t", "walltime_hit",
    )

    def __init__(self, key: int, cores: tuple[int, ...], start_s: float, wall_end_s: float) -> None:
        self.key = key
        self.cores = cores
        self.start_s = start_s
        self.wall_end_s = wall_end_s
        self.delay_s = 0.0
        self.ops_gflop = 0.0
        self.remaining: list[float] | None = None  # per-core GFLOP left; None for delay jobs
        self.updated_s = start_s
        self.end_s = math.inf
        self.version = 0
        self.energy_j = 0.0  # energy of its hosts up to energy_t
        self.power_w = 0.0  # current power of its hosts
        self.energy_t = start_s
        self.walltime_hit = False


def start_kwargs(job: Job) -> dict[str, float]:
    """Keyword arguments of :meth:`Machine.start` for ``job``'s profile and walltime."""
    walltime = job.walltime_s if job.has_walltime else math.inf
    if job.profile_type == PROFILE_DELAY:
        return {"delay_s": job.run_time_s, "walltime_s": walltime}
    return {"ops_gflop": job.ops_gflop, "walltime_s": walltime}


def machine_for(platform: Platform, kill_on_walltime: bool = True) -> "Machine":
    """One host per core of ``platform`` with hdrm's power table, every host asleep."""
    speeds = [state_speeds_gflops(g) for g in platform.core_gflops]
    powers = [state_power_w(w) for w in platform.core_power_w]
    return Machine(speeds, powers, SLEEPING, kill_on_walltime)


class Machine:
    """Hosts with power states executing jobs.

    Args:
        speeds_gflops: per host, its speed in each power state.
        power_w: per host, its power in each power state.
        initial_state: the power state every host starts in (an int), or one per host.
        kill_on_walltime: kill jobs that reach their walltime (Batsim's behaviour).
    """

    def __init__(
        self,
        speeds_gflops: Sequence[Sequence[float]],
        power_w: Sequence[Sequence[float]],
        initial_state: int | Sequence[int] = 0,
        kill_on_walltime: bool = True,
    ) -> None:
        n = len(speeds_gflops)
        if len(power_w) != n:
            raise ValueError("speeds_gflops and power_w must describe the same hosts")
        self._speeds = [tuple(s) for s in speeds_gflops]
        self._power = [tuple(p) for p in power_w]
        self._factor = [1.0] * n
        states = [initial_state] * n if isinstance(initial_state, int) else list(initial_state)
        self.state: list[int] = states
        self.job_on: list[int] = [_FREE] * n
        self._energy_acc = [0.0] * n
        self._energy_t = [0.0] * n
        self._total_power = math.fsum(self._power[c][states[c]] for c in range(n))
        self._total_energy = 0.0
        self._total_t = 0.0
        self.kill_on_walltime = kill_on_walltime
        self.now = 0.0
        self._jobs: dict[int, _Running] = {}
        self._heap: list[tuple[float, int, int, int]] = []
        self._seq = 0

    # ------------------------------------------------------------------ queries
    @property
    def nb_hosts(self) -> int:
        """Number of hosts."""
        return len(self.state)

    @property
    def running(self) -> int:
        """Number of running jobs."""
        return len(self._jobs)

    @property
    def power_w(self) -> float:
        """Current total power of all hosts."""
        return self._total_power

    def energy_j(self) -> float:
        """Energy consumed by all hosts from time 0 to now."""
        return self._total_energy + self._total_power * (self.now - self._total_t)

    def host_energy_j(self, host: int) -> float:
        """Energy consumed by one host from time 0 to now."""
        return self._energy_acc[host] + self._power[host][self.state[host]] * (
            self.now - self._energy_t[host]
        )

    def is_running(self, key: int) -> bool:
        """True when job ``key`` runs on the machine."""
        return key in self._jobs

    def expected_end_s(self, key: int) -> float:
        """When job ``key`` ends if nothing changes (walltime included)."""
        return self._jobs[key].end_s

    def fraction_left(self, key: int, now: float) -> float:
        """Fraction of job ``key``'s run still ahead, ``(end - now) / (end - start)``, in [0, 1].

        ``end`` is the job's current end estimate at the hosts' current speeds (or its walltime);
        0 for a job that is not running.
        """
        job = self._jobs.get(key)
        if job is None:
            return 0.0
        total = job.end_s - job.start_s
        if total <= 0 or total == math.inf:
            return 1.0 if total == math.inf else 0.0
        return min(1.0, max(0.0, (job.end_s - now) / total))

    def progress(self, key: int) -> float:
        """Fraction of job ``key`` done, in [0, 1]."""
        job = self._jobs[key]
        if job.remaining is None:
            return min(1.0, (self.now - job.start_s) / job.delay_s) if job.delay_s > 0 else 1.0
        self._sync(job)
        if job.ops_gflop <= 0:
            return 1.0
        worst = max(job.remaining) if job.remaining else 0.0
        return max(0.0, 1.0 - worst / job.ops_gflop)

    def next_time(self) -> float:
        """Time of the next job end, or ``math.inf``."""
        heap = self._heap
        jobs = self._jobs
        while heap:
            t, _, key, version = heap[0]
            job = jobs.get(key)
            if job is not None and job.version == version:
                return t
            heapq.heappop(heap)
        return math.inf

    # ------------------------------------------------------------------ commands
    def start(
        self,
        key: int,
        cores: Sequence[int],
        *,
        delay_s: float | None = None,
        ops_gflop: float | None = None,
        walltime_s: float = math.inf,
    ) -> None:
        """Start job ``key`` now on ``cores``: a delay job or a parallel homogeneous job.

        Raises:
            SimulationError: a host is busy or unknown, the job already runs, or the profile is
                not given exactly once.
        """
        if key in self._jobs:
            raise SimulationError(f"job {key} is already running")
        if (delay_s is None) == (ops_gflop is None):
            raise SimulationError(f"job {key}: give exactly one of delay_s and ops_gflop")
        cores = tuple(cores)
        if not cores:
            raise SimulationError(f"job {key}: empty allocation")
        job_on = self.job_on
        for c in cores:
            if not 0 <= c < len(job_on):
                raise SimulationError(f"job {key}: unknown resource {c} (0..{len(job_on) - 1})")
            if job_on[c] != _FREE:
                raise SimulationError(f"job {key}: resource {c} is busy with job {job_on[c]}")
        now = self.now
        wall_end = now + walltime_s if self.kill_on_walltime else math.inf
        job = _Running(key, cores, now, wall_end)
        power, states = self._power, self.state
        power_w = 0.0
        for c in cores:
            job_on[c] = key
            power_w += power[c][states[c]]
        job.power_w = power_w
        if delay_s is not None:
            job.delay_s = delay_s
            natural = now + delay_s
        else:
            job.ops_gflop = ops_gflop
            job.remaining = [ops_gflop] * len(cores)
            natural = self._natural_end(job)
        self._jobs[key] = job
        self._schedule(job, natural)

    def kill(self, key: int) -> JobEnd:
        """Kill job ``key`` now; returns its record (state ``COMPLETED_KILLED``)."""
        job = self._jobs.get(key)
        if job is None:
            raise SimulationError(f"cannot kill job {key}: it is not running")
        progress = self.progress(key)
        return self._finish(job, COMPLETED_KILLED, progress)

    def set_state(self, hosts: Iterable[int], state: int, speed_factor: float = 1.0) -> None:
        """Switch ``hosts`` to power ``state`` now, re-timing the jobs running on them.

        Args:
            hosts: host indices.
            state: the power state.
            speed_factor: multiplies the state's speed (continuous contention models); 1 in Batsim.

        Raises:
            SimulationError: an unknown host or power state.
        """
        changes = {}
        n = len(self.state)
        for c in hosts:
            if not 0 <= c < n:
                raise SimulationError(f"unknown resource {c} (0..{n - 1})")
            if not 0 <= state < len(self._speeds[c]):
                raise SimulationError(f"resource {c} has no power state {state}")
            changes[c] = (state, speed_factor)
        self.apply_states(changes)

    def apply_states(self, changes: dict[int, tuple[int, float]]) -> None:
        """Apply ``{host: (state, speed_factor)}`` now, re-timing the jobs on changed hosts."""
        now = self.now
        touched: dict[int, _Running] = {}
        power, states, factor = self._power, self.state, self._factor
        acc, last, job_on, jobs = self._energy_acc, self._energy_t, self.job_on, self._jobs
        delta = 0.0
        for c, (state, speed_factor) in changes.items():
            old = states[c]
            if old == state and factor[c] == speed_factor:
                continue
            key = job_on[c]
            pw = power[c]
            if key != _FREE:
                job = jobs[key]
                if key not in touched:
                    if job.remaining is not None:
                        self._sync(job)
                    touched[key] = job
                job.energy_j += job.power_w * (now - job.energy_t)
                job.energy_t = now
                job.power_w += pw[state] - pw[old]
            acc[c] += pw[old] * (now - last[c])
            last[c] = now
            delta += pw[state] - pw[old]
            states[c] = state
            factor[c] = speed_factor
        if delta:
            self._total_energy += self._total_power * (now - self._total_t)
            self._total_t = now
            self._total_power += delta
        for job in touched.values():
            if job.remaining is not None:
                self._schedule(job, self._natural_end(job))

    def advance(self, t: float) -> list[JobEnd]:
        """Move time to ``t`` and return the jobs that end at or before ``t``, in end order.

        Raises:
            SimulationError: ``t`` is before the current time.
        """
        if t < self.now:
            raise SimulationError(f"time cannot go back from {self.now} to {t}")
        ended: list[JobEnd] = []
        heap, jobs = self._heap, self._jobs
        while heap and heap[0][0] <= t:
            end, _, key, version = heapq.heappop(heap)
            job = jobs.get(key)
            if job is None or job.version != version:
                continue
            self.now = end
            if job.walltime_hit:
                ended.append(self._finish(job, COMPLETED_WALLTIME_REACHED, self.progress(key)))
            else:
                ended.append(self._finish(job, COMPLETED_SUCCESSFULLY, 1.0))
        self.now = t
        return ended

    # ------------------------------------------------------------------ internals
    def _sync(self, job: _Running) -> None:
        """Bring a parallel job's per-host remaining work up to now."""
        dt = self.now - job.updated_s
        if dt > 0 and job.remaining is not None:
            speeds, states, rem, factor = self._speeds, self.state, job.remaining, self._factor
            for i, c in enumerate(job.cores):
                r = rem[i]
                if r > 0:
                    r -= speeds[c][states[c]] * factor[c] * dt
                    rem[i] = r if r > 1e-9 * job.ops_gflop else 0.0
        job.updated_s = self.now

    def _natural_end(self, job: _Running) -> float:
        """End time of a synced parallel job at the hosts' current speeds."""
        speeds, states, factor = self._speeds, self.state, self._factor
        worst = 0.0
        for i, c in enumerate(job.cores):
            r = job.remaining[i]
            if r > 0:
                s = speeds[c][states[c]] * factor[c]
                if s <= 0:
                    return math.inf
                d = r / s
                if d > worst:
                    worst = d
        return self.now + worst

    def _schedule(self, job: _Running, natural_end: float) -> None:
        job.version += 1
        wall_end = job.wall_end_s
        # A job whose work ends within rounding of its walltime completes successfully.
        job.walltime_hit = wall_end < natural_end - 1e-9 * max(1.0, abs(wall_end))
        job.end_s = wall_end if job.walltime_hit else natural_end
        if job.end_s < math.inf:
            self._seq += 1
            heapq.heappush(self._heap, (job.end_s, self._seq, job.key, job.version))

    def _finish(self, job: _Running, state: str, progress: float) -> JobEnd:
        del self._jobs[job.key]
        job.version += 1
        energy = job.energy_j + job.power_w * (self.now - job.energy_t)
        job_on = self.job_on
        for c in job.cores:
            job_on[c] = _FREE
        return JobEnd(job.key, state, job.start_s, self.now, job.cores, energy, progress)
