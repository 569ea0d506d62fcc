"""Proximal policy optimisation with action masks (Schulman et al., 2017).

Steps are collected into a :class:`~hdrm.agents.buffers.RolloutBuffer` of ``rollout_steps``
decisions, across episode boundaries. When it is full, the agent updates: GAE advantages, then
``epochs`` passes over shuffled minibatches of the clipped surrogate objective, a value loss and an
entropy bonus, with gradient-norm clipping and an early stop when the approximate KL divergence to
the rollout policy exceeds 1.5 x ``target_kl``. A rollout that fills mid-episode is bootstrapped
from the value of the next observation, so its update runs at the next :meth:`PPOAgent.decide`.

:meth:`PPOAgent.decide_batch` and :meth:`PPOAgent.rewarded_batch` decide for ``num_envs``
environments stepped together (a Gymnasium vector env, driven by :func:`hdrm.agents.vector.run_vector`)
in one forward pass; each environment fills its own share of the rollout (``rollout_steps /
num_envs`` steps, rounded up), and the update runs over all of them at once.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping, Sequence

import numpy as np
import torch
from gymnasium import spaces

from hdrm.agents.buffers import RolloutBatch, RolloutBuffer, minibatches
from hdrm.agents.catalog import AGENTS
from hdrm.agents.distributions import choose, evaluate, mask_tensor, masked_logits
from hdrm.agents.learning import ValueLearningAgent, ValueSettings, as_tensor, standardise_tensor

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PPOSettings(ValueSettings):
    """Settings of PPO (``pybatsim.agent.params``)."""

    gae_lambda: float = field(default=0.95, metadata={"min": 0.0, "max": 1.0})
    """GAE lambda: bias/variance trade-off of the advantages."""
    clip: float = field(default=0.2, metadata={"min": 0.0})
    """Clipping range of the probability ratio in the surrogate objective."""
    epochs: int = field(default=4, metadata={"min": 1})
    """Passes over each rollout."""
    rollout_steps: int = field(default=2048, metadata={"min": 1})
    """Decisions collected per update (across episodes)."""
    minibatch: int = field(default=256, metadata={"min": 1})
    """Steps per gradient step."""
    target_kl: float = field(default=0.02, metadata={"min": 0.0})
    """Stop the update when the approximate KL to the rollout policy exceeds 1.5 x this; 0 disables."""
    num_envs: int = field(default=1, metadata={"min": 1})
    """Environments decided for together by ``decide_batch`` (vectorised rollouts, one forward pass
    per step for all of them); the single-environment loop (``decide``) ignores it."""


def _mask_rows(masks: Sequence[np.ndarray] | np.ndarray) -> np.ndarray:
    """The action masks of a vector env's environments as one bool array (row i: environment
    i), from bool, int8, uint8 or int values.

    Raises:
        ValueError: not one row per environment, or a row without a valid action.
    """
    rows = masks if isinstance(masks, np.ndarray) else np.stack([np.asarray(m) for m in masks])
    if rows.ndim != 2:
        raise ValueError(f"decide_batch: masks of shape {rows.shape}, expected one row per "
                         "environment (num_envs, n_actions)")
    if rows.dtype != np.bool_:
        rows = rows != 0
    if not rows.any(axis=1).all():
        raise ValueError("action mask has no valid action; the environment must always offer one")
    return rows


def mean_update_stats(stats: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The mean of each statistic over several updates; ``{"loss": nan}`` when there were none."""
    if not stats:
        return {"loss": math.nan}
    return {key: float(np.mean([s[key] for s in stats])) for key in stats[0]}


