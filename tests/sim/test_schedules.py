"""Hand-checked schedules of the built-in engine on tiny platforms.

Platforms: ``one_node(4)`` (4 identical cores) and ``hetero_two_nodes`` (node 0: cores 0-1 at
4 GFLOP/s, 200 W; node 1: cores 2-3 at 1 GFLOP/s, 50 W). Power: running and contended cores draw
their full power, idle cores of an awake processor 30 %, sleeping ones 5 %. Unless said otherwise
jobs are ``delay`` jobs that run exactly their requested time (Batsim ends them at that time as
``COMPLETED_WALLTIME_REACHED``: a delay job succeeds only if its delay is below its walltime), and
the policy is FCFS with the ``high_gflops`` placement (fastest cores, then lowest ids).
"""

from __future__ import annotations

import math

import pytest
from builders import by_id, hetero_two_nodes, job, one_node, simulate, starts

from hdrm.sim.engine import REJECTED
from hdrm.sim.machine import COMPLETED_SUCCESSFULLY, COMPLETED_WALLTIME_REACHED
from hdrm.sim.outputs import job_results, schedule_summary


class TestBackfillingIdenticalCores:
    """J0 (3 cores, 10 s) runs first; J1 (2 cores, 20 s) waits for it; J2 needs all 4 cores;
    J3 (1 core, 100 s) and J4 (1 core, 10 s) could start at once on the free core."""

    @staticmethod
    def jobs():
        spec = [(3, 10.0), (2, 20.0), (4, 10.0), (1, 100.0), (1, 10.0)]
        return [job(i, 0.0, n, wall, id=f"J{i}") for i, (n, wall) in enumerate(spec)]

    def test_none_is_strict_head_of_line(self):
        # 0: J0; 10: J1; 30: J2 (4 cores); 40: J3 and J4
        result = simulate(one_node(4), self.jobs(), backfilling="none")
        assert starts(result) == {"J0": 0.0, "J1": 10.0, "J2": 30.0, "J3": 40.0, "J4": 40.0}
        assert result.makespan_s == 140.0

    def test_easy_protects_only_the_head(self):
        # 0: head J1, shadow 10, 2 extra cores: J3 (ends 100 > 10) takes 1 extra core.
        # 10: J1 starts; head J2, shadow 100 (J3's end): J4 ends at 20 <= 100, backfilled.
        # J2 waits for J3 until 100: EASY delayed the second job.
        result = simulate(one_node(4), self.jobs(), backfilling="easy")
        assert starts(result) == {"J0": 0.0, "J1": 10.0, "J2": 100.0, "J3": 0.0, "J4": 10.0}

    def test_easy_first_counts_fewer_extra_cores(self):
        # 5 cores. At 0: A (1 core) and B (2 cores) run until 100, C (1 core) until 200, 1 core
        # free. At 1 the head H (2 cores) arrives with W (1 core, 500 s). Shadow time 100 for both;
        # easy counts 4 free cores there (2 extra) and starts W at 1; easy_first stops after A's
        # release (0 extra): W waits, starts at 100 beside H.
        jobs = [job(0, 0.0, 1, 100.0, id="A"), job(1, 0.0, 2, 100.0, id="B"),
                job(2, 0.0, 1, 200.0, id="C"), job(3, 1.0, 2, 50.0, id="H"),
                job(4, 1.0, 1, 500.0, id="W")]
        assert starts(simulate(one_node(5), jobs, backfilling="easy"))["W"] == 1.0
        out = starts(simulate(one_node(5), jobs, backfilling="easy_first"))
        assert (out["H"], out["W"]) == (100.0, 100.0)

    def test_conservative_protects_every_job(self):
        # 0: J1 reserved [10, 30), J2 [30, 40), J3 (100 s) only from 40; J4 fits [0, 10) now.
        result = simulate(one_node(4), self.jobs(), backfilling="conservative")
        assert starts(result) == {"J0": 0.0, "J1": 10.0, "J2": 30.0, "J3": 40.0, "J4": 0.0}

    def test_a_backfilled_job_that_overruns_is_killed_at_its_walltime(self):
        # J4 claims 10 s but would run 50 s: it is killed at its walltime, J1 keeps its start
        jobs = self.jobs()
        jobs[4] = job(4, 0.0, 1, 10.0, 50.0, id="J4")
        out = by_id(simulate(one_node(4), jobs, backfilling="conservative"))
        assert (out["J4"].state, out["J4"].finish_s) == (COMPLETED_WALLTIME_REACHED, 10.0)
        assert out["J1"].start_s == 10.0


