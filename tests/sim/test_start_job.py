""":func:`hdrm.sim.job_end.start_job`: a machine's start called with the arguments
:func:`~hdrm.sim.job_end.start_kwargs` gives, with no dict made per job."""

from __future__ import annotations

import math

import pytest
from builders import job, one_node

from hdrm.sim.job_end import start_job, start_kwargs
from hdrm.sim.machine import machine_for


@pytest.mark.parametrize("made", [
    job(3, res=2, walltime_s=50.0, run_time_s=20.0),  # delay job with a walltime
    job(4, walltime_s=math.inf, run_time_s=7.0),  # no walltime
    job(5, walltime_s=0.0, run_time_s=7.0),  # 0: none either
    job(6, walltime_s=-1.0, run_time_s=7.0),
    job(7, res=3, walltime_s=90.0, ops_gflop=120.0),  # parallel homogeneous
])
def test_same_call_as_start_kwargs(made):
    calls = []
    start_job(lambda *args, **kwargs: calls.append((args, kwargs)), made, [0, 1])
    assert calls == [((made.idx, [0, 1]), start_kwargs(made))]


def test_machine_runs_the_started_jobs():
    machine = machine_for(one_node(4), True)
    start_job(machine.start, job(0, res=2, walltime_s=5.0, run_time_s=8.0), [0, 1])  # killed at 5
    start_job(machine.start, job(1, res=1, walltime_s=math.inf, run_time_s=3.0), [2])
    ends = machine.advance(10.0)
    assert [(e.key, e.state, e.finish_s) for e in ends] == [
        (1, "COMPLETED_SUCCESSFULLY", 3.0), (0, "COMPLETED_WALLTIME_REACHED", 5.0)]
