"""Scaling a workload's arrivals (:func:`hdrm.workload.load.scale_arrivals`)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from hdrm.errors import WorkloadError
from hdrm.workload.job import Job, Workload
from hdrm.workload.load import scale_arrivals


def make_workload() -> Workload:
    jobs = [Job(i, 100 + i, s, 1 + i, 50.0, 40.0, trace_submit_s=1000 + s, extra={"k": i})
            for i, s in enumerate([0.0, 30.0, 90.0])]
    return Workload(jobs, "w", "w.swf", None, {"run time 0": 3}, 8)


def test_factor_divides_submission_times_and_keeps_everything_else():
    source = make_workload()
    before = [dataclasses.astuple(j) for j in source.jobs]
    heavier = scale_arrivals(source, 3.0)
    assert [j.submit_s for j in heavier.jobs] == [0.0, 10.0, 30.0]
    for old, new in zip(source.jobs, heavier.jobs):
        same_otherwise = dataclasses.replace(new, submit_s=old.submit_s)
        assert dataclasses.astuple(same_otherwise) == dataclasses.astuple(old)
        assert new.trace_submit_s == old.trace_submit_s  # the source's clock is kept
        assert new is not old and new.extra is not old.extra
    assert [dataclasses.astuple(j) for j in source.jobs] == before  # the source is unchanged
    assert heavier.name == "wx3" and heavier.nb_res == 8 and heavier.skipped == {"run time 0": 3}
    lighter = scale_arrivals(source, 0.5)
    assert [j.submit_s for j in lighter.jobs] == [0.0, 60.0, 180.0]
    assert scale_arrivals(source, 1).name == "w"


@pytest.mark.parametrize("factor", [0, -2.0, math.nan, math.inf, True, "2"])
def test_bad_factor_is_a_one_line_error(factor):
    with pytest.raises(WorkloadError, match=r"^w: load factor must be a finite number > 0 .*got"):
        scale_arrivals(make_workload(), factor)
