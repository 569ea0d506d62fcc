"""The outputs of a built-in run: job rows and the schedule summary are made once per run."""

from __future__ import annotations

import gc

import pytest

from builders import job, one_node, workload

import hdrm.results.records as records
import hdrm.sim.outputs as outputs
from hdrm.platform.model import Platform
from hdrm.policies.pairs import resolve_policy
from hdrm.policies.sla_orders import bind_tenants
from hdrm.results.csvio import read_jobs_csv, read_schedule_csv
from hdrm.results.metrics import avg_bounded_slowdown, machine_times, summarize
from hdrm.results.records import JobResult
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.workload.tenant_files import tenants_for


def _result():
    jobs = [job(i, float(i), 1 + i % 3, 20.0, 5.0 + i) for i in range(12)]
    config = SimulationConfig(contention="none", backfilling="easy")
    return Simulation(Platform.homogeneous(4), workload(jobs), config).run("fcfs")


def test_writing_and_printing_summarise_once(tmp_path, monkeypatch):
    calls = []
    real = outputs.summarize
    monkeypatch.setattr(outputs, "summarize", lambda *a, **k: calls.append(1) or real(*a, **k))
    result = _result()
    paths = outputs.write_outputs(result, tmp_path)
    printed = outputs.schedule_summary(result, outputs.job_results(result))  # as hdrm replay prints
    assert len(calls) == 1
    assert outputs.job_results(result) is outputs.job_results(result)
    written = read_schedule_csv(paths["schedule"])
    assert printed["nb_jobs"] == written["nb_jobs"] == 12
    assert round(printed["mean_waiting_time"], 6) == written["mean_waiting_time"]
    assert [r.job_id for r in read_jobs_csv(paths["jobs"])] == [str(i) for i in range(12)]


def test_other_rows_are_summarised_as_given():
    result = _result()
    rows = outputs.job_results(result)
    full = outputs.schedule_summary(result)
    part = outputs.schedule_summary(result, rows[:5])
    assert (full["nb_jobs"], part["nb_jobs"]) == (12, 5)
    full["nb_jobs"] = -1  # a caller's copy: the run's own summary is unchanged
    assert outputs.schedule_summary(result)["nb_jobs"] == 12


def test_mean_bounded_slowdown_by_hand():
    # one core: job 0 runs [0, 20); job 1 (submitted at 5, runs 4 s) waits 15 s; job 2 asks
    # for 2 cores and is rejected; bsld: 1, (15 + 4) / max(4, 10) = 1.9; mean over all 3 jobs
    jobs = [job(0, 0.0, 1, 20.0), job(1, 5.0, 1, 30.0, 4.0), job(2, 6.0, 2, 10.0)]
    config = SimulationConfig(contention="none")
    result = Simulation(Platform.homogeneous(1), workload(jobs), config).run("fcfs")
    assert [o.state for o in result.outcomes][2] == "REJECTED"
    assert outputs.mean_bounded_slowdown(result) == (1.0 + 1.9) / 3
    assert outputs.mean_bounded_slowdown(result, threshold_s=1.0) == (1.0 + 19 / 4) / 3


def test_mean_bounded_slowdown_is_the_rows_mean():
    # the same float as the mean of the out_jobs.csv rows, with backfilling and rejections
    jobs = [job(i, float(i) * 0.7, 1 + i % 5, 20.0 + i % 7, 1.5 + (i * 37) % 11) for i in range(60)]
    for backfilling in ("none", "easy"):
        config = SimulationConfig(contention="none", backfilling=backfilling)
        result = Simulation(Platform.homogeneous(4), workload(jobs), config).run("sjf")
        assert sum(o.state == "REJECTED" for o in result.outcomes) == 12  # 5 cores asked
        expected = avg_bounded_slowdown(outputs.job_results(result))
        assert outputs.mean_bounded_slowdown(result) == expected