class TestBackfillingHeterogeneousMemory:
    """Nodes of 1000 MB. X (2 cores x 600 MB) gets one core per node: 0 and 2. Y (2 x 500 MB)
    cannot fit until X ends (each node has 400 MB left), although 2 cores are free. Z (1 x 300 MB,
    30 s) fits now on core 1."""

    @staticmethod
    def jobs():
        return [job(0, 0.0, 2, 10.0, mem_mb=600.0, id="X"),
                job(1, 0.0, 2, 10.0, mem_mb=500.0, id="Y"),
                job(2, 0.0, 1, 30.0, mem_mb=300.0, id="Z")]

    def run(self, backfilling):
        return simulate(hetero_two_nodes(memory_mb=(1000.0, 1000.0)), self.jobs(),
                        backfilling=backfilling)

    def test_memory_blocks_the_head(self):
        out = by_id(self.run("none"))
        assert {k: (o.start_s, o.cores) for k, o in out.items()} == {
            "X": (0.0, (0, 2)), "Y": (10.0, (0, 1)), "Z": (10.0, (2,))}

    def test_conservative_reserves_per_node_memory(self):
        # Y (2 x 500 MB) cannot fit at 0 (400 MB left on each node): it is reserved at 10 on node
        # 0 (the first node that holds it). Z (300 MB, 30 s) fits now; high_gflops would put it on
        # core 1 of node 0, inside Y's reservation, so it goes to node 1 (core 3) and starts at 0.
        out = by_id(self.run("conservative"))
        assert {k: (o.start_s, o.cores) for k, o in out.items()} == {
            "X": (0.0, (0, 2)), "Y": (10.0, (0, 1)), "Z": (0.0, (3,))}

    def test_easy_reservation_counts_cores_that_hold_the_memory(self):
        # head Y: shadow 10 with 4 cores of 500 MB then: 2 extra; Z (30 s) takes one at 0
        result = self.run("easy")
        out = by_id(result)
        assert {k: (o.start_s, o.cores) for k, o in out.items()} == {
            "X": (0.0, (0, 2)), "Y": (10.0, (0, 2)), "Z": (0.0, (1,))}
        (shortage,) = result.overutilizations.core_shortage
        assert (shortage.time_s, shortage.job_id, shortage.requested, shortage.available) == (
            0.0, "Y", 2, 0)
        assert result.overutilizations.memory_shortage == []

    def test_easy_never_delays_the_head_when_memory_is_bounded(self):
        # X holds cores 0-1 until 10. Head H (3 x 300 MB): shadow 10, 4 cores of 300 MB then, so
        # 1 extra core. B (1 x 900 MB, 100 s) takes it on node 1 and leaves 100 MB there: at 10
        # only 2 cores can hold 300 MB and H waits for B until 100.
        jobs = [job(0, 0.0, 2, 10.0, id="X"), job(1, 0.0, 3, 10.0, mem_mb=300.0, id="H"),
                job(2, 0.0, 1, 100.0, mem_mb=900.0, id="B")]
        result = simulate(hetero_two_nodes(memory_mb=(1000.0, 1000.0)), jobs, backfilling="easy")
        assert starts(result)["H"] == 10.0

    def test_conservative_never_delays_a_reservation_when_memory_is_bounded(self):
        # X (600 MB) on core 0 until 10. Y (2 x 700 MB) fits only once X ends (one core per
        # node). The Profile reserves Y at [0, 10) on core counts; L (1 x 700 MB, 100 s) then
        # starts at 0 on node 1 and Y cannot start before 100.
        jobs = [job(0, 0.0, 1, 10.0, mem_mb=600.0, id="X"),
                job(1, 0.0, 2, 10.0, mem_mb=700.0, id="Y"),
                job(2, 0.0, 1, 100.0, mem_mb=700.0, id="L")]
        result = simulate(hetero_two_nodes(memory_mb=(1000.0, 1000.0)), jobs,
                          backfilling="conservative")
        assert starts(result)["Y"] == 10.0


