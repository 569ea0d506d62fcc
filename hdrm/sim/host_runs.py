"""Runs of consecutive hosts on the simulated machine (:class:`~hdrm.sim.machine.Machine`).

Wide jobs take and free runs of consecutive hosts, usually of one type and in one power state.
These methods do such runs in C (list slices, numpy) with the very same float operations, in the
same order, as the machine's host-by-host loops: sums stay sequential (numpy's ``accumulate``), so
states, powers and energies are identical to the last bit.
"""

from __future__ import annotations

import array
import math
from typing import Any, Callable, Sequence

from hdrm.lazy import numpy as np

from hdrm.core.runs import WIDE, core_runs

_FREE = -1


class HostRuns:
    """Run-by-run helpers mixed into :class:`~hdrm.sim.machine.Machine` (its attributes)."""

    job_on: list[int] | array.array
    state: list[int] | array.array
    now: float
    _power: list[tuple[float, ...]]
    _one_row: bool
    _factor: list[float] | array.array
    _unit_factors: bool
    _energy_acc: list[float] | array.array | None  # doubles on large machines; None: not kept
    _energy_t: list[float] | array.array | None
    #: numpy views of the two arrays, made on first use (never pickled: a copy would not share)
    _views: tuple[np.ndarray, np.ndarray] | None = None
    _total_power: float
    _total_energy: float
    _total_t: float

    def __getstate__(self) -> dict:
        """The machine's attributes for pickling, without the numpy views (remade on use)."""
        state = self.__dict__.copy()
        state.pop("_views", None)
        return state

    def _free_runs(self, runs: list[tuple[int, int]]) -> bool:
        """True when every host of ``runs`` exists and runs no job."""
        job_on, n = self.job_on, len(self.job_on)
        return all(0 <= lo and hi <= n and self._all(job_on, lo, hi, _FREE) for lo, hi in runs)

    @staticmethod
    def _all(values: list | array.array, lo: int, hi: int, value: int) -> bool:
        """True when ``values[lo:hi]`` (a host list, or an array of integers) all equal
        ``value``; arrays compare their bytes with those of ``value`` repeated (one memcmp)."""
        if type(values) is list:
            return values[lo:hi].count(value) == hi - lo
        return values[lo:hi].tobytes() == _pattern(values.typecode, value) * (hi - lo)

    @staticmethod
    def _fill(values: list | array.array, lo: int, hi: int, value: object) -> None:
        """``values[lo:hi] = value`` for each host (arrays: a one-item array repeated, or one
        numpy slice assignment on long runs)."""
        if type(values) is array.array:
            if hi - lo <= _NUMPY_MIN_RUN:
                values[lo:hi] = array.array(values.typecode, (value,)) * (hi - lo)
            else:
                _view(values)[lo:hi] = value
        else:
            values[lo:hi] = [value] * (hi - lo)

    @staticmethod
    def _fill_runs(values: list | array.array, runs: Sequence[tuple[int, int]], value: int) -> None:
        """:meth:`_fill` of every run of ``runs`` with ``value``, a small integer (a state, or the
        free mark): arrays repeat one kept one-item array (:data:`_ITEMS`), made once."""
        if type(values) is array.array:
            item = _ITEMS[values.typecode][value]
            for lo, hi in runs:
                if hi - lo <= _NUMPY_MIN_RUN:
                    values[lo:hi] = item * (hi - lo)
                else:
                    _view(values)[lo:hi] = value
        else:
            for lo, hi in runs:
                values[lo:hi] = [value] * (hi - lo)

    def _uniform(self, lo: int, hi: int) -> tuple[tuple[float, ...], int] | None:
        """``(power row, state)`` shared by every host of ``lo..hi - 1``, or None."""
        row, state = self._power[lo], self.state[lo]
        if not self._all(self.state, lo, hi, state):
            return None
        if not self._one_row and self._power[lo:hi].count(row) != hi - lo:
            return None
        return row, state

    def _sum_power(self, lo: int, hi: int, total: float) -> float:
        """``total`` plus the power of hosts ``lo..hi - 1``, added one by one in order."""
        same = self._uniform(lo, hi)
        if same is None:
            power, states = self._power, self.state
            for c in range(lo, hi):
                total += power[c][states[c]]
            return total
        return _repeated_sum(total, same[0][same[1]], hi - lo)

    def _apply_uniform(self, changes: dict[int, tuple[int, float]]) -> bool:
        """:meth:`apply_states` for a batch that sets runs of free hosts, each of one type and
        one state, to one new state (wide jobs' hosts waking or going to sleep); False, with
        nothing done, for any other batch."""
        values = list(changes.values())
        if values.count(values[0]) != len(values):
            return False
        return self._apply_free_runs([(lo, hi, values[0]) for lo, hi in core_runs(list(changes))])

    def _apply_free_runs(self, runs: list[tuple[int, int, tuple[int, float]]]) -> bool:
        """Apply disjoint ``runs`` of changes whose hosts run no job and share, run by run, one
        type and one state other than the new one; False, with nothing done, otherwise."""
        if self._one_row and self._energy_acc is None:
            if type(self.state) is list:  # (hdrm.sim.host_lists)
                return self._apply_free_list_runs(runs)  # type: ignore[attr-defined]
            return self._apply_free_array_runs(runs)
        rows = []
        job_on = self.job_on
        for lo, hi, (state, _) in runs:
            same = self._uniform(lo, hi)
            if same is None or same[1] == state or not self._all(job_on, lo, hi, _FREE):
                return False
            rows.append(same)
        now = self.now
        delta = 0.0
        for (lo, hi, (state, speed_factor)), (row, old) in zip(runs, rows):
            n = hi - lo
            self._charge(lo, hi, row[old])
            delta = _repeated_sum(delta, row[state] - row[old], n)
            self._fill(self.state, lo, hi, state)
            if speed_factor != 1.0 or not self._unit_factors:  # else: all 1 already
                self._fill(self._factor, lo, hi, speed_factor)
                self._unit_factors = self._unit_factors and speed_factor == 1.0
        if delta:
            self._step_total_power(delta, now)
        return True

    def _apply_free_array_runs(self, runs: list[tuple[int, int, tuple[int, float]]]) -> bool:
        """:meth:`_apply_free_runs` on a machine of host arrays whose hosts share one power row
        and keep no energy accounts (engine machines of identical hosts): each run is checked
        by two byte comparisons made here, with no per-run helper calls for the checks."""
        states, job_on = self.state, self.job_on
        size = len(states)
        free = _PATTERNS[job_on.typecode][_FREE]
        patterns = _PATTERNS[states.typecode]
        olds = []
        for lo, hi, (state, _) in runs:
            if not 0 <= lo < hi <= size:
                return False
            old = states[lo]
            n = hi - lo
            if (old == state or job_on[lo:hi].tobytes() != free * n
                    or states[lo:hi].tobytes() != patterns[old] * n):
                return False
            olds.append(old)
        row = self._power[0]
        whole = _whole(row)
        items = _ITEMS[states.typecode]
        unit = self._unit_factors
        delta = 0.0
        for (lo, hi, (state, speed_factor)), old in zip(runs, olds):
            n = hi - lo
            step = row[state] - row[old]
            added = n * step  # whole watts: exact in one multiply-add (see _repeated_sum)
            if whole and -_EXACT < added < _EXACT and -_EXACT < delta < _EXACT and (
                    -_EXACT < delta + added < _EXACT):
                delta += added
            else:
                delta = _repeated_sum(delta, step, n)
            if n <= _NUMPY_MIN_RUN:  # as _fill does, with the one-item array kept
                states[lo:hi] = items[state] * n
            else:
                self._fill(states, lo, hi, state)
            if speed_factor != 1.0 or not unit:  # else: all 1 already
                self._fill(self._factor, lo, hi, speed_factor)
                unit = unit and speed_factor == 1.0
        self._unit_factors = unit
        if delta:
            self._step_total_power(delta, self.now)
        return True

    def _occupy_runs(self, runs: Sequence[tuple[int, int]], key: int, power: bool = True
                     ) -> float | None:
        """Give the hosts of ``runs`` (disjoint) to job ``key`` on a machine whose hosts share one
        power row; returns their power added host by host in order (without ``power``, 0.0:
        not summed), or None with nothing done when a host is unknown or busy (the caller's
        host-by-host checks then name it)."""
        job_on, states = self.job_on, self.state
        size = len(job_on)
        lists = type(job_on) is list
        free = None if lists else _pattern(job_on.typecode, _FREE)
        for lo, hi in runs:
            if not 0 <= lo < hi <= size:
                return None
            n = hi - lo
            if (job_on[lo:hi].count(_FREE) != n if lists
                    else job_on[lo:hi].tobytes() != free * n):
                return None
        mine = None if lists else array.array(job_on.typecode, (key,))
        if not power:
            for lo, hi in runs:
                if lists:
                    job_on[lo:hi] = [key] * (hi - lo)
                elif hi - lo <= _NUMPY_MIN_RUN:
                    job_on[lo:hi] = mine * (hi - lo)
                else:
                    self._fill(job_on, lo, hi, key)
            return 0.0
        row = self._power[0]
        whole = _whole(row)
        patterns = None if lists else _PATTERNS[states.typecode]
        total = 0.0
        for lo, hi in runs:
            n = hi - lo
            if lists:
                job_on[lo:hi] = [key] * n
            elif n <= _NUMPY_MIN_RUN:
                job_on[lo:hi] = mine * n
            else:
                self._fill(job_on, lo, hi, key)
            state = states[lo]
            if (states[lo:hi].count(state) == n if lists
                    else states[lo:hi].tobytes() == patterns[state] * n):
                added = n * row[state]  # whole watts: exact in one multiply-add
                if whole and -_EXACT < added < _EXACT and -_EXACT < total < _EXACT and (
                        -_EXACT < total + added < _EXACT):
                    total += added
                else:
                    total = _repeated_sum(total, row[state], n)
            else:
                for c in range(lo, hi):
                    total += row[states[c]]
        return total

    def _step_total_power(self, delta: float, now: float) -> None:
        """The machine's total power changes by ``delta`` watts at ``now``: the energy up to
        ``now`` is charged at the old total first."""
        self._total_energy += self._total_power * (now - self._total_t)
        self._total_t = now
        self._total_power += delta

    def _charge(self, lo: int, hi: int, power: float) -> None:
        """Close the energy accounts of hosts ``lo..hi - 1``, which drew ``power`` since their
        last change: ``acc += power * (now - last)``, ``last = now``, host by host."""
        now, acc, last = self.now, self._energy_acc, self._energy_t
        if acc is None or last is None:  # no per-host accounts
            return
        if isinstance(acc, array.array):  # numpy views of the same memory, no conversion
            views = self._views
            if views is None:
                views = self._views = (np.frombuffer(acc, dtype=np.float64),
                                       np.frombuffer(last, dtype=np.float64))
            acc_np, last_np = views
            acc_np[lo:hi] += power * (now - last_np[lo:hi])
            last_np[lo:hi] = now
            return
        if hi - lo > WIDE:
            spent = power * (now - np.asarray(last[lo:hi]))
            acc[lo:hi] = (np.asarray(acc[lo:hi]) + spent).tolist()
        else:
            for c in range(lo, hi):
                acc[c] += power * (now - last[c])
        last[lo:hi] = [now] * (hi - lo)


