"""PPO: learning on the tiny environments, per-rollout updates with bootstrapping, KL early stop."""

from __future__ import annotations

import math

import numpy as np
import torch

from hdrm.agents.ppo import PPOAgent, PPOSettings

FAST = {"torch_threads": 1, "rollout_steps": 64, "minibatch": 16, "epochs": 4}


def test_learns_the_masked_bandit(bandit, driver):
    agent = driver.make(PPOAgent, bandit, lr=3e-3, gamma=0.9, params=FAST)
    driver.run(agent, bandit, 250)
    assert driver.mean_return(agent, bandit) == bandit.length


def test_learns_to_pick_the_smallest_job_with_the_kernel_network(window, driver):
    params = {**FAST, "rollout_steps": 128, "minibatch": 32}
    agent = driver.make(PPOAgent, window, lr=3e-3, gamma=0.9, params=params)
    assert agent.network_name == "kernel"
    driver.run(agent, window, 500)
    assert driver.mean_return(agent, window) >= 7.2


def test_updates_per_rollout_and_bootstraps_mid_episode(bandit, driver, monkeypatch):
    agent = driver.make(
        PPOAgent, bandit, params={"rollout_steps": 12, "minibatch": 4, "epochs": 2, "target_kl": 0}
    )
    seen = []
    finish = agent.buffer.finish
    monkeypatch.setattr(
        agent.buffer, "finish", lambda last, gamma, lam: seen.append(last) or finish(last, gamma, lam)
    )

    stats = driver.run(agent, bandit, 1)  # 8 steps: no update yet
    assert agent.updates == 0 and math.isnan(stats[0]["loss"])

    obs, info = bandit.reset(seed=1)
    agent.start_episode()
    for _ in range(4):  # steps 9..12 fill the rollout mid-episode
        agent.decide(obs, info["action_mask"])
        obs, reward, *_, info = bandit.step(int(np.flatnonzero(info["action_mask"])[0]))
        agent.rewarded(reward, False)
    assert agent.updates == 0  # waits for the next observation to bootstrap
    with torch.no_grad():
        # the rollout network bootstraps (on the rollout device, CPU under "auto")
        expected_bootstrap = float(agent.rollout_network.value(agent.to_rollout(torch.from_numpy(obs))))
    agent.decide(obs, info["action_mask"])
    assert agent.updates == 1
    assert seen == [expected_bootstrap]
    agent.rewarded(0.0, True)
    stats = agent.end_episode()
    assert stats["gradient_steps"] == 2 * 3  # epochs x ceil(12 / 4)
    assert np.isfinite(stats["loss"]) and 0.0 <= stats["clip_fraction"] <= 1.0


def test_full_rollout_at_episode_end_updates_without_bootstrap(bandit, driver):
    agent = driver.make(PPOAgent, bandit, params={"rollout_steps": 8, "minibatch": 8, "epochs": 1})
    stats = driver.run(agent, bandit, 2)
    assert agent.updates == 2 and all(np.isfinite(s["loss"]) for s in stats)


def test_kl_early_stop_cuts_the_update(bandit, driver):
    def steps(target_kl):
        agent = driver.make(
            PPOAgent,
            bandit,
            lr=0.5,
            params={"rollout_steps": 32, "minibatch": 4, "epochs": 10, "target_kl": target_kl},
        )
        return driver.run(agent, bandit, 4)[-1]["gradient_steps"]

    assert steps(0.0) == 80
    assert steps(1e-6) < 80


def test_defaults():
    s = PPOSettings()
    assert (s.clip, s.gae_lambda, s.epochs, s.rollout_steps, s.minibatch) == (0.2, 0.95, 4, 2048, 256)
    assert (s.vf_coef, s.ent_coef, s.target_kl, s.max_grad_norm) == (0.5, 0.01, 0.02, 0.5)
