"""Imitation warm start of a :class:`~hdrm.agents.mappo.MAPPOAgent`: behaviour cloning of a
heuristic pair, before MAPPO fine-tunes it.

A policy trained from random weights spends its first episodes far below the heuristics it is
compared with. Behaviour cloning (supervised learning of a teacher's decisions, as in the
imitation warm starts of the RL scheduling literature) starts it at the teacher's level instead:

1. :func:`collect_demonstrations` plays episodes in which *teachers* (heuristic drivers, e.g. the
   queue order ``sjf`` and the placement ``first_fit``) take every decision, and keeps a record of
   each decision of an agent the learner learns: both agents' observations, the teacher's action
   and the return that followed it (the shared rewards until the episode's end, discounted by the
   agent's ``gamma``). Decisions of agents frozen to a heuristic are played but not recorded.
2. :func:`behaviour_clone` fits the actors to the teacher's actions (cross-entropy over the
   masked logits, the record's head only) and the centralised critic to the returns (standardised
   by the value normaliser, as the MAPPO update does), so the fine-tuning's first advantages are
   not those of a random critic.

The teachers are handed in as drivers (``driver(env) -> action``), as
:func:`~hdrm.agents.mappo_rollout.play_episode` takes them; this module never imports the
environment.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import torch

from hdrm.agents.distributions import masked_logits
from hdrm.agents.mappo import MAPPOAgent
from hdrm.agents.mappo_buffer import MultiRollout, minibatches, observation_arrays
from hdrm.agents.mappo_networks import PHASES
from hdrm.agents.mappo_rollout import Driver, acting_agent
from hdrm.agents.mappo_update import gradient_step, head_terms

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Demonstrations:
    """The recorded decisions of the teachers.

    Attributes:
        batch: the records as tensors (the keys of a MAPPO rollout batch; ``returns`` are the
            discounted rewards that followed each decision).
        episodes: episodes played.
        skipped: teacher actions left out because the learner's mask forbids them (e.g. a
            wait that a work-conserving learner may not take).
    """

    batch: dict[str, torch.Tensor]
    episodes: int
    skipped: int

    def __len__(self) -> int:
        return int(self.batch["phase"].shape[0]) if self.batch else 0


def collect_demonstrations(env: Any, agent: MAPPOAgent, teachers: Mapping[str, Driver],
                           episodes: int, seed: int = 0) -> Demonstrations:
    """Play ``episodes`` episodes of ``env`` with every decision taken by ``teachers``.

    Args:
        env: the multi-agent ParallelEnv (episodes start at ``env.reset(seed=seed + k)``).
        agent: the learner; the decisions of its learned agents are recorded.
        teachers: a driver for each of ``order`` and ``place``.
        episodes: how many episodes.
        seed: seed of the first episode's reset.

    Raises:
        ValueError: a teacher is missing, or ``episodes`` < 1.
    """
    missing = [a for a in PHASES if a not in teachers]
    if missing or episodes < 1:
        raise ValueError(f"imitation: need a teacher for {list(PHASES)} (missing {missing}) "
                         f"and at least one episode (got {episodes})")
    rollout, skipped = MultiRollout(), 0
    for k in range(episodes):
        observations, infos = env.reset(seed=seed + k)
        while env.agents:
            active = acting_agent(infos)
            action = int(teachers[active](env))
            if active in agent.learned_agents:
                skipped += not _record(rollout, agent, observations, active, action)
            actions = {a: (action if a == active else 0) for a in env.agents}
            observations, rewards, terminations, truncations, infos = env.step(actions)
            done = all(terminations.get(a, False) or truncations.get(a, False) for a in PHASES)
            rollout.reward(float(rewards[active]) * agent.settings.reward_scale,
                           done or not env.agents)
    batch = rollout.finish(0.0, agent.gamma, 1.0) if len(rollout) else {}
    logger.info("imitation: %d records from %d episodes (%d teacher actions masked)",
                len(batch.get("phase", ())), episodes, skipped)
    return Demonstrations(batch, episodes, skipped)


def _record(rollout: MultiRollout, agent: MAPPOAgent, observations: Mapping[str, Any],
            active: str, action: int) -> bool:
    """Open a record of the teacher's ``action``; False (nothing recorded) when the learner's
    mask forbids it."""
    obs = observation_arrays(observations)
    allowed = agent.allowed(active, obs, observations[active]["action_mask"])
    if not allowed[action]:
        return False
    obs[f"{active}_mask"] = allowed
    phase = PHASES.index(active)
    rollout.open(obs, phase, 0.0)
    rollout.act(phase, action, 0.0)
    return True


def behaviour_clone(agent: MAPPOAgent, demos: Demonstrations, epochs: int = 10,
                    lr: float = 1e-3, minibatch: int = 256) -> dict[str, float]:
    """Fit ``agent``'s actors to the teachers' actions and its critic to their returns.

    The loss of a minibatch is the mean negative log-likelihood of the teachers' actions plus
    ``vf_coef`` x the value loss of the MAPPO update; Adam at ``lr`` (its own optimiser: the
    agent's keeps its state for the fine-tuning).

    Returns:
        ``records``, ``nll`` (last epoch's mean), ``agreement`` (share of records whose greedy
        action is the teacher's, after training) and ``gradient_steps``.
    """
    if not len(demos):
        return {"records": 0.0, "nll": float("nan"), "agreement": float("nan"),
                "gradient_steps": 0.0}
    network, settings = agent.network, agent.settings
    batch = {k: v.to(agent.devices.update) for k, v in demos.batch.items()}
    if settings.value_norm:
        network.value_norm.update(batch["returns"])
    optimizer = torch.optim.Adam(network.parameters(), lr=lr, eps=1e-5)
    steps, nll = 0, float("nan")
    for _ in range(epochs):
        losses = []
        for mb in minibatches(batch, minibatch, agent.generator):
            log_prob, _ = head_terms(network, mb, settings.precision)
            targets = mb["returns"]
            if settings.value_norm:
                targets = network.value_norm.normalise(targets)
            value_loss = 0.5 * (network.critic(mb, mb["phase"]) - targets).pow(2).mean()
            loss = -log_prob.mean() + settings.vf_coef * value_loss
            gradient_step(optimizer, network, loss, settings.max_grad_norm)
            steps += 1
            losses.append(-float(log_prob.mean().detach()))
        nll = float(np.mean(losses))
    agent.sync_rollout()
    return {"records": float(len(demos)), "nll": nll, "agreement": agreement(agent, demos),
            "gradient_steps": float(steps)}


def agreement(agent: MAPPOAgent, demos: Demonstrations) -> float:
    """Share of the recorded decisions where the agent's greedy action is the teacher's."""
    batch, same = demos.batch, 0
    with torch.no_grad():
        for head in PHASES:
            rows = batch[f"has_{head}"].nonzero()[:, 0]
            if rows.numel() == 0:
                continue
            pick = {key: batch[key][rows] for key in batch}
            logits = agent._logits(head, pick)
            chosen = masked_logits(logits, pick[f"{head}_mask"]).argmax(-1)
            same += int((chosen == pick[f"{head}_action"]).sum())
    return same / len(demos)


__all__ = ["Demonstrations", "agreement", "behaviour_clone", "collect_demonstrations"]
