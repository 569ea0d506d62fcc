"""Simulated compute resources: the physics both Batsim and our engines agree on.

A :class:`Machine` holds one host per core. Each host is in a power state (a Batsim P-state) with a
speed in GFLOP/s and a power in watts. Jobs run on sets of hosts:

* ``delay`` jobs last a fixed time whatever the hosts' speeds (Batsim's ``delay`` profile);
* ``parallel_homogeneous`` jobs give every host the same amount of work (GFLOP) and run as one
  SimGrid parallel task (Batsim's ``host/model:ptask_L07``): all their hosts advance in lock-step at
  the speed of the currently slowest one, so the job keeps one remaining-work amount, which drops
  by ``min(speed) * dt``; a host at speed 0 stalls the whole job;
* ``composed`` jobs run such parts one after another on all their hosts (``parts``), the
  walltime left passed from part to part, as Batsim's sequences.

Changing a host's state re-times the job running on it, as SimGrid does. Walltimes follow Batsim
4.2.1 (``src/jobs_execution.cpp``, ``src/task_execution.cpp``) and SimGrid 3.32:

* a delay job succeeds only if ``delay < walltime`` (a plain comparison: a delay equal to the
  walltime is killed at the walltime, ``COMPLETED_WALLTIME_REACHED``);
* a parallel job is an execution waited for with the walltime as timeout: it is killed at the
  walltime if work is left then. SimGrid counts a remaining amount below
  :data:`~hdrm.sim.running.WORK_PRECISION` of the job's work as done, so a job whose work ends
  exactly at its walltime succeeds, unless SimGrid makes a step less than a nanosecond before
  its end: the end of a job started a few ranks before it (its place among the starts of its
  instant), or an event the engine notes (:meth:`Machine.note_event`: a submission, a requested
  call); its walltime's timer then fires first (:mod:`hdrm.sim.tie_steps` says which steps).

Kills can be disabled (``kill_on_walltime``). Energy is integrated per host from its state's power
over time; a job's energy is what its hosts consumed while it ran (Batsim's ``consumed_energy``).

Wide jobs cost runs of hosts, not hosts: starting, ending and power-state changes of runs of
consecutive free hosts of one type go through :mod:`hdrm.sim.host_runs` (C-level passes, the same
float operations in the same order). A wide job keeps its hosts as a
:class:`~hdrm.results.core_sets.CoreRuns` (two integers per run of consecutive hosts), and so does
its :class:`~hdrm.sim.job_end.JobEnd`: records of finished jobs cost their runs, not their hosts
(narrow jobs keep a tuple of at most :data:`~hdrm.core.runs.WIDE` shared ids). Each host's energy
account (energy so far and the time of its last state change) lives in two Python lists on
small machines (host-by-host updates are fastest there) and, from :data:`ARRAY_MIN_HOSTS` hosts,
in two flat arrays of doubles that runs of hosts update through numpy views of the same memory,
with no conversion: the same float operations either way.

How jobs enter and leave it (their start arguments, their end records and Batsim's final states)
is :mod:`hdrm.sim.job_end`, re-exported here; its power-state commands are
:mod:`hdrm.sim.machine_states` and its read-only queries :mod:`hdrm.sim.machine_queries`, both
mixed in. The machine keeps no scheduling logic: engines
(the built-in simulator, the Batsim-protocol server) decide what runs where and when states change.
"""

from __future__ import annotations

import array
import heapq
import itertools
import math
from typing import Callable, Sequence

from hdrm.core.runs import WIDE, CoreRuns
from hdrm.errors import SimulationError
from hdrm.platform.model import Platform
from hdrm.platform.power import SLEEPING, state_power_w, state_speeds_gflops
from hdrm.sim.host_changes import HostChanges
from hdrm.sim.host_lists import HostLists, exact_row
from hdrm.sim.host_runs import HostRuns
from hdrm.sim.job_end import (  # noqa: F401 (re-exported: their former home)
    COMPLETED_KILLED,
    COMPLETED_SUCCESSFULLY,
    COMPLETED_WALLTIME_REACHED,
    JobEnd,
    start_kwargs,
)
from hdrm.sim.machine_queries import MachineQueries
from hdrm.sim.machine_states import MachineStates
from hdrm.sim.running import RunningJob
from hdrm.sim.tie_steps import is_tie, tie_losers

