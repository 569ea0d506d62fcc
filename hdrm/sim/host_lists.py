"""Small machines of identical hosts: starts, ends and power changes in a few C-level passes.

The built-in engine's machine on a small platform of one host type (a few hundred hosts: the
trace's processors of an RLScheduler sequence, say) keeps its hosts in Python lists, one power
row for all, and no per-host energy accounts. Its jobs are mostly narrow (a handful to a few
dozen hosts), often one run of consecutive hosts, and each of them costs a wake-up of its hosts,
a start, an end and a return to sleep. The host-by-host loops of those steps are the machine's
main cost there, so :class:`HostLists` does them by list slices and counts instead.

Such a machine can also make its hosts' states follow their occupancy
(:meth:`HostLists.follow_occupancy`): a start switches the job's hosts to a running state, an end
back to a free state, in the start and the end themselves. An engine whose decision core would
queue exactly those changes (one-core nodes at nominal speeds) then neither queues nor applies
them: the same states, powers and energies, with one power step per start and per end instead of
one per batch of changes at the same instant (on an exact row the sums are equal; the energy up to
an instant is charged at the first step there, the others add nothing).

The results are those of the loops to the bit: when the power row holds whole numbers of watts
and the whole machine's power stays far below 2**53 watts (:func:`exact_row`), every partial sum
of host powers is an integer held exactly, so a sum made in one step (a count times a power, or
``sum`` over a slice) equals the sum made host by host. Machines whose powers are not exact in
that sense, and any step whose hosts are not all free or not all alike, take the general paths.
"""

from __future__ import annotations

import array
from typing import Sequence

from hdrm.core.runs import WIDE, core_runs
from hdrm.errors import SimulationError
from hdrm.sim.host_runs import _ITEMS, _repeated_sum

