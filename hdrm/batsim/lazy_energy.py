"""SimGrid's lazy host energy accounts, where a ``composed`` job sleeps before it computes.

SimGrid 3.32's energy plugin brings a host's account up to date only when something reads it or
an execution starts or ends on it, at the power the host has *then*. Batsim 4.2.1 (with ``-E``)
reads every host's energy at each job start and end and each power-state change (its energy
trace), and a computation starts and ends on its hosts. So when a ``composed`` job's computing
part follows a sleep (a ``delay`` part), its hosts' accounts were last read at the previous
part's end or at the last job start or end anywhere, and the computation's start charges that
stretch at the computing power, on every host of the job but the first, where the job's actor
runs (its account is read as the sleep ends). Measured with the binary: a 1.125 s sleep then
2.07 s of work on 2 hosts of 95:200 and 96:207 W costs 1182.24 J, the second host at 207 W
during the sleep (1057.365 J at idle power); the same before work on one host, or after it,
at idle power. :class:`LazyCharges` keeps these extra joules, in all and per job.

Where jobs communicate (SimGrid's ptask_L07 model on :mod:`hdrm.batsim.lmm`), a host's load is
its cpu constraint's usage, below 1 for a network-bound task and changing whenever the solver
runs again; :class:`HostAccounts` then keeps each host's account as the plugin does, updated
when the actor model calls the plugin (:class:`~hdrm.batsim.actors.ActorSimulation`), and the
board's energy is theirs. Measured with the binary: 48 of 48 seeded sessions (delays,
computing and communicating jobs, P-state changes, kills, queries; three platforms) identical,
``consumed_energy`` included.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

import numpy as np


class LazyCharges:
    """The extra joules of sleeps charged at a computation's power.

    Args:
        powers: per host, its machine power row (state ``2k`` P-state k idle, ``2k + 1``
            computing).
        pstate: each host's current P-state (the board's list, read, never written).
    """

    def __init__(self, powers: Sequence[Sequence[float]], pstate: list[int]) -> None:
        self._powers = powers
        self._pstate = pstate
        self._read_s = [0.0] * len(powers)  # when each host's account was last brought up to date
        self._all_read_s = 0.0  # when every host's was
        self.total_j = 0.0
        self._job_j: dict[int, float] = {}

    def read_all(self, now: float) -> None:
        """Batsim reads every host's energy now (a job starts or ends, a power state changes)."""
        self._all_read_s = now

    def part_begins(self, key: int, hosts: Sequence[int], computing: bool, was_computing: bool,
                    now: float) -> None:
        """Job ``key``'s next part begins now on ``hosts``: a computation after a sleep charges
        the sleep at its power on all hosts but the first; a computation's start or end reads
        the accounts of its hosts."""
        if computing and not was_computing:
            first, extra = min(hosts), 0.0
            for h in hosts:
                if h != first:
                    row, state = self._powers[h], 2 * self._pstate[h]
                    extra += (row[state + 1] - row[state]) * (now - max(self._read_s[h],
                                                                        self._all_read_s))
            if extra:
                self.total_j += extra
                self._job_j[key] = self._job_j.get(key, 0.0) + extra
        if computing or was_computing:
            for h in hosts:
                self._read_s[h] = now

    def job_j(self, key: int) -> float:
        """The extra joules of job ``key`` (forgotten: call once, at its end)."""
        return self._job_j.pop(key, 0.0)


class HostAccounts:
    """SimGrid 3.32's energy accounts of the compute hosts where jobs communicate.

    A host's account is brought up to date only when the energy plugin is called on it (an
    action on its cpu changes state, an execution starts on it alone, its power state changes,
    Batsim reads its energy): the time since its last update is charged at the power of the
    load the host has *then*, ``epsilon + load x (full - epsilon)`` of the power state it had at
    its last update (its idle watts at load 0), where the load is its cpu constraint's usage
    (:meth:`usage`: the parallel tasks' flop rates on it; a task's latency phase uses nothing)
    over that state's speed times its cores (1 for a speed of 0). So a network-bound task loads
    its hosts in part, and a load that changed between two updates is charged as it is at the
    second.

    Args:
        ranges: per host, per power state, its (idle, epsilon, full) watts.
        speeds: per host, per power state, its speed (flop/s).
        cores: per host, its core count.
        pstate: each host's power state at time 0.
        usage: the flop/s host ``h``'s cpu delivers now (the solver's last values).
    """

    def __init__(self, ranges: Sequence[Sequence[tuple[float, float, float]]],
                 speeds: Sequence[Sequence[float]], cores: Sequence[int],
                 pstate: Sequence[int], usage: Callable[[int], float]) -> None:
        self._ranges = ranges
        self._speeds = speeds
        self._cores = cores
        self._usage = usage
        self.pstate = list(pstate)  # as SimGrid's host has it (Host::set_pstate)
        self._saved = list(pstate)  # as the account saved it at its last update
        self.energy_j = [0.0] * len(ranges)
        self.updated_s = [0.0] * len(ranges)

    def watts(self, host: int) -> float:
        """``HostEnergy::get_current_watts_value``: the power of the host's load now."""
        state = self._saved[host]
        idle, epsilon, full = self._ranges[host][state]
        speed = self._speeds[host][state]
        if speed <= 0:
            load = 1.0
        else:
            load = min(self._usage(host) / speed / self._cores[host], 1.0)
        return epsilon + load * (full - epsilon) if load > 0 else idle

    def update(self, host: int, now: float) -> None:
        """``HostEnergy::update``: charge the time since the last update at the power now, then
        save the host's power state."""
        if self.updated_s[host] < now:
            self.energy_j[host] += self.watts(host) * (now - self.updated_s[host])
            self.updated_s[host] = now
        self._saved[host] = self.pstate[host]

    def set_pstate(self, host: int, state: int, now: float) -> None:
        """``Host::set_pstate``: the new state, then the account updated (``on_speed_change``,
        charged at the state it had)."""
        self.pstate[host] = state
        self.update(host, now)

    def total_j(self, hosts: Iterable[int]) -> np.longdouble:
        """Batsim's sum of the accounts of ``hosts`` (a long double), as last updated."""
        total = np.longdouble(0.0)
        for h in hosts:
            total += np.longdouble(self.energy_j[h])
        return total