class _Kept(dict):
    """``kept[typecode][value]``: ``made(typecode, value)``, made once when first asked (states
    and the free mark: a handful of values per array type; two lookups, no key tuple)."""

    def __init__(self, made: Callable[[str, int], Any], typecode: str = "") -> None:
        super().__init__()
        self.made, self.typecode = made, typecode

    def __missing__(self, key: Any) -> Any:
        if self.typecode:  # a table of one type: key is a value
            found = self[key] = self.made(self.typecode, key)
        else:  # the table of tables: key is a typecode
            found = self[key] = _Kept(self.made, key)
        return found


#: ``_PATTERNS[typecode][value]``: the bytes of ``value`` as one item of an integer array of
#: ``typecode`` (integers are equal exactly when their bytes are).
_PATTERNS = _Kept(lambda typecode, value: array.array(typecode, [value]).tobytes())
#: ``_ITEMS[typecode][value]``: a one-item integer array holding ``value`` (do not change it).
_ITEMS = _Kept(lambda typecode, value: array.array(typecode, [value]))


def _pattern(typecode: str, value: int) -> bytes:
    """The bytes of ``value`` as one item of an integer array of ``typecode``."""
    return _PATTERNS[typecode][value]


def _item(typecode: str, value: int) -> array.array:
    """A one-item integer array of ``typecode`` holding ``value`` (kept: do not change it)."""
    return _ITEMS[typecode][value]


