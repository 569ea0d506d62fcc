"""Vectorised PPO rollouts (decide_batch/rewarded_batch driven by hdrm.agents.vector.run_vector)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

from hdrm.agents.ppo import PPOAgent
from hdrm.agents.reinforce import ReinforceAgent
from hdrm.agents.vector import run_vector
from hdrm.errors import ConfigError

from .conftest import JobWindow, MaskedBandit

PARAMS = {"rollout_steps": 24, "minibatch": 8, "epochs": 2}


def ppo(env, num_envs=1, seed=4, **params):
    params = {**PARAMS, "num_envs": num_envs, "rollout_device": "cpu", "update_device": "cpu",
              **params}  # bit for bit on any machine
    config = {"run": "train", "lr": 0.01, "params": params}
    return PPOAgent(config, env.observation_space, env.action_space, env.action_names, seed=seed)


def vector(make, n, asynchronous=False):
    cls = AsyncVectorEnv if asynchronous else SyncVectorEnv
    return cls([make] * n, autoreset_mode=AutoresetMode.SAME_STEP)


def single_env_loop(agent, env, env_steps, seed):
    """The launcher's loop for ``env_steps`` steps: seeded first reset, plain resets after."""
    actions, steps = [], 0
    obs, info = env.reset(seed=seed)
    agent.start_episode()
    while steps < env_steps:
        action = agent.decide(obs, info["action_mask"])
        actions.append(action)
        obs, reward, terminated, truncated, info = env.step(action)
        agent.rewarded(reward, terminated or truncated)
        steps += 1
        if terminated or truncated:
            agent.end_episode()
            obs, info = env.reset()
            agent.start_episode()
    return actions


class Recording:
    """Wraps a learner to record the actions it returns."""

    def __init__(self, agent):
        self.agent, self.actions = agent, []

    def __getattr__(self, name):
        return getattr(self.agent, name)

    def decide_batch(self, obs, masks):
        actions = self.agent.decide_batch(obs, masks)
        self.actions.extend(int(a) for a in actions)
        return actions


@pytest.mark.parametrize("make", [JobWindow, MaskedBandit], ids=["window", "bandit"])
def test_one_env_through_the_vector_api_equals_the_single_env_learner(make):
    steps = 100  # 4 updates of 24 steps, episodes of 8 steps: rollouts cut episodes
    single = ppo(make())
    single_actions = single_env_loop(single, make(), steps, seed=7)
    batched = Recording(ppo(make()))
    run = run_vector(batched, vector(make, 1), steps, seed=7)
    assert batched.actions == single_actions
    assert run.env_steps == steps and run.updates == single.updates == 4
    assert [e["steps"] for e in run.episodes] == [8.0] * 12
    a, b = single.state_dict(), batched.agent.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_several_envs_decide_in_one_pass_and_fill_one_rollout_together(monkeypatch):
    agent = ppo(JobWindow(), num_envs=3)
    calls, sizes = [], []
    forward = agent.rollout_network.forward

    def counted(obs):
        if not torch.is_grad_enabled():  # a decision (updates run with gradients)
            calls.append(obs.shape[0])
        return forward(obs)

    monkeypatch.setattr(agent.rollout_network, "forward", counted)
    update = agent.update
    monkeypatch.setattr(agent, "update", lambda batch: sizes.append(len(batch.actions)) or update(batch))
    run = run_vector(agent, vector(JobWindow, 3), 72, seed=0)
    assert set(calls) == {3} and len(calls) == 72 // 3  # one pass per step for the 3 envs
    assert run.env_steps == 72 and run.updates == 3 and sizes == [24, 24, 24]
    assert len(run.episodes) == 9 and {e["env"] for e in run.episodes} == {0, 1, 2}


def test_a_rollout_not_divisible_by_the_envs_is_rounded_up():
    agent = ppo(MaskedBandit(), num_envs=5)  # 24 steps: 5 per env, 25 per update
    assert [b.size for b in agent.env_buffers] == [5] * 5
    run = run_vector(agent, vector(MaskedBandit, 5), 55, seed=1)  # 2nd update at the 11th step
    assert run.updates == 2


def test_vectorised_ppo_learns_the_bandit():
    agent = ppo(MaskedBandit(), num_envs=4, seed=0, rollout_steps=64, minibatch=32, epochs=4)
    run = run_vector(agent, vector(MaskedBandit, 4), 64 * 12, seed=0)
    first = np.mean([e["return"] for e in run.episodes[:8]])
    last = np.mean([e["return"] for e in run.episodes[-8:]])
    assert last > first + 1.5 and last > 6.0  # optimal return 8


