"""Tiny environments with known optimal policies, and helpers to drive agents like the launcher.

- :class:`MaskedBandit`: a one-hot context c among ``n_contexts``; action c pays 1, any other 0.
  One wrong action (never c) is masked out at random each step, and the last action ("trap")
  is always masked although it would pay 5: an agent that chooses it ignores the mask.
- :class:`JobWindow`: a 2-D ``job_pick`` window of K job rows x 3 features (size, noise, present);
  only present rows are valid, plus the "void" action K; picking the smallest present job pays 1,
  any other job 0, void 0. Rows are in random order, so only a per-row scorer generalises.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces


class MaskedBandit(gym.Env):
    """Contextual bandit with action masks; episodes of ``length`` steps; optimal return = length."""

    def __init__(self, n_contexts: int = 3, length: int = 8) -> None:
        self.n_contexts = n_contexts
        self.length = length
        self.observation_space = spaces.Box(0.0, 1.0, (n_contexts,), np.float32)
        self.action_space = spaces.Discrete(n_contexts + 1)
        self.action_names = [f"arm_{i}" for i in range(n_contexts)] + ["trap"]
        self.np_random = np.random.default_rng(0)

    def _observe(self) -> tuple[np.ndarray, dict[str, Any]]:
        self.context = int(self.np_random.integers(self.n_contexts))
        obs = np.zeros(self.n_contexts, dtype=np.float32)
        obs[self.context] = 1.0
        mask = np.ones(self.n_contexts + 1, dtype=np.int8)
        mask[-1] = 0
        wrong = [a for a in range(self.n_contexts) if a != self.context]
        mask[wrong[int(self.np_random.integers(len(wrong)))]] = 0
        self.mask = mask
        return obs, {"action_mask": mask}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.t = 0
        return self._observe()

    def step(self, action: int):
        assert self.mask[action], f"masked action {action} chosen"
        reward = 5.0 if action == self.n_contexts else float(action == self.context)
        self.t += 1
        obs, info = self._observe()
        return obs, reward, self.t >= self.length, False, info


class JobWindow(gym.Env):
    """Pick the smallest of the present jobs in a shuffled window of ``k`` rows (+ void)."""

    def __init__(self, k: int = 6, length: int = 8) -> None:
        self.k = k
        self.length = length
        self.observation_space = spaces.Box(0.0, 1.0, (k, 3), np.float32)
        self.action_space = spaces.Discrete(k + 1)
        self.action_names = [f"job_{i}" for i in range(k)] + ["void"]
        self.np_random = np.random.default_rng(0)

    def _observe(self) -> tuple[np.ndarray, dict[str, Any]]:
        rng = self.np_random
        n_present = int(rng.integers(2, self.k + 1))
        obs = np.zeros((self.k, 3), dtype=np.float32)
        rows = rng.permutation(self.k)[:n_present]
        obs[rows, 0] = rng.uniform(0.05, 1.0, n_present)
        obs[rows, 1] = rng.uniform(0.0, 1.0, n_present)
        obs[rows, 2] = 1.0
        self.best = int(rows[np.argmin(obs[rows, 0])])
        mask = np.zeros(self.k + 1, dtype=bool)
        mask[rows] = True
        mask[self.k] = True
        self.mask = mask
        return obs, {"action_mask": mask}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.t = 0
        return self._observe()

    def step(self, action: int):
        assert self.mask[action], f"masked action {action} chosen"
        reward = float(action == self.best)
        self.t += 1
        obs, info = self._observe()
        return obs, reward, self.t >= self.length, False, info


def run_episodes(agent: Any, env: gym.Env, episodes: int, seed: int = 0) -> list[dict[str, float]]:
    """Drive ``agent`` on ``env`` exactly as the launcher does; returns each episode's stats."""
    all_stats = []
    for episode in range(episodes):
        obs, info = env.reset(seed=seed + episode)
        agent.start_episode()
        while True:
            action = agent.decide(obs, info["action_mask"])
            obs, reward, terminated, truncated, info = env.step(action)
            agent.rewarded(reward, terminated or truncated)
            if terminated or truncated:
                break
        all_stats.append(agent.end_episode())
    return all_stats


def mean_return(agent: Any, env: gym.Env, episodes: int = 20, seed: int = 10_000) -> float:
    """Mean return of ``agent`` evaluated (no learning) over ``episodes`` seeded episodes."""
    agent.train_mode(False)
    stats = run_episodes(agent, env, episodes, seed)
    agent.train_mode(True)
    return float(np.mean([s["return"] for s in stats]))


def make_agent(cls: type, env: gym.Env, seed: int = 0, **config: Any) -> Any:
    """Build ``cls`` for ``env`` from keyword config (``run`` defaults to train)."""
    config.setdefault("run", "train")
    return cls(config, env.observation_space, env.action_space, action_names=env.action_names, seed=seed)


@pytest.fixture
def bandit() -> MaskedBandit:
    """A fresh masked contextual bandit (3 contexts, 8 steps)."""
    return MaskedBandit()


@pytest.fixture
def window() -> JobWindow:
    """A fresh job-pick window (6 rows x 3 features + void, 8 steps)."""
    return JobWindow()


@pytest.fixture
def driver() -> SimpleNamespace:
    """The helpers as ``driver.run``, ``driver.mean_return`` and ``driver.make``."""
    return SimpleNamespace(run=run_episodes, mean_return=mean_return, make=make_agent)