_FREE = -1
#: Runs of at most this many hosts are taken and freed item by item (slices cost more).
_SHORT = 4
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
    _jobs: dict
    _energy_acc: list[float] | array.array | None
    _one_row: bool
    #: Host lists, one power row exact in the sense of :func:`exact_row`, no energy accounts.
    _exact_lists: bool = False
    #: ``(running state, free state)`` while the hosts' states follow their occupancy.
    _follow: tuple[int, int] | None = None

    @property
    def follows(self) -> bool:
        """True when the hosts' states follow their occupancy (:meth:`follow_occupancy`)."""
        return self._follow is not None

    def can_follow(self, running: int, free: int) -> bool:
        """True when :meth:`follow_occupancy` would accept ``running`` and ``free``: host lists of
        one exact power row (or compact arrays that would be such lists), no job running, every
        host in state ``free`` at speed factor 1."""
        if not (self._exact_lists or self._exact_arrays()) or self._jobs or not self._unit_factors:
            return False
        states = len(self._power[0])
        return (0 <= running < states and 0 <= free < states
                and self.state.count(free) == len(self.state))

    def follow_occupancy(self, running: int, free: int) -> bool:
        """From now on, a start switches its hosts to state ``running`` and an end puts them back
        in state ``free`` (speed factor 1), each with its power step; state changes asked for
        otherwise are refused. Returns False, with nothing changed, unless :meth:`can_follow`."""
        if not self.can_follow(running, free):
            return False
        self._follow = (running, free)
        return True

    def _exact_arrays(self) -> bool:
        """True when the hosts are compact arrays that, as lists, would be exact host lists: one
        power row exact for the machine's size, no energy accounts."""
        states = self.state
        return (type(states) is array.array and self._energy_acc is None and len(states) > 0
                and self._one_row and exact_row(self._power[0], len(states)))

    def _refuse_changes(self) -> None:
        """Raise: a machine whose hosts follow their occupancy takes no other state change."""
        if self._follow is not None:
            raise SimulationError("this machine's host states follow their jobs "
                                  "(follow_occupancy): starts and ends set them, nothing else")

    def _take_following(self, hosts: tuple[int, ...], key: int,
                        runs: list[tuple[int, int]] | None = None
                        ) -> tuple[float, list[tuple[int, int]] | None] | None:
        """Give ``hosts`` (a narrow job's, non-empty; ``runs``: their runs of consecutive ids, in
        order, where the caller has them) to job ``key`` and switch them to the running state,
        with one power step (hosts that follow their jobs); returns their power and the runs of
        consecutive hosts taken (None for one host), which :meth:`_free_following` may be given
        back. None, with nothing done, unless they are distinct existing free hosts."""
        job_on, states = self.job_on, self.state
        running, free = self._follow  # type: ignore[misc]
        n, first, size = len(hosts), hosts[0], len(job_on)
        last = first + n
        if n == 1:
            if not 0 <= first < size or job_on[first] != _FREE:
                return None
            job_on[first] = key
            states[first] = running
            runs = None
        elif (hosts[-1] == last - 1 and 0 <= first and last <= size
                and hosts == tuple(range(first, last))):  # one run of consecutive hosts
            if job_on[first:last].count(_FREE) != n:
                return None
            if type(job_on) is list:
                job_on[first:last] = [key] * n
                states[first:last] = [running] * n
            else:  # compact arrays (a narrow job: short runs, the arrays' own slices)
                job_on[first:last] = array.array(job_on.typecode, (key,)) * n
                states[first:last] = _ITEMS[states.typecode][running] * n
            runs = [(first, last)]
        else:
            runs = self._take_runs_following(hosts, key, runs)
            if runs is None:
                return None
        row = self._power[0]
        delta = n * (row[running] - row[free])
        if delta:  # the power step (_step_following, inline)
            now = self.now
            self._total_energy += self._total_power * (now - self._total_t)
            self._total_t = now
            self._total_power += delta
        return 0.0 + n * row[running], runs

    def _take_runs_following(self, hosts: tuple[int, ...], key: int,
                             runs: list[tuple[int, int]] | None = None
                             ) -> list[tuple[int, int]] | None:
        """:meth:`_take_following`'s hosts and states of ``hosts`` in several runs (``runs``, the
        caller's, else found here), taken run by run (a slice check and two slice writes each;
        a run of at most :data:`_SHORT` hosts by item checks and writes); returns the
        runs taken, or None, with nothing left taken, unless they are distinct existing free
        hosts (a host given twice is found taken, by ``key``)."""
        job_on, states = self.job_on, self.state
        running, free = self._follow  # type: ignore[misc]
        size = len(job_on)
        lists = type(job_on) is list
        mine = None if lists else array.array(job_on.typecode, (key,))
        busy = None if lists else _ITEMS[states.typecode][running]
        if runs is None:
            runs = core_runs(hosts)
        for i, (lo, hi) in enumerate(runs):
            n = hi - lo
            if n <= _SHORT:  # item checks and writes (cheaper than making slices)
                for c in range(lo, hi):
                    if not 0 <= c < size or job_on[c] != _FREE:
                        self._untake([*runs[:i], (lo, c)], free)
                        return None
                    job_on[c] = key
                    states[c] = running
            elif not (0 <= lo and hi <= size and job_on[lo:hi].count(_FREE) == n):
                self._untake(runs[:i], free)
                return None
            elif lists:
                job_on[lo:hi] = [key] * n
                states[lo:hi] = [running] * n
            else:
                job_on[lo:hi] = mine * n
                states[lo:hi] = busy * n
        return runs

    def _untake(self, taken: list[tuple[int, int]], free: int) -> None:
        """Give back the runs ``taken`` so far (free, in the ``free`` state): the caller's path
        then decides, and names the culprit."""
        for a, b in taken:
            self._fill_runs(self.job_on, ((a, b),), _FREE)
            self._fill_runs(self.state, ((a, b),), free)

    def _free_following(self, hosts: tuple[int, ...], key: int,
                        runs: list[tuple[int, int]] | None = None) -> None:
        """Mark ``hosts`` (job ``key``'s, a tuple; ``runs``: the runs :meth:`_take_following`
        took for them, if kept) free and switch them to the free state, with one power step
        (hosts that follow their jobs)."""
        job_on, states = self.job_on, self.state
        running, free = self._follow  # type: ignore[misc]
        n, first = len(hosts), hosts[0]
        last = first + n
        if runs is not None:  # exactly its hosts, run by run (narrow: short runs)
            lists = type(job_on) is list
            unused, asleep = (None, None) if lists else (
                _ITEMS[job_on.typecode][_FREE], _ITEMS[states.typecode][free])
            for lo, hi in runs:
                if hi - lo <= _SHORT:
                    for c in range(lo, hi):
                        job_on[c] = _FREE
                        states[c] = free
                elif lists:
                    job_on[lo:hi] = [_FREE] * (hi - lo)
                    states[lo:hi] = [free] * (hi - lo)
                else:
                    job_on[lo:hi] = unused * (hi - lo)
                    states[lo:hi] = asleep * (hi - lo)
        elif n > 2 and hosts[-1] == last - 1 and job_on[first:last].count(key) == n:
            # n hosts of the job in a run of n: exactly its hosts (it holds each once)
            if type(job_on) is list:
                job_on[first:last] = [_FREE] * n
                states[first:last] = [free] * n
            else:  # compact arrays (a narrow job: short runs, the arrays' own slices)
                job_on[first:last] = _ITEMS[job_on.typecode][_FREE] * n
                states[first:last] = _ITEMS[states.typecode][free] * n
        else:
            for c in hosts:
                job_on[c] = _FREE
                states[c] = free
        row = self._power[0]
        delta = n * (row[free] - row[running])
        if delta:  # the power step (_step_following, inline)
            now = self.now
            self._total_energy += self._total_power * (now - self._total_t)
            self._total_t = now
            self._total_power += delta

    def _step_following(self, n: int, to_state: int, from_state: int) -> float:
        """The power step of ``n`` hosts switched from ``from_state`` to ``to_state`` now;
        returns their power in the new state (as added host by host from 0.0: exact)."""
        row = self._power[0]
        delta = n * (row[to_state] - row[from_state])
        if delta:  # _step_total_power, inline
            now = self.now
            self._total_energy += self._total_power * (now - self._total_t)
            self._total_t = now
            self._total_power += delta
        return 0.0 + n * row[to_state]

    def _wake_hosts(self, key: int, hosts: Sequence[int], distinct: bool,
                    runs: list[tuple[int, int]] | None = None) -> float:
        """Switch the hosts job ``key`` just took to the running state (:meth:`_switch`);
        returns their power (``runs``: those of ``hosts`` when a CoreRuns, if made already).

        Raises:
            SimulationError: a host is given twice (the job's hosts given back first).
        """
        running, free = self._follow  # type: ignore[misc]
        if not distinct and not _distinct(hosts, runs):  # its state would change twice
            job_on = self.job_on
            for c in hosts:
                job_on[c] = _FREE
            raise SimulationError(f"job {key}: a resource is given twice: {list(hosts)}")
        return self._switch(hosts, running, free, runs)

    def _switch(self, hosts: Sequence[int], to_state: int, from_state: int,
                runs: list[tuple[int, int]] | None = None) -> float:
        """Set ``hosts`` (distinct; a tuple, or :class:`~hdrm.core.runs.CoreRuns`, whose runs
        may be given) from ``from_state`` to ``to_state`` with one power step; returns their
        power in the new state (as added host by host from 0.0: exact on this row)."""
        states, n = self.state, len(hosts)
        if runs is None:
            runs = getattr(hosts, "runs", None)
        if runs is not None:
            self._fill_runs(states, runs, to_state)
        else:
            first = hosts[0]
            if n > 2 and hosts[-1] == first + n - 1 and hosts == tuple(range(first, first + n)):
                self._fill(states, first, first + n, to_state)
            else:
                for c in hosts:
                    states[c] = to_state
        return self._step_following(n, to_state, from_state)

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


def _distinct(hosts: Sequence[int], runs: list[tuple[int, int]] | None = None) -> bool:
    """True when no host of ``hosts`` (a tuple, or :class:`~hdrm.core.runs.CoreRuns`, whose
    ``runs`` may be given) repeats: runs are compared by their bounds, in order of their first
    hosts."""
    if runs is None:
        runs = getattr(hosts, "runs", None)
    if runs is None:
        return len(set(hosts)) == len(hosts)
    end = None
    for lo, hi in sorted(runs):
        if end is not None and lo < end:
            return False
        end = hi
    return True
