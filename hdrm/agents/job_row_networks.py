"""The per-job networks of ``job_pick`` mode: ``kernel`` and ``attention``.

Both read a window of K job rows x F features and give one logit per row (permuting the rows
permutes the logits), plus a learned bias logit for the "void" action when there are K + 1
actions; :mod:`hdrm.agents.networks` describes them and registers them in its ``NETWORKS``
registry, from where they stay importable.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn

from hdrm.agents.network_base import PolicyValueNetwork, _layer, mlp


class _JobRowNetwork(PolicyValueNetwork):
    """Shared parts of the per-job networks: the void bias and the pooled value head."""

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        n_actions: int,
        hidden: Sequence[int],
        pooled_value: bool = True,
    ) -> None:
        super().__init__()
        self.n_jobs, self.n_features = int(obs_shape[0]), int(obs_shape[1])
        self.has_void = n_actions == self.n_jobs + 1
        self.void_logit = nn.Parameter(torch.zeros(1)) if self.has_void else None
        if pooled_value:  # subclasses with their own value head pass False
            self.value_encoder = mlp(self.n_features, hidden[:1], None, activation=nn.ReLU)
            self.value_head = mlp(hidden[0], (hidden[0],), 1, out_gain=1.0, activation=nn.ReLU)

    def _with_void(self, job_logits: torch.Tensor) -> torch.Tensor:
        if self.void_logit is None:
            return job_logits
        void = self.void_logit.expand(*job_logits.shape[:-1], 1)
        return torch.cat([job_logits, void], dim=-1)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        rows = self.value_encoder(obs.reshape(-1, self.n_features))
        pooled = rows.reshape(*obs.shape[:-1], -1).mean(dim=-2)
        return self.value_head(pooled).squeeze(-1)


class KernelNetwork(_JobRowNetwork):
    """One small MLP scores every job row (shared weights): permutation-equivariant logits.

    Args:
        obs_shape: ``(K, F)``: K job rows of F features.
        n_actions: K, or K + 1 with a "void" action (learned bias logit).
        hidden: hidden layer sizes of the scorer; the value head encodes rows with ``hidden[0]``
            units, mean-pools them, then uses one hidden layer of ``hidden[0]`` units.
    """

    def __init__(
        self, obs_shape: tuple[int, ...], n_actions: int, hidden: Sequence[int], **_: object
    ) -> None:
        super().__init__(obs_shape, n_actions, hidden)
        self.scorer = mlp(self.n_features, hidden, 1, out_gain=0.01, activation=nn.ReLU)

    def logits(self, obs: torch.Tensor) -> torch.Tensor:
        scores = self.scorer(obs.reshape(-1, self.n_features))  # 2-D matmuls are faster on CPU
        return self._with_void(scores.reshape(obs.shape[:-1]))


#: Columns of hdrm's ``job_window`` observation the attention network reads by default (negative
#: indexes, counted from the last feature): the real-job flag (1 for a queued job, 0 for a padding
#: row) and the cluster state repeated on every row (the free-core fraction).
WINDOW_REAL_COLUMN = -2
WINDOW_CLUSTER_COLUMNS = (-1,)


class AttentionNetwork(_JobRowNetwork):
    """Self-attention over the real job rows and a summary token of the cluster state.

    The sequence is a summary token (a learned vector plus an embedding of the cluster columns,
    averaged over the real rows) followed by the embedded job rows, with no positional encoding,
    so the job logits are permutation-equivariant. Padding rows (``real_column`` is 0) are masked
    out as attention keys: they never change the real rows' logits nor the value. Each encoded row
    is scored by the same MLP; the value is read from the encoded summary token, which also keeps
    the attention well defined when the window is empty.

    Args:
        obs_shape: ``(K, F)``.
        n_actions: K or K + 1 (void).
        hidden: ``hidden[0]`` is the embedding width; the scorer uses ``hidden[1:]``.
        heads: attention heads (must divide ``hidden[0]``).
        layers: encoder layers.
        real_column: feature holding the real-job flag, or None when every row is a real job.
        cluster_columns: features holding the cluster state (the same on every row); may be empty.
    """

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        n_actions: int,
        hidden: Sequence[int],
        heads: int = 4,
        layers: int = 1,
        real_column: int | None = None,
        cluster_columns: Sequence[int] = (),
        **_: object,
    ) -> None:
        super().__init__(obs_shape, n_actions, hidden, pooled_value=False)
        width = int(hidden[0])
        self.real_column = real_column
        self.cluster_columns = tuple(int(c) for c in cluster_columns)
        self.embed = _layer(self.n_features, width, math.sqrt(2.0))
        self.summary = nn.Parameter(torch.zeros(width))
        n_cluster = len(self.cluster_columns)
        self.cluster_embed = _layer(n_cluster, width, 1.0) if n_cluster else None
        layer = nn.TransformerEncoderLayer(
            width, heads, dim_feedforward=2 * width, dropout=0.0, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.scorer = mlp(width, hidden[1:], 1, out_gain=0.01, activation=nn.ReLU)
        self.value_head = mlp(width, (width,), 1, out_gain=1.0, activation=nn.ReLU)

    def real_rows(self, obs: torch.Tensor) -> torch.Tensor:
        """Bool ``(..., K)``: true for real job rows, false for padding rows."""
        if self.real_column is None:
            return torch.ones(obs.shape[:-1], dtype=torch.bool, device=obs.device)
        return obs[..., self.real_column] != 0

    def encode(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Encoded job rows ``(..., K, W)`` and summary token ``(..., W)``."""
        batch = obs.shape[:-2]
        rows = obs.reshape(-1, self.n_jobs, self.n_features)
        real = self.real_rows(rows)
        summary = self.summary.expand(rows.shape[0], -1)
        if self.cluster_embed is not None:
            weights = real.unsqueeze(-1).to(rows.dtype)
            cluster = (rows[..., self.cluster_columns] * weights).sum(-2)
            summary = summary + self.cluster_embed(cluster / weights.sum(-2).clamp(min=1.0))
        tokens = torch.cat([summary.unsqueeze(1), self.embed(rows)], dim=1)
        padding = torch.cat([torch.zeros_like(real[:, :1]), ~real], dim=1)
        out = self.encoder(tokens, src_key_padding_mask=padding)
        return out[:, 1:].reshape(*batch, self.n_jobs, -1), out[:, 0].reshape(*batch, -1)

    def logits(self, obs: torch.Tensor) -> torch.Tensor:
        return self.forward(obs)[0]

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.forward(obs)[1]

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits and value from one pass of the encoder."""
        rows, summary = self.encode(obs)
        logits = self._with_void(self.scorer(rows).squeeze(-1))
        return logits, self.value_head(summary).squeeze(-1)
