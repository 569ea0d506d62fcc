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

from typing import Callable, Sequence

import numpy as np

from hdrm.batsim.partial_load import power_ranges
from hdrm.platform.simgrid import HostSpec


class TraceAccounts:
    """Every compute host's energy account, as SimGrid's energy plugin keeps it (Python lists for
    a few hosts at a time, numpy arrays when all hosts are read at once).

    Args:
        hosts: compute hosts in resource order.
    """

    def __init__(self, hosts: Sequence[HostSpec]) -> None:
        n = len(hosts)
        k = max((len(h.speeds_gflops) for h in hosts), default=1)
        self._tables = [[(idle, eps, full, h.speeds_gflops[s] * 1e9)
                         for s, (idle, eps, full) in enumerate(power_ranges(h))] for h in hosts]
        self._idle, self._eps, self._full, self._speed = (np.zeros((n, k)) for _ in range(4))
        for i, rows in enumerate(self._tables):
            for s, (idle, eps, full, speed) in enumerate(rows):
                self._idle[i, s], self._eps[i, s], self._full[i, s] = idle, eps, full
                self._speed[i, s] = speed
        self._cores_list = [float(h.cores) for h in hosts]
        self._cores = np.array(self._cores_list)
        self._rows = np.arange(n)
        self.pstate = [h.pstate for h in hosts]  # as SimGrid's host has it (Host::set_pstate)
        self._saved = list(self.pstate)  # as each account saved it at its last update
        self.energy_j = [0.0] * n
        self.updated_s = [0.0] * n
        self._total: np.longdouble | None = None  # total_j until an account changes
        #: the flop/s a host's cpu delivers now (for :meth:`update_many` without a usage)
        self.usage_of: Callable[[int], float] = lambda host: 0.0

    def update_all(self, now: float, usage: np.ndarray) -> None:
        """``HostEnergy::update`` of every host (``usage``: each one's flop/s now): the time
        since each one's last update charged at the power of its load now, ``epsilon + load x
        (full - epsilon)`` of the saved state (its idle watts at load 0; the load over the
        state's speed times the cores, 1 at speed 0), then its state saved."""
        updated = np.array(self.updated_s)
        stale = updated < now
        if stale.any():
            state = np.array(self._saved)
            speed = self._speed[self._rows, state]
            safe = np.where(speed > 0, speed, 1.0)
            load = np.where(speed > 0, np.minimum(usage / safe / self._cores, 1.0), 1.0)
            eps, full = self._eps[self._rows, state], self._full[self._rows, state]
            watts = np.where(load > 0, eps + load * (full - eps), self._idle[self._rows, state])
            energy = np.array(self.energy_j)
            energy[stale] += watts[stale] * (now - updated[stale])
            self._total = None
            updated[stale] = now
            self.energy_j, self.updated_s = energy.tolist(), updated.tolist()
        self._saved = list(self.pstate)

    def update_many(self, hosts: Sequence[int], now: float, usage: float | None) -> None:
        """:meth:`update_all` of ``hosts``, one after the other; ``usage`` 0.0: no host's cpu
        delivers anything, None: ``usage_of`` (set by the caller) tells each one's."""
        energy, updated, saved, pstate = self.energy_j, self.updated_s, self._saved, self.pstate
        tables, cores = self._tables, self._cores_list
        for host in hosts:
            last = updated[host]
            if last < now:
                idle, eps, full, speed = tables[host][saved[host]]
                used = usage if usage is not None else self.usage_of(host)
                load = min(used / speed / cores[host], 1.0) if speed > 0 else 1.0
                energy[host] += (eps + load * (full - eps) if load > 0 else idle) * (now - last)
                updated[host] = now
                self._total = None
            saved[host] = pstate[host]

    def total_j(self) -> np.longdouble:
        """Batsim's sum of every account, host after host, in a long double."""
        if self._total is None:
            self._total = (np.cumsum(np.array(self.energy_j, dtype=np.longdouble))[-1]
                           if self.energy_j else np.longdouble(0))
        return self._total
