"""What RL libraries ask of an environment beyond the step API: render modes as Gymnasium
declares them, pickling (vectorised and remote workers copy envs), and Stable-Baselines3's
``make_vec_env`` and ``SubprocVecEnv``."""

from __future__ import annotations

import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from hdrm import ENV_ID
from hdrm.env import SchedulingEnv
from hdrm.errors import ConfigError
from hdrm.policies.core_selection import CORE_POLICIES
from hdrm.policies.job_selection import JOB_POLICIES

from .conftest import PLATFORMS, ROOT, TINY_HETERO, write_jobs


def _first_valid(env) -> int:
    return int(np.argmax(env.unwrapped.action_masks()))


@pytest.mark.parametrize("render_mode", [None, "ansi", "rgb_array"])
def test_gymnasium_make_accepts_each_declared_render_mode_and_check_env_passes(small_swf,
                                                                                render_mode):
    env = gym.make(ENV_ID, render_mode=render_mode, workload_file=small_swf, nb_jobs=10,
                   **PLATFORMS["tiny_hetero"])
    assert env.unwrapped.render_mode == render_mode
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a render warning (modes, fps, return type) fails
        check_env(env.unwrapped)  # with a spec, it also makes one env per declared render mode


def test_unknown_render_mode_is_a_config_error_with_the_choices(small_swf):
    with pytest.raises(ConfigError, match=r"render_mode: unknown mode 'ansii'; did you mean "
                                          r"'ansi'\?.*ansi, rgb_array"):
        SchedulingEnv(workload_file=small_swf, render_mode="ansii")


def test_ansi_view_shows_time_cores_nodes_and_queue_head(tmp_path):
    # tiny_hetero: 2 nodes of 4 cores. Job 1 takes 6 cores at t=0; job 2 (4 cores, t=5) cannot
    # start; job 3 (1 core, t=7) can: the next decision is at t=7 with jobs 2 and 3 queued.
    swf = write_jobs(tmp_path / "three.swf", [(0, 100, 6, 200), (5, 50, 4, 300), (7, 10, 1, 20)],
                     max_procs=8)
    env = SchedulingEnv(workload_file=swf, platform_file=TINY_HETERO, mode="job_pick", window=4,
                        render_mode="ansi", bandwidth="none")
    env.reset()
    env.step(0)
    text = env.render()
    docs = (ROOT / "docs" / "environment.rst").read_text(encoding="utf-8")
    assert "\n".join("   " + line for line in text.splitlines()) in docs  # the page shows it
    assert text.splitlines() == [
        "t = 7.0 s | jobs: 2 queued, 1 running, 0/3 done | cores busy 6/8 (75%)",
        "cluster c0: 2 nodes, cores busy 6/8",
        "nodes (# all cores busy, + some, . none):",
        "  #+",
        "queue head (2 of 2):",
        "  job 2: 4 cores, requested 300 s, waiting 2 s",
        "  job 3: 1 core, requested 20 s, waiting 0 s",
    ]


def test_rgb_view_is_an_image_that_changes_with_the_state(small_swf):
    env = SchedulingEnv(workload_file=small_swf, nb_jobs=10, render_mode="rgb_array",
                        **PLATFORMS["tiny_hetero"])
    env.reset()
    first = env.render()
    assert first.dtype == np.uint8 and first.ndim == 3 and first.shape[2] == 3
    assert first.shape[:2] == (360, 640)
    while not np.array_equal(env.render(), first):  # a step that changes the cluster shows
        _, _, done, _, _ = env.step(_first_valid(env))
        assert not done, "the image never changed over an episode"


def test_no_render_mode_renders_nothing(small_swf):
    env = SchedulingEnv(workload_file=small_swf, nb_jobs=5)
    env.reset()
    assert env.render_mode is None and env.render() is None


def test_registered_policies_pickle_as_themselves():
    for registry in (CORE_POLICIES, JOB_POLICIES):
        for name in registry.names():
            policy = registry.get(name)
            assert pickle.loads(pickle.dumps(policy)) is policy


@pytest.mark.parametrize("settings", [
    {"observation": "normal"},
    {"observation": "small_waits_predicted", "backfilling": "easy"},
    {"mode": "job_pick", "window": 8, "core_selection": "random", "decision": "commit"},
    {"mode": "job_pick", "window": 8, "observation": "job_window_predicted",
     "reward_timing": "accrued", "core_selection": "high_mem"},
])
def test_pickled_env_continues_exactly_as_the_original(small_swf, settings):
    env = SchedulingEnv(workload_file=small_swf, nb_jobs=30, start_index="random",
                        **PLATFORMS["tiny_hetero"], **settings)
    env.reset(seed=3)
    for _ in range(3):
        env.step(_first_valid(env))
    copy = pickle.loads(pickle.dumps(env))
    steps = 0
    done = False
    while not done:
        action = _first_valid(env)
        obs, reward, done, _, info = env.step(action)
        obs2, reward2, done2, _, info2 = copy.step(action)
        np.testing.assert_array_equal(obs, obs2)
        assert (reward, done, info["time"]) == (reward2, done2, info2["time"])
        np.testing.assert_array_equal(info["action_mask"], info2["action_mask"])
        steps += 1
    assert steps > 3
    # the next episode too: the copy carries the episode counter and the random generator
    np.testing.assert_array_equal(env.reset()[0], copy.reset()[0])


def test_an_env_attached_to_a_batsim_run_refuses_pickling_in_one_line(small_swf):
    env = SchedulingEnv(workload_file=small_swf, nb_jobs=5)
    env._bridge = object()  # what engine="batsim" holds: a Batsim process and its socket
    with pytest.raises(TypeError, match=r"^SchedulingEnv with engine 'batsim' holds a running "
                                        r"Batsim process and cannot be pickled; build it where"):
        pickle.dumps(env)
    env._bridge = None


def test_sb3_make_vec_env_and_subprocess_workers_step(small_swf):
    env_util = pytest.importorskip("stable_baselines3.common.env_util")
    from stable_baselines3.common.vec_env import SubprocVecEnv

    kwargs = {"workload_file": small_swf, "nb_jobs": 15, **PLATFORMS["homogeneous"]}
    single = env_util.make_vec_env(f"hdrm:{ENV_ID}", n_envs=1, env_kwargs=kwargs)
    assert single.reset().shape[0] == 1
    single.close()
    vec = env_util.make_vec_env(f"hdrm:{ENV_ID}", n_envs=2, env_kwargs=kwargs, seed=0,
                                vec_env_cls=SubprocVecEnv,
                                vec_env_kwargs={"start_method": "fork"})
    try:
        obs = vec.reset()
        assert obs.shape[0] == 2
        ended = np.zeros(2, dtype=bool)
        for _ in range(200):
            masks = np.stack(vec.env_method("action_masks"))
            obs, rewards, dones, infos = vec.step(masks.argmax(axis=1))
            assert np.all(np.isfinite(rewards))
            ended |= dones
            if ended.all():
                break
        assert ended.all(), "both workers end an episode of 15 jobs"
    finally:
        vec.close()
