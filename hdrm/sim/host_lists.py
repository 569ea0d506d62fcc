"""Small machines of identical hosts: starts, ends and power changes in a few C-level passes.

The built-in engine's machine on a small platform of one host type (a few hundred hosts: the
trace's processors of an RLScheduler sequence, say) keeps its hosts in Python lists, one power
row for all, and no per-host energy accounts. Its jobs are mostly narrow (a handful to a few
dozen hosts), often one run of consecutive hosts, and each of them costs a wake-up of its hosts,
a start, an end and a return to sleep. The host-by-host loops of those steps are the machine's
main cost there, so :class:`HostLists` does them by list slices and counts instead.

The results are those of the loops to the bit: when the power row holds whole numbers of watts
and the whole machine's power stays far below 2**53 watts (:func:`exact_row`), every partial sum
of host powers is an integer held exactly, so a sum made in one step (a count times a power, or
``sum`` over a slice) equals the sum made host by host. Machines whose powers are not exact in
that sense, and any step whose hosts are not all free or not all alike, take the general paths.
"""

from __future__ import annotations

import array
from typing import Sequence

from hdrm.core.runs import WIDE
from hdrm.sim.host_runs import _repeated_sum

_FREE = -1
#: Integers of magnitude below this (2**53) are floats exactly.
_EXACT = 2**53


def exact_row(row: Sequence[float], nb_hosts: int) -> bool:
    """True when every power of ``row`` is a float holding a whole number of watts and
    ``nb_hosts`` hosts at the largest of them (twice over, for changes) stay below 2**53 W: any
    sum of those hosts' powers and power changes is then exact, whatever its order."""
    if not row or not all(type(w) is float and w.is_integer() for w in row):
        return False
    return 2 * (nb_hosts + 1) * max(abs(w) for w in row) < _EXACT


class HostLists:
    """Fast paths mixed into :class:`~hdrm.sim.machine.Machine` (its attributes) for machines
    of host lists with one exact power row (:attr:`_exact_lists`) and no energy accounts."""

    job_on: list[int] | array.array
    state: list[int] | array.array
    now: float
    _power: list[tuple[float, ...]]
    _factor: list[float] | array.array
    _unit_factors: bool
    _total_power: float
    _total_energy: float
    _total_t: float
    #: Host lists, one power row exact in the sense of :func:`exact_row`, no energy accounts.
    _exact_lists: bool = False

    def _apply_free_list_runs(self, runs: list[tuple[int, int, tuple[int, float]]]) -> bool:
        """Apply disjoint ``runs`` ``(first, last + 1, (state, speed_factor))`` on a machine of
        host lists with one power row and no energy accounts, when every run's hosts run no job
        and share one state other than the new one; False, with nothing done, otherwise. The
        checks and writes are list slices; on an exact row a run's power change is one product."""
        states, job_on = self.state, self.job_on
        size = len(states)
        for lo, hi, (state, _) in runs:
            if not 0 <= lo < hi <= size:
                return False
            old = states[lo]
            n = hi - lo
            if old == state or states[lo:hi].count(old) != n or job_on[lo:hi].count(_FREE) != n:
                return False
        row = self._power[0]
        exact = self._exact_lists
        unit = self._unit_factors
        delta = 0.0
        for lo, hi, (state, speed_factor) in runs:  # disjoint: states[lo] is still the old
            old = states[lo]
            n = hi - lo
            step = row[state] - row[old]
            if exact:  # whole watts far below 2**53: the additions in turn give this exactly
                delta += n * step
            elif n <= WIDE:
                for _ in range(n):
                    delta += step
            else:
                delta = _repeated_sum(delta, step, n)
            states[lo:hi] = [state] * n
            if speed_factor != 1.0 or not unit:  # else: all 1 already
                self._factor[lo:hi] = [speed_factor] * n
                unit = unit and speed_factor == 1.0
        self._unit_factors = unit
        if delta:
            now = self.now
            self._total_energy += self._total_power * (now - self._total_t)
            self._total_t = now
            self._total_power += delta
        return True

    def _take_narrow(self, hosts: tuple[int, ...], key: int) -> float | None:
        """Give ``hosts`` (a non-empty tuple) to job ``key`` on an exact-row list machine and
        return their power (the host-by-host sum from 0.0); None, with nothing done, unless they
        are distinct existing free hosts (the caller's host-by-host path then decides)."""
        job_on, states, row = self.job_on, self.state, self._power[0]
        n, first, size = len(hosts), hosts[0], len(self.job_on)
        if n == 1:
            if 0 <= first < size and job_on[first] == _FREE:
                job_on[first] = key
                return 0.0 + row[states[first]]
            return None
        last = first + n
        if (hosts[-1] == last - 1 and 0 <= first and last <= size
                and hosts == tuple(range(first, last))):  # one run of consecutive hosts
            if job_on[first:last].count(_FREE) != n:
                return None
            job_on[first:last] = [key] * n
            held = states[first:last]
            state = held[0]
            if held.count(state) == n:
                return 0.0 + n * row[state]
            return 0.0 + sum(map(row.__getitem__, held))
        for c in hosts:  # (plain loops: cheaper than C-level maps at these sizes)
            if not 0 <= c < size or job_on[c] != _FREE:
                return None
        power_w = 0.0
        for c in hosts:
            if job_on[c] != _FREE:  # given twice: undo, the caller's path decides
                for d in hosts:
                    if job_on[d] == key:
                        job_on[d] = _FREE
                return None
            job_on[c] = key
            power_w += row[states[c]]
        return power_w

    def _free_narrow(self, hosts: tuple[int, ...], key: int) -> None:
        """Mark ``hosts`` (job ``key``'s, a tuple) free: one slice when they are one run."""
        job_on = self.job_on
        n = len(hosts)
        first = hosts[0]
        last = first + n
        if n > 2 and hosts[-1] == last - 1 and job_on[first:last].count(key) == n:
            # n hosts of the job in a run of n: exactly its hosts (it holds each once)
            job_on[first:last] = [_FREE] * n
            return
        for c in hosts:
            job_on[c] = _FREE
