"""Job dependencies on the built-in engine: release at the predecessor's end plus think time."""

from __future__ import annotations

import math

import numpy as np
from builders import job, one_node, simulate, workload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hdrm.cli.main import main
from hdrm.sim.engine import REJECTED, Simulation, SimulationConfig
from hdrm.sim.inputs import InputSpec, load_inputs
from hdrm.workload.dependencies import Dependencies

CHAIN = """; MaxProcs: 4
1 0 -1 100 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1
2 5 -1 50 4 -1 -1 4 100 -1 1 1 1 -1 1 -1 1 10
3 10 -1 30 1 -1 -1 1 100 -1 1 1 1 -1 1 -1 2 0
4 12 -1 20 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 3 5
"""


def deps(pairs: list[tuple[int, int, float]]) -> Dependencies:
    """Dependencies from (job, predecessor, think time) triples."""
    job_, pred, think = zip(*pairs) if pairs else ((), (), ())
    return Dependencies(np.array(job_, dtype=np.int64), np.array(pred, dtype=np.int64),
                        np.array(think, dtype=np.float64))


def chain_result(tmp_path, **spec):
    path = tmp_path / "chain.swf"
    path.write_text(CHAIN)
    platform, load = load_inputs(InputSpec(str(path), homogeneous_procs=4, **spec))
    return Simulation(platform, load, SimulationConfig(contention="none")).run("fcfs")


def test_four_job_chain_by_hand(tmp_path):
    # 1 runs 0-100; 2 released at 100 + 10, runs 110-160; 3 at 160 + 0, runs 160-190;
    # 4 at 190 + 5, runs 195-215 (their trace submit times 5, 10, 12 no longer count)
    result = chain_result(tmp_path)
    rows = [(o.job.id, o.job.submit_s, o.start_s, o.finish_s) for o in result.outcomes]
    assert rows == [(1, 0.0, 0.0, 100.0), (2, 110.0, 110.0, 160.0), (3, 160.0, 160.0, 190.0),
                    (4, 195.0, 195.0, 215.0)]


def test_without_dependencies_trace_times(tmp_path):
    rows = [(o.job.id, o.start_s) for o in chain_result(tmp_path, dependencies=False).outcomes]
    assert rows == [(1, 0.0), (2, 100.0), (3, 150.0), (4, 150.0)]


def test_workload_jobs_unchanged_and_rerun_identical(tmp_path):
    path = tmp_path / "chain.swf"
    path.write_text(CHAIN)
    platform, load = load_inputs(InputSpec(str(path), homogeneous_procs=4))
    runs = [[(o.job.submit_s, o.start_s) for o in Simulation(platform, load).run("fcfs").outcomes]
            for _ in range(2)]
    assert runs[0] == runs[1]
    assert [j.submit_s for j in load.jobs] == [0.0, 5.0, 10.0, 12.0]


def test_rejected_and_killed_predecessors_still_release():
    # job 0 asks 8 cores of 4: rejected at 0, job 1 released at 0 + 3; job 2 is killed at its
    # walltime 5 (run 50), job 3 released at 5 + 2
    jobs = [job(0, 0, res=8), job(1, 1, walltime_s=4), job(2, 0, walltime_s=5, run_time_s=50),
            job(3, 0, walltime_s=1)]
    load = workload(jobs)
    ids = {j.id: j.idx for j in load.jobs}
    load.dependencies = deps([(ids[1], ids[0], 3.0), (ids[3], ids[2], 2.0)])
    result = simulate(one_node(4), load, contention="none")
    out = {o.job.id: o for o in result.outcomes}
    assert out[0].state == REJECTED
    assert (out[1].job.submit_s, out[1].start_s) == (3.0, 3.0)
    assert out[2].finish_s == 5.0 and out[2].state == "COMPLETED_WALLTIME_REACHED"
    assert (out[3].start_s, out[3].finish_s) == (7.0, 8.0)


def test_several_predecessors_wait_for_the_last():
    load = workload([job(0, 0, walltime_s=10), job(1, 0, walltime_s=30), job(2, 0, walltime_s=1)])
    load.dependencies = deps([(2, 0, 5.0), (2, 1, 1.0)])
    out = {o.job.id: o for o in simulate(one_node(4), load, contention="none").outcomes}
    assert out[2].start_s == 31.0  # max(10 + 5, 30 + 1)


def test_replay_summary_says_dependencies(tmp_path, capsys):
    path = tmp_path / "chain.swf"
    path.write_text(CHAIN)
    args = ["replay", "--homogeneous-procs", "4", "--workload", str(path), "--contention", "none",
            "--outdir", str(tmp_path / "out")]
    assert main(args) == 0
    assert "dependencies                       on: 3 jobs wait for a preceding job (think time " \
           "0-10 s)" in capsys.readouterr().out
    rows = (tmp_path / "out" / "out_jobs.csv").read_text().splitlines()
    assert rows[4].startswith("4,w0,p4,195.000000,")  # submission_time = release time
    assert main(args + ["--no-dependencies"]) == 0
    assert "off (--no-dependencies" in capsys.readouterr().out


