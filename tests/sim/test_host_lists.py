"""Small machines of identical hosts (hdrm.sim.host_lists): starts, ends and power changes by
list slices give the very bits, errors and states of the host-by-host paths."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.errors import SimulationError
from hdrm.sim.host_lists import exact_row
from hdrm.sim.machine import Machine

N = 12
ROW = (100.0, 100.0, 30.0, 5.0)  # hdrm's power table of a 100 W core: whole watts


def pair(row: tuple[float, ...] = ROW) -> tuple[Machine, Machine]:
    """The same machine twice (hosts asleep, no energy accounts); the second never takes the
    paths of hdrm.sim.host_lists."""
    fast = Machine([(1.0, 0.75, 0.0, 0.0)] * N, [row] * N, 3, host_energy=False)
    slow = Machine([(1.0, 0.75, 0.0, 0.0)] * N, [row] * N, 3, host_energy=False)
    slow._exact_lists = False
    slow._apply_free_list_runs = lambda runs: False
    return fast, slow


def look(m: Machine) -> tuple:
    return (list(m.state), list(m.job_on), m.power_w, m.energy_j(),
            sorted((k, j.cores, j.power_w, j.end_s) for k, j in m._jobs.items()))


def test_exact_row_by_hand():
    assert exact_row(ROW, 128)
    assert not exact_row((62.5, 50.0, 18.75, 3.125), 4)  # not whole watts
    assert not exact_row((100, 100, 30, 5), 4)  # ints, not floats
    assert not exact_row((2.0**50, 1.0), 8)  # 16 hosts' changes reach 2**53
    assert exact_row((2.0**50, 1.0), 2) and not exact_row((), 4)
    assert Machine([(1.0,)] * 3, [(7.0,)] * 3, host_energy=False)._exact_lists
    assert not Machine([(1.0,)] * 3, [(7.5,)] * 3, host_energy=False)._exact_lists  # 7.5 W
    assert not Machine([(1.0,)] * 3, [(7.0,)] * 3)._exact_lists  # energy accounts kept


def test_narrow_start_and_end_by_hand():
    m, _ = pair()
    m.advance(2.0)
    m.apply_runs([(0, 4, (0, 1.0)), (6, 7, (0, 1.0))])  # wake 5 hosts: +5 x 95 W
    assert m.power_w == N * 5.0 + 5 * 95.0 and m.energy_j() == 2.0 * N * 5.0
    m.start(1, [0, 1, 2, 3], delay_s=10.0)  # one run: 4 x 100 W
    m.start(2, [6], delay_s=4.0)
    assert m._jobs[1].power_w == 400.0 and m._jobs[2].power_w == 100.0
    assert m.job_on[:8] == [1, 1, 1, 1, -1, -1, 2, -1]
    m.start(3, [9, 5], delay_s=1.0)  # scattered hosts, asleep: 2 x 5 W
    assert m._jobs[3].power_w == 10.0 and m._jobs[3].cores == (9, 5)
    ends = m.advance(12.0)
    assert [e.key for e in ends] == [3, 2, 1] and m.job_on == [-1] * N
    assert ends[2].energy_j == 400.0 * 10.0


def test_busy_unknown_and_repeated_hosts_keep_their_errors():
    m, _ = pair()
    m.start(1, [2, 3, 4], delay_s=5.0)
    with pytest.raises(SimulationError, match="resource 3 is busy with job 1"):
        m.start(2, [3], delay_s=1.0)
    with pytest.raises(SimulationError, match="resource 4 is busy with job 1"):
        m.start(2, [5, 4], delay_s=1.0)
    with pytest.raises(SimulationError, match="unknown resource 12"):
        m.start(2, [11, 12], delay_s=1.0)
    with pytest.raises(SimulationError, match="unknown resource -1"):
        m.start(2, [-1], delay_s=1.0)
    assert m.job_on.count(-1) == N - 3  # nothing taken by the refused starts
    m.start(2, [7, 7, 8], delay_s=1.0)  # a host given twice: taken host by host, as before
    assert m._jobs[2].power_w == 15.0 and m.job_on[7:9] == [2, 2]


jobs = st.lists(st.tuples(st.lists(st.integers(0, N - 1), min_size=1, max_size=6, unique=True),
                          st.booleans(), st.integers(0, 5), st.booleans()),
                min_size=1, max_size=30)


@settings(max_examples=120, deadline=None)
@given(jobs, st.sampled_from([ROW, (62.5, 50.0, 18.75, 3.125), (7.0, 7.0, 7.0, 7.0)]),
       st.integers(0, 2**16))
def test_equal_to_the_host_by_host_paths(script, row, seed):
    """Jobs on random (sorted or shuffled) free hosts, woken first or not, ends, sleep."""
    rng = np.random.default_rng(seed)
    fast, slow = pair(row)
    now = 0.0
    for key, (hosts, shuffled, step, wake) in enumerate(script):
        now += step
        for m in (fast, slow):
            ended = m.advance(now)
            sleep = [(e.cores[0], e.cores[0] + 1, (3, 1.0)) for e in ended]
            if len(sleep) == len({r[0] for r in sleep}):
                m.apply_runs(sorted(sleep))
        free = [h for h in hosts if fast.job_on[h] == -1]
        if not free:
            continue
        if not shuffled:
            free.sort()
        elif len(free) > 1:
            free = list(rng.permutation(free))
        for m in (fast, slow):
            if wake:
                m.apply_runs([(h, h + 1, (0, 1.0)) for h in sorted(set(free))])
            m.start(key, free, delay_s=1.0 + key % 3, walltime_s=2.5)
        assert look(fast) == look(slow)
    for m in (fast, slow):
        m.advance(now + 10.0)
    assert look(fast) == look(slow)


# ---------------------------------------------------------------- hosts following their jobs
RUN, SLEEP = 0, 3


def test_follow_conditions_by_hand():
    m, _ = pair()
    assert m.can_follow(RUN, SLEEP) and not m.can_follow(RUN, 2)  # hosts are asleep (3)
    assert not m.can_follow(RUN, 4)  # no state 4
    odd, _ = pair((62.5, 50.0, 18.75, 3.125))
    assert not odd.can_follow(RUN, SLEEP)  # not whole watts: the queued changes instead
    m.start(1, [0], delay_s=1.0)
    assert not m.can_follow(RUN, SLEEP) and not m.follow_occupancy(RUN, SLEEP)  # a job runs
    assert not m.follows


def test_following_hosts_by_hand():
    m, _ = pair()
    assert m.follow_occupancy(RUN, SLEEP) and m.follows
    m.advance(2.0)
    m.start(1, [4, 5, 6], delay_s=10.0)  # wake 3 hosts: +3 x 95 W at 2 s
    m.start(2, [9, 1], delay_s=4.0)
    assert m.state[:10] == [3, 0, 3, 3, 0, 0, 0, 3, 3, 0]
    assert m.power_w == N * 5.0 + 5 * 95.0 and m.energy_j() == 2.0 * N * 5.0
    assert m._jobs[1].power_w == 300.0 and m._jobs[2].power_w == 200.0
    ends = m.advance(20.0)  # job 2 ends at 6, job 1 at 12: their hosts sleep then
    assert [(e.key, e.finish_s, e.energy_j) for e in ends] == [(2, 6.0, 800.0), (1, 12.0, 3000.0)]
    assert m.state == [3] * N and m.power_w == N * 5.0
    assert m.energy_j() == 20.0 * N * 5.0 + 4.0 * 2 * 95.0 + 10.0 * 3 * 95.0
    with pytest.raises(SimulationError, match="follow their jobs"):
        m.apply_states({0: (0, 1.0)})
    with pytest.raises(SimulationError, match="follow their jobs"):
        m.apply_runs([(0, 2, (0, 1.0))])
    with pytest.raises(SimulationError, match="given twice"):
        m.start(3, [2, 3, 2], delay_s=1.0)
    with pytest.raises(SimulationError, match="resource 2 is busy with job 4"):
        m.start(4, [2], delay_s=1.0) or m.start(5, [2], delay_s=1.0)
    assert m.job_on.count(-1) == N - 1 and m.state.count(RUN) == 1  # nothing else taken


@pytest.mark.parametrize("compact", [False, True])
def test_following_hosts_keep_the_runs_they_took_for_the_end(compact):
    """A narrow job on hosts that follow their jobs keeps the runs of hosts its start took
    (one run, or several) and its end frees them by those runs: every host free and asleep
    again, the power back to all asleep, the energy by hand."""
    n = 1100 if compact else N
    m = Machine([(1.0, 0.75, 0.0, 0.0)] * n, [ROW] * n, SLEEP, host_energy=False, compact=compact)
    assert (type(m.state) is list) != compact and m.follow_occupancy(RUN, SLEEP)
    m.start(1, [4, 5, 6, 9, 10], delay_s=2.0)
    m.start(2, [0, 1], delay_s=4.0)
    m.start(3, [7], delay_s=1.0)
    assert [m._jobs[k].runs for k in (1, 2, 3)] == [[(4, 7), (9, 11)], [(0, 2)], None]
    assert list(m.job_on[:12]) == [2, 2, -1, -1, 1, 1, 1, 3, -1, 1, 1, -1]
    assert m.power_w == n * 5.0 + 8 * 95.0
    ends = m.advance(10.0)
    assert [(e.key, e.cores, e.energy_j) for e in ends] == [
        (3, (7,), 100.0), (1, (4, 5, 6, 9, 10), 1000.0), (2, (0, 1), 800.0)]
    assert list(m.job_on) == [-1] * n and list(m.state) == [SLEEP] * n
    assert m.power_w == n * 5.0
    assert m.energy_j() == 10.0 * n * 5.0 + (1.0 * 1 + 2.0 * 5 + 4.0 * 2) * 95.0



@pytest.mark.parametrize("compact", [False, True])
def test_following_hosts_taken_by_the_runs_given(compact):
    """A narrow job started with its runs (the placement's) is taken by those runs, kept for
    its end (the very list); one-host runs among them; a busy or repeated host still refused
    with nothing left taken; every host free and asleep after the end, energy by hand."""
    n = 1100 if compact else N
    m = Machine([(1.0, 0.75, 0.0, 0.0)] * n, [ROW] * n, SLEEP, host_energy=False, compact=compact)
    assert m.follow_occupancy(RUN, SLEEP)
    given = [(3, 4), (5, 7), (9, 10)]
    m.start(1, [3, 5, 6, 9], delay_s=2.0, runs=given)
    assert m._jobs[1].runs is given
    assert list(m.job_on[:11]) == [-1, -1, -1, 1, -1, 1, 1, -1, -1, 1, -1]
    assert list(m.state[:11]) == [3, 3, 3, 0, 3, 0, 0, 3, 3, 0, 3]
    with pytest.raises(SimulationError, match="given twice"):
        m.start(2, [0, 2, 0], delay_s=1.0, runs=[(0, 1), (2, 3), (0, 1)])
    with pytest.raises(SimulationError, match="resource 9 is busy with job 1"):
        m.start(3, [7, 9, 10], delay_s=1.0, runs=[(7, 8), (9, 11)])
    with pytest.raises(SimulationError, match="resource 9 is busy with job 1"):
        m.start(4, [0, 1, 9], delay_s=1.0)  # runs found here
    assert m.job_on.count(-1) == n - 4 and m.state.count(RUN) == 4  # only job 1's hosts
    assert m.power_w == n * 5.0 + 4 * 95.0  # four hosts woken: 5 W -> 100 W
    assert [(e.key, e.energy_j) for e in m.advance(5.0)] == [(1, 800.0)]  # 2 s x 4 x 100 W
    assert list(m.job_on) == [-1] * n and list(m.state) == [SLEEP] * n and m.power_w == n * 5.0

@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, N - 1), min_size=1, max_size=N, unique=True),
                          st.booleans(), st.integers(0, 5), st.booleans()),
                min_size=1, max_size=30),
       st.integers(0, 2**16), st.integers(1, 8),
       st.sampled_from([ROW, (7.0, 7.0, 7.0, 7.0), (100.0, 90.0, 30.0, 100.0)]))
def test_following_equals_the_queued_changes(script, seed, wide, row):
    """Jobs on random free hosts (sorted or shuffled, some wide: more than ``wide`` hosts taken
    as runs), parallel or delay, ends: the same bits as waking them before the start and
    putting them to sleep after the end (rows where running and asleep draw the same power
    included: no power step then)."""
    import hdrm.sim.machine as machine_module

    rng = np.random.default_rng(seed)
    fast, slow = pair(row)
    assert fast.follow_occupancy(RUN, SLEEP)

    def until(t: float) -> None:
        """Both machines to ``t``, end instant by end instant (as the engine goes): the
        second one's hosts put to sleep at each end."""
        while slow.next_time() <= t:
            at = slow.next_time()
            ended, slow_ended = fast.advance(at), slow.advance(at)
            assert [(e.key, e.finish_s, e.energy_j) for e in ended] == [
                (e.key, e.finish_s, e.energy_j) for e in slow_ended]
            slow.apply_runs(sorted((c, c + 1, (SLEEP, 1.0)) for e in slow_ended
                                   for c in e.cores))
        fast.advance(t)
        slow.advance(t)

    now = 0.0
    for key, (hosts, shuffled, step, parallel) in enumerate(script):
        now += step * 0.3 + 0.07  # (inexact products: the grouping of energy steps shows)
        until(now)
        free = [h for h in hosts if fast.job_on[h] == -1]
        if not free:
            continue
        if shuffled and len(free) > 1:
            free = [int(h) for h in rng.permutation(free)]
        else:
            free.sort()
        slow.apply_runs([(h, h + 1, (RUN, 1.0)) for h in sorted(free)])
        profile = {"ops_gflop": 2.0 + key % 5} if parallel else {"delay_s": 1.0 + key % 3}
        old_wide = machine_module.WIDE
        machine_module.WIDE = wide  # wide jobs (CoreRuns) on this small machine too
        try:
            for m in (fast, slow):
                m.start(key, free, walltime_s=3.5, **profile)
        finally:
            machine_module.WIDE = old_wide
        assert look(fast) == look(slow)
    until(now + 50.0)
    assert look(fast) == look(slow) and fast.state == [SLEEP] * N


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1099), st.integers(1, 90), st.booleans(),
                          st.integers(0, 4)), min_size=1, max_size=20))
