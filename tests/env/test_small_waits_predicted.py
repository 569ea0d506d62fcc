"""The ``small_waits_predicted`` observation: ``small_waits`` plus the percentiles of the queued
jobs' predicted run times (their user's last ended jobs, at most the request)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from hdrm.env import SchedulingEnv
from hdrm.env.observations import WEEK_S, _seconds_quartiles

from .conftest import write_jobs


def _norm(seconds):
    return np.array([math.log1p(s) / math.log1p(WEEK_S) for s in seconds])


def test_predicted_percentiles_by_hand(tmp_path):
    # One user, 4 cores. j1 (4 cores, runs 100 s, requests 1000 s) starts at 0 with no history,
    # so its prediction is its request. j2 (requests 500 s) and j3 (requests 50 s) wait for it;
    # when it ends at 100 the user's history is [100]: j2 is predicted min(500, 100) = 100 s and
    # j3 min(50, 100) = 50 s; percentiles 50, 62.5, 75, 87.5, 100.
    jobs = [(0, 100, 4, 1000), (10, 5, 1, 500), (30, 5, 1, 50)]
    path = write_jobs(tmp_path / "w.swf", jobs)
    env = SchedulingEnv(workload_file=path, platform_file=None, homogeneous_procs=4,
                        observation="small_waits_predicted")
    waits = SchedulingEnv(workload_file=path, platform_file=None, homogeneous_procs=4,
                          observation="small_waits")
    assert env.observation_space.shape == (37,)
    obs, _ = env.reset()
    waits_obs, _ = waits.reset()
    assert obs[:32].tolist() == waits_obs.tolist()
    assert obs[-5:] == pytest.approx(_norm([1000] * 5), rel=1e-6)
    obs, *_, info = env.step(0)
    waits_obs, *_ = waits.step(0)
    assert info["time"] == 100.0
    assert obs[:32].tolist() == waits_obs.tolist()
    assert obs[-5:] == pytest.approx(_norm([50, 62.5, 75, 87.5, 100]), rel=1e-6)
    # The requests' percentiles (queue block, column 0 of the quartile rows) still show 50..500.
    assert obs[0] == pytest.approx(_norm([50])[0], rel=1e-6)
    assert obs[4] == pytest.approx(_norm([500])[0], rel=1e-6)


def test_empty_queue_gives_zeros(tmp_path):
    path = write_jobs(tmp_path / "w.swf", [(0, 10, 1, 20), (100, 10, 1, 20)])
    env = SchedulingEnv(workload_file=path, platform_file=None, homogeneous_procs=4,
                        observation="small_waits_predicted")
    env.reset()
    assert env.observer.build()[-5:].tolist() != [0.0] * 5  # j1 queued, predicted 20 s
    env.sim.core.queue.clear()
    assert env.observer.build()[-5:].tolist() == [0.0] * 5


def test_matches_the_predictor_job_by_job_on_a_real_trace():
    # SDSC-SP2's first 500 jobs (many users, requests far above run times), random pairs: at
    # every decision the block is the percentiles of RuntimePredictor.predict over the queue.
    trace = Path(__file__).resolve().parents[2] / "workloads" / "SDSC-SP2-1998-4.2-cln_first500.swf"
    env = SchedulingEnv(workload_file=str(trace), platform_file=None, homogeneous_procs=128,
                        observation="small_waits_predicted", nb_jobs=300)
    rng = np.random.default_rng(3)
    obs, _ = env.reset(seed=0)
    done, checked, informed = False, 0, 0
    while not done:
        queue = env.sim.core.queue
        predict = env.sim.core.predictor.predict
        runs = np.array([predict(job) for job in queue])
        assert obs[-5:].tolist() == _seconds_quartiles(runs).tolist()
        checked += 1
        informed += any(r < job.walltime_s for r, job in zip(runs, queue))
        obs, _, done, _, _ = env.step(int(rng.integers(env.action_space.n)))
    assert checked > 100 and informed > 20  # the predictions did differ from the requests
