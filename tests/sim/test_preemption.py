"""Block preemption (PREMA-style) of the built-in engine: hand-checked runs and invariants.

Platforms: ``one_node(n)`` (cores of 1 GFLOP/s and 100 W running), so a ``parallel_homogeneous``
job of ``w`` GFLOP runs ``w`` seconds alone and a block of ``b`` seconds is ``b`` GFLOP. Deadlines
are ``relative:3`` (submit + 3 x run time alone) and the policy is EDF unless said otherwise.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import pytest
from builders import by_id, job, one_node, workload
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.errors import ConfigError
from hdrm.policies.pairs import resolve_policy
from hdrm.policies.sla_orders import bind_tenants
from hdrm.results.sla import sla_report
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.sim.inputs import InputSpec, load_inputs
from hdrm.sim.machine import COMPLETED_SUCCESSFULLY
from hdrm.sim.outputs import job_results, write_outputs
from hdrm.sim.preemption import next_boundary, parse_preemption, pick_victims
from hdrm.sim.preemptive import PreemptedOutcome, PreemptiveSimulation, preemption_rows
from hdrm.workload.tenant_files import tenants_for

GOLDEN = Path(__file__).resolve().parents[2].parent / "shared" / "batsim" / "golden"


def _run(jobs, preemption="none", overhead_s=0.0, cores=1, policy="edf", sla="relative:3",
         **config):
    """Run ``jobs`` (tenants by user) with EDF; returns (simulation, result, tenants)."""
    load = workload(jobs)
    table = tenants_for(load, "user", sla)
    sim = Simulation(one_node(cores), load, SimulationConfig(
        preemption=preemption, preemption_overhead_s=overhead_s, **config))
    pair = bind_tenants(resolve_policy(policy), table, sim.core)
    return sim, sim.run(pair), table


def _two_tenants():
    """A long batch request of tenant 0 (10 s, deadline 30) and an urgent one of tenant 1 that
    arrives at 3.5 (2 s, deadline 3.5 + 6 = 9.5), on one core."""
    return [job(0, 0.0, walltime_s=100, run_time_s=10, ops_gflop=10, user_id=0, id="bulk"),
            job(1, 3.5, walltime_s=100, run_time_s=2, ops_gflop=2, user_id=1, id="urgent")]


class TestTwoTenantsOneAccelerator:
    def test_without_preemption_the_urgent_request_waits_and_misses(self):
        sim, result, table = _run(_two_tenants())
        out = by_id(result)
        assert type(sim) is Simulation
        assert (out["bulk"].start_s, out["bulk"].finish_s) == (0.0, 10.0)
        assert (out["urgent"].start_s, out["urgent"].finish_s) == (10.0, 12.0)  # 12 > 9.5

    def test_block_preemption_suspends_the_bulk_request_at_its_next_boundary(self):
        # at 3.5 the bulk request has done 3.5 GFLOP: its next 1 s block ends at 4; the urgent
        # one runs 4-6; the bulk one resumes at 6 with its 6 GFLOP left and ends at 12.
        sim, result, _ = _run(_two_tenants(), "block:1")
        out = by_id(result)
        assert isinstance(sim, PreemptiveSimulation)
        bulk, urgent = out["bulk"], out["urgent"]
        assert (urgent.start_s, urgent.finish_s) == (4.0, 6.0)
        assert isinstance(bulk, PreemptedOutcome)
        assert (bulk.start_s, bulk.finish_s, bulk.preemptions, bulk.run_s) == (0.0, 12.0, 1, 10.0)
        assert bulk.state == COMPLETED_SUCCESSFULLY and bulk.job.ops_gflop == 10
        assert bulk.energy_j == pytest.approx(10 * 100.0)  # executed time only: 10 s at 100 W
        assert len(result.outcomes) == 2

    def test_a_block_of_two_seconds_stops_later(self):
        _, result, _ = _run(_two_tenants(), "block:2")  # boundary at 4 GFLOP as well
        assert by_id(result)["urgent"].start_s == 4.0
        _, result, _ = _run(_two_tenants(), "block:2.5")  # 3.5 done: next boundary 5
        out = by_id(result)
        assert (out["urgent"].start_s, out["bulk"].finish_s) == (5.0, 12.0)

    def test_the_overhead_lengthens_the_resumed_part(self):
        _, result, _ = _run(_two_tenants(), "block:1", overhead_s=0.5)
        bulk = by_id(result)["bulk"]
        assert (bulk.finish_s, bulk.run_s) == (12.5, 10.5)
        assert bulk.energy_j == pytest.approx(10.5 * 100.0)

    def test_sla_satisfaction_improves_over_none(self):
        rates = {}
        for mode in ("none", "request", "block:1"):
            _, result, table = _run(_two_tenants(), mode)
            rates[mode] = sla_report(table, result.workload.jobs,
                                     job_results(result)).overall.sla_satisfaction
        assert rates == {"none": 0.5, "request": 0.5, "block:1": 1.0}

    def test_out_preemptions_rows(self):
        _, result, _ = _run(_two_tenants(), "block:1")
        assert preemption_rows(result) == [("bulk", 0.0, 0.0, 12.0, 1, 10.0),
                                           ("urgent", 3.5, 4.0, 6.0, 0, 2.0)]
        row = {r.job_id: r for r in job_results(result)}["bulk"]  # out_jobs.csv: one row
        assert (row.starting_time, row.finish_time, row.execution_time) == (0.0, 12.0, 10.0)

    def test_a_request_that_ends_before_its_next_boundary_is_not_suspended(self):
        jobs = [job(0, 0.0, walltime_s=100, run_time_s=4, ops_gflop=4, user_id=0, id="bulk"),
                job(1, 3.5, walltime_s=100, run_time_s=2, ops_gflop=2, user_id=1, id="urgent")]
        _, result, _ = _run(jobs, "block:1", sla="relative:2")  # bulk's deadline 8 > urgent 7.5
        out = by_id(result)
        assert (out["bulk"].finish_s, out["urgent"].start_s) == (4.0, 4.0)
        assert not isinstance(out["bulk"], PreemptedOutcome)


def test_parse_preemption_and_its_errors():
    assert parse_preemption("none").mode == "none"
    spec = parse_preemption("block:0.002", 0.001)
    assert (spec.mode, spec.block_s, spec.overhead_s) == ("block", 0.002, 0.001)
    assert spec.suspends
    assert not parse_preemption("request").suspends
    for bad, words in [("layer", "choose none, request or block:SECONDS"),
                       ("block", "needs a block size"), ("block:-1", "needs a block size"),
                       ("request:2", "takes no size")]:
        with pytest.raises(ConfigError, match=words):
            parse_preemption(bad, where="--preemption")
    with pytest.raises(ConfigError, match="overhead"):
        parse_preemption("block:1", -1.0)


def test_next_boundary_and_victims():
    assert next_boundary(3.5, 1.0, 10.0) == 4.0
    assert next_boundary(4.0, 1.0, 10.0) == 4.0  # on a boundary: now
    assert next_boundary(9.5, 1.0, 10.0) is None  # it ends first
    low, mid, high = (job(i, res=r) for i, r in enumerate((1, 1, 2)))
    # the most urgent blocked job takes the least urgent running one that ranks below it
    assert pick_victims([(1.0, low)], [(5.0, mid), (9.0, high)]) == [high]
    assert pick_victims([(6.0, low)], [(5.0, mid)]) == []
    assert pick_victims([(1.0, high)], [(5.0, mid)]) == []  # too few cores


def test_refusals(tmp_path):
    jobs = workload(_two_tenants())
    with pytest.raises(ConfigError, match="policy 'first' ranks none above another"):
        Simulation(one_node(1), jobs, SimulationConfig(preemption="block:1")).run("fcfs")
    from gpu_builders import gpu_platform  # noqa: PLC0415 (tests' GPU platforms)

    with pytest.raises(ConfigError, match="GPU engine cannot suspend"):
        Simulation(gpu_platform([(4, 16384, 1, "V100M16")]), jobs,
                   SimulationConfig(preemption="block:1"))


@pytest.mark.skipif(not (GOLDEN / "sdsc1024_1k").is_dir(), reason="../shared goldens absent")
@pytest.mark.parametrize("mode", [None, "none", "request"])
def test_option_off_leaves_the_outputs_byte_identical(mode, tmp_path):
    # sha256 of out_jobs.csv written by the engine of commit dfbb836 (before this option), but
    # for consumed_energy: since s24 (engineer J) a SimGrid file's watts as Batsim -E charges
    # them (a delay job draws the hosts' idle 95 W, not 190 W); every other column is dfbb836's
    case = GOLDEN / "sdsc1024_1k"
    platform, load = load_inputs(InputSpec(str(case / "workload.json"), str(case / "platform.xml")))
    config = SimulationConfig(backfilling="easy") if mode is None else SimulationConfig(
        backfilling="easy", preemption=mode)
    sim = Simulation(platform, load, config)
    assert type(sim) is Simulation
    write_outputs(sim.run("fcfs"), tmp_path)
    digest = hashlib.sha256((tmp_path / "out_jobs.csv").read_bytes()).hexdigest()
    assert digest == "2be05658f50919bd776133a589df091736394bba894ca56e627acabb039ce206"


def _logged(sim):
    """Log every start and kill of ``sim``'s machine as (time, kind, key, cores)."""
    log = []
    machine = sim.machine
    start, kill = machine.start, machine.kill

    def logged_start(key, cores, **kwargs):
        log.append((machine.now, "start", key, tuple(cores)))
        start(key, cores, **kwargs)

    def logged_kill(key):
        end = kill(key)
        log.append((end.finish_s, "kill", key, tuple(end.cores)))
        return end

    machine.start, machine.kill = logged_start, logged_kill
    return log


