"""SimGrid 3.32's host energy accounts for Batsim's energy trace, kept in arrays.

Batsim's ``out_consumed_energy.csv`` reads the energy of every compute host at each row
(``Machines::total_consumed_energy``: SimGrid's per-host doubles summed in a long double). Rows
a fraction of a nanosecond apart then have a mean power (``epower``) that depends on the last
bits of those doubles, so the trace needs the accounts as SimGrid keeps them: a host's account is
brought up to date when the energy plugin is called on it, the time since its last update charged
at the power of its load then (:class:`hdrm.batsim.lazy_energy.HostAccounts` does the same, one
host at a time, where jobs communicate). :class:`TraceAccounts` keeps them in numpy arrays, so
that reading all hosts at once costs one vector operation: numpy's float64 arithmetic, element by
element in the same order, gives the same doubles as the scalar formula (a host updated already
at that time is charged 0 J, which leaves its double as it is).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from hdrm.batsim.partial_load import power_ranges
from hdrm.platform.simgrid import HostSpec


class TraceAccounts:
    """Every compute host's energy account, as SimGrid's energy plugin keeps it, in numpy arrays
    (an update of every host is a few vector operations; one host's, a few scalar ones).

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
        #: each state's watts when the host's cpu delivers nothing (idle; at a speed of 0, the
        #: load is 1)
        self._unloaded = np.where(self._speed > 0, self._idle,
                                  self._eps + 1.0 * (self._full - self._eps))
        self._cores_list = [float(h.cores) for h in hosts]
        self._cores = np.array(self._cores_list)
        self._rows = np.arange(n)
        self.pstate = [h.pstate for h in hosts]  # as SimGrid's host has it (Host::set_pstate)
        self._saved = list(self.pstate)  # as each account saved it at its last update
        self._unloaded_now = self._unloaded[self._rows, self._saved] if n else np.zeros(0)
        self._saves = 0  # how many times a saved state changed
        self._watts_at: tuple = (None, -1, None)  # (usage, _saves, the watts) last worked out
        self._energy = np.zeros(n)
        self._updated = np.zeros(n)
        self._total: np.longdouble | None = None  # total_j until an account changes
        #: the energies at the rows read (:meth:`snapshot`), not summed yet; the sums of those
        #: summed; whether the last one is the energies now
        self._pending: list[np.ndarray] = []
        self._sums: list[np.longdouble] = []
        self._snapped = False
        #: the flop/s a host's cpu delivers now (for :meth:`update_many` without a usage)
        self.usage_of: Callable[[int], float] = lambda host: 0.0

    @property
    def energy_j(self) -> list[float]:
        """Each host's account (joules since 0), as last updated."""
        return self._energy.tolist()

    @property
    def updated_s(self) -> list[float]:
        """When each host's account was last updated."""
        return self._updated.tolist()

    def _save(self) -> None:
        """Every account saves its host's power state (the watts of an unloaded host follow)."""
        if self._saved != self.pstate:
            self._saved = list(self.pstate)
            self._unloaded_now = self._unloaded[self._rows, self._saved]
            self._saves += 1

    def update_all(self, now: float, usage: np.ndarray | None) -> None:
        """``HostEnergy::update`` of every host (``usage``: each one's flop/s now; None: no
        host's cpu delivers anything): the time since each one's last update charged at the
        power of its load now, ``epsilon + load x (full - epsilon)`` of the saved state (its
        idle watts at load 0; the load over the state's speed times the cores, 1 at speed 0),
        then its state saved. A host updated at ``now`` already is charged ``watts x 0``, which
        leaves its double as it is. ``usage`` is never written to: passed again, with the same
        saved states, its watts are not worked out again."""
        watts = self._watts(usage)
        charge = now - self._updated
        charge *= watts
        self._energy += charge
        self._updated.fill(now)
        self._total, self._snapped = None, False
        self._save()

    def _watts(self, usage: np.ndarray | None) -> np.ndarray:
        """Every host's watts at ``usage`` (its flop/s; None: 0 everywhere), in its saved state."""
        if usage is None:
            return self._unloaded_now
        last, saves, last_watts = self._watts_at
        if saves == self._saves and last is not None:
            if usage is last:
                return last_watts  # (the same usages, never written to, the same states)
            changed = np.flatnonzero(usage != last)
            if len(changed) <= 8:  # (the scalar formula of the hosts whose usage changed)
                watts = last_watts.copy()
                for h in changed.tolist():
                    idle, eps, full, speed = self._tables[h][self._saved[h]]
                    load = min(float(usage[h]) / speed / self._cores_list[h], 1.0) \
                        if speed > 0 else 1.0
                    watts[h] = eps + load * (full - eps) if load > 0 else idle
                self._watts_at = (usage, saves, watts)
                return watts
        state = self._saved
        speed = self._speed[self._rows, state]
        safe = np.where(speed > 0, speed, 1.0)
        load = np.where(speed > 0, np.minimum(usage / safe / self._cores, 1.0), 1.0)
        eps, full = self._eps[self._rows, state], self._full[self._rows, state]
        watts = np.where(load > 0, eps + load * (full - eps), self._idle[self._rows, state])
        self._watts_at = (usage, self._saves, watts)
        return watts

    def update_hosts(self, hosts: Sequence[int], now: float, usage: np.ndarray | None) -> None:
        """:meth:`update_many` of ``hosts`` in a few vector operations (``usage``: every
        host's flop/s now, as for :meth:`update_all`); a host listed twice is charged once, as
        its second update finds it up to date."""
        rows = np.fromiter(hosts, dtype=np.intp, count=len(hosts))
        charge = now - self._updated[rows]
        charge *= self._watts(usage)[rows]
        self._energy[rows] += charge
        self._updated[rows] = now
        self._total, self._snapped = None, False
        if self._saved != self.pstate:
            for host in hosts:
                self._saved[host] = self.pstate[host]
            self._unloaded_now = self._unloaded[self._rows, self._saved]
            self._saves += 1

    def update_many(self, hosts: Sequence[int], now: float, usage: float | None) -> None:
        """:meth:`update_all` of ``hosts``, one after the other; ``usage`` 0.0: no host's cpu
        delivers anything, None: ``usage_of`` (set by the caller) tells each one's."""
        energy, updated, saved, pstate = self._energy, self._updated, self._saved, self.pstate
        tables, cores = self._tables, self._cores_list
        for host in hosts:
            last = float(updated[host])
            if last < now:
                idle, eps, full, speed = tables[host][saved[host]]
                used = usage if usage is not None else self.usage_of(host)
                load = min(used / speed / cores[host], 1.0) if speed > 0 else 1.0
                energy[host] += (eps + load * (full - eps) if load > 0 else idle) * (now - last)
                updated[host] = now
                self._total, self._snapped = None, False
            if saved[host] != pstate[host]:
                saved[host] = pstate[host]
                self._unloaded_now[host] = self._unloaded[host, saved[host]]
                self._saves += 1

    def touch(self, host: int, now: float, idle: bool) -> None:
        """:meth:`update_many` of one host (``idle``: no host's cpu delivers anything, else
        ``usage_of`` tells its flop/s)."""
        last = float(self._updated[host])
        if last < now:
            if idle and self._saved[host] == self.pstate[host]:
                self._energy[host] += float(self._unloaded_now[host]) * (now - last)
                self._updated[host] = now
                self._total, self._snapped = None, False
                return
            self.update_many((host,), now, 0.0 if idle else None)
        elif self._saved[host] != self.pstate[host]:
            self.update_many((host,), now, 0.0)

    def total_j(self) -> np.longdouble:
        """Batsim's sum of every account, host after host, in a long double."""
        if self._total is None:
            self._total = (np.cumsum(self._energy.astype(np.longdouble))[-1]
                           if len(self._energy) else np.longdouble(0))
        return self._total

    def snapshot(self) -> "TotalAt":
        """:meth:`total_j` now, summed later (:meth:`TotalAt.value`), with the others, in one
        vector operation: Batsim's energy trace reads it at every row."""
        if not self._snapped:
            self._pending.append(self._energy.copy())
            self._snapped = True
            if len(self._pending) * max(len(self._energy), 1) >= 1 << 20:  # (memory)
                self._sum_pending()
        return TotalAt(self, len(self._sums) + len(self._pending) - 1)

    def _sum_pending(self) -> None:
        if not self._pending:
            return
        if len(self._energy):  # host after host, every row at once
            block = np.vstack(self._pending)
            total = block[:, 0].astype(np.longdouble)
            for host in range(1, block.shape[1]):
                total += block[:, host]
            self._sums.extend(total)
        else:
            self._sums.extend([np.longdouble(0)] * len(self._pending))
        self._pending = []

    def sum_at(self, index: int) -> np.longdouble:
        """The :meth:`total_j` of snapshot ``index``."""
        if index >= len(self._sums):
            self._sum_pending()
        return self._sums[index]


class TotalAt:
    """Every account's sum at a snapshot of :class:`TraceAccounts` (a long double, summed when
    asked for)."""

    __slots__ = ("accounts", "index")

    def __init__(self, accounts: TraceAccounts, index: int) -> None:
        self.accounts, self.index = accounts, index

    def value(self) -> np.longdouble:
        return self.accounts.sum_at(self.index)
