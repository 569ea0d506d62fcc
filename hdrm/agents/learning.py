"""Torch learning agents: a policy network with masked sampling, and its actor-critic extension.

:class:`PolicyLearningAgent` owns a :mod:`~hdrm.agents.networks` network, an Adam optimizer and a
seeded ``torch.Generator``; :meth:`~PolicyLearningAgent.decide` samples from the masked softmax
(argmax when evaluating with ``greedy``) and, when training, remembers the observation, mask and
action. At the end of an episode the log-probabilities of the remembered actions are recomputed
in one batched forward pass (the same values HDeepRM kept step by step, far cheaper) and
:meth:`~PolicyLearningAgent.learn` updates the network. :class:`ValueLearningAgent` adds the value
head and generalised advantage estimation.

Network initialisation runs under ``torch.random.fork_rng`` seeded with the agent's seed, so it is
deterministic and leaves torch's global random state untouched. The network is built on the CPU,
then moved to the update device; decisions use :attr:`PolicyLearningAgent.rollout_network`, the
same network or a copy on the rollout device refreshed after each update (:mod:`hdrm.agents.devices`).
"""

from __future__ import annotations

import abc
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping, NamedTuple, Sequence

import numpy as np
import torch
from gymnasium import spaces

from hdrm.agents.base import LearningAgent, discounted_returns, standardised
from hdrm.agents.buffers import gae
from hdrm.agents.devices import (
    PRECISIONS,
    check_device_name,
    check_precision,
    copy_weights,
    make_rollout_network,
    resolve_devices,
    to_cpu,
    update_autocast,
)
from hdrm.agents.distributions import PolicyEval, choose, evaluate, mask_tensor, masked_logits
from hdrm.agents.networks import (
    DEFAULT_HIDDEN,
    PolicyValueNetwork,
    build_network,
    resolve_network,
)
from hdrm.agents.settings import AGENT_PATH, parse_settings, read_bool, read_hidden, read_number

logger = logging.getLogger(__name__)

PARAMS_PATH = f"{AGENT_PATH}.params"


@dataclass(frozen=True)
class PolicySettings:
    """Settings of a policy-gradient learner (``pybatsim.agent.params``)."""

    network: str = "auto"
    """Policy network: "auto" (kernel for job windows, mlp otherwise), or a name registered in
    :data:`hdrm.agents.networks.NETWORKS` ("mlp", "kernel", "attention", "factored")."""
    ent_coef: float = field(default=0.01, metadata={"min": 0.0})
    """Weight of the entropy bonus (keeps exploring)."""
    max_grad_norm: float = field(default=0.5, metadata={"min": 0.0})
    """Clip the global gradient norm to this value; 0 disables clipping."""
    standardise: bool = True
    """Standardise returns/advantages (mean 0, std 1) before the policy-gradient step."""
    reward_scale: float = field(default=1.0, metadata={"min": 0.0})
    """Multiply every reward by this before learning (scheduling rewards can be in the hundreds)."""
    torch_threads: int = field(default=0, metadata={"min": 0})
    """Set torch's intra-op threads (1 is fastest for small networks); 0 leaves torch's default."""
    heads: int = field(default=4, metadata={"min": 1})
    """Attention heads of the "attention" network."""
    layers: int = field(default=1, metadata={"min": 1})
    """Encoder layers of the "attention" network."""
    rollout_device: str = field(default="auto", metadata={"check": check_device_name})
    """Where decisions are computed: "cpu", "cuda", "cuda:N" or "auto" (the CPU)."""
    update_device: str = field(default="auto", metadata={"check": check_device_name})
    """Where the network is trained: "cpu", "cuda", "cuda:N" or "auto" (the first GPU when torch
    sees one, else the CPU); the weights are copied to the rollout device after each update."""
    precision: str = field(default="fp32", metadata={"choices": PRECISIONS})
    """Forward passes of the updates in "fp32", or "bf16" (bfloat16 autocast, for the attention
    network on a GPU; losses stay float32)."""


class Episode(NamedTuple):
    """The remembered steps of an episode as tensors."""

    obs: torch.Tensor
    masks: torch.Tensor
    actions: torch.Tensor
    rewards: np.ndarray


#: A function from a slice of an episode's steps to (summed loss, summed loss parts).
ChunkLoss = Callable[[slice], tuple[torch.Tensor, dict[str, float]]]