@st.composite
def _cases(draw):
    cores = draw(st.integers(1, 3))
    n = draw(st.integers(1, 8))
    jobs = [job(i, draw(st.integers(0, 40)) / 2, res=draw(st.integers(1, cores)),
                walltime_s=1000, run_time_s=(w := draw(st.integers(1, 48)) / 4), ops_gflop=w,
                user_id=draw(st.integers(0, 2))) for i in range(n)]
    return cores, jobs, draw(st.sampled_from([0.5, 1.0, 2.5])), draw(st.sampled_from(
        ["edf", "least_laxity", "sjf"])), draw(st.integers(1, 4))


@settings(max_examples=60, deadline=None)
@given(_cases())
def test_invariants_on_random_small_cases(case):
    cores, jobs, block, policy, k = case
    load = workload(jobs)
    table = tenants_for(load, "user", f"relative:{k}")
    sim = Simulation(one_node(cores), load, SimulationConfig(preemption=f"block:{block}",
                                                             contention="none"))
    log = _logged(sim)
    result = sim.run(bind_tenants(resolve_policy(policy), table, sim.core))
    # every job ends once, successfully
    assert sorted(o.job.idx for o in result.outcomes) == list(range(len(jobs)))
    assert all(o.state == COMPLETED_SUCCESSFULLY for o in result.outcomes)
    # time never goes back
    times = [t for t, *_ in log]
    assert times == sorted(times)
    clock = [row.time_s for row in result.timeline]
    assert clock == sorted(clock)
    ends = {o.job.idx: o for o in result.outcomes}
    segments: dict[int, list[tuple[float, float, tuple]]] = {}
    open_at: dict[int, tuple[float, tuple]] = {}
    for t, kind, key, held in log:
        if kind == "start":
            assert key not in open_at
            open_at[key] = (t, held)
        else:
            t0, held0 = open_at.pop(key)
            segments.setdefault(key, []).append((t0, t, held0))
    for key, (t0, held) in open_at.items():
        segments.setdefault(key, []).append((t0, ends[key].finish_s, held))
    # no core double-booked
    by_core: dict[int, list[tuple[float, float]]] = {}
    for parts in segments.values():
        for t0, t1, held in parts:
            for c in held:
                by_core.setdefault(c, []).append((t0, t1))
    for spans in by_core.values():
        spans.sort()
        assert all(a[1] <= b[0] + 1e-9 for a, b in zip(spans, spans[1:]))
    for j in load.jobs:
        parts = segments[j.idx]
        out = ends[j.idx]
        # executed work (1 GFLOP/s, no contention, no overhead) == the request's work
        assert sum(t1 - t0 for t0, t1, _ in parts) == pytest.approx(j.ops_gflop, abs=1e-9)
        assert out.start_s == parts[0][0] >= j.submit_s and out.finish_s == parts[-1][1]
        suspended = len(parts) - 1
        assert getattr(out, "preemptions", 0) == suspended
        if suspended:
            assert out.run_s == pytest.approx(j.ops_gflop, abs=1e-9)
            done = 0.0
            for t0, t1, _ in parts[:-1]:  # every suspension at a block boundary
                done += t1 - t0
                assert done / block == pytest.approx(round(done / block), abs=1e-6)