class TestContention:
    """One processor of 2 cores (2 GFLOP/s, 100 W each) with 10 GB/s. A (t=0) and B (t=4) each
    compute 20 GFLOP on 1 core demanding 6 GB/s: 10 s alone; together 12 GB/s > 10."""

    @staticmethod
    def run(contention, walltime_s=100.0):
        jobs = [job(0, 0.0, 1, walltime_s, ops_gflop=20.0, mem_bw_gbps=6.0, id="A"),
                job(1, 4.0, 1, walltime_s, ops_gflop=20.0, mem_bw_gbps=6.0, id="B")]
        return simulate(one_node(2, gflops=2.0, power_w=100.0, mem_bw_gbps=10.0), jobs,
                        contention=contention)

    def test_hdeeprm_slows_both_jobs_while_they_overlap(self):
        # A: 8 GFLOP by 4, then 12 at 1.5 GFLOP/s: ends 12. B: 12 GFLOP by 12, 8 left at 2: 16.
        # Energy: [0, 4) 100 + 30 W, [4, 12) 200 W, [12, 16) 130 W: 520 + 1600 + 520 = 2640 J.
        result = self.run("hdeeprm")
        out = by_id(result)
        assert (out["A"].finish_s, out["B"].finish_s) == pytest.approx((12.0, 16.0))
        assert (out["A"].energy_j, out["B"].energy_j) == pytest.approx((1200.0, 1200.0))
        assert result.energy_j == pytest.approx(2640.0)
        (span,) = result.overutilizations.bandwidth
        assert (span.start_s, span.end_s, span.max_demand_gbps) == pytest.approx((4.0, 12.0, 12.0))
        assert [(r.time_s, r.contended_cores, r.power_w) for r in result.timeline] == [
            (0.0, 0, 130.0), (4.0, 2, 200.0), (12.0, 0, 130.0), (16.0, 0, 10.0)]

    def test_none_keeps_nominal_speeds(self):
        # A 0-10, B 4-14; energy 130 x 4 + 200 x 6 + 130 x 4 = 2240 J
        result = self.run("none")
        out = by_id(result)
        assert (out["A"].finish_s, out["B"].finish_s) == (10.0, 14.0)
        assert result.energy_j == pytest.approx(2240.0)
        assert result.overutilizations.bandwidth == []

    def test_smooth_slows_by_the_documented_fraction(self):
        speed = 2.0 * 1.2 ** -0.5  # rho = 12 / 10
        a_end = 4.0 + 12.0 / speed
        result = self.run("smooth")
        out = by_id(result)
        assert out["A"].finish_s == pytest.approx(a_end)
        assert out["B"].finish_s == pytest.approx(a_end + 8.0 / 2.0)
        assert result.energy_j == pytest.approx(130 * 4 + 200 * (a_end - 4) + 130 * 4)

    def test_contention_pushes_a_job_past_its_walltime(self):
        out = by_id(self.run("hdeeprm", walltime_s=11.0))
        assert (out["A"].state, out["A"].finish_s) == (COMPLETED_WALLTIME_REACHED, 11.0)
        out = by_id(self.run("none", walltime_s=11.0))
        assert (out["A"].state, out["A"].finish_s) == (COMPLETED_SUCCESSFULLY, 10.0)


