"""Selections: first N, sequences, time windows; re-indexing and shifting."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hdrm.errors import WorkloadError
from hdrm.workload.job import Job, Workload
from hdrm.workload.select import (
    RLSCHEDULER_SEQUENCE_LENGTH,
    RLSCHEDULER_START_INDICES,
    first_jobs,
    select,
    sequence,
    sequences,
    time_window,
)
from hdrm.workload.swf import read_swf

EXAMPLES = Path(__file__).resolve().parents[2] / "workloads"


def make_workload(submits: list[float], name: str = "w") -> Workload:
    jobs = [Job(i, 100 + i, s, 1, 50.0, 40.0, trace_submit_s=s, extra={"k": i})
            for i, s in enumerate(submits)]
    return Workload(jobs, name, f"{name}.swf", None, {"run time 0": 3}, 8)


def test_first_jobs_reindexes_and_shifts():
    source = make_workload([100.0, 130.0, 175.0, 200.0])
    selected = first_jobs(source, 3)
    assert [j.idx for j in selected.jobs] == [0, 1, 2]
    assert [j.id for j in selected.jobs] == [100, 101, 102]
    assert [j.submit_s for j in selected.jobs] == [0.0, 30.0, 75.0]
    assert [j.trace_submit_s for j in selected.jobs] == [100.0, 130.0, 175.0]
    assert selected.name == "w[:3]" and selected.nb_res == 8
    assert selected.skipped == {"run time 0": 3} and selected.source == "w.swf"


def test_selection_copies_jobs_and_leaves_the_source_alone():
    source = make_workload([100.0, 130.0])
    selected = first_jobs(source, 2)
    selected.jobs[0].extra["k"] = "changed"
    assert selected.jobs[0] is not source.jobs[0]
    assert source.jobs[0].submit_s == 100.0 and source.jobs[0].extra == {"k": 0}


def test_first_jobs_longer_than_the_workload_takes_all():
    assert len(first_jobs(make_workload([1.0, 2.0]), 10)) == 2


def test_sequence_takes_consecutive_jobs():
    selected = sequence(make_workload([0.0, 10.0, 20.0, 35.0, 50.0]), 2, 3)
    assert [j.id for j in selected.jobs] == [102, 103, 104]
    assert [j.submit_s for j in selected.jobs] == [0.0, 15.0, 30.0]
    assert selected.name == "w[2:5]"


def test_sequence_out_of_range_gives_the_valid_indices():
    workload = make_workload([0.0, 1.0, 2.0, 3.0])
    with pytest.raises(WorkloadError, match=r"w\.swf: cannot take 2 jobs from index 3: the "
                                            r"workload has 4 jobs \(valid start indices: 0\.\.2\)"):
        sequence(workload, 3, 2)
    with pytest.raises(WorkloadError, match=r"cannot take 5 jobs .*it is too short"):
        sequence(workload, 0, 5)
    with pytest.raises(WorkloadError, match=r"from index -1"):
        sequence(workload, -1, 2)


@pytest.mark.parametrize("count", [0, -3, 2.5, True])
def test_bad_job_counts(count):
    with pytest.raises(WorkloadError, match=r"number of jobs must be a positive integer"):
        first_jobs(make_workload([0.0]), count)


def test_select_zero_means_all_from_the_start_index():
    workload = make_workload([0.0, 10.0, 20.0, 35.0, 50.0])
    assert [j.id for j in select(workload).jobs] == [100, 101, 102, 103, 104]
    tail = select(workload, 3)
    assert [j.id for j in tail.jobs] == [103, 104] and tail.name == "w[3:5]"
    assert [j.submit_s for j in tail.jobs] == [0.0, 15.0]
    assert [j.id for j in select(workload, 1, 2).jobs] == [101, 102]
    assert len(select(workload, 0, 99)) == 5  # from 0 a shorter workload gives all its jobs


@pytest.mark.parametrize(("start", "count", "message"), [
    (0, -1, r"w\.swf: number of jobs must be a positive integer, or 0 for all the jobs from the "
            r"start index; got -1"),
    (0, 2.5, r"got 2\.5"),
    (5, 0, r"w\.swf: start index 5 is outside the workload's 5 jobs \(valid start indices: "
           r"0\.\.4\)"),
    (-1, 2, r"start index -1 is outside"),
    (3, 3, r"cannot take 3 jobs from index 3: the workload has 5 jobs"),
])
def test_select_refuses_what_it_cannot_take(start, count, message):
    with pytest.raises(WorkloadError, match=message):
        select(make_workload([0.0, 10.0, 20.0, 35.0, 50.0]), start, count)


def test_select_on_an_empty_workload_says_so():
    empty = Workload([], "e", "e.swf", None, {}, 8)
    with pytest.raises(WorkloadError, match=r"e\.swf: the workload has no jobs to select from"):
        select(empty)


def test_time_window_is_half_open_and_shifted_to_its_first_job():
    workload = make_workload([0.0, 10.0, 20.0, 30.0])
    selected = time_window(workload, 10.0, 30.0)
    assert [j.id for j in selected.jobs] == [101, 102]
    assert [j.submit_s for j in selected.jobs] == [0.0, 10.0]


def test_empty_time_window():
    workload = make_workload([0.0, 10.0])
    with pytest.raises(WorkloadError, match=r"no job submitted in \[11\.0, 20\.0\) s; jobs are "
                                            r"submitted from 0\.0 s to 10\.0 s"):
        time_window(workload, 11.0, 20.0)
    with pytest.raises(WorkloadError, match=r"time window \[5, 5\) is empty"):
        time_window(workload, 5, 5)


def test_sequences_use_the_rlscheduler_protocol_by_default():
    assert RLSCHEDULER_START_INDICES == (1981, 2756, 4299, 8850, 3316, 2714, 5228, 7762, 4022,
                                         7085)
    assert RLSCHEDULER_SEQUENCE_LENGTH == 1024
    workload = make_workload([float(i) for i in range(10_000)])
    selected = sequences(workload)
    assert len(selected) == 10 and all(len(w) == 1024 for w in selected)
    assert [w.jobs[0].id - 100 for w in selected] == list(RLSCHEDULER_START_INDICES)


def test_sequences_on_the_lublin_slice():
    workload = read_swf(EXAMPLES / "lublin_256_first500.swf", "rlscheduler")
    first, second = sequences(workload, [0, 250], 100)
    assert first.jobs[0].id == 1 and second.jobs[0].id == 251
    assert second.jobs[0].submit_s == 0.0
    assert second.jobs[0].trace_submit_s == workload.jobs[250].trace_submit_s


@given(st.lists(st.floats(0, 1e7), min_size=1, max_size=40).map(sorted),
       st.integers(0, 39), st.integers(1, 40))
def test_sequence_invariants(submits, start, count):
    workload = make_workload(submits)
    if start + count > len(workload):
        with pytest.raises(WorkloadError):
            sequence(workload, start, count)
        return
    selected = sequence(workload, start, count)
    assert [j.idx for j in selected.jobs] == list(range(count))
    assert selected.jobs[0].submit_s == 0.0
    shifted = [j.submit_s for j in selected.jobs]
    assert shifted == sorted(shifted)
    for original, copy in zip(workload.jobs[start:], selected.jobs):
        assert copy.trace_submit_s == original.trace_submit_s
        assert copy.submit_s == original.submit_s - workload.jobs[start].submit_s


def test_a_selection_copies_every_field_and_a_fresh_extra():
    from dataclasses import fields

    from hdrm.workload.job import AcceleratorDemand

    jobs = [Job(i, f"j{i}", 10.0 * i + 5, 2, 60.0, 30.0, 512.0, 1.5, 90.0, 180.0, 7.0 + i,
                "prof", "parallel_homogeneous", 42, {"swf": [i]}, 500, AcceleratorDemand(1, 250, ("V100",)))
            for i in range(4)]
    source = Workload(jobs, "w", "w.swf", None, {}, 8)
    copies = sequence(source, 1, 3).jobs
    for i, (copy, job) in enumerate(zip(copies, jobs[1:])):
        assert (copy.idx, copy.submit_s) == (i, 10.0 * i)
        for f in fields(Job):
            if f.name not in ("idx", "submit_s"):
                assert getattr(copy, f.name) == getattr(job, f.name), f.name
        assert copy.extra is not job.extra


@pytest.mark.parametrize("start, count", [(0, 0), (0, 3), (1, 2)])
def test_in_place_selection_equals_the_copy_on_the_workload_s_own_jobs(start, count):
    import dataclasses

    import numpy as np

    from hdrm.workload.dependencies import Dependencies

    def workload() -> Workload:
        source = make_workload([100.0, 130.0, 175.0, 200.0])
        source.dependencies = Dependencies(np.array([2, 3]), np.array([1, 2]),
                                           np.array([5.0, 0.0]))
        return source

    copied = select(workload(), start, count)
    source = workload()
    own = list(source.jobs)
    in_place = select(source, start, count, in_place=True)
    assert [dataclasses.astuple(j) for j in in_place.jobs] == [
        dataclasses.astuple(j) for j in copied.jobs]
    assert all(a is b for a, b in zip(in_place.jobs, own[start:]))  # no copies
    assert (in_place.name, in_place.nb_res, in_place.skipped) == (
        copied.name, copied.nb_res, copied.skipped)
    assert in_place.dependencies.job.tolist() == copied.dependencies.job.tolist()
    assert in_place.dependencies.pred.tolist() == copied.dependencies.pred.tolist()


@pytest.mark.parametrize("in_place", [False, True])
def test_jobs_out_of_submit_order_are_shifted_from_the_earliest(write_swf_text, swf_line,
                                                                 in_place):
    # lines in job number order whose submit times are not (a trace edited by hand); the
    # rlscheduler conventions keep them in number order, and the first job's time was the
    # origin: job 3 was submitted at -920 s (the built-in engine started it before 0, Batsim
    # refused the exported workload: "jobs[2].subtime must be >= 0, got -920")
    path = write_swf_text(["; MaxProcs: 8", swf_line(f1=1, f2=1000), swf_line(f1=2, f2=1500),
                           swf_line(f1=3, f2=80), swf_line(f1=4, f2=2000)])
    workload = read_swf(path, "rlscheduler")
    assert [j.id for j in workload.jobs] == [1, 2, 3, 4]
    selected = select(workload, 0, 3, in_place=in_place)
    assert [j.submit_s for j in selected.jobs] == [920.0, 1420.0, 0.0]
    assert [j.trace_submit_s for j in selected.jobs] == [1000.0, 1500.0, 80.0]
    later = sequence(read_swf(path, "rlscheduler"), 1, 3)
    assert [j.submit_s for j in later.jobs] == [1420.0, 0.0, 1920.0]
