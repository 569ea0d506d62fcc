"""Power-state changes of the simulated machine's hosts, host by host and run by run in one batch.

:meth:`Machine.apply_states <hdrm.sim.machine_states.MachineStates.apply_states>` changes hosts
one by one: a busy host re-times its job. A batch of runs of changes
(:meth:`~hdrm.sim.machine_states.MachineStates.apply_runs`) is mostly runs of free hosts of one
type and one state (jobs about to start, or that just ended), with a few hosts of running jobs
among them (a processor slowed or sped up by the job beside it). :class:`HostChanges` applies
such a batch run by run: a run of free, alike hosts by C-level passes, any other host by host,
all in the batch's order with one sum of the power change, so the result is that of the
host-by-host loop over the whole batch, to the bit. It also finds a parallel job's slowest host
(its speed and how many hosts have it) run by run.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from hdrm.core.runs import CoreRuns
from hdrm.lazy import numpy as np
from hdrm.sim.host_runs import _repeated_sum, _view
from hdrm.sim.machine_fields import MachineFields
from hdrm.sim.running import RunningJob

_FREE = -1
#: Runs of hosts of mixed states longer than this find their slowest host by numpy.
_NUMPY_MIN = 256


class HostChanges(MachineFields):
    """Host-by-host and mixed changes, mixed into :class:`~hdrm.sim.machine.Machine` (its
    attributes and the run helpers of :class:`~hdrm.sim.host_runs.HostRuns`)."""

    _jobs: dict[int, RunningJob]

    def _apply_mixed(self, runs: Sequence[tuple[int, int, tuple[int, float]]]) -> None:
        """Apply disjoint ``runs`` in order: a run of free hosts of one type and one state
        other than the new one by C-level passes, any other host by host; one power step."""
        touched: dict[int, float] = {}
        stale: set[int] = set()
        delta = 0.0
        for lo, hi, change in runs:
            if self._free_alike(lo, hi, change[0]):
                delta = self._change_run(lo, hi, change, delta)
            else:
                delta = self._change_hosts(((c, change) for c in range(lo, hi)), delta,
                                           touched, stale)
        self._after_changes(delta, touched, stale)

    def _free_alike(self, lo: int, hi: int, state: int) -> bool:
        """True when hosts ``lo..hi - 1`` exist, run no job and share one power row and one
        state other than ``state``."""
        if not 0 <= lo < hi <= len(self.state):
            return False
        same = self._uniform(lo, hi)  # type: ignore[attr-defined]
        return (same is not None and same[1] != state
                and self._all(self.job_on, lo, hi, _FREE))  # type: ignore[attr-defined]

    def _change_run(self, lo: int, hi: int, change: tuple[int, float], delta: float) -> float:
        """Set free alike hosts ``lo..hi - 1`` to ``change``; returns ``delta`` plus their
        power changes, added one by one."""
        state, speed_factor = change
        row, old = self._power[lo], self.state[lo]
        self._charge(lo, hi, row[old])  # type: ignore[attr-defined]
        delta = _repeated_sum(delta, row[state] - row[old], hi - lo)
        self._fill(self.state, lo, hi, state)  # type: ignore[attr-defined]
        if speed_factor != 1.0 or not self._unit_factors:  # else: all 1 already
            self._fill(self._factor, lo, hi, speed_factor)  # type: ignore[attr-defined]
            self._unit_factors = self._unit_factors and speed_factor == 1.0
        return delta

    def _change_hosts(self, changes: Iterable[tuple[int, tuple[int, float]]], delta: float,
                      touched: dict[int, float], stale: set[int]) -> float:
        """Apply ``(host, (state, speed_factor))`` changes host by host; returns ``delta``
        plus their power changes. A busy host's job is synced and charged, and noted in
        ``touched`` (its slowest speed before) or ``stale`` (its slowest speed to find again)."""
        now = self.now
        power, speeds, states, factor = self._power, self._speeds, self.state, self._factor
        acc, last, job_on, jobs = self._energy_acc, self._energy_t, self.job_on, self._jobs
        accounts = acc is not None and last is not None
        unit = True
        for c, (state, speed_factor) in changes:
            old, old_factor = states[c], factor[c]
            if old == state and old_factor == speed_factor:
                continue
            key = job_on[c]
            pw = power[c]
            if key != _FREE:
                job = jobs[key]
                if key not in touched:
                    if job.parallel:
                        job.sync(now)
                    touched[key] = job.min_speed
                job.energy_j += job.power_w * (now - job.energy_t)
                job.energy_t = now
                job.power_w += pw[state] - pw[old]
                if job.parallel and key not in stale:  # the slowest speed, in O(1)
                    sp = speeds[c]
                    was, new, low = sp[old] * old_factor, sp[state] * speed_factor, job.min_speed
                    if new < low:
                        job.min_speed, job.at_min = new, 1
                    elif new == low:
                        job.at_min += was != low
                    elif was == low:
                        job.at_min -= 1
                        if not job.at_min:  # the last host at the minimum sped up
                            stale.add(key)
            if accounts:
                acc[c] += pw[old] * (now - last[c])  # type: ignore[index]
                last[c] = now  # type: ignore[index]
            delta += pw[state] - pw[old]
            states[c] = state
            factor[c] = speed_factor
            if speed_factor != 1.0:
                unit = False
        if not unit:
            self._unit_factors = False
        return delta

    def _after_changes(self, delta: float, touched: dict[int, float], stale: set[int]) -> None:
        """End a batch: the total power steps by ``delta``; the jobs touched are re-timed when
        their slowest speed changed (found again over their hosts when ``stale``)."""
        now, jobs = self.now, self._jobs
        if delta:
            self._step_total_power(delta, now)  # type: ignore[attr-defined]
        for key, min_before in touched.items():
            job = jobs[key]
            if key in stale:
                job.min_speed, job.at_min = self._slowest(job.cores)
            if job.parallel and job.min_speed != min_before:
                self._push(job, now + job.run_left_s())  # type: ignore[attr-defined]

    def _slowest(self, hosts: Sequence[int]) -> tuple[float, int]:
        """The lowest speed (state speed x factor) of ``hosts`` and how many hosts have it, as
        :meth:`RunningJob.set_min_speed <hdrm.sim.running.RunningJob.set_min_speed>` finds
        them; a run of hosts of one type, state and factor is one comparison."""
        speeds, states, factor = self._speeds, self.state, self._factor
        low, count = float("inf"), 0
        if type(hosts) is tuple or not isinstance(hosts, CoreRuns):  # narrow: host by host
            for c in hosts:
                s = speeds[c][states[c]] * factor[c]
                if s < low:
                    low, count = s, 1
                elif s == low:
                    count += 1
            return low, count
        for lo, hi in hosts.runs:
            if hi - lo > 1 and self._alike(lo, hi):
                items = [(speeds[lo][states[lo]] * factor[lo], hi - lo)]
            else:
                items = self._run_speeds(lo, hi)
            for s, n in items:
                if s < low:
                    low, count = s, n
                elif s == low:
                    count += n
        return low, count

    def _run_speeds(self, lo: int, hi: int) -> list[tuple[float, int]]:
        """``(speed, count)`` items of hosts ``lo..hi - 1``: their lowest speed and its count
        by numpy when they share one speed row on a machine of arrays (the same products of
        doubles, no NaN), else each host's speed."""
        speeds, states, factor = self._speeds, self.state, self._factor
        row = speeds[lo]
        if (hi - lo > _NUMPY_MIN and type(states) is not list and type(factor) is not list
                and speeds[lo:hi].count(row) == hi - lo):
            values = np.asarray(row, dtype=np.float64)[_view(states)[lo:hi]] * _view(factor)[lo:hi]
            if not np.isnan(values).any():
                least = values.min()
                return [(float(least), int(np.count_nonzero(values == least)))]
        return [(speeds[c][states[c]] * factor[c], 1) for c in range(lo, hi)]

    def _alike(self, lo: int, hi: int) -> bool:
        """True when hosts ``lo..hi - 1`` share one speed row, one state and one factor."""
        speeds, factor = self._speeds, self._factor
        if speeds[lo:hi].count(speeds[lo]) != hi - lo:
            return False
        if not self._all(self.state, lo, hi, self.state[lo]):  # type: ignore[attr-defined]
            return False
        if type(factor) is list:
            return factor[lo:hi].count(factor[lo]) == hi - lo
        return factor[lo:hi].tobytes() == factor[lo:lo + 1].tobytes() * (hi - lo)