def test_following_on_compact_arrays_equals_the_queued_changes(script):
    """A machine of 1,100 hosts kept in compact arrays (machine_for's from 1,024 hosts): runs
    of free hosts, narrow and wide, taken and woken, freed and put to sleep: the same bits as
    the queued changes (applied run by run on the arrays)."""
    from hdrm.sim.machine import ARRAY_MIN_HOSTS

    n = 1100
    assert n >= ARRAY_MIN_HOSTS
    fast, slow = (Machine([(1.0, 0.75, 0.0, 0.0)] * n, [ROW] * n, SLEEP, host_energy=False,
                          compact=True) for _ in range(2))
    assert type(fast.state) is not list and fast.follow_occupancy(RUN, SLEEP)
    now = 0.0
    for key, (first, width, parallel, step) in enumerate(script):
        now += step * 0.3 + 0.07
        while slow.next_time() <= now:
            at = slow.next_time()
            fast.advance(at)
            for e in slow.advance(at):
                slow.apply_runs([(lo, hi, (SLEEP, 1.0)) for lo, hi in
                                 (getattr(e.cores, "runs", None)
                                  or [(c, c + 1) for c in sorted(e.cores)])])
        fast.advance(now)
        slow.advance(now)
        hosts = [h for h in range(first, min(first + width, n)) if fast.job_on[h] == -1]
        if not hosts:
            continue
        slow.apply_runs([(h, h + 1, (RUN, 1.0)) for h in hosts])
        profile = {"ops_gflop": 3.0} if parallel else {"delay_s": 1.0 + key % 3}
        for m in (fast, slow):
            m.start(key, hosts, **profile)
        assert (list(fast.state), list(fast.job_on), fast.power_w, fast.energy_j()) == (
            list(slow.state), list(slow.job_on), slow.power_w, slow.energy_j())


def test_overlapping_runs_are_refused_when_hosts_follow():
    from hdrm.core.runs import CoreRuns

    m = Machine([(1.0,)] * 200, [(10.0, 1.0)] * 200, 1, host_energy=False)
    assert m.follow_occupancy(0, 1)
    with pytest.raises(SimulationError, match="given twice"):
        m.start(1, CoreRuns([(0, 70), (60, 130)]), delay_s=1.0)
    assert m.job_on == [-1] * 200 and m.state == [1] * 200 and m.power_w == 200.0
