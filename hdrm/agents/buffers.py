"""Generalised advantage estimation and the PPO rollout buffer.

The buffer stores a fixed number of steps in preallocated numpy arrays (no per-step allocation);
:meth:`RolloutBuffer.finish` computes advantages and returns and hands the rollout over as a
:class:`RolloutBatch` of tensors, which :func:`minibatches` shuffles with a seeded generator.
"""

from __future__ import annotations

from typing import Iterator, NamedTuple

import numpy as np
import torch


def gae(
    rewards: np.ndarray,
    values: np.ndarray,
    dones: np.ndarray,
    last_value: float,
    gamma: float,
    lam: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimates and value targets (Schulman et al., 2016).

    Args:
        rewards: ``r_t`` for each step.
        values: ``V(s_t)`` for each step.
        dones: true where the episode ended after step t (no bootstrap across it).
        last_value: ``V`` of the state after the last step (ignored when the last step is done).
        gamma: discount factor.
        lam: GAE lambda (1: Monte-Carlo returns minus values; 0: one-step TD errors).

    Returns:
        ``(advantages, returns)`` with ``returns = advantages + values`` (float64).
    """
    n = len(rewards)
    advantages = np.empty(n, dtype=np.float64)
    running = 0.0
    next_value = float(last_value)
    for t in range(n - 1, -1, -1):
        live = 0.0 if dones[t] else 1.0
        delta = rewards[t] + gamma * next_value * live - values[t]
        running = delta + gamma * lam * live * running
        advantages[t] = running
        next_value = values[t]
    return advantages, advantages + np.asarray(values, dtype=np.float64)


class RolloutBatch(NamedTuple):
    """Steps of a rollout (or a minibatch of them), as tensors."""

    obs: torch.Tensor
    masks: torch.Tensor
    actions: torch.Tensor
    log_probs: torch.Tensor
    values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor


class RolloutBuffer:
    """A fixed-size store of on-policy steps, filled by ``add`` then ``set_outcome`` per step.

    Args:
        size: number of steps per rollout.
        obs_shape: shape of one observation.
        n_actions: number of actions (width of the masks).
    """

    def __init__(self, size: int, obs_shape: tuple[int, ...], n_actions: int) -> None:
        self.size = int(size)
        self.obs = np.zeros((self.size, *obs_shape), dtype=np.float32)
        self.masks = np.zeros((self.size, n_actions), dtype=bool)
        self.actions = np.zeros(self.size, dtype=np.int64)
        self.log_probs = np.zeros(self.size, dtype=np.float32)
        self.values = np.zeros(self.size, dtype=np.float32)
        self.rewards = np.zeros(self.size, dtype=np.float64)
        self.dones = np.zeros(self.size, dtype=bool)
        self.pos = 0
        self.awaiting_outcome = False

    @property
    def full(self) -> bool:
        """Every step of the rollout is stored with its reward."""
        return self.pos == self.size and not self.awaiting_outcome

    def add(self, obs: np.ndarray, mask: np.ndarray, action: int, log_prob: float, value: float) -> None:
        """Store a decision; its reward comes with :meth:`set_outcome`."""
        if self.awaiting_outcome or self.pos >= self.size:
            raise RuntimeError(
                "RolloutBuffer.add: the previous step has no reward yet, or the buffer is full"
            )
        i = self.pos
        self.obs[i] = obs
        self.masks[i] = mask
        self.actions[i] = action
        self.log_probs[i] = log_prob
        self.values[i] = value
        self.pos += 1
        self.awaiting_outcome = True

    def set_outcome(self, reward: float, done: bool) -> bool:
        """Attach the reward of the last stored decision; returns False when none awaits one."""
        if not self.awaiting_outcome:
            return False
        self.rewards[self.pos - 1] = reward
        self.dones[self.pos - 1] = done
        self.awaiting_outcome = False
        return True

    def finish(self, last_value: float, gamma: float, lam: float) -> RolloutBatch:
        """Compute advantages and returns of the stored steps; returns them as a batch of tensors."""
        n = self.pos
        advantages, returns = gae(
            self.rewards[:n], self.values[:n], self.dones[:n], last_value, gamma, lam
        )
        return RolloutBatch(
            torch.from_numpy(self.obs[:n].copy()),
            torch.from_numpy(self.masks[:n].copy()),
            torch.from_numpy(self.actions[:n].copy()),
            torch.from_numpy(self.log_probs[:n].copy()),
            torch.from_numpy(self.values[:n].copy()),
            torch.from_numpy(advantages.astype(np.float32)),
            torch.from_numpy(returns.astype(np.float32)),
        )

    def reset(self) -> None:
        """Empty the buffer (the arrays are reused)."""
        self.pos = 0
        self.awaiting_outcome = False


def minibatches(batch: RolloutBatch, size: int, generator: torch.Generator) -> Iterator[RolloutBatch]:
    """Yield shuffled minibatches of ``size`` steps of ``batch`` (the last may be smaller).

    The order is drawn on the CPU with ``generator`` whatever the batch's device, so a seed gives
    the same minibatches on every device.
    """
    n = batch.obs.shape[0]
    order = torch.randperm(n, generator=generator)
    for start in range(0, n, size):
        idx = order[start : start + size].to(batch.obs.device)
        yield RolloutBatch(*(t[idx] for t in batch))