def test_heterogeneous_parallel_job_ends_with_its_slowest_core():
    # 3 cores of 40 GFLOP: cores 0-1 (4 GFLOP/s) done at 10, core 2 (1 GFLOP/s) at 40.
    # Job energy: 40 s x (200 + 200 + 50) W = 18,000 J; core 3 idles awake at 15 W: 600 J more.
    result = simulate(hetero_two_nodes(), [job(0, 0.0, 3, 100.0, ops_gflop=40.0)])
    (o,) = result.outcomes
    assert (o.cores, o.finish_s, o.energy_j) == ((0, 1, 2), 40.0, pytest.approx(18000.0))
    assert result.energy_j == pytest.approx(18600.0)


def test_sleeping_platform_energy():
    # 4 cores of 100 W asleep (5 W) until 5; then core 0 runs 10 s, cores 1-3 idle (30 W)
    result = simulate(one_node(4), [job(0, 5.0, 1, 10.0)])
    assert result.energy_j == pytest.approx(4 * 5 * 5.0 + 10 * (100.0 + 3 * 30.0))
    assert result.makespan_s == 15.0


class TestWalltime:
    def test_kill_at_walltime_frees_the_cores(self):
        jobs = [job(0, 0.0, 4, 10.0, 30.0, id="long"), job(1, 0.0, 4, 5.0, id="next")]
        out = by_id(simulate(one_node(4), jobs))
        assert (out["long"].state, out["long"].finish_s) == (COMPLETED_WALLTIME_REACHED, 10.0)
        assert (out["next"].start_s, out["next"].finish_s) == (10.0, 15.0)

    def test_delay_equal_to_walltime_is_killed_then(self):
        # Batsim 4.2.1: a delay job succeeds only if delay < walltime (golden/sdsc1024_1k: 60 jobs
        # with delay == walltime, all COMPLETED_WALLTIME_REACHED); the next job starts at the
        # same time either way
        jobs = [job(0, 0.0, 4, 10.0, id="tie"), job(1, 0.0, 4, 10.0, 9.5, id="below"),
                job(2, 0.0, 4, 5.0, id="next")]
        result = simulate(one_node(4), jobs)
        out = by_id(result)
        assert (out["tie"].state, out["tie"].finish_s) == (COMPLETED_WALLTIME_REACHED, 10.0)
        assert (out["below"].state, out["below"].finish_s) == (COMPLETED_SUCCESSFULLY, 19.5)
        assert out["next"].start_s == 19.5
        rows = {r.job_id: r for r in job_results(result)}  # out_jobs.csv
        assert (rows["tie"].success, rows["tie"].final_state) == (0, COMPLETED_WALLTIME_REACHED)
        assert (rows["below"].success, rows["next"].success) == (1, 0)
        summary = schedule_summary(result)  # out_schedule.csv
        assert (summary["nb_jobs_success"], summary["nb_jobs_killed"]) == (1, 2)
        out = by_id(simulate(one_node(4), jobs, kill_on_walltime=False))
        assert out["tie"].state == COMPLETED_SUCCESSFULLY

    def test_kills_can_be_disabled(self):
        jobs = [job(0, 0.0, 4, 10.0, 30.0, id="long"), job(1, 0.0, 4, 5.0, id="next")]
        out = by_id(simulate(one_node(4), jobs, kill_on_walltime=False))
        assert (out["long"].state, out["long"].finish_s) == (COMPLETED_SUCCESSFULLY, 30.0)
        assert out["next"].start_s == 30.0


