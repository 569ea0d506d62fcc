"""Masked categorical distributions over discrete actions.

Invalid actions get the logit :data:`MASKED_LOGIT` (a large negative number), so their probability
is exactly zero after the softmax and they are never sampled, yet the tensors stay finite (no nan
in gradients or entropies).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

#: The logit given to masked-out actions.
MASKED_LOGIT = -1e9


def mask_tensor(mask: np.ndarray) -> torch.Tensor:
    """A bool tensor from an action mask given as bool, int8, uint8 or int values.

    Raises:
        ValueError: no action is valid (the environment must always offer one).
    """
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        mask = mask != 0
    if not mask.any():
        raise ValueError("action mask has no valid action; the environment must always offer one")
    return torch.from_numpy(mask)


def masked_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``logits`` with the entries where ``mask`` is false set to :data:`MASKED_LOGIT`."""
    return logits.masked_fill(~mask, MASKED_LOGIT)


def choose(logits: torch.Tensor, greedy: bool, generator: torch.Generator) -> int:
    """Pick one action from a 1-D tensor of (already masked) logits.

    Args:
        logits: masked logits of one observation.
        greedy: take the most probable action instead of sampling.
        generator: the seeded torch generator used for sampling.
    """
    if greedy:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator))


class PolicyEval(NamedTuple):
    """Log-probabilities of taken actions and entropies of a batch of masked distributions."""

    log_prob: torch.Tensor
    entropy: torch.Tensor


def evaluate(logits: torch.Tensor, mask: torch.Tensor, actions: torch.Tensor) -> PolicyEval:
    """Log-probability of ``actions`` and entropy under the masked softmax of ``logits``.

    Args:
        logits: ``(batch, n_actions)`` raw logits.
        mask: ``(batch, n_actions)`` bool, true for valid actions.
        actions: ``(batch,)`` int64 actions taken.
    """
    log_p = torch.log_softmax(masked_logits(logits, mask), dim=-1)
    probs = log_p.exp()
    entropy = -(probs * log_p).sum(dim=-1)  # masked entries: 0 * (-1e9) = 0
    taken = log_p.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    return PolicyEval(taken, entropy)
