"""Mixed precision (``precision: "bf16"``): the update's forward passes under bfloat16 autocast.

Runs on the CPU with torch's CPU bf16 autocast; the same code path autocasts on a GPU.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from gymnasium import spaces

from hdrm.agents.a2c import A2CAgent
from hdrm.agents.buffers import RolloutBatch
from hdrm.agents.dqn import DQNAgent
from hdrm.agents.ppo import PPOAgent
from hdrm.agents.reinforce import ReinforceAgent
from hdrm.errors import ConfigError

K, F = 32, 6


def attention_ppo(precision: str, width: int = 32, layers: int = 2) -> PPOAgent:
    config = {"run": "train", "hidden": [width, 16],
              "params": {"network": "attention", "layers": layers, "precision": precision}}
    obs_space = spaces.Box(0.0, 1.0, (K, F), np.float32)
    return PPOAgent(config, obs_space, spaces.Discrete(K + 1), seed=0)


def fixed_batch(n: int = 256) -> RolloutBatch:
    """Job windows with 4..K real rows (real-job flag in column -2), valid masks, random targets."""
    g = torch.Generator().manual_seed(0)
    obs = torch.rand(n, K, F, generator=g)
    real = torch.arange(K)[None, :] < torch.randint(4, K + 1, (n, 1), generator=g)
    obs[..., -2] = real.float()
    obs[..., -1] = obs[:, :1, -1]  # the cluster column repeats on every row
    masks = torch.cat([real, torch.ones(n, 1, dtype=torch.bool)], dim=1)
    actions = torch.multinomial(masks.float(), 1, generator=g)[:, 0]
    return RolloutBatch(obs, masks, actions, torch.full((n,), -math.log(8.0)),
                        torch.randn(n, generator=g), torch.randn(n, generator=g),
                        torch.randn(n, generator=g))


def on(agent: PPOAgent, batch: RolloutBatch) -> RolloutBatch:
    """``batch`` on the learner's update device."""
    return RolloutBatch(*(agent.to_update(t) for t in batch))


def test_bf16_loss_is_finite_and_close_to_fp32_on_a_fixed_batch():
    batch = fixed_batch()
    fp32, bf16 = attention_ppo("fp32"), attention_ppo("bf16")
    assert all(torch.equal(a, b) for a, b in zip(fp32.network.parameters(),
                                                 bf16.network.parameters()))
    seen = []
    bf16.network.embed.register_forward_hook(lambda m, i, out: seen.append(out.dtype))
    loss32, parts32 = fp32._minibatch_loss(on(fp32, batch))  # on a GPU, where there is one
    loss16, parts16 = bf16._minibatch_loss(on(bf16, batch))
    assert seen == [torch.bfloat16]  # autocast did run the encoder in bf16
    assert loss16.dtype == torch.float32 and math.isfinite(loss16.item())
    assert loss16.item() != loss32.item()  # not silently fp32
    assert abs(loss16.item() - loss32.item()) <= 0.02 * abs(loss32.item()) + 0.01
    for key in ("policy_loss", "value_loss", "entropy"):
        assert abs(parts16[key] - parts32[key]) <= 0.02 * abs(parts32[key]) + 0.01, key
    bf16.optimise(loss16)
    grads_finite = all(torch.isfinite(p).all() for p in bf16.network.parameters())
    assert grads_finite and all(p.dtype == torch.float32 for p in bf16.network.parameters())


def test_fp32_is_the_default_and_runs_no_autocast():
    agent = attention_ppo("fp32")
    assert type(agent.settings)().precision == "fp32"
    seen = []
    agent.network.embed.register_forward_hook(lambda m, i, out: seen.append(out.dtype))
    agent._minibatch_loss(on(agent, fixed_batch(8)))
    assert seen == [torch.float32]


@pytest.mark.parametrize("cls", [ReinforceAgent, A2CAgent, PPOAgent, DQNAgent],
                         ids=lambda c: c.__name__)
def test_every_learner_trains_in_bf16(driver, window, cls):
    params = {"network": "attention", "heads": 2, "precision": "bf16"}
    if cls is PPOAgent:
        params.update(rollout_steps=16, minibatch=8)
    if cls is DQNAgent:
        params.update(learning_starts=8, batch_size=8)
    agent = driver.make(cls, window, hidden=[16, 8], params=params)
    before = {k: v.clone() for k, v in agent.state_dict().items()}
    stats = driver.run(agent, window, 4)
    after = agent.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert all(torch.isfinite(v).all() for v in after.values() if v.is_floating_point())
    learned = [s["loss"] for s in stats if s.get("gradient_steps", 1.0) > 0 and s["loss"] == s["loss"]]
    assert len(learned) >= 2 and all(math.isfinite(v) for v in learned)


def test_an_unknown_precision_names_the_choices(driver, window):
    with pytest.raises(ConfigError, match=r"^pybatsim\.agent\.params\.precision: invalid value "
                                          r"'fp16'; .*choose one of: fp32, bf16$"):
        driver.make(PPOAgent, window, params={"precision": "fp16"})
