"""Runs of hosts on the machine: wide jobs and whole runs of state changes give the very same
states, powers and energies (to the last bit) as the host-by-host rules."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.core.runs import CoreRuns
from hdrm.errors import SimulationError
from hdrm.sim import machine as machine_module
from hdrm.sim.machine import Machine

N = 300
SPEEDS = [(10.0, 5.0, 0.0, 0.0), (7.0, 3.5, 0.0, 0.0)]
POWERS = [(190.0, 120.3, 95.1, 9.75), (150.5, 99.9, 80.25, 7.1)]


def machines(kinds: list[int], arrays: bool = False) -> tuple[Machine, Machine]:
    """The same machine twice; the second never takes the run-by-run paths and keeps its
    energy accounts in lists; the first keeps them in arrays of doubles when ``arrays``."""
    speeds = [SPEEDS[k] for k in kinds]
    powers = [POWERS[k] for k in kinds]
    limit = machine_module.ARRAY_MIN_HOSTS
    machine_module.ARRAY_MIN_HOSTS = 0 if arrays else len(kinds) + 1
    try:
        fast = Machine(speeds, powers, 3)
    finally:
        machine_module.ARRAY_MIN_HOSTS = limit
    slow = Machine(speeds, powers, 3)
    slow._energy_acc, slow._energy_t = [0.0] * len(kinds), [0.0] * len(kinds)
    slow._free_runs = lambda runs: False
    slow._apply_free_runs = lambda runs: False
    return fast, slow


def observe(m: Machine) -> tuple:
    return (list(m.state), list(m._factor), list(m.job_on), m.power_w, m.energy_j(),
            [m.host_energy_j(h) for h in range(m.nb_hosts)],
            sorted((k, j.power_w, j.energy_j) for k, j in m._jobs.items()))


def test_wide_delay_job_by_hand(monkeypatch):
    fast, _ = machines([0] * 200)
    monkeypatch.setattr(fast, "apply_states", None)  # runs of free hosts: no host-by-host pass
    fast.apply_runs([(0, 200, (0, 1.0))])  # 200 hosts wake: 200 x (190 - 9.75) W more
    assert fast.power_w == sum([9.75] * 200) + sum([190.0 - 9.75] * 200)
    fast.start(7, range(200), delay_s=10.0)
    assert fast._jobs[7].power_w == sum([190.0] * 200)
    ends = fast.advance(10.0)
    assert [e.key for e in ends] == [7] and ends[0].energy_j == 10.0 * sum([190.0] * 200)
    assert fast.job_on == [-1] * 200


steps = st.lists(st.tuples(st.integers(0, N - 1), st.integers(1, 200), st.integers(0, 3),
                           st.booleans(), st.booleans()), min_size=1, max_size=30)


def test_wide_jobs_are_recorded_as_runs():
    m, _ = machines([0] * N)
    m.start(1, list(range(10, 210)), delay_s=5.0)
    m.start(2, [250, 251, 240], delay_s=6.0)
    m.start(3, list(range(211, 240)) + list(range(252, 300)) + list(range(0, 10)) + [210],
            delay_s=7.0)
    ends = {e.key: e for e in m.advance(10.0)}
    assert isinstance(ends[1].cores, CoreRuns) and ends[1].cores.runs == [(10, 210)]
    assert ends[1].cores == tuple(range(10, 210))
    assert ends[2].cores == (250, 251, 240) and type(ends[2].cores) is tuple  # narrow: a tuple
    assert ends[3].cores.runs == [(211, 240), (252, 300), (0, 10), (210, 211)]
    assert list(ends[3].cores) == [*range(211, 240), *range(252, 300), *range(10), 210]
    assert m.job_on == [-1] * N


@settings(max_examples=60, deadline=None)
@given(st.integers(0, N), steps, st.integers(0, 2**16))
def test_runs_equal_host_by_host(split, script, seed):
    """Runs of changes (free and busy hosts, mixed types, some unchanged) and wide delay and
    parallel jobs started on them, in random order."""
    _replay_both(machines([0] * split + [1] * (N - split)), script, seed)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, N), steps, st.integers(0, 2**16))
def test_energy_arrays_equal_lists(split, script, seed):
    """Energy accounts in arrays of doubles (large machines), updated run by run through numpy
    views, give the very bits of lists updated host by host."""
    _replay_both(machines([0] * split + [1] * (N - split), arrays=True), script, seed)


def _replay_both(pair: tuple[Machine, Machine], script: list, seed: int, look=observe) -> None:
    rng = np.random.default_rng(seed)
    fast, slow = pair
    now = 0.0
    for i, (lo, n, state, start_job, parallel) in enumerate(script):
        now += float(rng.integers(0, 5)) + 0.25
        for m in (fast, slow):
            m.advance(now)
        hi = min(N, lo + n)
        cut = int(rng.integers(lo, hi + 1))
        runs = [(lo, cut, (state, 1.0)), (cut, hi, (int(rng.integers(0, 4)), 0.5))]
        runs = [r for r in runs if r[0] < r[1]]
        for m in (fast, slow):
            m.apply_runs(runs)
        free = [h for h in range(lo, hi) if fast.job_on[h] == -1]
        if start_job and free:
            kwargs = ({"ops_gflop": 40.0 + i} if parallel else {"delay_s": 3.0 + i})
            for m in (fast, slow):
                m.start(i, free, walltime_s=50.0, **kwargs)
        assert look(fast) == look(slow)
    for m in (fast, slow):
        m.advance(now + 1000.0)
    assert look(fast) == look(slow)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, N), steps, st.integers(0, 2**16))
def test_no_host_accounts_same_total_and_job_energy(split, script, seed):
    """A machine without per-host accounts (the engines') has the very same states, powers,
    total energy and job energies as one that keeps them, and refuses host_energy_j."""
    kinds = [0] * split + [1] * (N - split)
    lean = Machine([SPEEDS[k] for k in kinds], [POWERS[k] for k in kinds], 3, host_energy=False)
    assert lean._energy_acc is None and lean._energy_t is None
    _replay_both((lean, machines(kinds, arrays=True)[0]), script, seed, look=_without_hosts)
    with pytest.raises(SimulationError, match="keeps no per-host energy"):
        lean.host_energy_j(0)


def _without_hosts(m: Machine) -> tuple:
    return (list(m.state), list(m._factor), list(m.job_on), m.power_w, m.energy_j(),
            sorted((k, j.power_w, j.energy_j) for k, j in m._jobs.items()))


def test_engines_keep_no_host_accounts():
    from hdrm.platform.model import Platform

    assert machine_module.machine_for(Platform.homogeneous(4))._energy_acc is None


def _added_in_turn(total: float, value: float, count: int) -> float:
    for _ in range(count):
        total += value
    return total


powers = st.one_of(st.sampled_from([100.0, -95.0, 9.75, 180.25, 0.1, 1 / 3, 0.0, -0.0, 2.0**52]),
                   st.floats(min_value=-1e12, max_value=1e12))


@settings(max_examples=300, deadline=None)
@given(powers, powers, st.integers(0, 3000))
def test_repeated_sums_equal_additions_in_turn(total, value, count):
    """Powers of runs of hosts are summed in integers when nothing would be rounded: the very
    bits (sign of zero included) of adding host by host."""
    from hdrm.sim.host_runs import _repeated_sum

    got, expected = _repeated_sum(total, value, count), _added_in_turn(total, value, count)
    assert got == expected or (math.isnan(got) and math.isnan(expected))
    assert math.copysign(1.0, got) == math.copysign(1.0, expected)


whole = st.one_of(st.integers(-2**53, 2**53).map(float),
                  st.sampled_from([0.0, -0.0, 95.0, -95.0, 2.0**53, -(2.0**53), 2.0**53 - 1]))


@settings(max_examples=300, deadline=None)
@given(whole, whole, st.integers(0, 3000))
def test_whole_number_sums_equal_additions_in_turn(total, value, count):
    """Whole numbers of watts are summed in one multiply-add when every partial sum stays below
    2**53 in size, else in turn: the bits of adding host by host (near 2**53 too)."""
    from hdrm.sim.host_runs import _repeated_sum

    expected, got = _added_in_turn(total, value, count), _repeated_sum(total, value, count)
    assert got == expected and math.copysign(1.0, got) == math.copysign(1.0, expected)


def test_whole_number_sums_take_no_loop(monkeypatch):
    # 95 W over a run of 64 hosts (a short run, once added host by host in a Python loop)
    from hdrm.sim import host_runs

    def no_loop(*args):
        raise AssertionError("a whole-number sum was added in turn")

    monkeypatch.setattr(host_runs, "range", no_loop, raising=False)
    assert host_runs._repeated_sum(20480.0, 95.0, 64) == 20480.0 + 64 * 95.0
    assert host_runs._repeated_sum(0.0, 95.0, 2**30) == 95.0 * 2**30
    assert host_runs._repeated_sum(-0.0, 0.0, 3) == 0.0  # -0.0 + 0.0: the first addition's sign
    assert math.copysign(1.0, host_runs._repeated_sum(-0.0, -0.0, 3)) == -1.0


def test_a_pickled_large_machine_keeps_its_energy_accounts():
    """A copy (environments are pickled mid-episode) updates its own accounts, not views of
    the original's memory."""
    import pickle

    m, _ = machines([0] * N, arrays=True)
    m.apply_runs([(0, 200, (0, 1.0))])
    m.advance(2.0)
    m.apply_runs([(0, 200, (3, 1.0))])  # the views are made here
    copy = pickle.loads(pickle.dumps(m))
    copy.advance(5.0)
    copy.apply_runs([(0, 200, (0, 1.0))])
    assert copy.host_energy_j(0) == 2.0 * 190.0 + 3.0 * 9.75 + 0.0
    assert m.host_energy_j(0) == 2.0 * 190.0  # the original's clock and accounts unchanged


def test_factor_one_runs_after_other_factors_are_written():
    """Runs at factor 1 skip rewriting factors while every factor is 1; once a run set another
    factor, factor-1 runs write theirs again."""
    m, _ = machines([0] * N)
    m.apply_runs([(0, 200, (0, 1.0))])
    assert m._unit_factors and m._factor == [1.0] * N
    m.apply_runs([(0, 200, (1, 0.5))])
    assert not m._unit_factors and m._factor[:200] == [0.5] * 200
    m.apply_runs([(0, 150, (2, 1.0))])
    assert m._factor == [1.0] * 150 + [0.5] * 50 + [1.0] * (N - 200)
    m.set_state([250], 1, 0.25)
    assert m._factor[250] == 0.25


@settings(max_examples=40, deadline=None)
@given(st.integers(0, N), steps, st.integers(0, 2**16), st.sampled_from([0, 512]))
def test_compact_hosts_equal_lists(split, script, seed, numpy_min_run):
    """A compact machine (states, jobs and speed factors in arrays of int8, int32 and doubles,
    runs checked and filled in numpy from ``numpy_min_run`` hosts) has the very states, powers,
    energies and job records of the host-by-host machine of lists."""
    from hdrm.sim import host_runs

    kinds = [0] * split + [1] * (N - split)
    limits = machine_module.ARRAY_MIN_HOSTS, host_runs._NUMPY_MIN_RUN
    machine_module.ARRAY_MIN_HOSTS, host_runs._NUMPY_MIN_RUN = 0, numpy_min_run
    try:
        compact = Machine([SPEEDS[k] for k in kinds], [POWERS[k] for k in kinds], 3,
                          host_energy=False, compact=True)
        assert compact.state.typecode == "b" and compact.job_on.typecode == "i"
        _replay_both((compact, machines(kinds)[1]), script, seed, look=_without_hosts)
    finally:
        machine_module.ARRAY_MIN_HOSTS, host_runs._NUMPY_MIN_RUN = limits
    assert len(compact.state) == N and compact.job_on.tolist() == [-1] * N


def test_small_runs_of_identical_hosts_by_hand(monkeypatch):
    """An engine machine of identical hosts (host lists, no per-host accounts) applies short
    runs of free hosts run by run too, never host by host."""
    m = Machine([SPEEDS[0]] * 8, [POWERS[0]] * 8, 3, host_energy=False)
    monkeypatch.setattr(m, "apply_states", None)
    m.apply_runs([(2, 5, (0, 1.0)), (6, 7, (0, 1.0))])  # 4 hosts wake: 4 x (190 - 9.75) W more
    assert m.state == [3, 3, 0, 0, 0, 3, 0, 3] and m.power_w == 8 * 9.75 + 4 * 180.25 == 799.0
    m.start(1, [2, 3, 4], delay_s=10.0)
    ends = m.advance(10.0)
    assert [(e.key, e.energy_j) for e in ends] == [(1, 3 * 190.0 * 10.0)]
    m.apply_runs([(2, 5, (3, 1.0))])  # its 3 hosts sleep again at t = 10
    assert m.state == [3] * 6 + [0, 3] and m.power_w == 799.0 - 3 * 180.25 == 258.25
    assert m.energy_j() == 799.0 * 10.0
    assert m._factor == [1.0] * 8 and m._unit_factors


small_steps = st.lists(st.tuples(st.integers(0, N - 1), st.integers(1, 70), st.integers(0, 3),
                                 st.booleans(), st.booleans()), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(small_steps, st.integers(0, 2**16))
def test_small_runs_of_identical_hosts_equal_host_by_host(script, seed):
    """Short runs of changes on identical hosts without per-host accounts (busy and free
    hosts, unchanged states, factors other than 1) give the very states, powers, total and
    job energies of the host-by-host rules."""
    lean = Machine([SPEEDS[0]] * N, [POWERS[0]] * N, 3, host_energy=False)
    _replay_both((lean, machines([0] * N)[1]), script, seed, look=_without_hosts)


def _compact_identical(n: int) -> Machine:
    """An engine machine of ``n`` identical hosts kept in arrays (no per-host accounts)."""
    limit = machine_module.ARRAY_MIN_HOSTS
    machine_module.ARRAY_MIN_HOSTS = 0
    try:
        return Machine([SPEEDS[0]] * n, [POWERS[0]] * n, 3, host_energy=False, compact=True)
    finally:
        machine_module.ARRAY_MIN_HOSTS = limit


def test_runs_of_identical_hosts_in_arrays_by_hand(monkeypatch):
    """A compact machine of identical hosts applies runs of free hosts run by run (never host
    by host) and checks them without the per-run helpers (``_uniform``, ``_all``); a run on a
    busy host goes host by host and re-times its job."""
    m = _compact_identical(8)
    assert m.state.typecode == "b"
    with monkeypatch.context() as patch:
        for name in ("apply_states", "_uniform", "_all", "_charge"):
            patch.setattr(m, name, None)
        m.apply_runs([(2, 5, (0, 1.0)), (6, 7, (0, 1.0))])  # 4 hosts wake: 4 x 180.25 W more
        assert m.state.tolist() == [3, 3, 0, 0, 0, 3, 0, 3] and m.power_w == 799.0
        m.advance(10.0)
        m.apply_runs([(2, 4, (3, 1.0))])  # 2 of them sleep again at t = 10
    assert m.state.tolist() == [3, 3, 3, 3, 0, 3, 0, 3] and m.power_w == 799.0 - 2 * 180.25
    assert m.energy_j() == 799.0 * 10.0
    m.start(1, [4, 6], ops_gflop=100.0)  # 10 GFLOP/s: ends at t = 20
    m.apply_runs([(4, 5, (1, 1.0))])  # one of its hosts at half speed: 5 more s of work
    assert m.state.tolist() == [3, 3, 3, 3, 1, 3, 0, 3]
    assert [(e.key, e.finish_s) for e in m.advance(30.0)] == [(1, 30.0)]


@settings(max_examples=60, deadline=None)
@given(small_steps, st.integers(0, 2**16))
def test_runs_of_identical_hosts_in_arrays_equal_host_by_host(script, seed):
    """Runs of changes on a compact machine of identical hosts (busy and free hosts, unchanged
    states, factors other than 1) give the very states, powers, total and job energies of the
    host-by-host rules."""
    _replay_both((_compact_identical(N), machines([0] * N)[1]), script, seed, look=_without_hosts)


#: Whole numbers of watts (the default row of identical hosts), and whole rows so large that
#: sums over 300 hosts pass 2**53 and round (the multiply-add path must then step aside).
WHOLE_POWERS = [(100.0, 100.0, 30.0, 5.0), (2.0**51 + 3.0, 2.0**50 + 1.0, 3.0, -1.0)]


@settings(max_examples=60, deadline=None)
@given(st.one_of(steps, small_steps), st.integers(0, 2**16), st.sampled_from(WHOLE_POWERS))
def test_whole_watt_runs_in_arrays_equal_host_by_host(script, seed, row):
    """Runs of identical hosts whose powers are whole watts (flushes and wide jobs summed in one
    multiply-add when exact) give the very states, powers, total and job energies of the
    host-by-host rules, also where the sums pass 2**53."""
    limit = machine_module.ARRAY_MIN_HOSTS
    machine_module.ARRAY_MIN_HOSTS = 0
    try:
        compact = Machine([SPEEDS[0]] * N, [row] * N, 3, host_energy=False, compact=True)
    finally:
        machine_module.ARRAY_MIN_HOSTS = limit
    slow = Machine([SPEEDS[0]] * N, [row] * N, 3)
    slow._energy_acc, slow._energy_t = [0.0] * N, [0.0] * N
    slow._free_runs = lambda runs: False
    slow._apply_free_runs = lambda runs: False
    _replay_both((compact, slow), script, seed, look=_without_hosts)


@pytest.mark.parametrize("compact", [True, False])
def test_wide_job_on_identical_hosts_by_hand(monkeypatch, compact):
    """A wide job on identical hosts (arrays or lists) is given its runs without the per-run
    helpers (``_free_runs``, ``_sum_power``): power summed as host by host (awake hosts at
    190 W, asleep at 9.75 W); a busy host among them is refused by name, nothing taken."""
    n = 200
    m = _compact_identical(n) if compact else Machine([SPEEDS[0]] * n, [POWERS[0]] * n, 3,
                                                       host_energy=False)
    m.apply_runs([(0, 50, (0, 1.0))])
    monkeypatch.setattr(m, "_free_runs", None)
    monkeypatch.setattr(m, "_sum_power", None)
    m.start(1, list(range(10)) + list(range(20, 95)), delay_s=10.0)  # 40 awake, 45 asleep
    assert list(m.job_on[:96]) == [1] * 10 + [-1] * 10 + [1] * 75 + [-1]
    assert m._jobs[1].power_w == 190.0 * 40 + 9.75 * 45
    with pytest.raises(SimulationError, match="resource 94 is busy with job 1"):
        m.start(2, range(94, 194), delay_s=1.0)
    assert list(m.job_on[95:]) == [-1] * (n - 95) and 2 not in m._jobs
    [end] = m.advance(10.0)
    assert end.energy_j == 10.0 * (190.0 * 40 + 9.75 * 45)
