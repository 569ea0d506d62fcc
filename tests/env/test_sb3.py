"""Smoke test with a third-party library: sb3-contrib's MaskablePPO learns on the environment."""

from __future__ import annotations

import numpy as np
import pytest

from hdrm.env import SchedulingEnv

from .conftest import PLATFORMS

sb3_contrib = pytest.importorskip("sb3_contrib")


@pytest.mark.parametrize("mode", ["policy_pair", "job_pick"])
def test_maskable_ppo_learns_a_few_hundred_steps(small_swf, mode):
    from sb3_contrib.common.maskable.utils import get_action_masks
    from sb3_contrib.common.wrappers import ActionMasker

    extra = {"mode": mode, "window": 8} if mode == "job_pick" else {"observation": "small"}
    env = SchedulingEnv(workload_file=small_swf, nb_jobs=30, start_index="random",
                        **PLATFORMS["tiny_hetero" if mode == "policy_pair" else "homogeneous"],
                        **extra)
    if mode == "job_pick":  # the env's own action_masks() is found without a wrapper too
        env = ActionMasker(env, lambda e: e.unwrapped.action_masks())
    model = sb3_contrib.MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=2,
                                    seed=0, device="cpu", policy_kwargs={"net_arch": [16]})
    model.learn(total_timesteps=256)
    assert model.num_timesteps >= 256
    vec = model.get_env()
    obs = vec.reset()
    masks = get_action_masks(vec)
    action, _ = model.predict(obs, action_masks=masks, deterministic=True)
    assert masks[0][int(action[0])]
    assert np.asarray(masks).dtype == bool
