"""The agent conformance check passes for every built-in agent and catches broken ones."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

from hdrm.agents.base import Agent, ClassicAgent, first_valid
from hdrm.agents.catalog import get_agent_class
from hdrm.agents.testing import SyntheticEnv, check_agent

SMALL_PPO = {"rollout_steps": 10, "minibatch": 4, "epochs": 2}
WINDOW = spaces.Box(0.0, 1.0, (4, 3), np.float32)


def test_classic_conforms():
    check_agent(ClassicAgent, {"run": "test", "policy": "a2"})


@pytest.mark.parametrize("name", ["reinforce", "a2c", "ppo"])
def test_learners_conform_on_flat_observations(name):
    params = SMALL_PPO if name == "ppo" else {}
    check_agent(get_agent_class(name), {"run": "train", "lr": 0.01, "params": params})


@pytest.mark.parametrize("network", ["kernel", "attention"])
def test_ppo_conforms_on_job_windows(network):
    params = {**SMALL_PPO, "network": network, "heads": 2}
    check_agent(get_agent_class("ppo"), {"params": params}, WINDOW, spaces.Discrete(5))


class IgnoresMask(Agent):
    def decide(self, observation, mask):
        return self.n_actions - 1


class GlobalRandom(Agent):
    def decide(self, observation, mask):
        return int(np.random.choice(np.flatnonzero(mask)))  # global state: not reproducible


def test_masked_choice_is_caught():
    with pytest.raises(AssertionError, match=r"decide\(\) returned the masked action 4"):
        check_agent(IgnoresMask, {})


def test_unseeded_randomness_is_caught():
    with pytest.raises(AssertionError, match="two agents with the same seed made different decisions"):
        check_agent(GlobalRandom, {}, episodes=5)


def test_synthetic_env_respects_the_space():
    env = SyntheticEnv(spaces.Box(-2.0, np.inf, (3, 2), np.float32), 4, 5, seed=0)
    for _ in range(50):
        obs, mask = env.observation()
        assert obs.shape == (3, 2) and obs.dtype == np.float32 and (obs >= -2.0).all()
        assert mask.any() and first_valid(mask) == int(np.flatnonzero(mask)[0])
