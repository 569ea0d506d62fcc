"""A tiny two-agent GPU scheduling ParallelEnv with a known best placement, for the MAPPO tests.

It follows the contract of ``hdrm.env.gpu_multiagent`` (agents ``order`` and ``place``, the
inactive agent passes 0 and its mask allows only 0, a shared reward, ``infos[a]["active"]``):

* a queue of ``jobs`` tasks, each of a random size in [1, 4]; the window shows the first
  ``window`` of them (features: size / 4, is_job); the cluster feature is the queue fill;
* order phase: pick a window row (the task) or wait (the last action: it advances nothing and
  costs 0.1 per queued task, more than any placement of a task saves); an episode is truncated
  after ``4 x jobs`` phases;
* place phase: ``nodes`` nodes in a random order each step, features (speed, 1); speed is 1.0
  (fast GPUs) for one node and 0.25 for the others; the task runs ``size / speed`` time units
  and the shared reward is ``-size / speed / 10``. With probability ``p_single`` only one node
  (at random) fits the task: the others are masked.

The best placer picks the fast node whenever it is unmasked; a placer that ignores the features
picks it half of the time (two nodes).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

AGENTS = ["order", "place"]


class ToyGpuEnv(ParallelEnv):
    """Two agents, ``nodes`` nodes, one fast; see the module docstring."""

    metadata = {"name": "toy_gpu_v0", "render_modes": []}

    def __init__(self, nodes: int = 2, window: int = 3, jobs: int = 6, p_single: float = 0.2,
                 seed: int = 0) -> None:
        self.possible_agents = list(AGENTS)
        self.agents: list[str] = []
        self.window, self.nb_nodes, self.nb_jobs, self.p_single = window, nodes, jobs, p_single
        self.job_features = ("size", "is_job")
        self.cluster_features = ("queue_fill",)
        self.node_features = ("speed", "present")
        self.rng = np.random.default_rng(seed)
        self.decisions: list[tuple[bool, bool]] = []  # (placed on the fast node, had a choice)
        self.masked_picks = 0

    def observation_space(self, agent: str) -> spaces.Dict:
        if agent == "order":
            return spaces.Dict({
                "jobs": spaces.Box(0.0, 1.0, (self.window, 2), np.float32),
                "cluster": spaces.Box(0.0, 1.0, (1,), np.float32),
                "action_mask": spaces.MultiBinary(self.window + 1)})
        return spaces.Dict({
            "job": spaces.Box(0.0, 1.0, (2,), np.float32),
            "nodes": spaces.Box(0.0, 1.0, (self.nb_nodes, 2), np.float32),
            "action_mask": spaces.MultiBinary(self.nb_nodes)})

    def action_space(self, agent: str) -> spaces.Discrete:
        return spaces.Discrete(self.window + 1 if agent == "order" else self.nb_nodes)

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agents = list(AGENTS)
        self.queue = list(self.rng.integers(1, 5, self.nb_jobs))
        self.phase, self.chosen, self.steps = "order", None, 0
        return self._observe(), self._infos()

    def _infos(self) -> dict[str, dict[str, Any]]:
        return {a: {"active": a == self.phase} for a in AGENTS}

    def _observe(self) -> dict[str, dict[str, np.ndarray]]:
        jobs = np.zeros((self.window, 2), np.float32)
        shown = self.queue[:self.window]
        for i, size in enumerate(shown):
            jobs[i] = (size / 4.0, 1.0)
        order_mask = np.zeros(self.window + 1, np.int8)
        place = {"job": np.zeros(2, np.float32), "nodes": np.zeros((self.nb_nodes, 2), np.float32),
                 "action_mask": np.zeros(self.nb_nodes, np.int8)}
        if self.phase == "order":
            order_mask[:len(shown)] = 1
            order_mask[-1] = 1
            place["action_mask"][0] = 1
        else:
            order_mask[0] = 1
            place = self._place_observation()
        order = {"jobs": jobs, "cluster": np.array([len(self.queue) / self.nb_jobs], np.float32),
                 "action_mask": order_mask}
        return {"order": order, "place": place}

    def _place_observation(self) -> dict[str, np.ndarray]:
        self.fast = int(self.rng.integers(self.nb_nodes))
        nodes = np.full((self.nb_nodes, 2), (0.25, 1.0), np.float32)
        nodes[self.fast, 0] = 1.0
        mask = np.ones(self.nb_nodes, np.int8)
        if self.rng.random() < self.p_single:
            mask[:] = 0
            mask[int(self.rng.integers(self.nb_nodes))] = 1
        self.place_mask = mask
        size = self.queue[self.chosen]
        return {"job": np.array([size / 4.0, 1.0], np.float32), "nodes": nodes, "action_mask": mask}

    def step(self, actions: dict[str, int]):
        active = self.phase
        action = int(actions[active])
        reward = 0.0
        if active == "order":
            if action == self.window:
                reward = -0.1 * len(self.queue)
            else:
                self.chosen, self.phase = action, "place"
        else:
            if not self.place_mask[action]:
                self.masked_picks += 1
            speed = 1.0 if action == self.fast else 0.25
            self.decisions.append((action == self.fast, bool(self.place_mask.sum() > 1)))
            reward = -self.queue.pop(self.chosen) / speed / 10.0
            self.phase = "order"
        self.steps += 1
        done = not self.queue
        cut = not done and self.steps >= 4 * self.nb_jobs and self.phase == "order"
        observations = self._observe()
        rewards = {a: reward for a in AGENTS}
        terminations = {a: done for a in AGENTS}
        truncations = {a: cut for a in AGENTS}
        infos = self._infos()
        if done or cut:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def state(self) -> np.ndarray:
        return np.array([len(self.queue) / self.nb_jobs], np.float32)


def fast_rate(env: ToyGpuEnv, since: int = 0) -> float:
    """Fraction of the place decisions with a choice (both nodes free) that took the fast node."""
    chosen = [fast for fast, choice in env.decisions[since:] if choice]
    return float(np.mean(chosen)) if chosen else float("nan")