@st.composite
def dependent_workloads(draw):
    n = draw(st.integers(2, 25))
    jobs = [job(i, float(draw(st.integers(0, 50))), res=draw(st.integers(1, 5)),
                walltime_s=float(draw(st.integers(1, 30))),
                run_time_s=float(draw(st.integers(1, 40)))) for i in range(n)]
    load = workload(jobs)
    pairs = []
    for j in range(1, n):
        for p in draw(st.sets(st.integers(0, j - 1), max_size=2)):
            pairs.append((j, p, float(draw(st.sampled_from([0, 0, 1, 7.5])))))
    load.dependencies = deps(pairs)
    return load, pairs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dependent_workloads(), st.sampled_from(["fcfs", "sjf", "wfp3"]),
       st.sampled_from(["none", "easy"]))
def test_no_job_starts_before_its_predecessors_end_plus_think(case, policy, backfilling):
    load, pairs = case
    sim = Simulation(one_node(4), load, SimulationConfig(contention="none",
                                                         backfilling=backfilling))
    result = sim.run(policy)
    assert sorted(o.job.idx for o in result.outcomes) == list(range(len(load.jobs)))
    out = {o.job.idx: o for o in result.outcomes}

    def end(idx: int) -> float:  # a rejection ends a job at its submission
        o = out[idx]
        return o.job.submit_s if o.state == REJECTED else o.finish_s

    for j, p, think in pairs:
        released = out[j].job.submit_s
        assert released >= end(p) + think - 1e-9
        if out[j].state != REJECTED:
            assert out[j].start_s >= released
    for j in {j for j, _, _ in pairs}:
        assert out[j].job.submit_s == max(end(p) + t for jj, p, t in pairs if jj == j)
    times = [row.time_s for row in result.timeline]
    assert times == sorted(times) and all(math.isfinite(t) for t in times)


def test_replay_missing_predecessor_one_line_error_then_no_strict(tmp_path, capsys):
    path = tmp_path / "bad.swf"
    path.write_text(CHAIN.replace("1 1 1 -1 1 -1 3 5", "1 1 1 -1 1 -1 9 5"))
    args = ["replay", "--homogeneous-procs", "4", "--workload", str(path), "--contention", "none",
            "--outdir", str(tmp_path / "out")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.swf:5: field 17 (preceding job number) is 9, which no " \
        "job line of the file has; set field 17 to -1 (no preceding job) or leave every " \
        "dependency out (hdrm replay --no-dependencies), or rerun with --no-strict to skip " \
        "such dependencies" in err
    assert main(args + ["--no-strict"]) == 0
    assert "dropped 1 (missing preceding job: 1)" in capsys.readouterr().out
    assert main(args + ["--no-dependencies"]) == 0


def test_sla_turnaround_counts_from_the_release(tmp_path, capsys):
    path = tmp_path / "chain.swf"
    path.write_text(CHAIN)
    # the chain never waits once released: ANTT 1 (from the trace times it would be above 3)
    assert main(["replay", "--homogeneous-procs", "4", "--workload", str(path), "--contention",
                 "none", "--tenants", "user", "--outdir", str(tmp_path / "sla")]) == 0
    assert "ANTT / STP                          1.000 / 4.000" in capsys.readouterr().out


def test_a_chain_through_the_whole_trace(tmp_path):
    # 500 jobs, each after the previous one with 1 s think time: job k (0-based) runs from 3k to
    # 3k + 2, so the last ends at 3 * 499 + 2 = 1499 whatever the trace times say
    lines = ["; MaxProcs: 8"] + [
        f"{k + 1} {k} -1 2 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 {k if k else -1} {1 if k else -1}"
        for k in range(500)]
    path = tmp_path / "long.swf"
    path.write_text("\n".join(lines) + "\n")
    platform, load = load_inputs(InputSpec(str(path), homogeneous_procs=8))
    outcomes = Simulation(platform, load, SimulationConfig(contention="none")).run("fcfs").outcomes
    assert [o.start_s for o in outcomes] == [3.0 * k for k in range(500)]
    assert outcomes[-1].finish_s == 1499.0


def test_a_run_without_dependencies_does_not_load_the_gate():
    """The engine imports hdrm.core.dependencies only for a workload with dependencies: a
    plain replay (a fresh process) never loads it (the runs with dependencies above load it
    where they need it)."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from hdrm.platform.model import Platform\n"
            "from hdrm.sim.engine import Simulation, SimulationConfig\n"
            "from hdrm.workload.job import Job, Workload\n"
            "jobs = [Job(id=str(i), idx=i, submit_s=float(i), res=1, run_time_s=2.0, "
            "walltime_s=5.0) for i in range(3)]\n"
            "result = Simulation(Platform.homogeneous(2), Workload(jobs), "
            "SimulationConfig(contention='none')).run('fcfs')\n"
            "print(len(result.outcomes), 'hdrm.core.dependencies' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["3", "False"], out.stderr
