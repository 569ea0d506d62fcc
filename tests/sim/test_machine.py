"""The simulated machine: job timing under changing host speeds, walltime kills, energy.

The ``pstate_*`` cases reproduce Batsim 4.2.1 runs recorded in ``shared/batsim/golden``
(``pstate_slowdown``, ``pstate_lockstep``: 4 hosts of 10 / 7.5 / ~0 / ~0 GFLOP/s in P-states 0-3,
100 / 100 / 25 / 5 W; every job computes 100 GFLOP per host; FCFS in submission order). Batsim
prints 6 decimals, so times and energies are compared to its printed values within 1e-6. The
walltime cases reproduce runs of the real Batsim 4.2.1 binary on the same platform
(``pybatsim fillerSched``), whose outcomes are quoted in each test.
"""

from __future__ import annotations

import math

import pytest

from hdrm.errors import SimulationError
from hdrm.sim.machine import (
    COMPLETED_KILLED,
    COMPLETED_SUCCESSFULLY,
    COMPLETED_WALLTIME_REACHED,
    Machine,
)

GOLDEN_SPEEDS = (10.0, 7.5, 1e-12, 1e-12)
GOLDEN_POWER = (100.0, 100.0, 25.0, 5.0)


def golden_machine() -> Machine:
    """The golden platform: 4 hosts, all starting in P-state 0."""
    return Machine([GOLDEN_SPEEDS] * 4, [GOLDEN_POWER] * 4, 0)


def run_to_end(machine: Machine) -> list:
    """Advance event by event until no job is left; returns every end."""
    ends = []
    while machine.next_time() < math.inf:
        ends += machine.advance(machine.next_time())
    return ends


def golden_run(slowdowns: list[tuple[float, list[int], int]]) -> tuple[dict, Machine]:
    """Replay the golden workload with FCFS, applying ``(time, hosts, state)`` changes on the way.

    Jobs: 0 and 1 at t=0 on 2 hosts each, 2 at t=3 on 4 hosts, 3 at t=4 on 1 host (walltime 5),
    all others walltime 100. The scheduler starts the queue head as soon as it fits, on the
    lowest free hosts.
    """
    m = golden_machine()
    m.start(0, [0, 1], ops_gflop=100.0, walltime_s=100.0)
    m.start(1, [2, 3], ops_gflop=100.0, walltime_s=100.0)
    queue = [(2, 4, 100.0), (3, 1, 5.0)]
    events = sorted(slowdowns)
    ends: dict[int, object] = {}
    while m.running or queue:
        t = min([m.next_time()] + [e[0] for e in events])
        for end in m.advance(t):
            ends[end.key] = end
        while events and events[0][0] <= t:
            _, hosts, state = events.pop(0)
            m.set_state(hosts, state)
        free = [h for h in range(4) if m.job_on[h] < 0]
        while queue and queue[0][1] <= len(free):
            key, res, wall = queue.pop(0)
            m.start(key, free[:res], ops_gflop=100.0, walltime_s=wall)
            free = free[res:]
    return ends, m


def batsim_printed(value: float) -> pytest.approx:
    """A value Batsim wrote with 6 decimals."""
    return pytest.approx(value, abs=1e-6, rel=0)


