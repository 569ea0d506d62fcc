"""Power-state commands of the simulated machine: switching hosts, one by one or by runs.

:class:`MachineStates` is mixed into :class:`~hdrm.sim.machine.Machine`: its public commands
:meth:`~MachineStates.set_state` (checked), :meth:`~MachineStates.apply_states` (a mapping of
hosts) and :meth:`~MachineStates.apply_runs` (runs of consecutive hosts) change power states and
speed factors now, re-timing the jobs on changed hosts. They choose the cheapest exact path:
free hosts changed in place (:meth:`~MachineStates.apply_states` on a few hosts, C-level passes
of :mod:`hdrm.sim.host_runs` and :mod:`hdrm.sim.host_lists` for runs), busy hosts through
:class:`~hdrm.sim.host_changes.HostChanges`; every path makes the same float operations in the
same order as the host-by-host loop. Machines whose hosts follow their jobs
(:mod:`hdrm.sim.host_lists`) refuse outside changes.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from hdrm.core.runs import WIDE
from hdrm.errors import SimulationError
from hdrm.sim.machine_fields import MachineFields

_FREE = -1


class MachineStates(MachineFields):
    """Power-state commands, mixed into :class:`~hdrm.sim.machine.Machine` (its attributes and
    the helpers of :class:`~hdrm.sim.host_runs.HostRuns`, :class:`~hdrm.sim.host_lists.HostLists`
    and :class:`~hdrm.sim.host_changes.HostChanges`)."""

    _total_power: float
    _total_energy: float
    _total_t: float
    _exact_lists: bool
    _follow: tuple[int, int] | None

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
        """Apply ``{host: (state, speed_factor)}`` now, re-timing the jobs on changed hosts.

        A parallel job is re-timed when the speed of its slowest host changes; its minimum speed
        is kept up to date in O(1) per changed host, and recomputed over its hosts only when the
        last of its hosts at the minimum speeds up.
        """
        if self._follow is not None:
            self._refuse_changes()
        if len(changes) <= WIDE:
            if self._apply_free_hosts(changes):
                return
        elif len(changes) > 2 * WIDE and self._apply_uniform(changes):
            return
        touched: dict[int, float] = {}  # job -> its min speed before the changes
        stale: set[int] = set()  # jobs whose min speed must be recomputed
        delta = self._change_hosts(changes.items(), 0.0, touched, stale)
        self._after_changes(delta, touched, stale)

    def _apply_free_hosts(self, changes: dict[int, tuple[int, float]]) -> bool:
        """:meth:`apply_states` (the same additions in the same order) when no changed host
        runs a job (woken before its job starts, or freed); False, nothing done, otherwise."""
        job_on, size = self.job_on, len(self.job_on)
        for c in changes:
            if not 0 <= c < size or job_on[c] != _FREE:
                return False
        now, power, states, factor = self.now, self._power, self.state, self._factor
        acc, last, delta = self._energy_acc, self._energy_t, 0.0
        for c, (state, speed_factor) in changes.items():
            old = states[c]
            if old == state and factor[c] == speed_factor:
                continue
            pw = power[c]
            if acc is not None:
                acc[c] += pw[old] * (now - last[c])
                last[c] = now
            delta += pw[state] - pw[old]
            states[c] = state
            factor[c] = speed_factor
            if speed_factor != 1.0:
                self._unit_factors = False
        if delta:  # _step_total_power, inline
            self._total_energy += self._total_power * (now - self._total_t)
            self._total_t = now
            self._total_power += delta
        return True

    def apply_runs(self, runs: Sequence[tuple[int, int, tuple[int, float]]]) -> None:
        """:meth:`apply_states` for runs of hosts ``(first, last + 1, (state, speed_factor))``
        that do not overlap: the same result as the mapping of every host of every run, in
        order, at a cost that follows the runs (C-level passes) when their hosts are free."""
        if self._follow is not None:
            self._refuse_changes()
        if self._exact_lists and type(runs) is list and self._apply_free_list_runs(runs):
            return
        runs = list(runs)
        if not self._apply_free_runs(runs):
            self._apply_mixed(runs)  # runs of free hosts still by runs, the others host by host
