"""The outputs of a built-in run: job rows and the schedule summary are made once per run."""

from __future__ import annotations

from builders import job, workload

import hdrm.sim.outputs as outputs
from hdrm.platform.model import Platform
from hdrm.results.csvio import read_jobs_csv, read_schedule_csv
from hdrm.results.metrics import avg_bounded_slowdown
from hdrm.sim.engine import Simulation, SimulationConfig


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