def test_the_run_summary_reads_no_interval_set_back(monkeypatch):
    # the machine times come from the outcomes' cores: no allocated_resources text is parsed,
    # and the columns are those of the rows' own machine times
    result = _result()
    rows = outputs.job_results(result)
    expected = summarize(rows, result.platform.nb_cores, result.energy_j,
                         simulation_time_s=result.wall_s, scheduling_time_s=result.decision_s)

    def parsed(self):
        raise AssertionError("the summary parsed an interval set")

    monkeypatch.setattr(JobResult, "core_ranges", parsed)
    assert outputs.schedule_summary(result) == expected
    assert expected["time_computing"] == sum(r.execution_time * r.requested_number_of_resources
                                             for r in rows)


def test_a_suspended_job_books_its_run_time_not_its_span():
    # the bulk job runs 0-4 and 6-12 (10 s of run time over a 12 s span), the urgent one 4-6:
    # one core computes 12 s and is never idle (its span would make it 14 and -2)
    jobs = [job(0, 0.0, walltime_s=100, run_time_s=10, ops_gflop=10, user_id=0, id="bulk"),
            job(1, 3.5, walltime_s=100, run_time_s=2, ops_gflop=2, user_id=1, id="urgent")]
    load = workload(jobs)
    sim = Simulation(one_node(1), load, SimulationConfig(preemption="block:1"))
    result = sim.run(bind_tenants(resolve_policy("edf"), tenants_for(load, "user", "relative:3"),
                                  sim.core))
    summary = outputs.schedule_summary(result)
    assert (summary["time_computing"], summary["time_idle"]) == (12.0, 0.0)
    assert machine_times(outputs.job_results(result)) == (12.0, 0.0)


def test_outputs_are_made_with_the_cycle_collector_paused(tmp_path, monkeypatch):
    # the rows hold no cycles: the collector waits while they are made and written, then runs
    # again (or stays off when it was off)
    seen = []
    real = outputs.write_jobs_csv
    monkeypatch.setattr(outputs, "write_jobs_csv", lambda *a: seen.append(gc.isenabled()) or real(*a))
    outputs.write_outputs(_result(), tmp_path)
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        outputs.write_outputs(_result(), tmp_path)
        assert seen == [False, False] and not gc.isenabled()
    finally:
        gc.enable()


def test_each_job_s_cores_are_read_once_for_its_row_and_the_machine_times(tmp_path, monkeypatch):
    # the out_jobs.csv rows and the schedule's machine times share each job's runs of cores
    calls = []
    real = records.sorted_runs

    def counted(cores):
        calls.append(1)
        return real(cores)

    monkeypatch.setattr(records, "sorted_runs", counted)  # format_interval_set's
    monkeypatch.setattr(outputs, "sorted_runs", counted, raising=False)
    result = _result()
    outputs.write_outputs(result, tmp_path)
    ran = [o for o in result.outcomes if o.state != "REJECTED"]
    assert len(calls) == len(ran) == 12
    rows = outputs.job_results(result)
    assert (outputs.schedule_summary(result)["time_computing"],
            outputs.schedule_summary(result)["time_idle"]) == machine_times(rows)


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_outputs_stopped_while_being_written_leave_the_previous_run_whole(tmp_path, monkeypatch):
    # Ctrl-C after out_jobs.csv was written: the folder keeps the previous run's four files (not
    # the new out_jobs.csv beside the old schedule), and no temporary file is left
    old = Simulation(Platform.homogeneous(4), workload(
        [job(i, 0.0, 1, 20.0, 50.0) for i in range(5)]), SimulationConfig()).run("fcfs")
    outputs.write_outputs(old, tmp_path)
    before = _snapshot(tmp_path)
    assert len(before) == 4

    def stop(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(outputs, "write_overutilizations", stop)
    with pytest.raises(KeyboardInterrupt):
        outputs.write_outputs(_result(), tmp_path)
    assert _snapshot(tmp_path) == before
    monkeypatch.undo()
    paths = outputs.write_outputs(_result(), tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(before)
    assert len(read_jobs_csv(paths["jobs"])) == 12