def _view(values: array.array) -> np.ndarray:
    """A numpy view of the memory of ``values`` (no copy: writes reach the array)."""
    return np.frombuffer(values, dtype=_DTYPES[values.typecode])


#: numpy types of the array types hosts are kept in.
_DTYPES = {"b": "b", "i": "i", "d": "d"}  # numpy's codes: int8, intc, float64

#: Runs of host arrays up to this long are filled by the arrays' own methods (a one-item array
#: repeated: C-level copies that cost less than a numpy view's setup up to ~32k items of
#: 1 to 8 bytes, measured on CPython 3.11).
_NUMPY_MIN_RUN = 32768


def _whole(row: tuple[float, ...]) -> bool:
    """True when every power of ``row`` is a float holding a whole number of watts (sums of
    them below 2**53 in size are then exact: see :func:`_repeated_sum`)."""
    found = _WHOLE.get(row)
    if found is None:
        found = all(type(w) is float and w.is_integer() for w in row)
        if len(_WHOLE) >= _SUMS_MAX:
            _WHOLE.clear()
        _WHOLE[row] = found
    return found


#: :func:`_whole` of the power rows met so far (a handful: one per host type).
_WHOLE: dict[tuple[float, ...], bool] = {}


def _repeated_sum(total: float, value: float, count: int) -> float:
    """``total + value + value + ...`` (``count`` times), each addition rounded in turn.

    When no partial sum needs rounding (powers such as 100 W or 9.75 W: every partial sum is a
    multiple of a common power of two below 2**53 of it), the result is exactly
    ``total + count * value``, computed in integers; otherwise the additions are made in turn.
    Whole numbers of watts (the usual case) take that path in floats, at any count.
    """
    if (count > 0 and type(value) is float and type(total) is float and value.is_integer()
            and total.is_integer()):
        # whole partial sums below 2**53 in size are exact: the sum is one multiply-add, and
        # the checks below hold exactly when the true product and sum are that small
        step = count * value
        if -_EXACT < step < _EXACT and -_EXACT < total < _EXACT:
            last = total + step
            if -_EXACT < last < _EXACT:
                return last
    if count <= WIDE:
        for _ in range(count):
            total += value
        return total
    if value == 0.0:
        return total + value  # the first addition may turn -0.0 into 0.0; the others change nothing
    key = (total, value, count)
    found = _SUMS.get(key)
    if found is not None:
        return found
    found = _exact_repeated_sum(total, value, count)
    if found is None:
        steps = np.full(count + 1, value, dtype=float)
        steps[0] = total
        found = float(np.add.accumulate(steps)[-1])
    if len(_SUMS) >= _SUMS_MAX:
        _SUMS.clear()
    _SUMS[key] = found
    return found


#: Long repeated sums already made, by ``(total, value, count)`` with a nonzero ``value`` (the
#: sign of a zero ``total`` then changes nothing, so the two zeros, equal as keys, may share an
#: entry). Jobs of one size waking or leaving hosts of one power row ask for the same sums again.
_SUMS: dict[tuple[float, float, int], float] = {}
_SUMS_MAX = 4096



def _exact_repeated_sum(total: float, value: float, count: int) -> float | None:
    """``total + count * value`` when every partial sum ``total + k * value`` (``k <= count``) is
    a float exactly, so that adding in turn rounds nothing; else None."""
    if not (math.isfinite(total) and math.isfinite(value)):
        return None
    t_num, t_den = total.as_integer_ratio()
    v_num, v_den = value.as_integer_ratio()
    den = max(t_den, v_den)  # both powers of two: the common denominator
    first = t_num * (den // t_den)
    last = first + count * v_num * (den // v_den)
    if abs(first) >= _EXACT or abs(last) >= _EXACT:  # the partial sums run from first to last
        return None
    return last / den


#: Integers of magnitude below this (2**53) are floats exactly, and so are they over a power of two.
_EXACT = 2**53
