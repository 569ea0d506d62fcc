"""REINFORCE learns the optimal policy of the tiny environments."""

from __future__ import annotations

import numpy as np
import torch

from hdrm.agents.base import discounted_returns, standardised
from hdrm.agents.distributions import evaluate
from hdrm.agents.reinforce import ReinforceAgent


def test_learns_the_masked_bandit(bandit, driver):
    agent = driver.make(ReinforceAgent, bandit, lr=3e-3, gamma=0.9, params={"torch_threads": 1})
    assert driver.mean_return(agent, bandit) < bandit.length
    driver.run(agent, bandit, 300)
    assert driver.mean_return(agent, bandit) == bandit.length  # always the right arm


def test_learns_to_pick_the_smallest_job(window, driver):
    agent = driver.make(ReinforceAgent, window, lr=3e-3, gamma=0.9, params={"torch_threads": 1})
    assert driver.mean_return(agent, window) < 3.0
    driver.run(agent, window, 500)
    assert driver.mean_return(agent, window) >= 7.2  # out of 8; random valid picks score ~1.8


def test_loss_is_the_policy_gradient_of_standardised_returns(bandit, driver):
    agent = driver.make(ReinforceAgent, bandit, gamma=0.5, params={"ent_coef": 0.0})
    obs, info = bandit.reset(seed=0)
    agent.start_episode()
    for reward in (1.0, 0.0, 2.0):
        agent.decide(obs, info["action_mask"])
        agent.rewarded(reward, reward == 2.0)
    episode_obs = np.stack(agent._observations)
    with torch.no_grad():
        ev = evaluate(
            agent.network.logits(agent.to_update(torch.from_numpy(episode_obs))).cpu(),
            torch.from_numpy(np.stack(agent._masks)),
            torch.tensor(agent._actions),
        )
    returns = standardised(discounted_returns([1.0, 0.0, 2.0], 0.5))
    expected = -(ev.log_prob.numpy() * returns).mean()
    stats = agent.end_episode()
    np.testing.assert_allclose(stats["loss"], expected, rtol=1e-5)
