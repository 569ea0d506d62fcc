"""``reset(options={"load_factor": f})``: an episode on a heavier or lighter variant of its sequence."""

from __future__ import annotations

import pytest

from hdrm.env import SchedulingEnv
from hdrm.errors import WorkloadError
from hdrm.sim.outputs import job_results

from .conftest import write_jobs


def test_load_factor_divides_the_episode_submission_times(tmp_path):
    # 4 cores, FCFS: j0 holds all 4 cores for 100 s; j1 and j2 wait for it whatever the factor.
    path = write_jobs(tmp_path / "w.swf", [(0, 100, 4, 100), (10, 5, 1, 5), (30, 5, 1, 5)])
    env = SchedulingEnv(workload_file=path, platform_file=None, homogeneous_procs=4,
                        observation="small_waits", selection=("first-random",))
    env.reset(options={"load_factor": 2})
    assert env.submit.tolist() == [0.0, 5.0, 15.0]
    assert env.sim.workload.jobs[1].trace_submit_s == 10.0
    done = False
    while not done:
        *_, terminated, truncated, info = env.step(0)
        done = terminated or truncated
    waits = sorted(round(r.waiting_time, 6) for r in job_results(env.result()))
    assert waits == [0.0, 85.0, 95.0]  # j1 (at 5) and j2 (at 15) start at 100 and 105
    env.reset()  # the factor holds for one episode only
    assert env.submit.tolist() == [0.0, 10.0, 30.0]


def test_a_bad_load_factor_is_a_one_line_error(tmp_path):
    path = write_jobs(tmp_path / "w.swf", [(0, 100, 4, 100), (10, 5, 1, 5)])
    env = SchedulingEnv(workload_file=path, platform_file=None, homogeneous_procs=4)
    with pytest.raises(WorkloadError, match="load factor must be a finite number > 0"):
        env.reset(options={"load_factor": -1})
