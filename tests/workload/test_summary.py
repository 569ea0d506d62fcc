"""Workload summary: figures checked by hand."""

from __future__ import annotations

import math

import pytest

from hdrm.workload.job import Job, Workload
from hdrm.workload.summary import format_summary, summarize_workload


def make_workload() -> Workload:
    jobs = [
        Job(0, 1, 100.0, 2, 50.0, 40.0),   # 80 core-s
        Job(1, 2, 150.0, 4, 10.0, 20.0),   # 80 core-s, runs past its walltime
        Job(2, 3, 300.0, 8, 100.0, 30.0),  # 240 core-s, wider than 4 cores
    ]
    return Workload(jobs, "hand", skipped={"run time 0": 2, "no processors": 1}, nb_res=8)


def test_hand_checked_figures():
    summary = summarize_workload(make_workload())
    assert (summary.nb_jobs, summary.nb_skipped) == (3, 3)
    assert summary.skipped == {"run time 0": 2, "no processors": 1}
    assert (summary.first_submit_s, summary.last_submit_s, summary.span_s) == (100.0, 300.0, 200.0)
    assert summary.max_res == 8 and summary.total_core_s == 400.0
    assert summary.nb_cores == 8
    assert summary.offered_load == pytest.approx(400.0 / (8 * 200.0))
    assert (summary.nb_over_walltime, summary.nb_too_wide) == (1, 0)


def test_load_for_another_core_count():
    summary = summarize_workload(make_workload(), nb_cores=4)
    assert summary.offered_load == pytest.approx(0.5) and summary.nb_too_wide == 1


def test_unknown_cores_span_and_run_times():
    jobs = [Job(0, "a", 5.0, 2, 10.0, math.nan, profile_type="parallel")]
    summary = summarize_workload(Workload(jobs, "odd"))
    assert summary.offered_load is None and summary.span_s == 0.0
    assert summary.nb_unknown_run_time == 1 and summary.total_core_s == 0.0
    assert summary.unsupported_profiles == {"parallel": 1}
    text = format_summary(summary)
    assert "offered load    unknown (no core count or no span)" in text
    assert "note            1 jobs without a run time" in text
    assert "warning         1 jobs with unsupported profile type 'parallel'" in text


def test_format_lists_every_skip_reason():
    text = format_summary(summarize_workload(make_workload())).splitlines()
    assert text[:5] == ["workload        hand", "jobs kept       3", "jobs skipped    3",
                        "  run time 0                  2", "  no processors               1"]
    assert "offered load    0.250" in text
    assert "note            1 jobs run longer than their walltime" in text
