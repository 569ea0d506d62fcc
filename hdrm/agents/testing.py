"""A conformance check for agents: any agent.py gets a test in a few lines.

:func:`check_agent` drives an agent class on a synthetic environment (random observations of the
given spaces, random action masks, random rewards) exactly as the launcher does, and checks the
Agent API contract::

    from hdrm.agents.loader import load_agent_class
    from hdrm.agents.testing import check_agent

    def test_my_agent():
        check_agent(load_agent_class("agents/my_agent.py"), {"run": "train", "lr": 0.01})

It checks that every decision is a valid unmasked action index, that ``end_episode`` returns a
mapping with a float ``loss``, that ``state_dict`` round-trips into a fresh agent, and that two
agents built with the same seed make the same decisions. Failures raise ``AssertionError`` with a
message saying which rule broke.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
from gymnasium import spaces

from hdrm.agents.base import Agent


class SyntheticEnv:
    """Random observations inside a Box space, random masks with at least one valid action.

    Args:
        observation_space: a Box space.
        n_actions: number of actions.
        length: steps per episode.
        seed: seed of the environment's generator.
    """

    def __init__(self, observation_space: spaces.Box, n_actions: int, length: int, seed: int) -> None:
        self.space = observation_space
        self.n_actions = n_actions
        self.length = length
        self.rng = np.random.default_rng(seed)

    def observation(self) -> tuple[np.ndarray, np.ndarray]:
        """A random observation and action mask."""
        low = np.where(np.isfinite(self.space.low), self.space.low, -1.0)
        high = np.where(np.isfinite(self.space.high), self.space.high, 1.0)
        obs = self.rng.uniform(low, high).astype(self.space.dtype)
        mask = (self.rng.random(self.n_actions) < 0.6).astype(np.int8)
        mask[self.rng.integers(self.n_actions)] = 1
        return obs, mask

    def reward(self) -> float:
        """A random reward in [-1, 1]."""
        return float(self.rng.uniform(-1.0, 1.0))


def run_synthetic(agent: Agent, env: SyntheticEnv, episodes: int) -> list[int]:
    """Drive ``agent`` like the launcher does; check each decision and episode's statistics."""
    actions = []
    for _ in range(episodes):
        agent.start_episode()
        for step in range(env.length):
            obs, mask = env.observation()
            action = agent.decide(obs, mask)
            assert isinstance(action, (int, np.integer)), f"decide() returned {action!r}, not an int"
            assert 0 <= action < env.n_actions, (
                f"decide() returned {action}, outside 0..{env.n_actions - 1}"
            )
            assert mask[action], f"decide() returned the masked action {action} (mask {mask.tolist()})"
            actions.append(int(action))
            agent.rewarded(env.reward(), step == env.length - 1)
        stats = agent.end_episode()
        assert isinstance(stats, Mapping), f"end_episode() returned {stats!r}, not a mapping"
        assert isinstance(stats.get("loss"), float), f"end_episode()['loss'] is {stats.get('loss')!r}"
    return actions


def _same_state(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    if set(a) != set(b):
        return False
    return all(np.array_equal(np.asarray(a[k]), np.asarray(b[k])) for k in a)


def check_agent(
    agent_class: type[Agent],
    config: Mapping[str, Any],
    observation_space: spaces.Box | None = None,
    action_space: spaces.Discrete | None = None,
    action_names: Sequence[str] | None = None,
    *,
    episodes: int = 3,
    length: int = 16,
    seed: int = 0,
) -> None:
    """Check that ``agent_class`` honours the Agent API (see the module docstring).

    Args:
        agent_class: the class to check.
        config: its agent block.
        observation_space: default: a 1-D Box of 8 features in [0, 1].
        action_space: default: Discrete(5).
        action_names: passed to the constructor (default: ``a0``, ``a1`` ...).
        episodes: training episodes per run.
        length: steps per episode.
        seed: seed of the agents and the synthetic environment.

    Raises:
        AssertionError: a rule of the API is broken; the message says which.
    """
    obs_space = observation_space or spaces.Box(0.0, 1.0, (8,), np.float32)
    act_space = action_space or spaces.Discrete(5)
    names = list(action_names) if action_names else [f"a{i}" for i in range(act_space.n)]

    def build(agent_seed: int) -> Agent:
        agent = agent_class(config, obs_space, act_space, action_names=names, seed=agent_seed)
        assert isinstance(agent, Agent), f"{agent_class.__name__} is not an Agent"
        agent.train_mode(True)
        return agent

    first, second = build(seed), build(seed)
    env_args = (obs_space, int(act_space.n), length)
    actions = run_synthetic(first, SyntheticEnv(*env_args, seed), episodes)
    again = run_synthetic(second, SyntheticEnv(*env_args, seed), episodes)
    assert actions == again, "two agents with the same seed made different decisions"
    assert _same_state(first.state_dict(), second.state_dict()), "same seed, different learned state"

    fresh = build(seed + 1)
    fresh.load_state_dict(first.state_dict())
    fresh.load_optimizer_state_dict(first.optimizer_state_dict())
    assert _same_state(fresh.state_dict(), first.state_dict()), "state_dict() does not round-trip"
    first.train_mode(False)
    run_synthetic(first, SyntheticEnv(*env_args, seed + 1), 1)
    assert _same_state(fresh.state_dict(), first.state_dict()), (
        "evaluation (training off) changed the state"
    )
