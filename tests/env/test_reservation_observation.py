"""The ``job_window_reservation`` observation: EASY's view of the queue, hand-checked, and enough
for a per-job rule to replay EASY backfilling exactly; ``job_window_predicted`` adds the
predicted run time."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from hdrm.env import SchedulingEnv
from hdrm.env.observations import (
    JOB_FEATURES,
    PREDICTED_JOB_FEATURES,
    RESERVATION_JOB_FEATURES,
    WEEK_S,
)
from hdrm.errors import ConfigError
from hdrm.sim.engine import Simulation

from .conftest import write_jobs

COL = {name: i for i, name in enumerate(RESERVATION_JOB_FEATURES)}


def _at_first_arrival_of_the_queue(tmp_path, reservation: str):
    # 4 cores. At 0: j1 (2 cores, requested 100 s) and j2 (1 core, 50 s) start, 1 core stays free.
    # At 1: j3 (4 cores, 40 s) cannot fit; j4 (1 core, 200 s) and j5 (1 core, 30 s) fit.
    jobs = [(0, 100, 2, 100), (0, 50, 1, 50), (1, 40, 4, 40), (1, 200, 1, 200), (1, 30, 1, 30)]
    env = SchedulingEnv(workload_file=write_jobs(tmp_path / "w.swf", jobs), platform_file=None,
                        homogeneous_procs=4, mode="job_pick", window=6,
                        observation="job_window_reservation", reservation=reservation,
                        backfilling="easy")
    obs, info = env.reset()
    for _ in range(2):  # start j1, then j2, at time 0
        obs, *_, info = env.step(0)
    assert info["time"] == 1.0 and [j.id for j in env.window_jobs()] == [3, 4, 5]
    return env, obs


def test_columns_keep_the_job_window_layout_around_the_new_ones():
    assert RESERVATION_JOB_FEATURES[:6] == JOB_FEATURES[:6]
    assert RESERVATION_JOB_FEATURES[-2:] == JOB_FEATURES[-2:]  # the attention network reads these
    assert len(RESERVATION_JOB_FEATURES) == len(JOB_FEATURES) + 4


def test_fcfs_reservation_by_hand(tmp_path):
    env, obs = _at_first_arrival_of_the_queue(tmp_path, "fcfs")
    assert obs.shape == (6, len(RESERVATION_JOB_FEATURES))
    j3, j4, j5 = obs[0], obs[1], obs[2]
    # j3 needs the 4 cores: 2 free at 50 (j2 ends), 4 at 100 (j1 ends): it starts in 99 s
    assert j3[COL["fits_now"]] == 0 and j4[COL["fits_now"]] == j5[COL["fits_now"]] == 1
    assert j3[COL["start_in"]] == pytest.approx(math.log1p(99) / math.log1p(WEEK_S), rel=1e-6)
    assert j4[COL["start_in"]] == j5[COL["start_in"]] == 0
    # FCFS: j3 is reserved for at 100 with no extra core; nothing is ahead of it
    assert obs[:3, COL["reserved"]].tolist() == [1, 0, 0]
    assert obs[:3, COL["before_reserved"]].tolist() == [0, 0, 0]
    # j4 would end at 201, after the shadow time, on a core j3 needs; j5 ends at 31
    assert obs[:3, COL["delays_reserved"]].tolist() == [0, 1, 0]
    assert obs[3:].sum() == pytest.approx(3 * obs[0, COL["free_cores"]])  # padding: free cores only
    assert obs[:3, COL["is_job"]].tolist() == [1, 1, 1]


def test_reservation_follows_the_configured_order(tmp_path):
    # SJF order: j5 (30 s, fits), j3 (40 s, does not fit), j4 (200 s): j5 is ahead of the reservation
    env, obs = _at_first_arrival_of_the_queue(tmp_path, "sjf")
    assert obs[:3, COL["reserved"]].tolist() == [1, 0, 0]
    assert obs[:3, COL["before_reserved"]].tolist() == [0, 0, 1]
    assert obs[:3, COL["delays_reserved"]].tolist() == [0, 1, 0]


def test_nothing_is_reserved_when_every_job_fits(tmp_path):
    jobs = [(0, 10, 1, 10), (0, 10, 2, 10)]
    env = SchedulingEnv(workload_file=write_jobs(tmp_path / "w.swf", jobs), platform_file=None,
                        homogeneous_procs=4, mode="job_pick", window=4,
                        observation="job_window_reservation")
    obs, _ = env.reset()
    assert obs[:, COL["start_in"]:COL["is_job"]].sum() == 0
    assert obs[:2, COL["fits_now"]].tolist() == [1, 1]


def test_unknown_reservation_policy_is_a_config_error(tmp_path):
    path = write_jobs(tmp_path / "w.swf", [(0, 10, 1, 10)])
    with pytest.raises(ConfigError, match="reservation.*'wfp'.*wfp3"):
        SchedulingEnv(workload_file=path, platform_file=None, homogeneous_procs=4,
                      mode="job_pick", observation="job_window_reservation", reservation="wfp")


def test_job_window_kinds_belong_to_job_pick_mode(tmp_path):
    path = write_jobs(tmp_path / "w.swf", [(0, 10, 1, 10)])
    with pytest.raises(ConfigError, match="job_window_reservation.*job_pick"):
        SchedulingEnv(workload_file=path, platform_file=None, homogeneous_procs=4,
                      observation="job_window_reservation")


def _easy_rule(env: SchedulingEnv, obs: np.ndarray, order) -> int:
    """Start, in the reservation order, the first job ahead of the reservation or not delaying it;
    otherwise wait (the void action)."""
    window = env.window_jobs()
    k = len(window)
    ok = (obs[:k, COL["fits_now"]] > 0) & ((obs[:k, COL["before_reserved"]] > 0)
                                            | (obs[:k, COL["delays_reserved"]] == 0))
    for job in order(window):
        i = next(i for i, j in enumerate(window) if j is job)
        if ok[i]:
            return i
    return env.action_space.n - 1


@pytest.mark.parametrize("policy", ["fcfs", "sjf", "wfp3", "sjf_pred", "wfp3_pred"])
def test_a_per_job_rule_on_the_columns_replays_easy_backfilling(small_swf, policy):
    """Starting what the columns allow, in the policy's order, gives EASY's schedule exactly."""
    from hdrm.policies.job_selection import JOB_POLICIES

    observation = "job_window_predicted" if policy.endswith("_pred") else "job_window_reservation"
    env = SchedulingEnv(workload_file=small_swf, platform_file=None, homogeneous_procs=4,
                        nb_jobs=60, mode="job_pick", observation=observation,
                        reservation=policy, window=64)
    ordering = JOB_POLICIES.get(policy)
    obs, info = env.reset()
    done, waits = False, 0
    core = env.sim.core
    while not done:
        action = _easy_rule(env, obs, lambda w: ordering.order(w, env.sim.now, core.rng,
                                                                core.predictor.predict))
        waits += action == env.action_space.n - 1
        obs, _, done, _, info = env.step(action)
    learned = {o.job.id: o.start_s for o in env.result().outcomes}
    config = dataclasses.replace(env.sim.config, backfilling="easy")
    expected = Simulation(env.platform, env.sim.workload, config).run(policy)
    assert waits > 0  # the rule did hold jobs back for reservations
    assert learned == {o.job.id: o.start_s for o in expected.outcomes}


def test_predicted_column_by_hand(tmp_path):
    # 4 cores, every job of SWF user 1. At 0 only j1 (4 cores, requested 100 s, runs 10 s) waits:
    # no job has ended, so its prediction is its requested time. It starts; j2 (requested 1000 s)
    # and j3 (requested 200 s) arrive at 1 and cannot fit; the next decision is at 10, when j1
    # has ended: both are predicted at its 10 s.
    assert PREDICTED_JOB_FEATURES[:-3] == RESERVATION_JOB_FEATURES[:-2]
    assert PREDICTED_JOB_FEATURES[-3:] == ("predicted_time", "is_job", "free_cores")
    col = PREDICTED_JOB_FEATURES.index("predicted_time")
    jobs = [(0, 10, 4, 100), (1, 50, 1, 1000), (1, 5, 1, 200)]
    env = SchedulingEnv(workload_file=write_jobs(tmp_path / "w.swf", jobs), platform_file=None,
                        homogeneous_procs=4, mode="job_pick", window=4,
                        observation="job_window_predicted", reservation="wfp3_pred")
    obs, _ = env.reset()
    norm = math.log1p(WEEK_S)
    assert obs[0, col] == pytest.approx(math.log1p(100) / norm) and obs[0, col] == obs[0, 1]
    obs, *_, info = env.step(0)
    assert info["time"] == 10.0 and [j.id for j in env.window_jobs()] == [2, 3]
    assert obs[:2, col] == pytest.approx([math.log1p(10) / norm] * 2)
    assert obs[:2, 1] == pytest.approx([math.log1p(1000) / norm, math.log1p(200) / norm])
