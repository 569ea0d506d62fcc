"""SimGrid 3.32's host energy accounts for Batsim's energy trace, kept in arrays.

Batsim's ``out_consumed_energy.csv`` reads the energy of every compute host at each row
(``Machines::total_consumed_energy``: SimGrid's per-host doubles summed in a long double). Rows
a fraction of a nanosecond apart then have a mean power (``epower``) that depends on the last
bits of those doubles, so the trace needs the accounts as SimGrid keeps them: a host's account is
brought up to date when the energy plugin is called on it, the time since its last update charged
at the power of its load then (:class:`hdrm.batsim.lazy_energy.HostAccounts` does the same, one
host at a time, where jobs communicate). :class:`TraceAccounts` keeps them in numpy arrays, so
that reading all hosts at once costs one vector operation: numpy's float64 arithmetic, element by
element in the same order, gives the same doubles as the scalar formula.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from hdrm.batsim.partial_load import power_ranges
from hdrm.platform.simgrid import HostSpec


class TraceAccounts:
    """Every compute host's energy account, as SimGrid's energy plugin keeps it.

    Args:
        hosts: compute hosts in resource order.
    """

    def __init__(self, hosts: Sequence[HostSpec]) -> None:
        n = len(hosts)
        k = max((len(h.speeds_gflops) for h in hosts), default=1)
        self._idle, self._eps, self._full, self._speed = (np.zeros((n, k)) for _ in range(4))
        for i, h in enumerate(hosts):
            for s, (idle, eps, full) in enumerate(power_ranges(h)):
                self._idle[i, s], self._eps[i, s], self._full[i, s] = idle, eps, full
                self._speed[i, s] = h.speeds_gflops[s] * 1e9
        self._cores = np.array([float(h.cores) for h in hosts])
        self.pstate = np.array([h.pstate for h in hosts], dtype=np.int64)  # Host::set_pstate
        self._saved = self.pstate.copy()  # as each account saved it at its last update
        self.energy_j = np.zeros(n)
        self.updated_s = np.zeros(n)

    def _watts(self, idx: np.ndarray, usage: np.ndarray) -> np.ndarray:
        """``HostEnergy::get_current_watts_value`` of hosts ``idx`` whose cpus deliver
        ``usage`` flop/s: ``epsilon + load x (full - epsilon)`` of the saved state (its idle
        watts at load 0), the load over the state's speed times the cores (1 at speed 0)."""
        state = self._saved[idx]
        speed = self._speed[idx, state]
        safe = np.where(speed > 0, speed, 1.0)
        load = np.where(speed > 0, np.minimum(usage / safe / self._cores[idx], 1.0), 1.0)
        eps, full = self._eps[idx, state], self._full[idx, state]
        return np.where(load > 0, eps + load * (full - eps), self._idle[idx, state])

    def update(self, idx: np.ndarray, now: float, usage: np.ndarray) -> None:
        """``HostEnergy::update`` of hosts ``idx`` (``usage``: every host's flop/s now): the
        time since each one's last update charged at its power now, then its state saved."""
        stale = idx[self.updated_s[idx] < now]
        if stale.size:
            watts = self._watts(stale, usage[stale])
            self.energy_j[stale] += watts * (now - self.updated_s[stale])
            self.updated_s[stale] = now
        self._saved[idx] = self.pstate[idx]

    def update_one(self, host: int, now: float, usage: float) -> None:
        """:meth:`update` of one host whose cpu delivers ``usage`` flop/s."""
        if self.updated_s[host] < now:
            state = self._saved[host]
            speed = self._speed[host, state]
            load = min(usage / speed / self._cores[host], 1.0) if speed > 0 else 1.0
            eps, full = self._eps[host, state], self._full[host, state]
            watts = eps + load * (full - eps) if load > 0 else self._idle[host, state]
            self.energy_j[host] += watts * (now - self.updated_s[host])
            self.updated_s[host] = now
        self._saved[host] = self.pstate[host]

    def total_j(self) -> np.longdouble:
        """Batsim's sum of every account, host after host, in a long double."""
        return np.cumsum(self.energy_j.astype(np.longdouble))[-1] if self.energy_j.size \
            else np.longdouble(0)
