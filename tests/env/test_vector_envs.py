"""Gymnasium's vector environments (``gymnasium.make_vec``) over every hdrm environment: the
vector ``info["action_mask"]`` stacks one boolean mask per environment, and the batched action
space samples with it as it comes (``envs.action_space.sample(info["action_mask"])``, the vector
form of Gymnasium's masked sampling), which a plain ``MultiDiscrete`` refused (it asks for a tuple
of ``int8`` masks)."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import make_vec, spaces
from gymnasium.vector.utils import batch_space

from hdrm import ENV_ID
from hdrm.env.action_space import MaskedDiscrete, MaskedMultiDiscrete
from hdrm.env.registration import DAG_ENV_ID

from dag.periodic_gpu_case import write_case
from gpu_builders import write_tiny

from .conftest import PLATFORMS, write_jobs

JOBS = [(0, 100, 3, 100), (0, 50, 2, 50), (10, 10, 1, 10), (10, 30, 4, 30), (20, 5, 1, 5)]


def _settings(tmp_path, name: str) -> tuple[str, dict]:
    swf = write_jobs(tmp_path / "five.swf", JOBS)
    if name == "policy_pair":
        return ENV_ID, dict(workload_file=swf, **PLATFORMS["tiny4"])
    if name == "job_pick":
        return ENV_ID, dict(workload_file=swf, mode="job_pick", window=4,
                            **PLATFORMS["homogeneous"])
    if name == "gpu":
        return ENV_ID, dict(write_tiny(tmp_path), observation="gpu")
    taskset, platform = write_case(tmp_path)
    return DAG_ENV_ID, dict(workload_file=str(taskset), platform_file=str(platform),
                            mode="job_pick", window=2)


@pytest.mark.parametrize("name", ["policy_pair", "job_pick", "gpu", "dag"])
def test_vector_masked_sampling_plays_valid_actions_through_episodes(tmp_path, name):
    env_id, settings = _settings(tmp_path, name)
    envs = make_vec(env_id, num_envs=2, vectorization_mode="sync", **settings)
    try:
        n = envs.single_action_space.n
        assert isinstance(envs.action_space, spaces.MultiDiscrete)
        assert envs.action_space == spaces.MultiDiscrete([n, n])
        envs.action_space.seed(0)
        _, info = envs.reset(seed=0)
        ended = np.zeros(2, dtype=int)
        for _ in range(100):
            masks = info["action_mask"]
            assert masks.shape == (2, n) and masks.dtype == np.bool_
            actions = envs.action_space.sample(masks)
            assert masks[0, actions[0]] and masks[1, actions[1]], (masks, actions)
            _, _, terminated, truncated, info = envs.step(actions)
            ended += terminated | truncated
        assert ended.min() >= 1  # each environment played at least one episode to its end
    finally:
        envs.close()


def test_async_vector_envs_sample_with_the_stacked_masks(tmp_path):
    env_id, settings = _settings(tmp_path, "job_pick")
    envs = make_vec(env_id, num_envs=2, vectorization_mode="async", **settings)
    try:
        _, info = envs.reset(seed=0)
        for _ in range(10):
            masks = info["action_mask"]
            actions = envs.action_space.sample(masks)
            assert masks[np.arange(2), actions].all()
            _, _, _, _, info = envs.step(actions)
    finally:
        envs.close()


def test_batched_space_draws_only_valid_actions_from_rows_or_tuples():
    space = batch_space(MaskedDiscrete(4, seed=3), 3)
    assert isinstance(space, MaskedMultiDiscrete) and space == spaces.MultiDiscrete([4, 4, 4])
    masks = np.array([[0, 1, 0, 1], [1, 0, 0, 0], [0, 0, 1, 1]], dtype=bool)
    drawn = {tuple(int(a) for a in space.sample(masks)) for _ in range(200)}
    assert {d[0] for d in drawn} == {1, 3} and {d[1] for d in drawn} == {0}
    assert {d[2] for d in drawn} == {2, 3}
    for as_tuple in (tuple(masks), tuple(masks.astype(np.int8))):
        actions = space.sample(as_tuple)
        assert masks[np.arange(3), actions].all()
    assert space.sample().shape == (3,)