class TestRejection:
    def test_jobs_that_can_never_run_are_rejected_once(self):
        platform = hetero_two_nodes(memory_mb=(1000.0, 1000.0))
        jobs = [job(0, 0.0, 5, 10.0, id="wide"), job(1, 0.0, 0, 10.0, id="none"),
                job(2, 1.0, 1, 10.0, mem_mb=2000.0, id="fat"),
                job(3, 2.0, 3, 10.0, mem_mb=600.0, id="spread"), job(4, 3.0, 2, 10.0, 9.0, id="ok")]
        result = simulate(platform, jobs)
        out = by_id(result)
        assert len(result.outcomes) == 5
        assert {k: o.state for k, o in out.items()} == {
            "wide": REJECTED, "none": REJECTED, "fat": REJECTED, "spread": REJECTED,
            "ok": COMPLETED_SUCCESSFULLY}
        assert out["wide"].reason == "requests 5 cores, the platform has 4"
        assert out["none"].reason == "requests no core"
        assert out["fat"].reason == "needs 2000 MB per core, the largest node has 1000 MB"
        # 600 MB per core: each 1000 MB node holds one such core, 2 in all
        assert out["spread"].reason == (
            "requests 3 cores of 600 MB, the nodes' memory holds at most 2 such cores")
        assert (out["ok"].start_s, out["ok"].cores) == (3.0, (0, 1))
        assert out["wide"].start_s == -1.0 and out["wide"].cores == ()


class TestDecisionSemantics:
    """SJF on 4 cores. J0 (4 cores, 10 s) runs from 0. J1 (3 cores, 50 s) arrives at 1 and is
    picked but does not fit; J2 (3 cores, 5 s) arrives at 2 and J3 (1 core, 5 s) at 3.

    ``event`` re-orders at 10: J2, J3 start and J1 waits until J2 ends at 15. ``commit`` holds
    the pick J1, which starts at 10; J2 then becomes the held pick and waits for J1 until 60. J3
    runs at 10 only with EASY (ends 15, before J2's shadow time 60); without backfilling it waits
    behind the held J2."""

    @staticmethod
    def jobs():
        return [job(0, 0.0, 4, 10.0, id="J0"), job(1, 1.0, 3, 50.0, id="J1"),
                job(2, 2.0, 3, 5.0, id="J2"), job(3, 3.0, 1, 5.0, id="J3")]

    @pytest.mark.parametrize("decision,backfilling,expected", [
        ("event", "none", {"J0": 0.0, "J1": 15.0, "J2": 10.0, "J3": 10.0}),
        ("event", "easy", {"J0": 0.0, "J1": 15.0, "J2": 10.0, "J3": 10.0}),
        ("commit", "none", {"J0": 0.0, "J1": 10.0, "J2": 60.0, "J3": 60.0}),
        ("commit", "easy", {"J0": 0.0, "J1": 10.0, "J2": 60.0, "J3": 10.0}),
    ])
    def test_starts(self, decision, backfilling, expected):
        result = simulate(one_node(4), self.jobs(), "sjf", decision=decision,
                          backfilling=backfilling)
        assert starts(result) == expected

    def test_semantics_agree_when_every_pick_fits(self):
        a, b = (simulate(one_node(5), [job(i, float(i), 1, 5.0) for i in range(8)], "sjf",
                         decision=decision) for decision in ("event", "commit"))
        assert starts(a) == starts(b) == {i: float(i) for i in range(8)}

    def test_unknown_decision(self):
        from hdrm.errors import ConfigError

        with pytest.raises(ConfigError, match=r"decision: unknown value 'commt'; choose one of: "
                                              r"event, commit"):
            simulate(one_node(1), [job(0)], decision="commt")


def test_outcomes_follow_workload_order_and_makespan():
    result = simulate(one_node(2), [job(0, 0.0, 2, 7.0), job(1, 0.0, 1, 3.0)])
    assert [o.job.idx for o in result.outcomes] == [0, 1]
    assert result.makespan_s == 10.0
    assert not math.isnan(result.energy_j)