class TestGoldenPstateSlowdown:
    def test_pstate_demo_hosts_0_1_slowed_from_2_to_6(self):
        ends, m = golden_run([(2.0, [0, 1], 1), (6.0, [0, 1], 0)])
        # job 0: 2 s x 10 + 4 s x 7.5 = 50 GFLOP, 50 left at 10 GFLOP/s: ends at 6 + 5 = 11
        assert ends[0].finish_s == 11.0
        assert ends[1].finish_s == 10.0
        assert (ends[2].start_s, ends[2].finish_s) == (11.0, 21.0)
        assert (ends[3].start_s, ends[3].finish_s) == (21.0, 26.0)
        assert [ends[k].state for k in range(4)] == [COMPLETED_SUCCESSFULLY] * 3 + [
            COMPLETED_WALLTIME_REACHED]
        # out_jobs.csv consumed_energy: 2000, 2200, 4000, 500; out_schedule.csv: 10,400 J
        energies = [ends[k].energy_j for k in range(4)]
        assert energies == pytest.approx([2200.0, 2000.0, 4000.0, 500.0])
        assert m.now == 26.0
        assert m.energy_j() == pytest.approx(10400.0)
        assert ends[2].cores == (0, 1, 2, 3) and ends[3].cores == (0,)
        assert ends[3].progress == pytest.approx(0.5)  # 5 s of the 10 s it needed

    def test_pstate_one_host_1_slowed_from_2_on(self):
        ends, m = golden_run([(2.0, [1], 1), (6.0, [1], 1)])
        # both hosts: 20 GFLOP in 2 s, then 80 at 7.5 GFLOP/s (host 1) = 10.667 s: ends at 12.667
        assert ends[0].finish_s == batsim_printed(12.666667)
        # job 2 on 0-3 with host 1 at 7.5 GFLOP/s: 13.333 s
        assert ends[2].finish_s == batsim_printed(26.0)
        assert ends[3].finish_s == batsim_printed(31.0)
        assert ends[3].state == COMPLETED_WALLTIME_REACHED
        energies = [ends[k].energy_j for k in range(4)]
        # both of job 0's hosts draw 100 W for its whole 12.667 s: 2 x 100 x 12.667
        assert energies == [batsim_printed(e) for e in (2533.333333, 2000.0, 5333.333333, 500.0)]
        assert m.energy_j() == pytest.approx(12400.000133, abs=1e-3)


class TestGoldenPstateLockstep:
    """``pstate_lockstep/alternate.py``: job 0 (100 GFLOP per host) on hosts 0-1; host 0 in
    P-state 1 (7.5 GFLOP/s) on [0, 4), host 1 on [4, 8). Batsim: ends at 12.0 with 2,400 J,
    4,800 J in all. Each host on its own would end at 11.0 (4 s x 7.5 + 7 s x 10 = 100 GFLOP)."""

    def run(self, walltime_s: float) -> tuple:
        m = golden_machine()
        m.set_state([0], 1)
        m.start(0, [0, 1], ops_gflop=100.0, walltime_s=walltime_s)
        assert m.expected_end_s(0) == min(100.0 / 7.5, walltime_s)
        m.advance(4.0)
        m.set_state([0], 0)
        m.set_state([1], 1)
        assert m.progress(0) == pytest.approx(0.3)  # 30 GFLOP on each host: the slow pace
        assert m.expected_end_s(0) == min(4.0 + 70.0 / 7.5, walltime_s)
        m.advance(8.0)
        m.set_state([1], 0)
        assert m.expected_end_s(0) == min(12.0, walltime_s)  # 8 s x 7.5 = 60, then 40 at 10
        (end,) = run_to_end(m)
        return end, m

    def test_all_hosts_advance_at_the_slowest_pace(self):
        end, m = self.run(100.0)
        assert (end.state, end.start_s, end.finish_s) == (COMPLETED_SUCCESSFULLY, 0.0, 12.0)
        assert end.energy_j == 2400.0  # 2 hosts x 100 W x 12 s
        assert m.energy_j() == 4800.0  # and the two idle hosts at 100 W

    def test_walltime_cuts_the_lockstep_run(self):
        # real Batsim with walltime 11.9: COMPLETED_WALLTIME_REACHED at 11.9, 2,380 J;
        # with walltime 12: COMPLETED_SUCCESSFULLY at 12.0
        end, _ = self.run(11.9)
        assert (end.state, end.finish_s) == (COMPLETED_WALLTIME_REACHED, batsim_printed(11.9))
        assert end.energy_j == batsim_printed(2380.0)
        assert end.progress == pytest.approx(0.99)  # 60 + 3.9 x 10 of 100 GFLOP
        end, _ = self.run(12.0)
        assert (end.state, end.finish_s) == (COMPLETED_SUCCESSFULLY, 12.0)