@AGENTS.register("ppo")
class PPOAgent(ValueLearningAgent):
    """PPO with masked categorical policies; settings: :class:`PPOSettings`."""

    Settings: ClassVar[type] = PPOSettings
    #: Counters a resumed training run restores (:mod:`hdrm.agents.resume`).
    resume_counters: ClassVar[tuple[str, ...]] = ("updates",)
    #: Objects whose arrays a resumed training run restores: the rollout spans episodes.
    resume_objects: ClassVar[tuple[str, ...]] = ("buffer",)

    def __init__(
        self,
        config: Mapping[str, Any],
        observation_space: spaces.Space,
        action_space: spaces.Space,
        action_names: Sequence[str] | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(config, observation_space, action_space, action_names, seed)
        shape = tuple(int(d) for d in observation_space.shape)
        self.buffer = RolloutBuffer(self.settings.rollout_steps, shape, self.n_actions)
        self.env_buffers = [self.buffer]
        if self.settings.num_envs > 1:
            per_env = -(-self.settings.rollout_steps // self.settings.num_envs)
            self.env_buffers = [
                RolloutBuffer(per_env, shape, self.n_actions) for _ in range(self.settings.num_envs)
            ]
        self.updates = 0
        #: When set, a full rollout is handed to this callable instead of being learned from here
        #: (a rollout worker of :mod:`hdrm.distributed.ppo` sends it to its learner).
        self.rollout_sink: Callable[[RolloutBatch], None] | None = None
        self._bootstrap_pending = False
        self._update_stats: list[dict[str, float]] = []

    def decide(self, observation: Any, mask: np.ndarray) -> int:
        """Sample a valid action; when training, store it (and update first if a rollout waits)."""
        return self._decide_one(observation, mask)

    def _decide_one(self, observation: Any, mask: np.ndarray) -> int:
        """PPO's decision for one observation (:meth:`decide`, and :meth:`decide_batch` for one
        environment: a subclass that overrides ``decide`` changes neither)."""
        obs = as_tensor(self.observe(observation))
        mask_t = mask_tensor(mask)
        on_device = self.to_rollout(obs)
        if self.training and self._bootstrap_pending:
            with torch.no_grad():
                last_value = float(self.rollout_network.value(on_device))
            self._update(last_value)
        with torch.no_grad():
            if not self.training:
                logits = masked_logits(self.rollout_network.logits(on_device).cpu(), mask_t)
                return choose(logits, self.greedy, self.generator)
            logits, value = self.rollout_network(on_device)
            logits = masked_logits(logits.cpu(), mask_t)
            action = choose(logits, False, self.generator)
            log_prob = torch.log_softmax(logits, dim=-1)[action]
        self.buffer.add(obs.numpy(), mask_t.numpy(), action, float(log_prob), float(value))
        return action

    def decide_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """One action per environment of a vector env, from one forward pass.

        Args:
            observations: ``(num_envs, *obs_shape)``, row i the observation of environment i.
            masks: ``(num_envs, n_actions)``, row i the action mask of environment i.

        Returns:
            int64 actions ``(num_envs,)``; when training, each step is stored in its
            environment's share of the rollout (and a full rollout is learned from first).

        Raises:
            ValueError: not ``num_envs`` rows, or a row without a valid action.
        """
        if len(self.env_buffers) == 1 and len(observations) == 1 and len(masks) == 1:
            # one environment: the single-environment path (no stacking, no batch of one), whose
            # decisions and stored steps these are (one environment's share is self.buffer)
            return np.array([self._decide_one(observations[0], masks[0])], dtype=np.int64)
        rows = np.stack([self.observe(o) for o in observations])
        obs = as_tensor(rows)
        mask_rows = _mask_rows(masks)
        if obs.shape[0] != len(self.env_buffers) or mask_rows.shape[0] != obs.shape[0]:
            raise ValueError(
                f"decide_batch: {obs.shape[0]} observations and {mask_rows.shape[0]} masks for "
                f"num_envs={len(self.env_buffers)} (pybatsim.agent.params.num_envs)"
            )
        on_device = self.to_rollout(obs)
        self._learn_pending(on_device)
        with torch.no_grad():
            logits, values = self.rollout_network(on_device)
            logits = masked_logits(logits.cpu(), torch.from_numpy(mask_rows))
        if not self.training and self.greedy:
            return logits.argmax(-1).numpy()
        sampled = torch.multinomial(torch.softmax(logits, -1), 1, generator=self.generator)
        actions = sampled.view(-1).numpy()
        if self.training:  # the stored columns read as numpy (no tensor per environment)
            log_probs = torch.log_softmax(logits, -1).gather(-1, sampled).view(-1).numpy()
            values = values.cpu().reshape(len(self.env_buffers)).numpy()
            obs_rows = obs.numpy()  # float32, as ``rows`` unless observe gave another dtype
            for i, buffer in enumerate(self.env_buffers):
                buffer.add(obs_rows[i], mask_rows[i], int(actions[i]), float(log_probs[i]),
                           float(values[i]))
        return actions

    @property
    def rollout_waiting(self) -> bool:
        """A full rollout waits for the values of the next observations before it is learned."""
        return self.training and self._bootstrap_pending

    def learn_pending_batch(self, observations: np.ndarray) -> None:
        """Learn from the full rollout that waits for the next observations' values, now, without
        deciding (``decide_batch`` does it itself first); no-op when none waits."""
        if self.rollout_waiting:
            obs = as_tensor(np.stack([self.observe(o) for o in observations]))
            self._learn_pending(self.to_rollout(obs))

    def _learn_pending(self, on_device: torch.Tensor) -> None:
        if self.rollout_waiting:
            with torch.no_grad():
                last_values = self.rollout_network.value(on_device).cpu()
            self._update_all([float(v) for v in last_values])

    def rewarded_batch(self, rewards: Sequence[float] | np.ndarray,
                       dones: Sequence[bool] | np.ndarray) -> None:
        """The rewards of the last :meth:`decide_batch` and whether each environment's episode ended
        (its next observation is then the first of a new episode); updates when the rollout is full.
        """
        if not self.training:
            return
        scale = self.settings.reward_scale
        for buffer, reward, done in zip(self.env_buffers, rewards, dones):
            buffer.set_outcome(float(reward) * scale, bool(done))
        if all(buffer.full for buffer in self.env_buffers):
            if all(bool(done) for done in dones):
                self._update_all([0.0] * len(self.env_buffers))
            else:
                self._bootstrap_pending = True

    def rewarded(self, reward: float, done: bool) -> None:
        """Attach the reward to the stored step; update when the rollout is full."""
        super().rewarded(reward, done)
        if not self.training:
            return
        if not self.buffer.set_outcome(float(reward) * self.settings.reward_scale, bool(done)):
            return
        if self.buffer.full:
            if done:
                self._update(0.0)
            else:
                self._bootstrap_pending = True

    def _learn_episode(self) -> dict[str, float]:
        """PPO learns per rollout: report the updates made during the episode (loss nan if none)."""
        return mean_update_stats(self.take_update_stats())

    def take_update_stats(self) -> list[dict[str, float]]:
        """The statistics of the updates made since the last call (each one's :meth:`update`)."""
        done, self._update_stats = self._update_stats, []
        return done

    def learn(self, episode: Any) -> dict[str, float]:  # pragma: no cover - PPO learns per rollout
        raise NotImplementedError("PPOAgent learns per rollout, in rewarded()/decide()")

    def _update(self, last_value: float) -> None:
        batch = self.buffer.finish(last_value, self.gamma, self.settings.gae_lambda)
        self.buffer.reset()
        self._learn_rollout(batch)

    def _update_all(self, last_values: list[float]) -> None:
        """Learn from every environment's share of the rollout (bootstrapped from ``last_values``)."""
        lam = self.settings.gae_lambda
        parts = [b.finish(v, self.gamma, lam) for b, v in zip(self.env_buffers, last_values)]
        for buffer in self.env_buffers:
            buffer.reset()
        self._learn_rollout(RolloutBatch(*(torch.cat(column) for column in zip(*parts))))

    def _learn_rollout(self, batch: RolloutBatch) -> None:
        self._bootstrap_pending = False
        if self.rollout_sink is not None:
            self.rollout_sink(batch)
            return
        self._update_stats.append(self.learn_rollout(batch))

    def learn_rollout(self, batch: RolloutBatch) -> dict[str, float]:
        """One update from a finished rollout (advantages and returns computed), the weights then
        copied to the rollout network; returns the update's statistics."""
        stats = self.update(RolloutBatch(*(self.to_update(t) for t in batch)))
        self.sync_rollout()
        self.updates += 1
        logger.debug("PPO update %d: %s", self.updates, stats)
        return stats

    def update(self, batch: RolloutBatch) -> dict[str, float]:
        """Run the PPO epochs over one rollout; returns mean loss parts, approx. KL and clip fraction."""
        s = self.settings
        sums: dict[str, float] = {}
        steps = 0
        stop = False
        for _ in range(s.epochs):
            for mb in minibatches(batch, s.minibatch, self.generator):
                loss, parts = self._minibatch_loss(mb)
                if s.target_kl > 0 and parts["approx_kl"] > 1.5 * s.target_kl:
                    stop = True
                    break
                self.optimise(loss)
                steps += 1
                for key, value in (("loss", loss.item()), *parts.items()):
                    sums[key] = sums.get(key, 0.0) + value
            if stop:
                break
        stats = {key: value / steps for key, value in sums.items()} if steps else {"loss": math.nan}
        stats["gradient_steps"] = float(steps)
        return stats

    def _minibatch_loss(self, mb: RolloutBatch) -> tuple[torch.Tensor, dict[str, float]]:
        s = self.settings
        logits, values = self.update_pass(mb.obs)
        evals = evaluate(logits, mb.masks, mb.actions)
        log_ratio = evals.log_prob - mb.log_probs
        ratio = log_ratio.exp()
        advantages = standardise_tensor(mb.advantages) if s.standardise else mb.advantages
        surrogate = torch.max(-advantages * ratio, -advantages * ratio.clamp(1 - s.clip, 1 + s.clip))
        policy_loss = surrogate.mean()
        value_loss = self.value_loss(values, mb.returns)
        entropy = evals.entropy.mean()
        loss = policy_loss + s.vf_coef * value_loss - s.ent_coef * entropy
        with torch.no_grad():
            approx_kl = float(((ratio - 1) - log_ratio).mean())
            clip_fraction = float(((ratio - 1).abs() > s.clip).float().mean())
        parts = {
            "policy_loss": policy_loss.item(),
            "value_loss": value_loss.item(),
            "entropy": entropy.item(),
            "approx_kl": approx_kl,
            "clip_fraction": clip_fraction,
        }
        return loss, parts
