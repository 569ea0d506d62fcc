"""The outputs of a built-in run: job rows and the schedule summary are made once per run."""

from __future__ import annotations

from builders import job, workload

import hdrm.sim.outputs as outputs
from hdrm.platform.model import Platform
from hdrm.results.csvio import read_jobs_csv, read_schedule_csv
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
