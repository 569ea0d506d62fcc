"""Set encoders of the MAPPO networks: a transformer over a variable-size set of rows.

A :class:`SetEncoder` embeds every row of a set (the jobs of the queue window, the nodes of the
platform), prepends one *summary token* built from context features (the cluster summary, the
chosen job) and runs a transformer encoder over them. There are no positional encodings, so the
row encodings permute with the rows and the summary is invariant to their order. Rows marked
invalid (window padding, infeasible nodes) are keys masked out of every attention; the summary
token is never masked, so a set without any valid row still gives finite outputs.

:func:`dedup` is the place encoder's speed-up on large platforms: it keeps the *distinct* valid
(feasible) rows of each set and gives each the attention key bias ``log(count)``, which is exactly
attention over every feasible node at the cost of the distinct ones (openb's 1,213 GPU nodes are
a few dozen distinct rows; see docs/mappo.rst for the measured times). :func:`pooled` is the
cheap view of the whole set (mean and max of the embedded rows) that tells the summary token
about the rows left out of the attention.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from hdrm.agents.network_base import mlp


class SetEncoder(nn.Module):
    """Transformer encoder over a set of rows with a padding mask and a summary token.

    Args:
        n_features: features per row.
        n_context: features of the context the summary token starts from (0: a learned token).
        dim: width of the token encodings.
        body: the transformer layers (:func:`transformer`), which several encoders may share.
    """

    def __init__(self, n_features: int, n_context: int, dim: int, body: nn.Module) -> None:
        super().__init__()
        self.embed = mlp(n_features, (dim,), dim)
        self.context = mlp(n_context, (dim,), dim) if n_context else None
        self.token = nn.Parameter(torch.zeros(dim))
        self.encoder = body
        self.norm = nn.LayerNorm(dim)
        self.dim = dim

    def forward(self, rows: torch.Tensor, keys: torch.Tensor, context: torch.Tensor | None = None,
                extra: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Encode a batch of sets.

        Args:
            rows: ``[B, K, n_features]``.
            keys: ``[B, K]``: bool, false for rows left out of the attention; or float, a bias
                added to every attention weight on the row (``-inf`` leaves it out).
            context: ``[B, n_context]`` features of the summary token (None without context).
            extra: ``[B, dim]`` added to the summary token (a pooled view of the whole set).

        Returns:
            ``(row encodings [B, K, dim], summary [B, dim])``.
        """
        batch = rows.shape[0]
        token = self.token.expand(batch, self.dim)
        if self.context is not None and context is not None:
            token = token + self.context(context)
        if extra is not None:
            token = token + extra
        tokens = torch.cat([token.unsqueeze(1), self.embed(rows)], dim=1)
        if keys.dtype == torch.bool:
            keys = torch.zeros(keys.shape, dtype=rows.dtype, device=rows.device).masked_fill(
                ~keys, float("-inf"))
        bias = torch.cat([keys.new_zeros(batch, 1), keys.to(rows.dtype)], dim=1)
        out = self.norm(self.encoder(tokens, src_key_padding_mask=bias))
        return out[:, 1:], out[:, 0]


def transformer(dim: int, heads: int, layers: int) -> nn.TransformerEncoder:
    """``layers`` pre-norm transformer encoder layers of width ``dim`` (no dropout: deterministic).

    Raises:
        ValueError: ``dim`` is not a multiple of ``heads``.
    """
    if dim % heads:
        raise ValueError(f"encoder width {dim} is not a multiple of the {heads} attention heads")
    layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.0, batch_first=True,
                                       norm_first=True)
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


def distinct_rows(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The distinct rows of ``[K, F]``, compared byte for byte (numpy sorts them as opaque
    records, far faster than ``torch.unique(dim=0)``).

    Returns:
        ``(first, inverse, counts)``: the index of each distinct row's first occurrence, the
        distinct row of every row, and how many rows each distinct row stands for.
    """
    data = np.ascontiguousarray(rows.detach().cpu().numpy())
    keys = data.view(np.dtype((np.void, data.dtype.itemsize * data.shape[1]))).reshape(-1)
    _, first, inverse, counts = np.unique(keys, return_index=True, return_inverse=True,
                                          return_counts=True)
    return tuple(torch.from_numpy(a).to(rows.device)
                 for a in (first, inverse.reshape(-1), counts))


def dedup(rows: torch.Tensor, valid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor,
                                                              torch.Tensor]:
    """The distinct valid rows of each set, with the log of their counts as attention key bias.

    Attending over the distinct rows with the key bias ``log(count)`` gives exactly what
    attending over every valid row gives (``count`` equal keys weigh ``count x exp(q.k)`` in the
    softmax), and identical rows get identical encodings, so nothing changes but the cost.

    Args:
        rows: ``[B, N, F]``.
        valid: ``[B, N]`` bool.

    Returns:
        ``(rows [B, K, F], bias [B, K], inverse [B, N])``: ``K >= 1`` is the batch's largest
        number of distinct valid rows; ``bias`` is ``log(count)``, ``-inf`` past a set's
        distinct rows; ``inverse`` maps each original row to its distinct row (0 for invalid).
    """
    batch, n, width = rows.shape
    parts, counts = [], []
    inverse = torch.zeros(batch, n, dtype=torch.long, device=rows.device)
    for b in range(batch):
        kept = valid[b].nonzero()[:, 0]
        if kept.numel() == 0:
            parts.append(rows.new_zeros((0, width)))
            counts.append(rows.new_zeros(0))
            continue
        first, inv, count = distinct_rows(rows[b, kept])
        inverse[b, kept] = inv
        parts.append(rows[b, kept[first]])
        counts.append(count.to(rows.dtype))
    k = max(max(p.shape[0] for p in parts), 1)
    out = rows.new_zeros((batch, k, width))
    bias = rows.new_full((batch, k), float("-inf"))
    for b, (unique, count) in enumerate(zip(parts, counts)):
        out[b, :unique.shape[0]] = unique
        bias[b, :count.shape[0]] = count.log()
    return out, bias, inverse


def pooled(embedded: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Mean and max over the valid rows of ``[B, K, D]`` embeddings -> ``[B, 2D]`` (0 if none)."""
    weight = valid.unsqueeze(-1).to(embedded.dtype)
    count = weight.sum(1).clamp(min=1.0)
    mean = (embedded * weight).sum(1) / count
    floor = torch.finfo(embedded.dtype).min
    high = embedded.masked_fill(~valid.unsqueeze(-1), floor).amax(1)
    high = torch.where(valid.any(1, keepdim=True), high, torch.zeros_like(high))
    return torch.cat([mean, high], dim=-1)


__all__ = ["SetEncoder", "dedup", "distinct_rows", "pooled", "transformer"]
