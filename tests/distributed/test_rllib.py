"""The RLlib example (examples/rllib/rllib_ppo.py): the masked-observation wrapper conforms to
Gymnasium, the action-masking RLModule never gives a masked action any probability, and RLlib's
PPO trains a few iterations in both action modes on a local Ray. Skipped without RLlib's
dependencies (``ray[rllib]``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("ray.rllib.algorithms.ppo")

from gymnasium.utils.env_checker import check_env  # noqa: E402
from ray.rllib.core.columns import Columns  # noqa: E402
from ray.rllib.core.distribution.torch.torch_distribution import TorchCategorical  # noqa: E402
from ray.rllib.core.rl_module.rl_module import RLModuleSpec  # noqa: E402


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rllib" / "rllib_ppo.py"
MODES = ("job_pick", "policy_pair")


def load_example():
    spec = importlib.util.spec_from_file_location("rllib_ppo_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


example = load_example()


@pytest.mark.parametrize("mode", MODES)
def test_the_masked_env_passes_check_env_and_carries_the_mask(mode):
    env = example.MaskedSchedulingEnv(example.ENV_CONFIGS[mode])
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=3)
    assert np.array_equal(obs["action_mask"], np.asarray(info["action_mask"], np.float32))
    assert env.observation_space.contains(obs)


def build_module(mode):
    env = example.MaskedSchedulingEnv(example.ENV_CONFIGS[mode])
    spec = RLModuleSpec(module_class=example.rl_module_class(), observation_space=
                        env.observation_space, action_space=env.action_space,
                        model_config={"network": "auto"})
    return env, spec.build()


@pytest.mark.parametrize("mode", MODES)
def test_masked_actions_get_probability_zero(mode):
    env, module = build_module(mode)
    obs, _ = env.reset(seed=1)
    n = env.action_space.n
    mask = np.zeros(n, np.float32)
    mask[[0, n - 1]] = 1.0  # two valid actions only
    batch = {Columns.OBS: {
        "observations": torch.as_tensor(np.stack([obs["observations"]] * 4)),
        "action_mask": torch.as_tensor(np.stack([mask] * 4))}}
    for forward in (module.forward_exploration, module.forward_inference, module.forward_train):
        logits = forward(batch)[Columns.ACTION_DIST_INPUTS]
        dist = TorchCategorical.from_logits(logits)
        probs = torch.softmax(logits, -1)
        assert torch.all(probs[:, 1:-1] == 0) and torch.allclose(probs.sum(-1), torch.ones(4))
        samples = torch.stack([dist.sample() for _ in range(200)])
        assert set(samples.unique().tolist()) <= {0, n - 1}
        assert torch.isfinite(dist.entropy()).all()
    values = module.compute_values(batch)
    assert values.shape == (4,) and torch.isfinite(values).all()


@pytest.mark.parametrize("mode", MODES)
def test_rllib_ppo_trains_a_few_iterations(ray, mode):
    algo = example.ppo_config(mode, seed=0, train_batch=200).build_algo()
    try:
        before = [p.detach().clone() for p in algo.get_module().parameters()]
        results = [algo.train() for _ in range(2)]
        after = list(algo.get_module().parameters())
    finally:
        algo.stop()
    assert results[-1]["env_runners"]["num_env_steps_sampled_lifetime"] == 400
    assert any(not torch.equal(a, b) for a, b in zip(before, after))  # PPO moved the weights
    learner = results[-1]["learners"]["default_policy"]
    assert np.isfinite(learner["total_loss"]) and np.isfinite(learner["entropy"])
