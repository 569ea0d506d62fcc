"""The MAPPO update: clipped PPO per record over a finished rollout, one centralised value.

A record's log-probability is that of the heads present in it (``has_order``, ``has_place``): one
head under MAPPO, so each agent's ratio is clipped on its own phases only, and both heads for a
factored joint action. The value loss is the squared error between the critic's output and the
returns, both standardised by the running statistics when ``value_norm`` is on (the statistics
are updated with the rollout's returns first); the entropy bonus sums the present heads'.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import torch

from hdrm.agents.devices import update_autocast
from hdrm.agents.distributions import evaluate
from hdrm.agents.mappo_buffer import minibatches
from hdrm.agents.mappo_networks import MAPPONetwork


def head_terms(network: MAPPONetwork, mb: Mapping[str, torch.Tensor], precision: str = "fp32"
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probabilities of each record's actions and the entropies, summed over its heads (the
    heads' forward passes under bf16 autocast for ``precision`` "bf16", the rest in float32)."""
    n, device = mb["phase"].shape[0], mb["phase"].device
    log_prob = torch.zeros(n, device=device)
    entropy = torch.zeros(n, device=device)
    present = (("order", network.order, ("jobs", "cluster", "order_mask")),
               ("place", network.place, ("job", "nodes", "place_mask")))
    for head, module, keys in present:
        rows = mb[f"has_{head}"].nonzero()[:, 0]
        if rows.numel() == 0:
            continue
        inputs = [mb[key][rows] for key in keys]
        with update_autocast(device, precision):
            logits = module(*inputs)
        evals = evaluate(logits.float(), inputs[-1], mb[f"{head}_action"][rows])
        log_prob = log_prob.index_add(0, rows, evals.log_prob)
        entropy = entropy.index_add(0, rows, evals.entropy)
    return log_prob, entropy


def minibatch_loss(network: MAPPONetwork, mb: Mapping[str, torch.Tensor], settings: Any
                   ) -> tuple[torch.Tensor, dict[str, float]]:
    """The PPO loss of one minibatch and its parts."""
    log_prob, entropy = head_terms(network, mb, settings.precision)
    log_ratio = log_prob - mb["log_prob"]
    ratio = log_ratio.exp()
    adv = mb["advantages"]
    if settings.standardise and adv.numel() > 1:
        adv = (adv - adv.mean()) / (adv.std(unbiased=False) + 1e-8)
    policy_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - settings.clip, 1 + settings.clip))
    with update_autocast(mb["phase"].device, settings.precision):
        values = network.critic(mb, mb["phase"])
    values = values.float()
    targets = mb["returns"]
    if settings.value_norm:
        targets = network.value_norm.normalise(targets)
    value_loss = 0.5 * (values - targets).pow(2).mean()
    loss = policy_loss.mean() + settings.vf_coef * value_loss - settings.ent_coef * entropy.mean()
    with torch.no_grad():
        parts = {
            "policy_loss": float(policy_loss.mean()),
            "value_loss": float(value_loss),
            "entropy": float(entropy.mean()),
            "approx_kl": float(((ratio - 1) - log_ratio).mean()),
            "clip_fraction": float(((ratio - 1).abs() > settings.clip).float().mean()),
        }
    return loss, parts


def ppo_update(network: MAPPONetwork, optimizer: torch.optim.Optimizer,
               batch: Mapping[str, torch.Tensor], settings: Any, generator: torch.Generator
               ) -> dict[str, float]:
    """``settings.epochs`` passes of minibatch gradient steps over ``batch``; mean statistics.

    Stops early when the approximate KL of a minibatch exceeds 1.5 x ``settings.target_kl``.
    """
    if settings.value_norm:
        network.value_norm.update(batch["returns"])
    sums: dict[str, float] = {}
    steps = 0
    for _ in range(settings.epochs):
        for mb in minibatches(batch, settings.minibatch, generator):
            loss, parts = minibatch_loss(network, mb, settings)
            if settings.target_kl > 0 and parts["approx_kl"] > 1.5 * settings.target_kl:
                return _mean(sums, steps)
            gradient_step(optimizer, network, loss, settings.max_grad_norm)
            steps += 1
            for key, value in (("loss", loss.item()), *parts.items()):
                sums[key] = sums.get(key, 0.0) + value
    return _mean(sums, steps)


def _mean(sums: dict[str, float], steps: int) -> dict[str, float]:
    stats = {key: value / steps for key, value in sums.items()} if steps else {"loss": math.nan}
    stats["gradient_steps"] = float(steps)
    return stats


def gradient_step(optimizer: torch.optim.Optimizer, network: torch.nn.Module, loss: torch.Tensor,
                  max_grad_norm: float) -> None:
    """One optimiser step on ``loss``, the gradients' norm clipped to ``max_grad_norm`` (0: not
    clipped)."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if max_grad_norm > 0:
        torch.nn.utils.clip_grad_norm_(network.parameters(), max_grad_norm)
    optimizer.step()


__all__ = ["gradient_step", "head_terms", "minibatch_loss", "ppo_update"]
