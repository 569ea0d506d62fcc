"""The base of the policy/value networks: the network interface and the orthogonally initialised MLP.

Every network of :mod:`hdrm.agents.networks` (and the Q-networks of :mod:`hdrm.agents.q_networks`)
is a :class:`PolicyValueNetwork` built from :func:`mlp` layers.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn


def _layer(n_in: int, n_out: int, gain: float) -> nn.Linear:
    layer = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


def mlp(
    n_in: int,
    hidden: Sequence[int],
    n_out: int | None,
    out_gain: float = 1.0,
    activation: type[nn.Module] = nn.Tanh,
) -> nn.Sequential:
    """MLP ``n_in -> hidden... -> n_out``, orthogonal init; no output layer when ``n_out`` is None."""
    layers: list[nn.Module] = []
    for size in hidden:
        layers += [_layer(n_in, size, math.sqrt(2.0)), activation()]
        n_in = size
    if n_out is not None:
        layers.append(_layer(n_in, n_out, out_gain))
    return nn.Sequential(*layers)


class PolicyValueNetwork(nn.Module):
    """Base class: ``logits(obs)``, ``value(obs)`` and ``forward(obs) -> (logits, value)``."""

    def logits(self, obs: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def value(self, obs: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.logits(obs), self.value(obs)