class PolicyLearningAgent(LearningAgent):
    """A learner with a policy network over masked discrete actions; subclasses define :meth:`learn`.

    Top-level keys read: ``hidden`` (layer sizes, default per network, see
    :data:`~hdrm.agents.networks.DEFAULT_HIDDEN`), ``lr`` (Adam step size, default 1e-3),
    ``gamma`` (default 0.99), ``greedy`` (argmax instead of sampling when evaluating, default true);
    ``params`` is parsed into :attr:`Settings`.

    Attributes:
        settings: the parsed :attr:`Settings`.
        network: the policy (and value) network.
        optimizer: Adam over the network's parameters.
        generator: the seeded torch generator used to sample actions and shuffle minibatches.
    """

    Settings: ClassVar[type] = PolicySettings
    #: Steps per forward/backward chunk of an episode update (bounds memory on long episodes).
    chunk_steps: int = 2048

    def __init__(
        self,
        config: Mapping[str, Any],
        observation_space: spaces.Space,
        action_space: spaces.Space,
        action_names: Sequence[str] | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(config, observation_space, action_space, action_names, seed)
        self.settings = parse_settings(self.Settings, self.config.get("params"), where=PARAMS_PATH)
        self.lr = float(read_number(self.config, "lr", 1e-3, minimum=0.0))
        self.network_name = resolve_network(
            self.settings.network, observation_space, self.n_actions, f"{PARAMS_PATH}.network"
        )
        self.hidden = read_hidden(self.config, DEFAULT_HIDDEN.get(self.network_name, (64, 64)))
        self.greedy = read_bool(self.config, "greedy", True)
        if self.settings.torch_threads:
            torch.set_num_threads(self.settings.torch_threads)
        self.generator = torch.Generator().manual_seed(self.seed)
        self.devices = resolve_devices(
            self.settings.rollout_device, self.settings.update_device, PARAMS_PATH
        )
        check_precision(self.settings.precision, self.devices.update, f"{PARAMS_PATH}.precision")
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            self.network = self.build_network().to(self.devices.update)
        self.rollout_network = make_rollout_network(self.network, self.devices)
        self.optimizer = torch.optim.Adam(self.network.parameters(), lr=self.lr, eps=1e-5)
        self._forget()

    def build_network(self) -> PolicyValueNetwork:
        """Build the network from the spaces and settings (override for a custom architecture)."""
        return build_network(
            self.network_name,
            self.observation_space,
            self.n_actions,
            self.hidden,
            heads=self.settings.heads,
            layers=self.settings.layers,
            action_names=self.action_names,
            where=f"{PARAMS_PATH}.network",
        )

    def decide(self, observation: Any, mask: np.ndarray) -> int:
        """Sample a valid action (argmax when evaluating with ``greedy``); remember it when training."""
        obs = self.observe(observation)
        mask_t = mask_tensor(mask)
        with torch.no_grad():
            logits = self.rollout_network.logits(self.to_rollout(as_tensor(obs))).cpu()
        logits = masked_logits(logits, mask_t)
        action = choose(logits, self.greedy and not self.training, self.generator)
        if self.training:
            self._observations.append(np.array(obs, dtype=np.float32))
            self._masks.append(mask_t.numpy().copy())
            self._actions.append(action)
        return action

    def end_episode(self) -> dict[str, float]:
        """Learn from the episode when training; returns ``loss`` and the learner's statistics."""
        stats = super().end_episode()
        if self.training:
            stats.update(self._learn_episode())
            self.sync_rollout()
        self._forget()
        return stats

    def _learn_episode(self) -> dict[str, float]:
        steps = min(len(self._actions), len(self.rewards))
        if steps == 0:
            return {}
        if len(self._actions) != len(self.rewards):
            logger.warning(
                "%d decisions but %d rewards in the episode; using the first %d",
                len(self._actions),
                len(self.rewards),
                steps,
            )
        episode = Episode(
            self.to_update(torch.from_numpy(np.stack(self._observations[:steps]))),
            self.to_update(torch.from_numpy(np.stack(self._masks[:steps]))),
            self.to_update(torch.as_tensor(self._actions[:steps], dtype=torch.int64)),
            np.asarray(self.rewards[:steps], dtype=np.float64) * self.settings.reward_scale,
        )
        return self.learn(episode)

    @abc.abstractmethod
    def learn(self, episode: Episode) -> dict[str, float]:
        """Update the network from one episode; returns at least ``{"loss": float}``."""

    def _forget(self) -> None:
        self._observations: list[np.ndarray] = []
        self._masks: list[np.ndarray] = []
        self._actions: list[int] = []
        self.rewards = []

    def evaluate(self, obs: torch.Tensor, masks: torch.Tensor, actions: torch.Tensor) -> PolicyEval:
        """Log-probabilities of ``actions`` and entropies under the current policy (with gradients)."""
        with update_autocast(self.devices.update, self.settings.precision):
            logits = self.network.logits(obs)
        return evaluate(logits.float(), masks, actions)

    def update_pass(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits and values of ``obs`` by the trained network (with gradients), in float32; under
        bf16 autocast when ``precision`` is "bf16"."""
        with update_autocast(self.devices.update, self.settings.precision):
            logits, values = self.network(obs)
        return logits.float(), values.float()

    def to_rollout(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` on the rollout device (itself when it is there already)."""
        return tensor.to(self.devices.rollout)

    def to_update(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` on the update device (itself when it is there already)."""
        return tensor.to(self.devices.update)

    def sync_rollout(self) -> None:
        """Copy the trained weights into the rollout network (no-op when they are one network)."""
        copy_weights(self.network, self.rollout_network)

    def optimise(self, loss: torch.Tensor) -> None:
        """One gradient step on ``loss`` with the configured gradient-norm clipping."""
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self._clip_and_step()

    def _clip_and_step(self) -> None:
        if self.settings.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.network.parameters(), self.settings.max_grad_norm)
        self.optimizer.step()

    def episode_step(self, n_steps: int, chunk_loss: ChunkLoss) -> dict[str, float]:
        """One gradient step on a loss that is a mean over the ``n_steps`` steps of an episode.

        The episode is processed in chunks of :attr:`chunk_steps` steps, each backpropagated on its
        own, so memory stays bounded on long episodes while the gradient is that of the whole mean.

        Args:
            n_steps: steps in the episode.
            chunk_loss: maps a slice of steps to (the loss summed over them, the loss parts summed
                over them as floats, including ``"loss"``).

        Returns:
            The parts averaged over the episode.
        """
        self.optimizer.zero_grad(set_to_none=True)
        totals: dict[str, float] = {}
        for start in range(0, n_steps, self.chunk_steps):
            loss, parts = chunk_loss(slice(start, min(start + self.chunk_steps, n_steps)))
            (loss / n_steps).backward()
            for key, value in parts.items():
                totals[key] = totals.get(key, 0.0) + value
        self._clip_and_step()
        return {key: value / n_steps for key, value in totals.items()}

    def state_dict(self) -> dict[str, Any]:
        """The network's parameters and buffers, on the CPU."""
        return to_cpu(self.network.state_dict())

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.network.load_state_dict(state)
        self.sync_rollout()

    def optimizer_state_dict(self) -> dict[str, Any]:
        """The optimizer's state, on the CPU (loading moves it to the parameters' device)."""
        return to_cpu(self.optimizer.state_dict())

    def load_optimizer_state_dict(self, state: Mapping[str, Any]) -> None:
        if state:
            self.optimizer.load_state_dict(state)


@dataclass(frozen=True)
class ValueSettings(PolicySettings):
    """Settings of an actor-critic learner (``pybatsim.agent.params``)."""

    vf_coef: float = field(default=0.5, metadata={"min": 0.0})
    """Weight of the value (critic) loss."""
    gae_lambda: float = field(default=1.0, metadata={"min": 0.0, "max": 1.0})
    """GAE lambda: 1 gives Monte-Carlo returns minus the value, 0 one-step TD errors."""


class ValueLearningAgent(PolicyLearningAgent):
    """A policy learner with a critic: advantages are returns minus learned state values."""

    Settings: ClassVar[type] = ValueSettings

    def advantages(
        self, rewards: np.ndarray, values: np.ndarray, last_value: float = 0.0, terminal: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """GAE advantages and value targets of one episode.

        Args:
            rewards: the episode's rewards.
            values: the value estimates of its states.
            last_value: value of the state after the last step (used when not ``terminal``).
            terminal: the episode ended (no bootstrap from ``last_value``).
        """
        dones = np.zeros(len(rewards), dtype=bool)
        dones[-1] = terminal
        return gae(rewards, values, dones, last_value, self.gamma, self.settings.gae_lambda)

    def value_loss(self, values: torch.Tensor, returns: torch.Tensor) -> torch.Tensor:
        """Half mean squared error between predicted values and value targets."""
        return 0.5 * (values - returns).pow(2).mean()

    def values_of(self, obs: torch.Tensor) -> np.ndarray:
        """State values of a batch of observations, without gradients, in chunks (float64)."""
        with torch.no_grad():
            parts = [
                self.network.value(obs[start : start + self.chunk_steps])
                for start in range(0, obs.shape[0], self.chunk_steps)
            ]
        return torch.cat(parts).cpu().numpy().astype(np.float64)


def standardise_tensor(values: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """``(values - mean) / (std + eps)``; fewer than two values give zeros."""
    if values.numel() < 2:
        return torch.zeros_like(values)
    return (values - values.mean()) / (values.std(unbiased=False) + eps)


def as_tensor(obs: np.ndarray) -> torch.Tensor:
    """A float32 tensor sharing memory with ``obs`` when possible (copies read-only arrays)."""
    if obs.dtype != np.float32 or not obs.flags.writeable or not obs.flags.c_contiguous:
        obs = np.array(obs, dtype=np.float32)
    return torch.from_numpy(obs)


def returns_tensor(rewards: np.ndarray, gamma: float, standardise: bool) -> torch.Tensor:
    """Discounted (optionally standardised) returns of an episode as a float32 tensor."""
    returns = discounted_returns(rewards, gamma)
    if standardise:
        returns = standardised(returns)
    return torch.from_numpy(returns.astype(np.float32))


__all__ = [
    "Episode",
    "PolicyLearningAgent",
    "PolicySettings",
    "ValueLearningAgent",
    "ValueSettings",
    "as_tensor",
    "returns_tensor",
    "standardise_tensor",
]