class TestDelayJobs:
    def test_delay_job_ignores_speed_changes(self):
        m = golden_machine()
        m.start(7, [0, 1], delay_s=4.0)
        m.advance(1.0)
        m.set_state([0, 1], 1)
        assert m.expected_end_s(7) == 4.0
        (end,) = m.advance(10.0)
        assert (end.key, end.state, end.start_s, end.finish_s) == (
            7, COMPLETED_SUCCESSFULLY, 0.0, 4.0)
        assert end.energy_j == pytest.approx(2 * 4 * 100.0)
        assert m.now == 10.0 and m.running == 0

    def test_progress_of_delay_job(self):
        m = golden_machine()
        m.start(0, [0], delay_s=8.0)
        m.advance(2.0)
        assert m.progress(0) == pytest.approx(0.25)

    def test_ends_come_in_time_order_and_ties_in_start_order(self):
        m = golden_machine()
        m.start(5, [0], delay_s=3.0)
        m.start(4, [1], delay_s=1.0)
        m.start(6, [2], delay_s=3.0)
        ends = m.advance(5.0)
        assert [(e.key, e.finish_s) for e in ends] == [(4, 1.0), (5, 3.0), (6, 3.0)]
        assert m.next_time() == math.inf


class TestParallelHomogeneous:
    def test_ends_when_slowest_host_is_done(self):
        m = Machine([(4.0, 3.0, 0, 0), (1.0, 0.75, 0, 0)], [GOLDEN_POWER] * 2, 0)
        m.start(0, [0, 1], ops_gflop=8.0)
        assert m.expected_end_s(0) == pytest.approx(8.0)  # 8 GFLOP at 1 GFLOP/s
        m.advance(2.0)
        assert m.progress(0) == pytest.approx(0.25)  # slow host: 2 of 8 done

    def test_fast_host_does_not_run_ahead(self):
        # host 0 at 4 GFLOP/s, host 1 at 1; after 2 s host 1 becomes the fast one (state 0 of a
        # 4 GFLOP/s table) and host 0 drops to 1: the job stays at the slow pace throughout
        m = Machine([(4.0, 1.0), (1.0, 4.0)], [(10.0, 10.0)] * 2, 0)
        m.start(0, [0, 1], ops_gflop=8.0)
        m.advance(2.0)
        m.apply_states({0: (1, 1.0), 1: (1, 1.0)})
        assert m.expected_end_s(0) == 8.0  # per host: 2 + max(0, 6 / 4) = 3.5
        (end,) = run_to_end(m)
        assert (end.finish_s, end.energy_j) == (8.0, 160.0)

    def test_only_a_change_of_the_slowest_speed_retimes(self):
        m = golden_machine()
        m.start(0, [0, 1, 2], ops_gflop=60.0)
        m.apply_states({0: (0, 0.5), 1: (0, 0.5)})  # two hosts at 5 GFLOP/s
        assert m.expected_end_s(0) == 12.0
        m.advance(4.0)  # 20 done, 40 left
        m.apply_states({2: (0, 0.8)})  # 8 GFLOP/s: still faster than the slowest
        assert m.expected_end_s(0) == 12.0
        m.apply_states({0: (0, 1.0)})  # one slow host restored, the other is still at 5
        assert m.expected_end_s(0) == 12.0
        m.apply_states({1: (0, 1.0)})  # the last slow host restored: host 2 at 8 is the slowest
        assert m.expected_end_s(0) == 4.0 + 40.0 / 8.0
        m.advance(5.0)
        m.apply_states({2: (0, 1.0)})  # 32 left at 10 GFLOP/s
        assert m.expected_end_s(0) == pytest.approx(5.0 + 3.2)
        (end,) = run_to_end(m)
        assert end.finish_s == pytest.approx(8.2)

    def test_speedup_mid_run_moves_end_earlier(self):
        m = golden_machine()
        m.start(0, [0], ops_gflop=100.0)
        m.set_state([0], 1)  # 7.5 GFLOP/s from t=0
        assert m.expected_end_s(0) == pytest.approx(100.0 / 7.5)
        m.advance(6.0)  # 45 done
        m.set_state([0], 0)
        assert m.expected_end_s(0) == pytest.approx(6.0 + 55.0 / 10.0)
        (end,) = run_to_end(m)
        assert end.finish_s == pytest.approx(11.5)

    def test_host_without_speed_never_ends(self):
        m = golden_machine()
        m.start(0, [0], ops_gflop=10.0)
        m.set_state([0], 2)
        m.advance(1.0)
        m.set_state([0], 2)  # no-op: same state
        assert m.expected_end_s(0) > 1e9

    def test_speed_factor_scales_state_speed(self):
        m = golden_machine()
        m.start(0, [0, 1], ops_gflop=30.0)
        m.set_state([1], 1, speed_factor=0.4)  # 7.5 * 0.4 = 3 GFLOP/s
        assert m.expected_end_s(0) == pytest.approx(10.0)
        m.advance(5.0)
        m.apply_states({1: (1, 0.8)})  # 6 GFLOP/s for the 15 GFLOP left
        assert m.expected_end_s(0) == pytest.approx(7.5)
        (end,) = run_to_end(m)
        assert end.finish_s == pytest.approx(7.5)

    def test_apply_states_matches_set_state(self):
        a, b = golden_machine(), golden_machine()
        for m in (a, b):
            m.start(0, [0, 1], ops_gflop=50.0)
            m.advance(2.0)
        a.set_state([0], 1)
        a.set_state([1], 3)
        b.apply_states({0: (1, 1.0), 1: (3, 1.0)})
        assert a.state == b.state and a.power_w == b.power_w
        a.advance(4.0)
        b.advance(4.0)
        assert a.energy_j() == pytest.approx(b.energy_j())
        assert a.expected_end_s(0) == b.expected_end_s(0)


