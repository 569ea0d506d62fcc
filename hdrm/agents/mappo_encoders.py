"""Set encoders of the MAPPO networks: a transformer over a variable-size set of rows.

A :class:`SetEncoder` embeds every row of a set (the jobs of the queue window, the nodes of the
platform), prepends one *summary token* built from context features (the cluster summary, the
chosen job) and runs a transformer encoder over them. There are no positional encodings, so the
row encodings permute with the rows and the summary is invariant to their order. Rows marked
invalid (window padding, infeasible nodes) are keys masked out of every attention; the summary
token is never masked, so a set without any valid row still gives finite outputs.

:func:`compact` gathers the valid rows of each set to the front and cuts the batch to its largest
valid count: attention then costs ``O(k^2)`` for ``k`` feasible nodes instead of ``O(N^2)`` for
all ``N`` nodes, which is the place encoder's speed-up on large platforms (see docs/mappo.rst).
:func:`pooled` is the cheap view of the whole set (mean and max of the embedded valid rows) that
tells the summary token about the rows left out of the attention.
"""

from __future__ import annotations

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

    def forward(self, rows: torch.Tensor, valid: torch.Tensor, context: torch.Tensor | None = None,
                extra: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Encode a batch of sets.

        Args:
            rows: ``[B, K, n_features]``.
            valid: ``[B, K]`` bool, false for rows left out of the attention.
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
        keep = torch.cat([torch.ones(batch, 1, dtype=torch.bool, device=rows.device), valid], 1)
        out = self.norm(self.encoder(tokens, src_key_padding_mask=~keep))
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


def compact(rows: torch.Tensor, valid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor,
                                                                torch.Tensor]:
    """The valid rows of each set moved to the front, the batch cut to its largest valid count.

    Args:
        rows: ``[B, N, F]``.
        valid: ``[B, N]`` bool.

    Returns:
        ``(rows [B, K, F], valid [B, K], index [B, K])`` where ``index`` gives the original
        position of each kept row (``K >= 1``; rows past a set's valid count are invalid).
    """
    order = torch.argsort((~valid).to(torch.int8), dim=1, stable=True)
    k = max(int(valid.sum(1).max()), 1)
    index = order[:, :k]
    kept = rows.gather(1, index.unsqueeze(-1).expand(-1, -1, rows.shape[-1]))
    return kept, valid.gather(1, index), index


def scatter_back(values: torch.Tensor, index: torch.Tensor, size: int, fill: float) -> torch.Tensor:
    """``[B, K]`` values of compacted rows put back at their positions of ``[B, size]``."""
    out = values.new_full((values.shape[0], size), fill)
    return out.scatter(1, index, values)


def pooled(embedded: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Mean and max over the valid rows of ``[B, K, D]`` embeddings -> ``[B, 2D]`` (0 if none)."""
    weight = valid.unsqueeze(-1).to(embedded.dtype)
    count = weight.sum(1).clamp(min=1.0)
    mean = (embedded * weight).sum(1) / count
    floor = torch.finfo(embedded.dtype).min
    high = embedded.masked_fill(~valid.unsqueeze(-1), floor).amax(1)
    high = torch.where(valid.any(1, keepdim=True), high, torch.zeros_like(high))
    return torch.cat([mean, high], dim=-1)


__all__ = ["SetEncoder", "compact", "pooled", "scatter_back", "transformer"]
