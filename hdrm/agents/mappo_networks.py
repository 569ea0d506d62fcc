"""The MAPPO networks: the order actor, the place actor and the centralised critic.

* :class:`OrderActor` encodes the queue window (a :class:`~hdrm.agents.mappo_encoders.SetEncoder`
  over the job rows, its summary token started from the cluster features) and scores each job
  row and the wait action: ``W + 1`` logits.
* :class:`PlaceActor` encodes the nodes for the chosen job: attention over the *feasible* nodes
  only, each distinct node row once with its multiplicity as key bias
  (:func:`~hdrm.agents.mappo_encoders.dedup`: exactly the attention over every feasible node),
  its summary token started from the job's features plus a pooled view (mean and max) of every
  node; one logit per node, ``N``.
* :class:`CentralCritic` has encoders of its own over both agents' observations and reads the
  phase (order or place): one value per step, in the value normaliser's units.

With ``share_actors`` the two actors share their transformer layers and the embedding of a job's
features (a window row of the order actor is the chosen job of the place actor); without it they
have nothing in common. Every network takes batches and any window or node count: the sizes are
read from the tensors, not fixed at construction.
"""

from __future__ import annotations

import torch
from torch import nn

from hdrm.agents.distributions import MASKED_LOGIT
from hdrm.agents.mappo_encoders import SetEncoder, dedup, pooled, transformer
from hdrm.agents.network_base import mlp

#: Index of each agent in the phase vectors of a rollout.
PHASES = ("order", "place")


