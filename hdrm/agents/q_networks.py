"""Action-value (Q) networks over the policy networks' encoders, and double Q-learning targets.

A :class:`DuelingQNetwork` wraps any :mod:`~hdrm.agents.networks` network: its per-action outputs
(the policy logits: one per job row and the void bias for the per-job networks) are the advantage
stream ``A(s, a)`` and its state value is ``V(s)``. With dueling (Wang et al., 2016)::

    Q(s, a) = V(s) + A(s, a) - mean_{valid a'} A(s, a')

The mean runs over the valid actions only, so masked actions (padding rows of a job window) do not
shift the valid ones. Without dueling, ``Q(s, a) = A(s, a)``. The maximum over actions always
skips masked ones (:func:`masked_argmax`).
"""

from __future__ import annotations

import torch

from hdrm.agents.networks import PolicyValueNetwork


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` over the last axis where ``mask`` is true (0 when no entry is)."""
    weights = mask.to(values.dtype)
    return (values * weights).sum(-1) / weights.sum(-1).clamp(min=1.0)


def masked_argmax(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Index of the largest value over the last axis among the entries where ``mask`` is true.

    Ties go to the lowest index. With no true entry, the result is the argmax of ``values``.
    """
    masked = values.masked_fill(~mask, float("-inf"))
    masked = torch.where(mask.any(-1, keepdim=True), masked, values)
    return masked.argmax(-1)


class DuelingQNetwork(PolicyValueNetwork):
    """Q values from a policy-value network's advantage and value streams.

    Args:
        body: the encoder network (``mlp``, ``kernel`` or ``attention``).
        dueling: combine ``V + A - mean A``; when false, the per-action outputs are the Q values.
    """

    def __init__(self, body: PolicyValueNetwork, dueling: bool = True) -> None:
        super().__init__()
        self.body = body
        self.dueling = bool(dueling)

    def q_values(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Q values ``(..., n_actions)``; the dueling mean runs over the actions valid in ``mask``."""
        if not self.dueling:
            return self.body.logits(obs)
        advantages, value = self.body(obs)
        centred = advantages - masked_mean(advantages, mask).unsqueeze(-1)
        return value.unsqueeze(-1) + centred

    def greedy(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The valid action of largest Q (only the advantages matter: V and the mean are shared)."""
        return masked_argmax(self.body.logits(obs), mask)

    def logits(self, obs: torch.Tensor) -> torch.Tensor:
        """Q values with every action valid (the :class:`PolicyValueNetwork` interface)."""
        if not self.dueling:
            return self.body.logits(obs)
        advantages, value = self.body(obs)
        return value.unsqueeze(-1) + advantages - advantages.mean(-1, keepdim=True)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """The state-value stream ``V(s)``."""
        return self.body.value(obs)


def double_q_targets(
    next_q_target: torch.Tensor,
    next_q_online: torch.Tensor | None,
    next_masks: torch.Tensor,
    returns: torch.Tensor,
    discounts: torch.Tensor,
) -> torch.Tensor:
    """Bootstrapped targets ``R + discount * Q_target(s', a*)``, without gradient.

    Double Q-learning (van Hasselt et al., 2016): ``a*`` is the best valid action of
    ``next_q_online`` (the online network's Q values of ``s'``) and the target network's value of
    it is used. With ``next_q_online`` None, ``a*`` is the target network's own best valid action
    (plain DQN). A discount of 0 (the episode ended) gives the plain return.

    Args:
        next_q_target: ``(B, A)`` target-network Q values of the next states.
        next_q_online: ``(B, A)`` online-network Q values of the next states, or None.
        next_masks: ``(B, A)`` bool, the valid actions of the next states.
        returns: ``(B,)`` n-step returns.
        discounts: ``(B,)`` ``gamma^n``, or 0 where the episode ended.
    """
    with torch.no_grad():
        chooser = next_q_target if next_q_online is None else next_q_online
        best = masked_argmax(chooser, next_masks)
        next_q = next_q_target.gather(-1, best.unsqueeze(-1)).squeeze(-1)
        return returns + discounts * next_q