def test_a_killed_job_restarted_under_its_key_ends_at_its_new_end():
    # the first run's end (10) stays in the machine's heap; the second run must not take it
    from hdrm.sim.machine import Machine

    machine = Machine([[1.0]] * 1, [[100.0]] * 1)
    machine.start(0, [0], ops_gflop=10.0)
    machine.advance(4.0)
    machine.kill(0)
    machine.start(0, [0], ops_gflop=8.0)
    assert machine.next_time() == 12.0
    assert [(e.state, e.start_s, e.finish_s) for e in machine.advance(20.0)] == [
        (COMPLETED_SUCCESSFULLY, 4.0, 12.0)]
    machine.start(0, [0], ops_gflop=1.0)  # restarted at 20: ends at 21, not at an old end
    assert machine.next_time() == 21.0


def test_the_boundary_is_re_timed_when_contention_ends():
    # 3 cores of 1 GFLOP/s sharing 10 GB/s (hdeeprm: 0.75 of the speed when oversubscribed).
    # A (2 cores x 3 GB/s, 10 GFLOP, deadline 30) and C (1 core x 6 GB/s, 2.7 GFLOP, deadline
    # 8.1) contend from 0: both at 0.75. B (2 cores, 1 GFLOP, deadline 6.5) arrives at 3.5 and
    # cannot start: A, the least urgent with 2 cores, is the victim. A has done 2.625 GFLOP: its
    # next 1 GFLOP block ends at 3, 0.375 away. C ends at 3.6 (A at 0.75: 0.3 left), then A runs
    # alone at full speed and reaches its boundary at 3.9 (4.0 had the speed stayed 0.75).
    platform = one_node(3, mem_bw_gbps=10.0)
    jobs = workload([
        job(0, 0.0, res=2, walltime_s=100, run_time_s=10, ops_gflop=10, mem_bw_gbps=3.0,
            user_id=0, id="A"),
        job(1, 0.0, res=1, walltime_s=100, run_time_s=2.7, ops_gflop=2.7, mem_bw_gbps=6.0,
            user_id=1, id="C"),
        job(2, 3.5, res=2, walltime_s=100, run_time_s=1, ops_gflop=1, user_id=2, id="B")])
    table = tenants_for(jobs, "user", "relative:3")
    sim = Simulation(platform, jobs, SimulationConfig(preemption="block:1",
                                                      contention="hdeeprm"))
    out = by_id(sim.run(bind_tenants(resolve_policy("edf"), table, sim.core)))
    assert out["C"].finish_s == pytest.approx(3.6)
    assert out["B"].start_s == pytest.approx(3.9) and out["B"].finish_s == pytest.approx(4.9)
    a = out["A"]
    assert (a.start_s, a.preemptions) == (0.0, 1)
    assert a.finish_s == pytest.approx(11.9) and a.run_s == pytest.approx(10.9)