def real_rows(rows: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``[B, K]`` bool: rows with a nonzero feature or an allowed action (padding rows are 0)."""
    return (rows != 0).any(-1) | mask


class OrderActor(nn.Module):
    """Logits of the order agent: one per window row, then the wait action."""

    def __init__(self, n_job: int, n_cluster: int, dim: int, body: nn.Module) -> None:
        super().__init__()
        self.encoder = SetEncoder(n_job, n_cluster, dim, body)
        self.row_head = mlp(2 * dim, (dim,), 1, out_gain=0.01)
        self.wait_head = mlp(dim, (dim,), 1, out_gain=0.01)

    def forward(self, jobs: torch.Tensor, cluster: torch.Tensor, mask: torch.Tensor
                ) -> torch.Tensor:
        """``[B, W + 1]`` raw logits from jobs ``[B, W, FJ]``, cluster ``[B, FC]`` and the
        mask ``[B, W + 1]``."""
        window = jobs.shape[1]
        rows, summary = self.encoder(jobs, real_rows(jobs, mask[:, :window]), cluster)
        both = torch.cat([rows, summary.unsqueeze(1).expand_as(rows)], dim=-1)
        return torch.cat([self.row_head(both).squeeze(-1), self.wait_head(summary)], dim=-1)


class NodeSummary(nn.Module):
    """A pooled view of every node (mean and max of an embedding), projected to the width."""

    def __init__(self, n_node: int, dim: int) -> None:
        super().__init__()
        self.embed = mlp(n_node, (dim,), dim)
        self.project = mlp(2 * dim, (), dim)

    def forward(self, nodes: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
        """``[B, dim]`` from nodes ``[B, N, FN]`` and the real-node flags ``[B, N]``."""
        return self.project(pooled(torch.tanh(self.embed(nodes)), real))


class PlaceActor(nn.Module):
    """Logits of the place agent: one per node; attention over the feasible nodes only."""

    def __init__(self, n_job: int, n_node: int, dim: int, body: nn.Module) -> None:
        super().__init__()
        self.encoder = SetEncoder(n_node, n_job, dim, body)
        self.summary = NodeSummary(n_node, dim)
        self.head = mlp(2 * dim, (dim,), 1, out_gain=0.01)

    def encode(self, job: torch.Tensor, nodes: torch.Tensor, mask: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(encodings of the distinct feasible nodes, each node's distinct row, the summary)."""
        extra = self.summary(nodes, real_rows(nodes, mask))
        rows, bias, inverse = dedup(nodes, mask)
        encoded, summary = self.encoder(rows, bias, job, extra)
        return encoded, inverse, summary

    def forward(self, job: torch.Tensor, nodes: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``[B, N]`` logits (infeasible nodes get the masked logit) from job ``[B, FJ]``,
        nodes ``[B, N, FN]`` and the feasibility mask ``[B, N]``."""
        encoded, inverse, summary = self.encode(job, nodes, mask)
        both = torch.cat([encoded, summary.unsqueeze(1).expand_as(encoded)], dim=-1)
        scores = self.head(both).squeeze(-1).gather(1, inverse)
        return scores.masked_fill(~mask, MASKED_LOGIT)


class CentralCritic(nn.Module):
    """The shared value: encoders of its own over the window and the nodes, and the phase."""

    def __init__(self, n_job: int, n_cluster: int, n_node: int, dim: int, heads: int,
                 layers: int) -> None:
        super().__init__()
        self.order = SetEncoder(n_job, n_cluster, dim, transformer(dim, heads, layers))
        self.place = PlaceActor(n_job, n_node, dim, transformer(dim, heads, layers))
        self.head = mlp(2 * dim + len(PHASES), (dim, dim), 1, out_gain=1.0)
        self.dim = dim

    def forward(self, obs: dict[str, torch.Tensor], phase: torch.Tensor) -> torch.Tensor:
        """``[B]`` values of steps given the order and place observations (batched, see
        :func:`~hdrm.agents.mappo_buffer.stack_steps`) and the acting agent (0 order, 1 place)."""
        window = obs["jobs"].shape[1]
        _, order = self.order(obs["jobs"], real_rows(obs["jobs"], obs["order_mask"][:, :window]),
                              obs["cluster"])
        place = order.new_zeros(order.shape)
        placing = phase == 1
        if bool(placing.any()):
            _, _, summary = self.place.encode(obs["job"][placing], obs["nodes"][placing],
                                              obs["place_mask"][placing])
            place = place.index_put((placing.nonzero()[:, 0],), summary)
        onehot = nn.functional.one_hot(phase, len(PHASES)).to(order.dtype)
        return self.head(torch.cat([order, place, onehot], dim=-1)).squeeze(-1)


class RunningNorm(nn.Module):
    """Running mean and variance of the value targets (the critic learns them standardised).

    Its statistics are buffers, so they travel in the checkpoint with the weights.
    """

    def __init__(self, eps: float = 1e-4) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros((), dtype=torch.float64))
        self.register_buffer("var", torch.ones((), dtype=torch.float64))
        self.register_buffer("count", torch.full((), eps, dtype=torch.float64))

    def update(self, values: torch.Tensor) -> None:
        """Fold a batch of targets into the statistics (parallel-variance formula)."""
        values = values.detach().to(torch.float64).reshape(-1)
        if values.numel() == 0:
            return
        n = float(values.numel())
        mean, var = values.mean(), values.var(unbiased=False)
        delta = mean - self.mean
        total = self.count + n
        self.mean += delta * n / total
        self.var = (self.var * self.count + var * n + delta.pow(2) * self.count * n / total) / total
        self.count = total

    def normalise(self, values: torch.Tensor) -> torch.Tensor:
        """``(values - mean) / std``, in the dtype of ``values``."""
        return ((values - self.mean) / self.var.clamp(min=1e-8).sqrt()).to(values.dtype)

    def denormalise(self, values: torch.Tensor) -> torch.Tensor:
        """The inverse of :meth:`normalise`."""
        return (values * self.var.clamp(min=1e-8).sqrt() + self.mean).to(values.dtype)


class MAPPONetwork(nn.Module):
    """Both actors, the centralised critic and the value normaliser, as one module.

    Args:
        n_job: features of a job (``FJ``).
        n_cluster: features of the cluster summary (``FC``).
        n_node: features of a node (``FN``).
        dim: width of every encoder.
        heads: attention heads.
        layers: transformer layers per encoder.
        share_actors: the actors share their transformer layers and job embedding.
    """

    def __init__(self, n_job: int, n_cluster: int, n_node: int, dim: int = 32, heads: int = 4,
                 layers: int = 1, share_actors: bool = True) -> None:
        super().__init__()
        body = transformer(dim, heads, layers)
        self.order = OrderActor(n_job, n_cluster, dim, body)
        self.place = PlaceActor(n_job, n_node, dim, body if share_actors else
                                transformer(dim, heads, layers))
        if share_actors:
            self.place.encoder.context = self.order.encoder.embed
        self.critic = CentralCritic(n_job, n_cluster, n_node, dim, heads, layers)
        self.value_norm = RunningNorm()


__all__ = ["CentralCritic", "MAPPONetwork", "OrderActor", "PHASES", "PlaceActor", "RunningNorm",
           "real_rows"]
