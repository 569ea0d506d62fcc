"""MAPPO: the order agent and the place agent of a GPU decision, learned together.

One scheduling decision has two phases (:mod:`hdrm.env.gpu_multiagent`): the ``order`` agent
picks a queued job of the window or waits, then the ``place`` agent picks the node of that job.
:class:`MAPPOAgent` holds both actors and one centralised critic
(:class:`~hdrm.agents.mappo_networks.MAPPONetwork`) and learns them with clipped PPO per agent
(Yu et al., 2022): each phase is a record of its own in the rollout, its advantage comes from
GAE over the shared reward and the shared value, and it enters the policy loss of its acting
agent only; the value loss covers every record, against targets standardised by running
statistics; an entropy bonus covers the acting heads. ``mode: "factored"`` is the single-agent
ablation: one PPO policy over the joint action ``(job, node)``, its log-probability the sum of
the two heads' (the place head conditioned on the chosen job), one record per decision.

The agent sees a decision as a dict ``{"order": obs, "place": obs, "phase": 0 or 1}`` (the two
agents' observations of the ParallelEnv and the acting agent), so the launcher's loop drives it
through :class:`hdrm.launch.multiagent.TurnEnv` and :func:`hdrm.agents.mappo_rollout.play_episode`
drives it on a ParallelEnv directly. An agent frozen to a heuristic (``freeze_order`` /
``freeze_place``) never decides: its phases are played by the caller's driver, and their rewards
go to the learned record before them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np
import torch
from gymnasium import spaces

from hdrm.agents.base import Agent
from hdrm.agents.devices import (PRECISIONS, check_device_name, check_precision, copy_weights,
                                 make_rollout_network, resolve_devices, to_cpu)
from hdrm.agents.distributions import choose, masked_logits
from hdrm.agents.mappo_buffer import MultiRollout, observation_arrays, stack_steps
from hdrm.agents.mappo_networks import PHASES, MAPPONetwork
from hdrm.agents.mappo_update import ppo_update
from hdrm.agents.settings import AGENT_PATH, parse_settings, read_bool, read_number
from hdrm.errors import ConfigError

logger = logging.getLogger(__name__)

PARAMS_PATH = f"{AGENT_PATH}.params"
MODES = ("mappo", "factored")


@dataclass(frozen=True)
class MAPPOSettings:
    """Settings of MAPPO (``pybatsim.agent.params``)."""

    mode: str = field(default="mappo", metadata={"choices": MODES})
    """"mappo": two agents, one PPO ratio per phase; "factored": one policy over (job, node)."""
    share_actors: bool = True
    """The two actors share their transformer layers and job embedding; false: separate."""
    dim: int = field(default=32, metadata={"min": 1})
    """Width of the encoders (a multiple of ``heads``)."""
    heads: int = field(default=4, metadata={"min": 1})
    """Attention heads of every encoder."""
    layers: int = field(default=1, metadata={"min": 1})
    """Transformer layers of every encoder."""
    gae_lambda: float = field(default=0.95, metadata={"min": 0.0, "max": 1.0})
    """GAE lambda."""
    clip: float = field(default=0.2, metadata={"min": 0.0})
    """Clipping range of the probability ratio."""
    epochs: int = field(default=4, metadata={"min": 1})
    """Passes over each rollout."""
    rollout_steps: int = field(default=512, metadata={"min": 1})
    """Records (learned phases) collected per update, across episodes."""
    minibatch: int = field(default=128, metadata={"min": 1})
    """Records per gradient step."""
    target_kl: float = field(default=0.02, metadata={"min": 0.0})
    """Stop an update when the approximate KL exceeds 1.5 x this; 0 disables."""
    ent_coef: float = field(default=0.01, metadata={"min": 0.0})
    """Weight of the entropy bonus."""
    vf_coef: float = field(default=0.5, metadata={"min": 0.0})
    """Weight of the value loss."""
    max_grad_norm: float = field(default=0.5, metadata={"min": 0.0})
    """Clip the global gradient norm; 0 disables."""
    value_norm: bool = True
    """Learn the value against targets standardised by running mean and std."""
    standardise: bool = True
    """Standardise the advantages of each minibatch."""
    reward_scale: float = field(default=1.0, metadata={"min": 0.0})
    """Multiply every reward by this before learning."""
    work_conserving: bool = False
    """Mask the order agent's wait action while a task of the window fits now (a learner that
    may wait freely can learn to wait far too long: waiting costs little per step)."""
    freeze_order: str = ""
    """Queue order that drives the order agent instead of learning it ("fifo", "sjf" ...); ""."""
    freeze_place: str = ""
    """Placement that drives the place agent instead of learning it ("fgd", "best_fit" ...); ""."""
    torch_threads: int = field(default=0, metadata={"min": 0})
    """Set torch's intra-op threads; 0 leaves torch's default."""
    rollout_device: str = field(default="auto", metadata={"check": check_device_name})
    """Where decisions are computed: "cpu", "cuda", "cuda:N" or "auto" (the CPU)."""
    update_device: str = field(default="auto", metadata={"check": check_device_name})
    """Where the actors and the critic are trained: "cpu", "cuda", "cuda:N" or "auto" (the first GPU
    when torch sees one, else the CPU); the weights are copied to the rollout device after each
    update."""
    precision: str = field(default="fp32", metadata={"choices": PRECISIONS})
    """Forward passes of the updates in "fp32", or "bf16" (bfloat16 autocast of the encoders, for a
    GPU; losses stay float32)."""


def check_spaces(observation_space: spaces.Space) -> tuple[int, int, int]:
    """``(FJ, FC, FN)`` of a ``Dict(order=..., place=...)`` observation space.

    Raises:
        ConfigError: the space is not the two agents' observations of the multi-agent env.
    """
    try:
        order, place = observation_space["order"], observation_space["place"]
        return (int(order["jobs"].shape[-1]), int(order["cluster"].shape[0]),
                int(place["nodes"].shape[-1]))
    except (KeyError, TypeError, IndexError) as exc:
        raise ConfigError(
            f"{AGENT_PATH}: MAPPO needs the observations of the multi-agent GPU env (a dict of "
            f"'order' and 'place'), got {observation_space} ({exc}); run it on a GPU workload"
        ) from None


class MAPPOAgent(Agent):
    """The two-agent learner; settings: :class:`MAPPOSettings` (``lr``, ``gamma``, ``greedy``
    are top-level keys as for the other learners)."""

    Settings: ClassVar[type] = MAPPOSettings
    #: The launcher builds the multi-agent environment for an agent with this flag.
    multi_agent: ClassVar[bool] = True
    #: Counters a resumed training run restores (:mod:`hdrm.agents.resume`); a partly filled
    #: rollout is not kept: a resumed run starts a new one.
    resume_counters: ClassVar[tuple[str, ...]] = ("updates",)

    def __init__(self, config: Mapping[str, Any], observation_space: spaces.Space,
                 action_space: spaces.Space, action_names: Sequence[str] | None = None,
                 seed: int = 0) -> None:
        super().__init__(config, observation_space, action_space, action_names, seed)
        self.settings = parse_settings(self.Settings, self.config.get("params"), where=PARAMS_PATH)
        self.lr = float(read_number(self.config, "lr", 3e-4, minimum=0.0))
        self.gamma = float(read_number(self.config, "gamma", 0.99, minimum=0.0, maximum=1.0))
        self.greedy = read_bool(self.config, "greedy", True)
        self.frozen = self._frozen()
        n_job, n_cluster, n_node = check_spaces(observation_space)
        s = self.settings
        if s.dim % s.heads:
            raise ConfigError(f"{PARAMS_PATH}.dim: {s.dim} is not a multiple of heads={s.heads}; "
                              "choose dim as a multiple of heads (e.g. 32 with 4 heads)")
        if s.torch_threads:
            torch.set_num_threads(s.torch_threads)
        self.devices = resolve_devices(s.rollout_device, s.update_device, PARAMS_PATH)
        check_precision(s.precision, self.devices.update, f"{PARAMS_PATH}.precision")
        self.generator = torch.Generator().manual_seed(self.seed)
        with torch.random.fork_rng(devices=[]):  # built on the CPU: a seed, the same weights anywhere
            torch.manual_seed(self.seed)
            self.network = MAPPONetwork(n_job, n_cluster, n_node, s.dim, s.heads, s.layers,
                                        share_actors=s.share_actors or s.mode == "factored")
        self.network.to(self.devices.update)
        self.rollout_network = make_rollout_network(self.network, self.devices)
        self.optimizer = torch.optim.Adam(self.network.parameters(), lr=self.lr, eps=1e-5)
        self.rollout = MultiRollout()
        self.updates = 0
        self._update_stats: list[dict[str, float]] = []

    def _frozen(self) -> dict[str, str]:
        s = self.settings
        frozen = {agent: name for agent, name in (("order", s.freeze_order),
                                                  ("place", s.freeze_place)) if name}
        if len(frozen) == 2:
            raise ConfigError(f"{PARAMS_PATH}: freeze_order and freeze_place are both set, so "
                              "nothing is learned; unset one (or run a classic heuristic pair)")
        if frozen and s.mode == "factored":
            raise ConfigError(f"{PARAMS_PATH}.mode: \"factored\" learns one policy over both "
                              f"phases and cannot freeze {', '.join(frozen)}; use mode \"mappo\"")
        return frozen

    @property
    def learned_agents(self) -> tuple[str, ...]:
        """The agents this learner decides for (the others are driven by heuristics)."""
        return tuple(a for a in PHASES if a not in self.frozen)

    def decide(self, observation: Mapping[str, Any], mask: np.ndarray) -> int:
        """Choose the acting agent's action (``observation["phase"]``: 0 order, 1 place).

        ``mask`` (the launcher's, padded to the widest action set) is combined with the acting
        agent's own ``action_mask``; when training, the decision is stored in the rollout.
        """
        phase = int(observation["phase"])
        agent = PHASES[phase]
        if agent in self.frozen:
            raise ValueError(f"MAPPO: the {agent} agent is frozen to {self.frozen[agent]!r}; "
                             "its phases are the driver's, not decide()'s")
        obs = observation_arrays(observation)
        allowed = self.allowed(agent, obs, mask)
        obs[f"{agent}_mask"] = allowed
        batch = stack_steps([obs])
        with torch.no_grad():
            logits = masked_logits(self._logits(agent, batch)[0], torch.from_numpy(allowed))
        action = choose(logits, self.greedy and not self.training, self.generator)
        if self.training:
            log_prob = float(torch.log_softmax(logits, -1)[action])
            self._store(obs, batch, phase, action, log_prob)
        return action

    def allowed(self, agent: str, obs: Mapping[str, np.ndarray], mask: np.ndarray) -> np.ndarray:
        """The actions ``agent`` may take: its own ``action_mask`` (in ``obs``, the arrays of
        :func:`~hdrm.agents.mappo_buffer.observation_arrays`) and ``mask``, the wait action
        removed while a task fits when ``work_conserving`` is set.

        Raises:
            ValueError: no action is left.
        """
        own = obs[f"{agent}_mask"]
        allowed = own & (np.asarray(mask)[:own.shape[0]] != 0)
        if not allowed.any():
            raise ValueError(f"MAPPO: no valid {agent} action: the {agent} agent's action_mask "
                             "and the given mask share none")
        if agent == "order" and self.settings.work_conserving and allowed[:-1].any():
            allowed[-1] = False
        return allowed

    def _logits(self, agent: str, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """``agent``'s logits of ``batch`` by the rollout network, on the CPU."""
        net, dev = self.rollout_network, self.devices.rollout
        if agent == "order":
            out = net.order(batch["jobs"].to(dev), batch["cluster"].to(dev),
                            batch["order_mask"].to(dev))
        else:
            out = net.place(batch["job"].to(dev), batch["nodes"].to(dev), batch["place_mask"].to(dev))
        return out.cpu()

    def value_of(self, batch: Mapping[str, torch.Tensor], phase: int) -> float:
        """The critic's value of one step (by the rollout network), in reward units
        (denormalised)."""
        net, dev = self.rollout_network, self.devices.rollout
        with torch.no_grad():
            raw = net.critic({k: v.to(dev) for k, v in batch.items()},
                             torch.tensor([phase], device=dev))
            if self.settings.value_norm:
                raw = net.value_norm.denormalise(raw)
        return float(raw[0])

    def _store(self, obs: dict[str, np.ndarray], batch: Mapping[str, torch.Tensor], phase: int,
               action: int, log_prob: float) -> None:
        rollout = self.rollout
        merge = (self.settings.mode == "factored" and phase == 1 and len(rollout)
                 and not rollout.last_done and rollout.scalars["has_order"][-1]
                 and not rollout.scalars["has_place"][-1])
        if merge:
            rollout.act(phase, action, log_prob, place_obs=obs)
            return
        value = self.value_of(batch, phase)
        if len(rollout) >= self.settings.rollout_steps:
            self._learn(0.0 if rollout.last_done else value)
        rollout.open(obs, phase, value)
        rollout.act(phase, action, log_prob)

    def rewarded(self, reward: float, done: bool) -> None:
        """The shared reward of the last phase; it joins the open record."""
        super().rewarded(reward, done)
        if self.training:
            self.rollout.reward(float(reward) * self.settings.reward_scale, done)

    def end_episode(self) -> dict[str, float]:
        """Learn when the rollout is full (its last record ended the episode)."""
        stats = super().end_episode()
        if self.training and len(self.rollout) >= self.settings.rollout_steps:
            self._learn(0.0)
        done, self._update_stats = self._update_stats, []
        if done:
            stats.update({key: float(np.mean([d[key] for d in done])) for key in done[0]})
        return stats

    def _learn(self, last_value: float) -> None:
        batch = self.rollout.finish(last_value, self.gamma, self.settings.gae_lambda)
        batch = {k: v.to(self.devices.update) for k, v in batch.items()}
        stats = ppo_update(self.network, self.optimizer, batch, self.settings, self.generator)
        self.sync_rollout()
        self.updates += 1
        logger.debug("MAPPO update %d: %s", self.updates, stats)
        self._update_stats.append(stats)

    def state_dict(self) -> dict[str, Any]:
        """Both actors, the critic and the value normaliser (``order.*``, ``place.*``,
        ``critic.*``, ``value_norm.*``), on the CPU."""
        return {k: v.detach().cpu().clone() for k, v in self.network.state_dict().items()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.network.load_state_dict(state)
        self.sync_rollout()

    def sync_rollout(self) -> None:
        """Copy the trained weights into the rollout network (no-op when they are one network)."""
        copy_weights(self.network, self.rollout_network)

    def optimizer_state_dict(self) -> dict[str, Any]:
        """Adam's state, on the CPU (a checkpoint made on a GPU loads anywhere)."""
        return to_cpu(self.optimizer.state_dict())

    def load_optimizer_state_dict(self, state: Mapping[str, Any]) -> None:
        if state:
            self.optimizer.load_state_dict(state)


__all__ = ["MAPPOAgent", "MAPPOSettings", "MODES", "check_spaces"]