def test_a_job_that_starts_at_this_instant_is_stopped_only_after_one_block():
    # One 1 GFLOP/s core, block 1: a job started now has done no work; its first boundary is at
    # 1 GFLOP, not at 0 (stopping where it started would make no progress)
    load = workload([job(0, 0.0, walltime_s=100, run_time_s=5, ops_gflop=5, user_id=0, id="a")])
    sim = Simulation(one_node(1), load, SimulationConfig(preemption="block:1"))
    pair = bind_tenants(resolve_policy("edf"), tenants_for(load, "user", "relative:3"), sim.core)
    assert sim.next_decision()
    assert [j.id for j, _ in sim.decide(pair)] == ["a"]
    assert sim._boundary_of(0) == pytest.approx(1.0)
    sim.machine.advance(2.5)  # 2.5 GFLOP done: the next boundary is 3
    assert sim._boundary_of(0) == pytest.approx(3.0)


#: 15 jobs (SWF) on platforms/tiny4.json found by a differential fuzz: with least laxity, EASY
#: and contention, jobs started at an instant were picked as victims at that instant, suspended
#: with no work done, queued and started again, without end.
LIVELOCK_SWF = """\
; MaxProcs: 4
1 0 -1 3 1 -1 -1 1 11 -1 1 29 -1 -1 -1 -1 -1 -1
2 1 -1 2 1 -1 -1 1 3 -1 1 4 -1 -1 -1 -1 -1 -1
3 4 -1 10 1 -1 -1 1 38 -1 1 18 -1 -1 -1 -1 -1 -1
4 10 -1 3 2 -1 -1 2 6 -1 1 28 -1 -1 -1 -1 -1 -1
5 10 -1 5 1 -1 -1 1 9 -1 1 9 -1 -1 -1 -1 -1 -1
6 12 -1 5 3 -1 -1 3 8 -1 1 25 -1 -1 -1 -1 -1 -1
7 13 -1 6 3 -1 -1 3 24 -1 1 25 -1 -1 -1 -1 -1 -1
8 14 -1 7 3 -1 -1 3 35 -1 1 4 -1 -1 -1 -1 -1 -1
9 15 -1 9 1 -1 -1 1 13 -1 1 22 -1 -1 -1 -1 -1 -1
10 16 -1 3 2 -1 -1 2 9 -1 1 13 -1 -1 -1 -1 -1 -1
12 19 -1 3 1 -1 -1 1 6 -1 1 10 -1 -1 -1 -1 -1 -1
13 20 -1 2 1 -1 -1 1 3 -1 1 32 -1 -1 -1 -1 -1 -1
14 26 -1 7 1 -1 -1 1 20 -1 1 23 -1 -1 -1 -1 -1 -1
15 26 -1 6 1 -1 -1 1 9 -1 1 8 -1 -1 -1 -1 -1 -1
19 36 -1 5 1 -1 -1 1 7 -1 1 9 -1 -1 -1 -1 -1 -1
"""


@pytest.mark.parametrize("backfill", ["easy", "conservative"])
def test_block_preemption_with_backfilling_ends(backfill, tmp_path):
    import subprocess
    import sys

    swf = tmp_path / "jobs.swf"
    swf.write_text(LIVELOCK_SWF)
    platform = Path(__file__).resolve().parents[2] / "platforms" / "tiny4.json"
    done = subprocess.run(
        [sys.executable, "-m", "hdrm.cli.main", "replay", "--platform", str(platform),
         "--workload", str(swf), "--seed", "22", "--tenants", "user", "--policy",
         "least_laxity", "--backfill", backfill, "--preemption", "block:600",
         "--outdir", str(tmp_path / "out")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    rows = (tmp_path / "out" / "out_preemptions.csv").read_text().splitlines()[1:]
    assert len(rows) == 15
    # no job is longer than a 600 s block: none can be suspended, and each ran once
    assert all(row.split(",")[4] == "0" for row in rows)
