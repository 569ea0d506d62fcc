"""Synthetic generator and SWF writer."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from hdrm.errors import ConfigError
from hdrm.workload.generate import generate_workload, swf_fields, write_swf
from hdrm.workload.job import Job, Workload
from hdrm.workload.select import first_jobs, sequence
from hdrm.workload.summary import summarize_workload
from hdrm.workload.swf import read_swf

EXAMPLES = Path(__file__).resolve().parents[2] / "workloads"


def generate(seed: int = 0, **kwargs) -> Workload:
    return generate_workload(kwargs.pop("nb_jobs", 2000), kwargs.pop("nb_cores", 64),
                             np.random.default_rng(seed), **kwargs)


def test_same_seed_same_workload(values):
    assert values(generate(5).jobs) == values(generate(5).jobs)
    assert values(generate(5).jobs) != values(generate(6).jobs)


@pytest.mark.parametrize("load", [0.5, 0.9, 1.3])
def test_offered_load_hits_the_target(load):
    workload = generate(1, load=load)
    summary = summarize_workload(workload)
    assert summary.nb_cores == 64
    assert summary.offered_load == pytest.approx(load, rel=1e-3)


def test_jobs_are_well_formed():
    workload = generate(2, nb_jobs=3000, max_res=16, run_time_range_s=(5, 500),
                        max_estimate_factor=3.0, nb_users=4)
    jobs = workload.jobs
    assert [j.idx for j in jobs] == list(range(3000)) and [j.id for j in jobs][:3] == [1, 2, 3]
    assert jobs[0].submit_s == 0.0
    assert all(a.submit_s <= b.submit_s for a, b in zip(jobs, jobs[1:]))
    assert all(j.submit_s.is_integer() and j.run_time_s.is_integer() for j in jobs)
    assert {j.res for j in jobs} == set(range(1, 17))
    assert all(5 <= j.run_time_s <= 500 for j in jobs)
    assert all(j.run_time_s <= j.walltime_s <= math.ceil(3 * j.run_time_s) for j in jobs)
    assert {j.user_id for j in jobs} == {1, 2, 3, 4}
    assert all(j.trace_submit_s == j.submit_s and j.profile == f"p{j.id}" for j in jobs)


def test_sizes_are_log_uniform():
    res = np.array([j.res for j in generate(3, nb_jobs=20_000, nb_cores=1023).jobs])
    # log-uniform on [1, 1024): each power-of-two band [2^k, 2^(k+1)) holds about 1/10 of the jobs
    bands = np.bincount(np.floor(np.log2(res)).astype(int), minlength=10)
    assert bands.min() > 1600 and bands.max() < 2400


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"nb_jobs": 0}, r"generate_workload: nb_jobs must be >= 1, got 0"),
        ({"load": 0.0}, r"load must be a finite number > 0, got 0\.0"),
        ({"max_res": 65}, r"max_res must be in 1\.\.nb_cores=64, got 65"),
        ({"run_time_range_s": (10, 5)}, r"run_time_range_s must be \(min, max\)"),
        ({"max_estimate_factor": 0.5}, r"max_estimate_factor must be >= 1, got 0\.5"),
        ({"nb_users": 0}, r"nb_users must be >= 1"),
    ],
)
def test_bad_parameters(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        generate(**kwargs)


@pytest.mark.parametrize("name", ["gen.swf", "gen.swf.gz"])
def test_generated_workload_round_trips_through_swf(tmp_path, values, name):
    workload = generate(4, nb_jobs=300)
    write_swf(workload, tmp_path / name, notes=["made by a test"])
    again = read_swf(tmp_path / name)
    assert values(again.jobs) == values(workload.jobs)
    assert again.nb_res == 64 and again.skipped == {}
    assert again.header.max_jobs == 300 and again.header.notes == ("made by a test",)


def test_slice_with_raw_fields_is_written_verbatim(tmp_path, values):
    source = read_swf(EXAMPLES / "SDSC-SP2-1998-4.2-cln_first500.swf", keep_fields=True)
    selection = sequence(source, 100, 50)
    write_swf(selection, tmp_path / "slice.swf", notes=["jobs 100-149"])
    again = read_swf(tmp_path / "slice.swf", keep_fields=True)
    assert values(first_jobs(again, 50).jobs) == values(selection.jobs)
    header = again.header
    assert (header.max_jobs, header.max_records) == (50, 50)
    assert header.computer == "IBM SP2" and header.unix_start_time_s == 893466664
    assert header.notes[-1] == "jobs 100-149"
    assert any("Copyright" in line for line in header.lines)


def test_rebuilt_fields():
    job = Job(3, "name", 4.0, 8, math.inf, 12.5, mem_mb=0.5, trace_submit_s=90.0, user_id=2)
    assert swf_fields(job) == (4, 90.0, -1, 12.5, 8, -1, -1, 8, -1, 512.0, 1, 2, -1, -1, -1, -1,
                               -1, -1)


def test_minimal_header_for_a_headerless_workload(tmp_path):
    workload = Workload([Job(0, 1, 0.0, 2, 30.0, 20.0)], "mini", nb_res=4)
    write_swf(workload, tmp_path / "mini.swf")
    text = (tmp_path / "mini.swf").read_text().splitlines()
    assert text == ["; Version: 2.2", "; Computer: mini", "; MaxJobs: 1", "; MaxRecords: 1",
                    "; MaxProcs: 4", "1 0 -1 20 2 -1 -1 2 30 -1 1 -1 -1 -1 -1 -1 -1 -1"]