def test_evaluation_batches_are_greedy_and_store_nothing():
    agent = ppo(JobWindow(), num_envs=2).train_mode(False)
    envs = vector(JobWindow, 2)
    obs, info = envs.reset(seed=0)
    actions = agent.decide_batch(obs, info["action_mask"])
    with torch.no_grad():
        logits = agent.network.logits(torch.from_numpy(obs))
    expected = logits.masked_fill(~torch.from_numpy(info["action_mask"]), -1e9).argmax(-1)
    assert actions.tolist() == expected.tolist()
    assert all(b.pos == 0 for b in agent.env_buffers)


def test_async_vector_env_runs_in_processes():
    envs = vector(JobWindow, 2, asynchronous=True)
    try:
        run = run_vector(ppo(JobWindow(), num_envs=2), envs, 48, seed=0)
    finally:
        envs.close()
    assert run.updates == 2


def test_mismatches_are_one_line_errors():
    with pytest.raises(ConfigError, match=r"^pybatsim\.agent\.params\.num_envs: the learner is set "
                                          r"for 2 environment\(s\), the vector env has 3; set "
                                          r"num_envs to 3$"):
        run_vector(ppo(JobWindow(), num_envs=2), vector(JobWindow, 3), 10)
    next_step = SyncVectorEnv([JobWindow] * 2)
    with pytest.raises(ConfigError, match=r"autoreset mode 'NextStep'; build it with "
                                          r"autoreset_mode=gymnasium\.vector\.AutoresetMode\.SAME_STEP"):
        run_vector(ppo(JobWindow(), num_envs=2), next_step, 10)
    window = JobWindow()
    reinforce = ReinforceAgent({"run": "train"}, window.observation_space, window.action_space)
    with pytest.raises(ConfigError, match="ReinforceAgent has no decide_batch"):
        run_vector(reinforce, vector(JobWindow, 1), 10)
    with pytest.raises(ValueError, match=r"decide_batch: 3 observations and 3 masks for num_envs=2"):
        envs = vector(JobWindow, 3)
        obs, info = envs.reset(seed=0)
        ppo(JobWindow(), num_envs=2).decide_batch(obs, info["action_mask"])


def test_one_env_decides_as_ppo_whatever_a_subclass_does_to_decide():
    """decide_batch of one environment takes PPO's single-observation path (no batch of one):
    the same draws and stored steps as PPOAgent.decide, not a subclass's override of it."""

    class AlwaysVoid(PPOAgent):
        def decide(self, observation, mask):
            return len(mask) - 1

    env = JobWindow()
    plain, sub = ppo(env), ppo(env)
    sub.__class__ = AlwaysVoid
    envs = vector(JobWindow, 1)
    obs, info = envs.reset(seed=3)
    for _ in range(10):
        chosen = plain.decide(obs[0], info["action_mask"][0])
        actions = sub.decide_batch(obs, info["action_mask"].astype(np.int8))  # int masks too
        assert actions.dtype == np.int64 and actions.tolist() == [chosen]
        obs, rewards, terminated, truncated, info = envs.step(actions)
        plain.rewarded(rewards[0], bool(terminated[0] or truncated[0]))
        sub.rewarded_batch(rewards, terminated | truncated)
    for column in ("obs", "masks", "actions", "log_probs", "values", "rewards", "dones"):
        assert np.array_equal(getattr(plain.buffer, column), getattr(sub.buffer, column))


def test_several_envs_store_the_steps_of_one_pass():
    """Each environment's share holds its row of the forward pass: the masked log-probability
    of the action drawn and the value (by hand from the network)."""
    agent = ppo(JobWindow(), num_envs=3)
    obs, info = vector(JobWindow, 3).reset(seed=5)
    actions = agent.decide_batch(obs, info["action_mask"])
    with torch.no_grad():
        logits, values = agent.rollout_network(torch.from_numpy(obs))
    log_p = torch.log_softmax(logits.masked_fill(~torch.from_numpy(info["action_mask"]), -1e9), -1)
    for i, buffer in enumerate(agent.env_buffers):
        assert buffer.pos == 1 and buffer.actions[0] == actions[i]
        assert np.array_equal(buffer.obs[0], obs[i]) and np.array_equal(buffer.masks[0],
                                                                        info["action_mask"][i])
        assert buffer.log_probs[0] == np.float32(log_p[i, actions[i]])
        assert buffer.values[0] == np.float32(values.reshape(-1)[i])


def test_masks_not_one_row_per_env_are_one_line_errors():
    agent = ppo(JobWindow(), num_envs=2)
    obs, info = vector(JobWindow, 2).reset(seed=0)
    with pytest.raises(ValueError, match=r"^decide_batch: masks of shape \(7,\), expected one "
                                         r"row per environment \(num_envs, n_actions\)$"):
        agent.decide_batch(obs, info["action_mask"][0])
    none_valid = np.zeros_like(info["action_mask"])
    none_valid[0] = info["action_mask"][0]
    with pytest.raises(ValueError, match="^action mask has no valid action"):
        agent.decide_batch(obs, none_valid)
