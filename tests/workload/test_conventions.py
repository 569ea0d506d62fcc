"""SWF conventions: each rule of ``default`` and ``rlscheduler`` on hand-made lines."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hdrm.errors import ConfigError
from hdrm.workload.conventions import (
    CONVENTIONS,
    Conventions,
    apply_conventions,
    get_conventions,
)
from hdrm.policies.backfill import estimated_duration_s
from hdrm.workload.swf import read_swf


def read(write_swf_text, lines, conventions="default"):
    return read_swf(write_swf_text(lines), conventions)


@pytest.mark.parametrize(
    ("f5", "f8", "expected"),
    [(4, 8, 8), (6, -1, 6), (6, 0, 6), (6, 2, 2)],
)
def test_default_processors_requested_then_allocated(write_swf_text, swf_line, f5, f8, expected):
    job = read(write_swf_text, [swf_line(f5=f5, f8=f8)]).jobs[0]
    assert job.res == expected


@pytest.mark.parametrize(
    ("f5", "f8", "expected"),
    [(4, 8, 8), (6, -1, 6), (6, 2, 6), (-1, 3, 3)],
)
def test_rlscheduler_processors_are_the_max(write_swf_text, swf_line, f5, f8, expected):
    job = read(write_swf_text, [swf_line(f5=f5, f8=f8)], "rlscheduler").jobs[0]
    assert job.res == expected


def test_unknown_requested_time_is_no_walltime_and_the_estimate_is_the_run_time(
    write_swf_text, swf_line
):
    jobs = read(write_swf_text, [swf_line(f9=-1, f4=77), swf_line(f1=2, f9=300)]).jobs
    # No request: no walltime (a walltime equal to the run time would make Batsim kill the job).
    assert [job.walltime_s for job in jobs] == [math.inf, 300.0]
    assert [job.has_walltime for job in jobs] == [False, True]
    assert [job.run_time_s for job in jobs] == [77.0, 100.0]
    assert [estimated_duration_s(job) for job in jobs] == [77.0, 300.0]


def test_default_skips_with_a_count_per_first_reason(write_swf_text, swf_line):
    lines = [
        swf_line(f1=1),
        swf_line(f1=2, f5=-1, f8=-1),
        swf_line(f1=3, f5=-1, f8=-1, f4=0),  # counted once, under its first reason
        swf_line(f1=4, f4=-1),
        swf_line(f1=5, f4=0),
        swf_line(f1=6, f4=0),
        swf_line(f1=7, f2=-5),
    ]
    workload = read(write_swf_text, lines)
    assert [job.id for job in workload.jobs] == [1]
    assert workload.skipped == {
        "no processors": 2, "run time unknown (< 0)": 1, "run time 0": 2, "submit time < 0": 1,
    }


def test_rlscheduler_run_time_rules(write_swf_text, swf_line):
    lines = [
        swf_line(f1=1, f4=-1, f9=500),
        swf_line(f1=2, f4=-1, f9=-1),
        swf_line(f1=3, f4=0),
        swf_line(f1=4, f4=20, f9=-1),
    ]
    workload = read(write_swf_text, lines, "rlscheduler")
    assert [job.id for job in workload.jobs] == [1, 2, 4]
    assert [job.run_time_s for job in workload.jobs] == [10.0, 10.0, 20.0]
    assert [job.walltime_s for job in workload.jobs] == [500.0, math.inf, math.inf]
    assert [estimated_duration_s(job) for job in workload.jobs] == [500.0, 10.0, 20.0]
    assert workload.skipped == {"run time 0": 1}


def test_rlscheduler_sorts_by_id_default_by_submit(write_swf_text, swf_line):
    lines = [swf_line(f1=3, f2=10), swf_line(f1=1, f2=20), swf_line(f1=2, f2=30)]
    by_id = read(write_swf_text, lines, "rlscheduler")
    by_submit = read(write_swf_text, lines)
    assert [job.id for job in by_id.jobs] == [1, 2, 3]
    assert [job.id for job in by_submit.jobs] == [3, 1, 2]
    assert [job.idx for job in by_id.jobs] == [0, 1, 2]


def test_rlscheduler_skips_jobs_without_processors(write_swf_text, swf_line):
    workload = read(write_swf_text, [swf_line(), swf_line(f1=2, f5=-1, f8=-1)], "rlscheduler")
    assert workload.skipped == {"no processors": 1}


@pytest.mark.parametrize(
    ("f10", "f7", "expected_mb"),
    [(2048, 512, 2.0), (-1, 512, 0.5), (0, 1024, 1.0), (-1, -1, 0.0)],
)
def test_memory_per_core_in_mb(write_swf_text, swf_line, f10, f7, expected_mb):
    job = read(write_swf_text, [swf_line(f10=f10, f7=f7)]).jobs[0]
    assert math.isclose(job.mem_mb, expected_mb)


def test_apply_conventions_on_an_array():
    fields = np.full((3, 18), -1.0)
    fields[:, 0] = [1, 2, 3]
    fields[:, 1] = [0, 5, 9]
    fields[:, 3] = [50, 0, 70]
    fields[:, 4] = [2, 2, 8]
    fields[:, 8] = [60, 60, -1]
    converted = apply_conventions(fields, get_conventions("default"))
    assert converted.rows.tolist() == [0, 2]
    assert converted.res.tolist() == [2, 8]
    assert converted.walltime_s.tolist() == [60.0, math.inf]
    assert converted.skipped == {"run time 0": 1}
    assert converted.adjusted == 0


def test_registry_names_and_lookup():
    assert CONVENTIONS.names() == ["default", "rlscheduler"]
    assert get_conventions("RLScheduler").negative_run_time_s == 10.0
    custom = Conventions("mine", "no memory", memory="none")
    assert get_conventions(custom) is custom


def test_unknown_name_suggests_the_closest():
    with pytest.raises(ConfigError, match=r"conventions: unknown SWF convention set 'rlsched'; "
                                          r"did you mean 'rlscheduler'\? choose one of: "
                                          r"default, rlscheduler"):
        get_conventions("rlsched")


def test_custom_conventions_apply(write_swf_text, swf_line):
    lean = Conventions("lean", "ignore memory", memory="none")
    workload = read_swf(write_swf_text([swf_line(f10=4096)]), lean)
    assert workload.jobs[0].mem_mb == 0.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"processors": "most"}, r"processors 'most' is unknown; .*choose one of: "
                                 r"requested_or_allocated, max_requested_allocated"),
        ({"sort_by": "ids"}, r"sort_by 'ids' is unknown; did you mean 'id'"),
        ({"memory": "used"}, r"memory 'used' is unknown"),
        ({"negative_run_time_s": 0.0}, r"negative_run_time_s must be > 0 or None, got 0.0"),
    ],
)
def test_conventions_validate_their_fields(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        Conventions("bad", "a bad set", **kwargs)