class TestWalltime:
    def test_walltime_kill(self):
        m = golden_machine()
        m.start(0, [0], ops_gflop=100.0, walltime_s=4.0)
        (end,) = run_to_end(m)
        assert (end.state, end.finish_s) == (COMPLETED_WALLTIME_REACHED, 4.0)
        assert end.progress == pytest.approx(0.4)
        assert m.job_on[0] == -1

    def test_slowdown_pushes_job_past_its_walltime(self):
        m = golden_machine()
        m.start(0, [0], ops_gflop=100.0, walltime_s=11.0)  # needs 10 s at full speed
        m.advance(2.0)
        m.set_state([0], 1)  # now needs 2 + 80 / 7.5 = 12.67 s
        (end,) = run_to_end(m)
        assert (end.state, end.finish_s) == (COMPLETED_WALLTIME_REACHED, 11.0)

    @pytest.mark.parametrize("delay_s", [10.0, 0.3, 10.000001])
    def test_delay_equal_to_walltime_is_killed(self, delay_s):
        # Batsim: a delay job succeeds only if delay < walltime (real runs: delay 10 / walltime
        # 10 and 0.3 / 0.3: COMPLETED_WALLTIME_REACHED after 10 and 0.3 s; and 60 such jobs of
        # golden/sdsc1024_1k)
        m = golden_machine()
        m.advance(123456789.7)
        m.start(0, [1], delay_s=delay_s, walltime_s=min(delay_s, 10.0))
        (end,) = run_to_end(m)
        assert (end.state, end.finish_s) == (
            COMPLETED_WALLTIME_REACHED, 123456789.7 + min(delay_s, 10.0))

    def test_delay_just_below_walltime_succeeds(self):
        m = golden_machine()
        m.start(0, [1], delay_s=9.999999, walltime_s=10.0)
        (end,) = run_to_end(m)
        assert (end.state, end.finish_s) == (COMPLETED_SUCCESSFULLY, 9.999999)

    # (work per host in GFLOP, walltime, Batsim's outcome) at 10 GFLOP/s, from real runs
    @pytest.mark.parametrize("ops, walltime, state", [
        (100.0, 10.0, COMPLETED_SUCCESSFULLY),  # ends exactly at the walltime
        (3.0, 0.3, COMPLETED_SUCCESSFULLY),
        (0.7, 0.07, COMPLETED_SUCCESSFULLY),
        (100.0, 10.000000001, COMPLETED_SUCCESSFULLY),
        (100.0, 9.99999999999999, COMPLETED_SUCCESSFULLY),  # 1e-15 of the work left: done
        (100.0, 9.999999999999, COMPLETED_WALLTIME_REACHED),  # 1e-13 of the work left
        (100.0, 9.9999999999, COMPLETED_WALLTIME_REACHED),
        (100.0, 9.999999998, COMPLETED_WALLTIME_REACHED),
    ])
    def test_parallel_job_at_its_walltime(self, ops, walltime, state):
        for start in (0.0, 10000000.3, 123456789.7):  # decided the same way late in a run
            m = golden_machine()
            m.advance(start)
            m.start(0, [0, 1], ops_gflop=ops, walltime_s=walltime)
            (end,) = run_to_end(m)
            assert end.state == state
            assert end.finish_s == pytest.approx(start + min(walltime, ops / 10.0), abs=1e-8)

    def test_delay_job_over_walltime_is_killed(self):
        m = golden_machine()
        m.start(0, [2], delay_s=9.0, walltime_s=3.0)
        (end,) = run_to_end(m)
        assert (end.state, end.finish_s) == (COMPLETED_WALLTIME_REACHED, 3.0)
        assert end.progress == pytest.approx(3.0 / 9.0)

    def test_kills_disabled(self):
        m = Machine([GOLDEN_SPEEDS], [GOLDEN_POWER], 0, kill_on_walltime=False)
        m.start(0, [0], ops_gflop=100.0, walltime_s=4.0)
        (end,) = run_to_end(m)
        assert (end.state, end.finish_s) == (COMPLETED_SUCCESSFULLY, 10.0)


