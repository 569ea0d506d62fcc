"""Advantage actor-critic, updated once per episode.

The critic ``V(s)`` learns the discounted returns; the actor follows the policy gradient weighted by
the advantages ``A_t`` (GAE with ``gae_lambda``; the default 1 gives ``G_t - V(s_t)``, HDeepRM's
actor-critic), standardised over the episode. Loss:
``-mean(log pi * A) + vf_coef * 0.5 * mean((V - G)^2) - ent_coef * mean(H)``.
"""

from __future__ import annotations

import numpy as np
import torch

from hdrm.agents.base import standardised
from hdrm.agents.catalog import AGENTS
from hdrm.agents.distributions import evaluate
from hdrm.agents.learning import Episode, ValueLearningAgent


@AGENTS.register("a2c", "actor_critic", "actor-critic")
class A2CAgent(ValueLearningAgent):
    """Episode-level advantage actor-critic; settings: :class:`ValueSettings`."""

    def learn(self, episode: Episode) -> dict[str, float]:
        """One gradient step on the episode's actor-critic loss."""
        advantages, returns = self.advantages(episode.rewards, self.values_of(episode.obs))
        if self.settings.standardise:
            advantages = standardised(advantages)
        adv = self.to_update(torch.from_numpy(advantages.astype(np.float32)))
        ret = self.to_update(torch.from_numpy(returns.astype(np.float32)))
        s = self.settings

        def chunk_loss(steps: slice) -> tuple[torch.Tensor, dict[str, float]]:
            logits, values = self.update_pass(episode.obs[steps])
            evals = evaluate(logits, episode.masks[steps], episode.actions[steps])
            policy_loss = -(evals.log_prob * adv[steps]).sum()
            value_loss = 0.5 * (values - ret[steps]).pow(2).sum()
            entropy = evals.entropy.sum()
            loss = policy_loss + s.vf_coef * value_loss - s.ent_coef * entropy
            parts = {"policy_loss": policy_loss.item(), "value_loss": value_loss.item()}
            return loss, {"loss": loss.item(), **parts, "entropy": entropy.item()}

        return self.episode_step(len(ret), chunk_loss)
