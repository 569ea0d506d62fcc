"""Gymnasium's masked sampling, ``env.action_space.sample(info["action_mask"])``, on every
environment: the environments' masks are boolean (as sb3-contrib documents), which Gymnasium's own
``Discrete.sample`` refuses (it asserts int8); :class:`hdrm.env.action_space.MaskedDiscrete`
takes both."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from gymnasium import spaces

from hdrm.env import SchedulingEnv
from hdrm.env.action_space import CurrentMask, MaskedDiscrete

from dag.periodic_gpu_case import write_case
from gpu_builders import write_tiny

from .conftest import PLATFORMS, write_jobs

JOBS = [(0, 100, 3, 100), (0, 50, 2, 50), (10, 10, 1, 10), (10, 30, 4, 30), (20, 5, 1, 5)]


def _envs(tmp_path):
    swf = write_jobs(tmp_path / "five.swf", JOBS)
    taskset, platform = write_case(tmp_path)
    yield "job_pick event", SchedulingEnv(workload_file=swf, mode="job_pick", window=4,
                                          **PLATFORMS["homogeneous"])
    yield "job_pick commit", SchedulingEnv(workload_file=swf, mode="job_pick", window=4,
                                           decision="commit", **PLATFORMS["homogeneous"])
    yield "policy_pair", SchedulingEnv(workload_file=swf, **PLATFORMS["tiny4"])
    yield "gpu", SchedulingEnv(**write_tiny(tmp_path), observation="gpu")
    yield "dag job_pick", SchedulingEnv(workload_file=str(taskset), platform_file=str(platform),
                                        mode="job_pick", window=2)


def test_sampling_with_the_environments_own_masks_plays_valid_actions_to_the_end(tmp_path):
    for name, env in _envs(tmp_path):
        assert isinstance(env.action_space, spaces.Discrete), name
        env.action_space.seed(1)
        _, info = env.reset(seed=0)
        done, steps = env.sim.done, 0
        while not done:
            mask = info["action_mask"]
            assert mask.dtype == np.bool_, name
            action = int(env.action_space.sample(mask))
            assert mask[action], (name, steps, action)
            _, _, done, truncated, info = env.step(action)
            done, steps = done or truncated, steps + 1
        assert steps > 0 and len(env.result().outcomes) > 0, name


def test_masked_sampling_draws_every_valid_action_and_only_those():
    space = MaskedDiscrete(5, seed=3)
    mask = np.array([False, True, False, True, True])
    drawn = {int(space.sample(mask)) for _ in range(300)}
    assert drawn == {1, 3, 4}
    assert {int(space.sample(mask.astype(np.int8))) for _ in range(300)} == {1, 3, 4}
    only = np.array([0, 0, 1, 0, 0], dtype=bool)
    assert all(int(space.sample(only)) == 2 for _ in range(20))
    weights = np.array([0, 0, 0, 1.0, 0])
    assert int(space.sample(probability=weights)) == 3


def test_masked_discrete_is_a_discrete_for_libraries():
    space = MaskedDiscrete(7)
    assert space == spaces.Discrete(7) and isinstance(space, spaces.Discrete)
    back = pickle.loads(pickle.dumps(space))
    assert type(back) is MaskedDiscrete and back == space
    with pytest.raises(AssertionError, match="int8"):  # why MaskedDiscrete exists
        spaces.Discrete(3).sample(mask=np.array([True, False, True]))


def test_a_current_mask_is_sampled_bare_and_travels_with_copies_not_as_a_reference():
    current = CurrentMask()
    space = MaskedDiscrete(4, seed=0, current=current)
    assert {int(space.sample()) for _ in range(200)} == {0, 1, 2, 3}  # no mask yet: any action
    current.mask = np.array([False, True, False, True])
    assert {int(space.sample()) for _ in range(200)} == {1, 3}
    for copied in (pickle.loads(pickle.dumps(space)), copy.deepcopy(space)):
        assert copied == space and copied.current is not current
        current.mask = np.array([True, False, False, False])  # the original moves on ...
        assert {int(copied.sample()) for _ in range(100)} == {1, 3}  # ... a copy keeps its own
        current.mask = np.array([False, True, False, True])
    assert {int(space.sample(np.array([0, 0, 1, 0], dtype=np.int8))) for _ in range(50)} == {2}