class TestKill:
    def test_kill_frees_hosts_and_reports_progress(self):
        m = golden_machine()
        m.start(3, [0, 1], ops_gflop=100.0)
        m.advance(4.0)
        end = m.kill(3)
        assert (end.state, end.start_s, end.finish_s) == (COMPLETED_KILLED, 0.0, 4.0)
        assert end.progress == pytest.approx(0.4)
        assert end.energy_j == pytest.approx(800.0)
        assert m.job_on[:2] == [-1, -1] and not m.is_running(3)
        assert m.next_time() == math.inf  # the stale end event is dropped
        assert m.advance(20.0) == []
        m.start(4, [0, 1], delay_s=1.0)  # the hosts are usable again

    def test_kill_unknown_job(self):
        with pytest.raises(SimulationError, match="cannot kill job 9: it is not running"):
            golden_machine().kill(9)


class TestErrors:
    def test_busy_host(self):
        m = golden_machine()
        m.start(0, [0, 1], delay_s=5.0)
        with pytest.raises(SimulationError, match="job 1: resource 1 is busy with job 0"):
            m.start(1, [2, 1], delay_s=5.0)
        assert m.job_on == [0, 0, -1, -1]  # nothing of job 1 was taken
        assert not m.is_running(1)

    def test_unknown_host(self):
        with pytest.raises(SimulationError, match=r"job 0: unknown resource 4 \(0..3\)"):
            golden_machine().start(0, [4], delay_s=1.0)

    @pytest.mark.parametrize("hosts, message", [
        ((3, 4, 5, 6, 7, 8), "resource 5 is busy with job 0"),  # consecutive, one busy
        ((6, 7, 8, 9, 10, 11), r"unknown resource 10 \(0..9\)"),  # consecutive, past the end
        ((-1, 0, 1, 2, 3, 4), r"unknown resource -1 \(0..9\)"),
        ((8, 7, 6, 5, 4), "resource 5 is busy with job 0"),  # not ascending: host by host
    ])
    def test_spans_of_hosts_are_checked_host_by_host_when_refused(self, hosts, message):
        m = Machine([[1.0]] * 10, [[1.0]] * 10)
        m.start(0, [5], delay_s=5.0)
        with pytest.raises(SimulationError, match=f"job 1: {message}"):
            m.start(1, hosts, delay_s=5.0)
        assert m.job_on == [-1] * 5 + [0] + [-1] * 4 and not m.is_running(1)
        m.start(2, (6, 7, 8, 9, 0), delay_s=1.0)  # free hosts, not consecutive
        m.start(3, (1, 2, 3, 4), delay_s=1.0)
        assert m.job_on == [2, 3, 3, 3, 3, 0, 2, 2, 2, 2]

    def test_job_already_running(self):
        m = golden_machine()
        m.start(0, [0], delay_s=5.0)
        with pytest.raises(SimulationError, match="job 0 is already running"):
            m.start(0, [1], delay_s=5.0)

    @pytest.mark.parametrize("kwargs", [{}, {"delay_s": 1.0, "ops_gflop": 1.0}])
    def test_profile_given_exactly_once(self, kwargs):
        with pytest.raises(SimulationError, match="give exactly one of delay_s and ops_gflop"):
            golden_machine().start(0, [0], **kwargs)

    def test_empty_allocation(self):
        with pytest.raises(SimulationError, match="job 0: empty allocation"):
            golden_machine().start(0, [], delay_s=1.0)

    def test_unknown_state(self):
        with pytest.raises(SimulationError, match="resource 0 has no power state 4"):
            golden_machine().set_state([0], 4)

    def test_time_never_goes_back(self):
        m = golden_machine()
        m.advance(5.0)
        with pytest.raises(SimulationError, match="time cannot go back from 5.0 to 4.0"):
            m.advance(4.0)
        assert m.now == 5.0


