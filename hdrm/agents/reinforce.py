"""REINFORCE (Williams, 1992): the Monte-Carlo policy gradient, one update per episode.

The loss of an episode is ``-mean_t(log pi(a_t | s_t) * G_t) - ent_coef * mean_t(H(pi(. | s_t)))``
where ``G_t`` are the discounted returns, standardised over the episode (HDeepRM's
``PolicyLearningAgent``). Masked actions have probability zero.
"""

from __future__ import annotations

import torch

from hdrm.agents.catalog import AGENTS
from hdrm.agents.learning import Episode, PolicyLearningAgent, returns_tensor


@AGENTS.register("reinforce", "policy_gradient")
class ReinforceAgent(PolicyLearningAgent):
    """REINFORCE with standardised returns and an entropy bonus; settings: :class:`PolicySettings`."""

    def learn(self, episode: Episode) -> dict[str, float]:
        """One gradient step on the episode's policy-gradient loss."""
        returns = self.to_update(returns_tensor(episode.rewards, self.gamma, self.settings.standardise))

        def chunk_loss(steps: slice) -> tuple[torch.Tensor, dict[str, float]]:
            evals = self.evaluate(episode.obs[steps], episode.masks[steps], episode.actions[steps])
            policy_loss = -(evals.log_prob * returns[steps]).sum()
            entropy = evals.entropy.sum()
            loss = policy_loss - self.settings.ent_coef * entropy
            return loss, {
                "loss": loss.item(),
                "policy_loss": policy_loss.item(),
                "entropy": entropy.item(),
            }

        return self.episode_step(len(returns), chunk_loss)
