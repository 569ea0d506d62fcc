"""Advantage actor-critic learns the tiny environments; its loss is hand-checked."""

from __future__ import annotations

import numpy as np
import torch

from hdrm.agents.a2c import A2CAgent
from hdrm.agents.distributions import evaluate


def test_learns_the_masked_bandit(bandit, driver):
    agent = driver.make(A2CAgent, bandit, lr=3e-3, gamma=0.9, params={"torch_threads": 1})
    driver.run(agent, bandit, 300)
    assert driver.mean_return(agent, bandit) == bandit.length


def test_learns_to_pick_the_smallest_job(window, driver):
    agent = driver.make(A2CAgent, window, lr=3e-3, gamma=0.9, params={"torch_threads": 1})
    driver.run(agent, window, 500)
    assert driver.mean_return(agent, window) >= 7.2


def test_loss_combines_actor_critic_and_entropy(bandit, driver):
    agent = driver.make(
        A2CAgent, bandit, gamma=0.5, params={"vf_coef": 0.25, "ent_coef": 0.1, "standardise": False}
    )
    obs, info = bandit.reset(seed=0)
    agent.start_episode()
    for reward in (1.0, 3.0):
        agent.decide(obs, info["action_mask"])
        agent.rewarded(reward, reward == 3.0)
    x = agent.to_update(torch.from_numpy(np.stack(agent._observations)))
    with torch.no_grad():
        logits, values = (t.cpu() for t in agent.network(x))
        ev = evaluate(logits, torch.from_numpy(np.stack(agent._masks)), torch.tensor(agent._actions))
    returns = np.array([1.0 + 0.5 * 3.0, 3.0])
    adv = returns - values.numpy()
    expected = (
        -(ev.log_prob.numpy() * adv).mean()
        + 0.25 * 0.5 * ((values.numpy() - returns) ** 2).mean()
        - 0.1 * ev.entropy.numpy().mean()
    )
    stats = agent.end_episode()
    np.testing.assert_allclose(stats["loss"], expected, rtol=1e-5)
    assert stats["value_loss"] > 0