class TestEnergy:
    def test_energy_integrates_state_power_per_host(self):
        m = Machine([GOLDEN_SPEEDS] * 2, [GOLDEN_POWER] * 2, 3)  # both sleeping: 2 x 5 W
        assert m.power_w == 10.0
        m.advance(10.0)
        m.set_state([0], 2)  # 25 W
        m.advance(14.0)
        m.set_state([0, 1], 0)  # 2 x 100 W
        m.advance(15.0)
        assert m.host_energy_j(0) == pytest.approx(10 * 5 + 4 * 25 + 100)
        assert m.host_energy_j(1) == pytest.approx(14 * 5 + 100)
        assert m.energy_j() == pytest.approx(m.host_energy_j(0) + m.host_energy_j(1))
        assert m.power_w == 200.0

    def test_job_energy_counts_only_its_hosts_while_it_runs(self):
        m = Machine([GOLDEN_SPEEDS] * 2, [GOLDEN_POWER] * 2, 3)
        m.advance(3.0)
        m.set_state([0], 0)
        m.start(0, [0], delay_s=2.0)
        m.advance(1.0 + m.now)
        m.set_state([0], 1)  # same power in state 1
        (end,) = run_to_end(m)
        assert end.energy_j == pytest.approx(200.0)
        assert m.energy_j() == pytest.approx(3 * 5 + 200 + 5 * 5)

    def test_mismatched_tables(self):
        with pytest.raises(ValueError, match="same hosts"):
            Machine([GOLDEN_SPEEDS] * 2, [GOLDEN_POWER], 0)
