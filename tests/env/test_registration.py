"""``gymnasium.make`` works with no arguments, and bad arguments are one-line ConfigErrors."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

from hdrm.env import ENV_ID, SchedulingEnv
from hdrm.errors import ConfigError, WorkloadError
from hdrm.options import load_options

from .conftest import ROOT


def test_make_with_no_arguments_runs_the_shipped_example():
    env = gymnasium.make("hdrm:hdrm/Scheduling-v0")
    assert env.spec.id == ENV_ID == "hdrm/Scheduling-v0"
    base = env.unwrapped
    assert isinstance(base, SchedulingEnv)
    assert env.action_space.n == 36 and base.action_names[0] == "random-random"
    assert base.platform.nb_cores == 384 and base.config.mode == "policy_pair"
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    for _ in range(5):
        obs, reward, terminated, truncated, info = env.step(int(np.argmax(info["action_mask"])))
        assert env.observation_space.contains(obs) and isinstance(reward, float)
        assert not truncated
    env.close()


def test_make_passes_keyword_arguments():
    env = gymnasium.make("hdrm:hdrm/Scheduling-v0", mode="job_pick", window=16, nb_jobs=20,
                         objective="makespan")
    assert env.observation_space.shape == (16, 8) and env.action_space.n == 17
    assert env.unwrapped.objective.name == "makespan"


@pytest.mark.parametrize("kwargs, message", [
    ({"windw": 8}, r"^unknown environment argument 'windw'; did you mean 'window' or 'window_order'\?"),
    ({"objective": "makespn"}, r"objective: unknown objective 'makespn'; did you mean 'makespan'"),
    ({"observation": "smal"}, r"observation: unknown observation 'smal'; did you mean 'small'"),
    ({"mode": "job-pick"}, r"mode: unknown action mode 'job-pick'; did you mean 'job_pick'"),
    ({"selection": ["shortest-high_gflop"]}, r"actions\.selection: unknown policy "
                                              r"'shortest-high_gflop'; did you mean"),
    ({"observation": "job_window"}, r"'job_window' goes with actions mode 'job_pick'"),
    ({"window": 0}, r"window: expected a positive number of jobs, got 0"),
    ({"engine": "batsm"}, r"^engine: unknown engine 'batsm'; did you mean 'batsim'\? choose one of: builtin, batsim$"),
])
def test_bad_arguments_are_config_errors_with_suggestions(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        gymnasium.make("hdrm:hdrm/Scheduling-v0", **kwargs)


def test_a_missing_workload_names_the_file(tmp_path):
    missing = tmp_path / "nope.swf"
    with pytest.raises(WorkloadError, match=f"^{missing}: no such file"):
        SchedulingEnv(workload_file=str(missing))


@pytest.mark.parametrize("example", ["classic", "reinforce", "a2c", "ppo", "ppo_jobpick"])
def test_the_shipped_examples_build_environments(example):
    options = load_options(ROOT / "examples" / example / "options.json")
    env = SchedulingEnv(options=options)
    assert env.config.workload_file == options.workload_file_path
    obs, info = env.reset(seed=options.seed)
    assert env.observation_space.contains(obs) and info["action_mask"].any()
