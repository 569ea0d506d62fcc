"""Job requirements: work from run times, bandwidth distributions, determinism."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hdrm.errors import ConfigError, WorkloadError
from hdrm.workload.job import Job, Workload
from hdrm.workload.requirements import (
    HDEEPRM_BW_GBPS,
    BandwidthDistribution,
    attach_requirements,
    parse_bandwidth,
)


def make_workload() -> Workload:
    jobs = [
        Job(0, 1, 0.0, 4, 200.0, 100.0, mem_mb=2.0, trace_submit_s=50.0, profile="p1"),
        Job(1, 2, 5.0, 1, math.inf, 30.0, profile="p2", extra={"note": "x"}),
    ]
    return Workload(jobs, "w", "w.swf", None, {"run time 0": 1}, 16)


def test_work_from_run_time_and_walltime_at_the_reference_speed():
    source = make_workload()
    workload = attach_requirements(source, 2.5, np.random.default_rng(0), "constant:6")
    first, second = workload.jobs
    assert (first.ops_gflop, first.req_ops_gflop) == (250.0, 500.0)
    assert (second.ops_gflop, second.req_ops_gflop) == (75.0, math.inf)
    assert all(j.profile_type == "parallel_homogeneous" for j in workload.jobs)
    assert [j.mem_bw_gbps for j in workload.jobs] == [6.0, 6.0]
    assert first.mem_mb == 2.0 and second.mem_mb == 0.0
    assert (first.trace_submit_s, first.profile, second.extra) == (50.0, "p1", {"note": "x"})
    assert workload.skipped == {"run time 0": 1} and workload.nb_res == 16
    assert source.jobs[0].profile_type == "delay" and source.jobs[0].ops_gflop == 0.0


def test_default_draw_is_hdeeprm_and_deterministic():
    jobs = [Job(i, i, float(i), 1, 10.0, 10.0) for i in range(300)]
    workload = Workload(jobs)
    a = attach_requirements(workload, 1.0, np.random.default_rng(42))
    b = attach_requirements(workload, 1.0, np.random.default_rng(42))
    c = attach_requirements(workload, 1.0, np.random.default_rng(43))
    draws = [j.mem_bw_gbps for j in a.jobs]
    assert draws == [j.mem_bw_gbps for j in b.jobs]
    assert draws != [j.mem_bw_gbps for j in c.jobs]
    assert set(draws) == set(HDEEPRM_BW_GBPS) == {4.0, 8.0, 12.0, 16.0, 20.0, 24.0}


@pytest.mark.parametrize(
    ("spec", "kind", "values"),
    [
        ("hdeeprm", "choice", HDEEPRM_BW_GBPS),
        ("none", "none", ()),
        ("constant:6", "constant", (6.0,)),
        ("uniform:4:24", "uniform", (4.0, 24.0)),
        ("choice:[2, 5.5]", "choice", (2.0, 5.5)),
        ("choice:3,9", "choice", (3.0, 9.0)),
        (" Uniform:1:1 ", "uniform", (1.0, 1.0)),
    ],
)
def test_parse_bandwidth(spec, kind, values):
    assert parse_bandwidth(spec) == BandwidthDistribution(kind, values)


def test_bandwidth_spec_round_trips_through_str():
    for spec in ("none", "constant:6", "uniform:4:24", "choice:[2,5.5]"):
        distribution = parse_bandwidth(spec)
        assert parse_bandwidth(str(distribution)) == distribution


def test_uniform_draws_stay_in_range():
    draws = parse_bandwidth("uniform:4:24").sample_gbps(np.random.default_rng(1), 1000)
    assert draws.min() >= 4.0 and draws.max() < 24.0 and draws.std() > 3.0


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("unifrom:1:2", r"unknown kind 'unifrom'; did you mean 'uniform'\? valid forms: hdeeprm, "
                        r"none, constant:X, uniform:A:B, choice:\[X,Y,\.\.\.\]"),
        ("constant", r"constant takes 1 value\(s\), got 0"),
        ("uniform:1", r"uniform takes 2 value\(s\), got 1"),
        ("choice:[]", r"choice takes at least 1 value\(s\), got 0"),
        ("none:3", r"none takes 0 value\(s\), got 1"),
        ("constant:fast", r"'fast' is not a number"),
        ("constant:-2", r"'-2' must be a finite number >= 0 GB/s"),
        ("uniform:9:3", r"uniform:A:B needs A <= B; write uniform:3:9"),
    ],
)
def test_bad_bandwidth_specs(spec, message):
    with pytest.raises(ConfigError, match=message):
        parse_bandwidth(spec)


@pytest.mark.parametrize("ref", [0.0, -1.0, math.inf, math.nan, "10"])
def test_bad_reference_speed(ref):
    with pytest.raises(ConfigError, match=r"reference_gflops must be a finite number > 0"):
        attach_requirements(make_workload(), ref, np.random.default_rng(0))


def test_unsupported_profiles_are_refused():
    jobs = [Job(0, "a", 0.0, 2, 10.0, math.nan, profile="s", profile_type="parallel")]
    with pytest.raises(WorkloadError, match=r"profile types 'parallel' \(1 jobs\) cannot be given "
                                            r"requirements"):
        attach_requirements(Workload(jobs, "x"), 1.0, np.random.default_rng(0))


def test_run_time_derived_from_work_when_unknown():
    jobs = [Job(0, 0, 0.0, 2, 100.0, math.nan, ops_gflop=50.0, profile_type="parallel_homogeneous")]
    job = attach_requirements(Workload(jobs), 10.0, np.random.default_rng(0), "none").jobs[0]
    assert (job.run_time_s, job.ops_gflop, job.req_ops_gflop) == (5.0, 50.0, 1000.0)


def test_job_without_any_run_time_is_an_error():
    jobs = [Job(0, 7, 0.0, 2, 100.0, math.nan)]
    with pytest.raises(WorkloadError, match=r"job 7 \(index 0\) has no usable run time"):
        attach_requirements(Workload(jobs), 10.0, np.random.default_rng(0))