_FREE = -1
#: Machines of at least this many hosts keep the hosts' energy accounts in arrays of doubles.
ARRAY_MIN_HOSTS = 1024


def machine_for(platform: Platform, kill_on_walltime: bool = True) -> "Machine":
    """One host per core of ``platform`` with hdrm's power table, every host asleep (the table
    of each distinct speed and power made once, and shared by the hosts that have it); engines
    report the total energy and each job's, so it keeps no per-host accounts."""
    speed_rows = {g: state_speeds_gflops(g) for g in set(platform.core_gflops)}
    power_rows = {w: state_power_w(w) for w in set(platform.core_power_w)}
    speeds = list(map(speed_rows.__getitem__, platform.core_gflops))
    powers = list(map(power_rows.__getitem__, platform.core_power_w))
    return Machine(speeds, powers, SLEEPING, kill_on_walltime, host_energy=False, compact=True)


class Machine(HostLists, HostRuns, HostChanges, MachineStates, MachineQueries):
    """Hosts with power states executing jobs.

    Its power-state commands (:meth:`~hdrm.sim.machine_states.MachineStates.set_state`,
    ``apply_states``, ``apply_runs``) are those of :class:`~hdrm.sim.machine_states.MachineStates`
    and its read-only queries (size, power, energies, progress of running jobs, next end) those
    of :class:`~hdrm.sim.machine_queries.MachineQueries`, both mixed in.

    Args:
        speeds_gflops: per host, its speed in each power state.
        power_w: per host, its power in each power state.
        initial_state: the power state every host starts in (an int), or one per host.
        kill_on_walltime: kill jobs that reach their walltime (Batsim's behaviour).
        host_energy: keep each host's energy account (:meth:`host_energy_j`); without, state
            changes cost no per-host update (total and job energies are the same either way).
        compact: from :data:`ARRAY_MIN_HOSTS` hosts, keep the hosts' states, jobs and speed
            factors in flat arrays of the smallest types (``state`` and ``job_on`` are then
            ``array.array`` s, indexed as lists; job keys must fit 32 bits) that runs of hosts
            check and fill through numpy views (:mod:`hdrm.sim.host_runs`).
    """

    def __init__(
        self,
        speeds_gflops: Sequence[Sequence[float]],
        power_w: Sequence[Sequence[float]],
        initial_state: int | Sequence[int] = 0,
        kill_on_walltime: bool = True,
        host_energy: bool = True,
        compact: bool = False,
    ) -> None:
        n = len(speeds_gflops)
        if len(power_w) != n:
            raise ValueError("speeds_gflops and power_w must describe the same hosts")
        shared: dict[tuple, tuple] = {}  # hosts of one type share one row (runs compare by id)
        rows = list(map(tuple, speeds_gflops))
        self._speeds = list(map(shared.setdefault, rows, rows))
        rows = list(map(tuple, power_w))
        self._power = list(map(shared.setdefault, rows, rows))
        del rows
        #: every host has the same power row (runs need not compare them; equal rows are one
        #: object here, so counting compares identities)
        self._one_row = n == 0 or self._power.count(self._power[0]) == n
        #: True while every host's speed factor is 1 (runs set to factor 1 then skip the write)
        self._unit_factors = True
        uniform = isinstance(initial_state, int)
        if compact and uniform and n >= ARRAY_MIN_HOSTS and max(map(len, shared)) <= 127:
            self._factor: list[float] | array.array = array.array("d", [1.0]) * n
            self.state: list[int] | array.array = array.array("b", [initial_state]) * n
            self.job_on: list[int] | array.array = array.array("i", [_FREE]) * n
        else:
            self._factor = [1.0] * n
            self.state = [initial_state] * n if uniform else list(initial_state)
            self.job_on = [_FREE] * n
        self._energy_acc: list[float] | array.array | None = None
        self._energy_t: list[float] | array.array | None = None
        if host_energy and n >= ARRAY_MIN_HOSTS:
            self._energy_acc = array.array("d", bytes(8 * n))
            self._energy_t = array.array("d", bytes(8 * n))
        elif host_energy:
            self._energy_acc, self._energy_t = [0.0] * n, [0.0] * n
        if uniform and self._one_row and n:  # exactly rounded either way: the same float
            self._total_power = math.fsum(itertools.repeat(self._power[0][initial_state], n))
        else:
            states = self.state
            self._total_power = math.fsum(self._power[c][states[c]] for c in range(n))
        self._total_energy = 0.0
        self._total_t = 0.0
        #: Host lists of one exact power row, no energy accounts (:mod:`hdrm.sim.host_lists`).
        self._exact_lists = (type(self.state) is list and self._energy_acc is None and n > 0
                             and self._one_row and exact_row(self._power[0], n))
        self.kill_on_walltime = kill_on_walltime
        self.now = 0.0
        self._jobs: dict[int, RunningJob] = {}
        self._heap: list[tuple[float, int, int, int]] = []
        self._seq = 0
        #: the latest instant at which something was due (a job end, a noted event), and the
        #: noted events still to come (a heap of times)
        self._step_s = -math.inf
        self._noted: list[float] = []
        #: the instant of the latest start, the first start then and how many in all
        self._rank_s, self._rank_0, self._starts = -math.inf, 1, 0
        #: how many parts of composed jobs began after their first (engines that wake at
        #: :meth:`next_time` see that nothing ended)
        self.parts_begun = 0
        #: called as ``on_part(key, hosts, computing)`` when such a part begins (an engine's
        #: power book-keeping), or None
        self.on_part: Callable[[int, Sequence[int], bool], None] | None = None

    # ------------------------------------------------------------------ commands
    def start(
        self,
        key: int,
        cores: Sequence[int],
        *,
        delay_s: float | None = None,
        ops_gflop: float | None = None,
        walltime_s: float = math.inf,
        runs: list[tuple[int, int]] | None = None,
        parts: tuple[tuple[float | None, float | None], ...] | None = None,
    ) -> None:
        """Start job ``key`` now on ``cores``: a delay job, a parallel homogeneous job, or a
        sequence of such ``parts`` (``(delay_s, None)`` or ``(None, ops_gflop)`` each, a
        ``composed`` job), each begun when the one before ends, the walltime left passed on.

        ``runs``, where the caller has them (the core's placement made them), are the runs of
        consecutive ids of a narrow ``cores``, in order (what
        :func:`~hdrm.core.runs.core_runs` gives): hosts that follow their jobs are then taken
        by those runs, not found again host by host.

        Raises:
            SimulationError: a host is busy or unknown, the job already runs, or the profile is
                not given exactly once.
        """
        if key in self._jobs:
            raise SimulationError(f"job {key} is already running")
        if (delay_s is not None) + (ops_gflop is not None) + bool(parts) != 1:
            raise SimulationError(f"job {key}: give exactly one of delay_s and ops_gflop "
                                  "(or parts)")
        if not isinstance(cores, (list, tuple, CoreRuns)):
            cores = tuple(cores)
        if not cores:
            raise SimulationError(f"job {key}: empty allocation")
        distinct = False  # the hosts are known to be distinct
        given, runs = runs, None  # the runs of hosts taken, where made: kept for the job's end
        if len(cores) > WIDE:
            held: Sequence[int] = CoreRuns.of(cores)
            runs = held.runs
            power_w = self._take_wide(key, cores, runs, self._follow is None)
        else:
            held = tuple(cores)
            if self._follow is not None:  # the hosts wake with the job
                taken = self._take_following(held, key, given)
                distinct = taken is not None  # (taken and woken)
                power_w, runs = taken or (None, None)
            else:
                power_w = self._take_narrow(held, key) if self._exact_lists else None
            if power_w is None:  # nothing done yet
                power_w = self._take_hosts(key, held)
        if self._follow is not None and not distinct:  # (checked, taken by the paths above)
            power_w = self._wake_hosts(key, held, distinct, runs)
        now = self.now
        job = RunningJob(key, held, now, walltime_s if self.kill_on_walltime else math.inf)
        job.power_w, job.runs = power_w, runs
        order = self._starts = self._starts + 1
        if now != self._rank_s:  # its place among the starts of its instant (tie_steps)
            self._rank_s, self._rank_0 = now, order
        job.rank, job.order = order - self._rank_0 + 1, order
        job.version = self._seq  # above any version a former run of this key left in the heap
        self._jobs[key] = job
        if parts:
            job.parts = parts
            self._begin_part(job)
            return
        if delay_s is not None:
            self._push(job, now + job.delay_run_s(delay_s))
            return
        job.parallel = True  # job.make_parallel(ops_gflop, ()), then its slowest host
        job.ops_gflop = job.remaining = ops_gflop
        if len(held) == 1:  # _slowest of one host
            c = held[0]
            speed = self._speeds[c][self.state[c]] * self._factor[c]
            job.min_speed, job.at_min = (speed, 1) if speed <= math.inf else (math.inf, 0)
        else:
            job.min_speed, job.at_min = self._slowest(held)  # run by run
        self._push(job, now + job.run_left_s())

    def _take_hosts(self, key: int, hosts: tuple[int, ...]) -> float:
        """Give ``hosts`` (a narrow job's) to job ``key`` host by host; returns their power
        added in order from 0.0.

        Raises:
            SimulationError: a host is unknown or busy (nothing taken then).
        """
        job_on = self.job_on
        if not (len(hosts) > 4 and self._free_span(hosts)):
            size = len(job_on)
            for c in hosts:
                if not 0 <= c < size:
                    raise SimulationError(f"job {key}: unknown resource {c} (0..{size - 1})")
                if job_on[c] != _FREE:
                    raise SimulationError(f"job {key}: resource {c} is busy with job {job_on[c]}")
        power, states = self._power, self.state
        power_w = 0.0
        for c in hosts:
            job_on[c] = key
            power_w += power[c][states[c]]
        return power_w

    def _take_wide(self, key: int, cores: Sequence[int], runs: Sequence[tuple[int, int]],
                   power: bool = True) -> float:
        """Give ``cores`` (a wide job's, as ``runs``) to job ``key``: run by run when they are
        free (and share one power row), else host by host; returns their power (not summed on
        the runs' path without ``power``: hosts that follow their jobs, whose power the wake-up
        gives, 0.0 returned).

        Raises:
            SimulationError: a host is unknown or busy (nothing taken then).
        """
        if self._one_row:
            power_w = self._occupy_runs(runs, key, power)
            if power_w is not None:
                return power_w
        elif self._free_runs(runs):
            power_w = 0.0
            for lo, hi in runs:
                self._fill(self.job_on, lo, hi, key)
                power_w = self._sum_power(lo, hi, power_w)
            return power_w
        return self._take_hosts(key, tuple(cores))

    def kill(self, key: int) -> JobEnd:
        """Kill job ``key`` now; returns its record (state ``COMPLETED_KILLED``)."""
        job = self._jobs.get(key)
        if job is None:
            raise SimulationError(f"cannot kill job {key}: it is not running")
        progress = self.progress(key)
        return self._finish(job, COMPLETED_KILLED, progress)

    def advance(self, t: float) -> list[JobEnd]:
        """Move time to ``t`` and return the jobs that end at or before ``t``, in end order.

        Raises:
            SimulationError: ``t`` is before the current time.
        """
        if t < self.now:
            raise SimulationError(f"time cannot go back from {self.now} to {t}")
        ended: list[JobEnd] = []
        heap, jobs, noted = self._heap, self._jobs, self._noted
        while heap and heap[0][0] <= t:
            end, _, key, version = heapq.heappop(heap)
            job = jobs.get(key)
            if job is None or job.version != version:
                continue
            self.now = end
            noted_now = False
            while noted and noted[0] <= end:
                at = heapq.heappop(noted)
                if at < end:
                    self._step_s = max(self._step_s, at)
                else:
                    noted_now = True
            if not noted_now and not (heap and heap[0][0] == end):  # alone at its instant
                if job.walltime_hit or job.ties_walltime_by(self._step_s):
                    ended.append(self._finish(job, COMPLETED_WALLTIME_REACHED,
                                              self.progress(key)))
                elif job.parts is not None and job.part_i + 1 < len(job.parts):
                    self._next_part(job)
                else:
                    ended.append(self._finish(job, COMPLETED_SUCCESSFULLY, 1.0))
                self._step_s = end
                continue
            self._end_instant(job, end, noted_now, ended)
        self.now = t
        return ended

    def _end_instant(self, job: RunningJob, end: float, noted_now: bool,
                     ended: list[JobEnd]) -> None:
        """End ``job`` and every other job due at ``end`` (popped from the heap here), a noted
        event due then too if ``noted_now``: the ties among them that a step of the instant
        kills (:mod:`hdrm.sim.tie_steps`) at their walltime; records go to ``ended``."""
        heap, jobs = self._heap, self._jobs
        due = [job]
        while heap and heap[0][0] == end:
            _, _, key, version = heapq.heappop(heap)
            other = jobs.get(key)
            if other is not None and other.version == version:
                due.append(other)
        losers = tie_losers(due, end, noted_now) if any(is_tie(j, end) for j in due) else ()
        before = self._step_s  # (the latest step at an earlier instant)
        for job in due:
            if job.walltime_hit or job.key in losers or job.ties_walltime_by(before):
                ended.append(self._finish(job, COMPLETED_WALLTIME_REACHED,
                                          self.progress(job.key)))
            elif job.parts is not None and job.part_i + 1 < len(job.parts):
                self._next_part(job)
            else:
                ended.append(self._finish(job, COMPLETED_SUCCESSFULLY, 1.0))
        self._step_s = end

    def note_event(self, t: float) -> None:
        """Note that something outside the machine is due at ``t`` (not before now) ahead of
        the job ends of that instant (a submission, a requested call): its steps kill a parallel
        job whose work ends exactly at its walltime then, if it ranks among the first
        (:mod:`hdrm.sim.tie_steps`)."""
        if t >= self.now:
            heapq.heappush(self._noted, t)

    # ------------------------------------------------------------------ internals
    def _begin_part(self, job: RunningJob) -> None:
        """Begin ``job``'s part ``part_i`` now: a sleep, or work on every host in lock-step."""
        delay_s, ops_gflop = job.parts[job.part_i]  # type: ignore[index]
        now = self.now
        job.part_s = job.updated_s = now
        if delay_s is not None:
            job.parallel = False
            self._push(job, now + job.delay_run_s(delay_s))
            return
        job.parallel = True
        job.ops_gflop = job.remaining = ops_gflop  # type: ignore[assignment]
        job.min_speed, job.at_min = self._slowest(job.cores)
        self._push(job, now + job.run_left_s())

    def _next_part(self, job: RunningJob) -> None:
        """``job``'s running part is done (now): take its time off the walltime left, as
        Batsim does (a sleep's length; a computation's elapsed time), and begin the next."""
        if job.parallel:
            job.sync(self.now)
        else:
            job.wall_left_s -= job.delay_s
        job.part_i += 1
        self.parts_begun += 1
        self._begin_part(job)
        if self.on_part is not None:
            self.on_part(job.key, job.cores, job.parallel)

    def _free_span(self, hosts: tuple[int, ...]) -> bool:
        """True when ``hosts`` (a non-empty tuple) are consecutive ascending ids of existing
        hosts that run no job, checked by C-level comparisons (a slice count); False when they
        are not (the host-by-host checks then decide, and name any culprit)."""
        job_on = self.job_on
        first, n = hosts[0], len(hosts)
        return (hosts[-1] - first == n - 1 and 0 <= first and first + n <= len(job_on)
                and hosts == tuple(range(first, first + n))
                and job_on[first:first + n].count(_FREE) == n)

    def _push(self, job: RunningJob, end_s: float) -> None:
        job.version += 1
        job.end_s = end_s
        if end_s < math.inf:
            self._seq += 1
            heapq.heappush(self._heap, (end_s, self._seq, job.key, job.version))

    def _finish(self, job: RunningJob, state: str, progress: float) -> JobEnd:
        del self._jobs[job.key]
        job.version += 1
        energy = job.energy_j + job.power_w * (self.now - job.energy_t)
        job_on = self.job_on
        cores = job.cores
        follow = self._follow  # (hosts that follow their jobs go back to sleep with them)
        if type(cores) is tuple and follow is not None:
            self._free_following(cores, job.key, job.runs)
        elif type(cores) is not tuple and isinstance(cores, CoreRuns):  # tuples: no ABC check
            runs = job.runs or cores.runs
            self._fill_runs(job_on, runs, _FREE)
            if follow is not None:
                self._switch(cores, follow[1], follow[0], runs)
        elif self._exact_lists:
            self._free_narrow(cores, job.key)
        else:
            for c in cores:
                job_on[c] = _FREE
        return JobEnd(job.key, state, job.start_s, self.now, job.cores, energy, progress)
