"""Gymnasium's own conformance checker passes for every observation, action mode and platform."""

from __future__ import annotations

import warnings

import pytest
from gymnasium.utils.env_checker import check_env

from hdrm.env import SchedulingEnv

from .conftest import PLATFORMS


def _check(env: SchedulingEnv) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning is a failure...
        warnings.filterwarnings("ignore", message=".*render.*")  # ...but the env has no render
        check_env(env, skip_render_check=True)


@pytest.mark.parametrize("backfilling", ["none", "easy"])
@pytest.mark.parametrize("decision", ["event", "commit"])
@pytest.mark.parametrize("platform", sorted(PLATFORMS))
@pytest.mark.parametrize("observation", ["normal", "small", "small_waits", "small_waits_predicted",
                                         "minimal"])
def test_policy_pair_mode_passes_check_env(small_swf, observation, platform, decision, backfilling):
    env = SchedulingEnv(workload_file=small_swf, nb_jobs=20, observation=observation,
                        decision=decision, backfilling=backfilling, void=decision == "event",
                        **PLATFORMS[platform])
    _check(env)
    assert env.observation_space.shape[0] >= 22


@pytest.mark.parametrize("backfilling", ["none", "easy"])
@pytest.mark.parametrize("decision", ["event", "commit"])
@pytest.mark.parametrize("platform", sorted(PLATFORMS))
@pytest.mark.parametrize("observation, features", [("job_window", 8),
                                                   ("job_window_reservation", 12),
                                                   ("job_window_predicted", 13),
                                                   ("job_window_queue", 16)])
def test_job_pick_mode_passes_check_env(small_swf, platform, decision, backfilling, observation,
                                        features):
    env = SchedulingEnv(workload_file=small_swf, nb_jobs=20, mode="job_pick", window=8,
                        observation=observation, decision=decision, backfilling=backfilling,
                        **PLATFORMS[platform])
    _check(env)
    assert env.observation_space.shape == (8, features)
    assert env.action_names[-1] == "void" and env.action_space.n == 9


def test_normal_observation_size_counts_nodes_processors_and_cores():
    # tiny_hetero: 2 nodes, 3 processors, 8 cores -> 27 + 2 + 3 + 3 x 8 = 56 features
    env = SchedulingEnv(platform_file=PLATFORMS["tiny_hetero"]["platform_file"], nb_jobs=5)
    assert env.observation_space.shape == (56,)
    small = SchedulingEnv(platform_file=PLATFORMS["tiny_hetero"]["platform_file"], nb_jobs=5,
                          observation="small")
    assert small.observation_space.shape == (27,)
