"""The Agent API: what the launcher (or any Gymnasium loop) calls to make scheduling decisions.

HDeepRM's Agent API, modernised for a Gymnasium environment. The loop is::

    agent = AgentClass(config, observation_space, action_space, action_names=env.action_names, seed=seed)
    agent.train_mode(True)
    obs, info = env.reset(seed=seed)
    agent.start_episode()
    while True:
        action = agent.decide(obs, info["action_mask"])
        obs, reward, terminated, truncated, info = env.step(action)
        agent.rewarded(reward, terminated or truncated)
        if terminated or truncated:
            break
    stats = agent.end_episode()          # learners update here ("alter" in HDeepRM)

This module does not import torch: :class:`ClassicAgent` runs without it. The torch-based
:class:`PolicyLearningAgent` and :class:`ValueLearningAgent` live in :mod:`hdrm.agents.learning`
and are importable from here too (loaded on first access).
"""

from __future__ import annotations

import abc
import logging
import math
from typing import Any, Mapping, Sequence

import numpy as np
from gymnasium import spaces

from hdrm.agents.catalog import AGENTS
from hdrm.agents.settings import AGENT_PATH, read_number
from hdrm.errors import ConfigError
from hdrm.registry import suggest

logger = logging.getLogger(__name__)

_LAZY = {"PolicyLearningAgent", "ValueLearningAgent"}


def __getattr__(name: str) -> Any:
    """Load the torch-based learning agents on first access (keeps this module torch-free)."""
    if name in _LAZY:
        from hdrm.agents import learning

        return getattr(learning, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Agent(abc.ABC):
    """Base class of every agent: decides one action per decision step of the environment.

    Args:
        config: the agent block of options.json (``pybatsim.agent``), a read-only mapping (a
            parsed options block with ``to_dict()`` is accepted too).
        observation_space: the environment's observation space.
        action_space: the environment's action space (``gymnasium.spaces.Discrete``).
        action_names: the environment's ``action_names`` (one per action), or None.
        seed: seed of the agent's own random generators.

    Attributes:
        config: the agent block, as given.
        training: True while learning (updates allowed), False when evaluating.
        n_actions: number of discrete actions.
        rng: the agent's seeded numpy generator (no global random state).
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        observation_space: spaces.Space,
        action_space: spaces.Space,
        action_names: Sequence[str] | None = None,
        seed: int = 0,
    ) -> None:
        if not isinstance(config, Mapping) and callable(getattr(config, "to_dict", None)):
            config = config.to_dict()  # a parsed options block (hdrm.options.AgentOptions)
        if not isinstance(config, Mapping):
            raise ConfigError(f"{AGENT_PATH}: expected an object, got {config!r}")
        if not isinstance(action_space, spaces.Discrete):
            raise ConfigError(
                f"{AGENT_PATH}: agents need a Discrete action space, the environment has {action_space}"
            )
        self.config = config
        self.observation_space = observation_space
        self.action_space = action_space
        self.n_actions = int(action_space.n)
        self.action_names = list(action_names) if action_names is not None else None
        self.seed = int(seed)
        self.rng = np.random.default_rng(self.seed)
        self.training = _read_run(config)
        self.episode_return = 0.0
        self.episode_steps = 0

    def train_mode(self, training: bool = True) -> "Agent":
        """Switch between learning (True) and evaluation (False); returns the agent."""
        self.training = bool(training)
        return self

    def start_episode(self) -> None:
        """Called after ``env.reset()``, before the first decision of an episode."""
        self.episode_return = 0.0
        self.episode_steps = 0

    def observe(self, observation: Any) -> np.ndarray:
        """Turn the environment's observation into the agent's input (default: a float32 array).

        Override to add feature engineering; the result must keep the observation space's shape.
        """
        return np.asarray(observation, dtype=np.float32)

    @abc.abstractmethod
    def decide(self, observation: Any, mask: np.ndarray) -> int:
        """Choose an action.

        Args:
            observation: the environment's observation.
            mask: ``info["action_mask"]``: true (or 1) for valid actions; at least one is valid.

        Returns:
            The index of a valid action.
        """

    def rewarded(self, reward: float, done: bool) -> None:
        """Receive the reward of the last decision; ``done`` is true when the episode ended."""
        self.episode_return += float(reward)
        self.episode_steps += 1

    def end_episode(self) -> dict[str, float]:
        """Close an episode (HDeepRM's ``alter``: learners update here).

        Returns:
            Statistics: ``loss`` (nan when nothing was learned), ``return`` and ``steps``.
        """
        return {"loss": math.nan, "return": self.episode_return, "steps": float(self.episode_steps)}

    def alter(self) -> dict[str, float]:
        """HDeepRM's name for :meth:`end_episode`."""
        return self.end_episode()

    def state_dict(self) -> dict[str, Any]:
        """The learned state (model parameters); empty for agents that do not learn."""
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore the learned state saved by :meth:`state_dict`."""
        if state:
            raise ValueError(f"{type(self).__name__} has no learned state; got {len(state)} entries")

    def optimizer_state_dict(self) -> dict[str, Any]:
        """The optimizer's state; empty for agents that do not learn."""
        return {}

    def load_optimizer_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore the optimizer's state saved by :meth:`optimizer_state_dict` (no-op by default)."""
        return None


def _read_run(config: Mapping[str, Any]) -> bool:
    run = config.get("run", "train")
    if run not in ("train", "test"):
        raise ConfigError(
            f"{AGENT_PATH}.run: invalid value {run!r}; {suggest(str(run), ['train', 'test'])}"
            "choose one of: train, test"
        )
    return run == "train"


def first_valid(mask: np.ndarray) -> int:
    """Index of the first valid action of ``mask``."""
    return int(np.argmax(np.asarray(mask) != 0))


@AGENTS.register("classic", "fixed")
class ClassicAgent(Agent):
    """Always takes one named action (a policy pair such as ``"shortest-high_gflops"``).

    The action is ``config["policy"]`` (HDeepRM's ``policy_pair`` is accepted too) and must be one
    of the environment's ``action_names``. When it is masked out, the first valid action is taken.

    Raises:
        ConfigError: the policy is missing or not among the action names (with suggestions).
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        observation_space: spaces.Space,
        action_space: spaces.Space,
        action_names: Sequence[str] | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(config, observation_space, action_space, action_names, seed)
        self.policy = self._policy_name()
        self.action = self._action_index(self.policy)
        self.fallbacks = 0

    def _policy_name(self) -> str:
        key = "policy" if "policy" in self.config or "policy_pair" not in self.config else "policy_pair"
        self._policy_key = key
        name = self.config.get(key)
        if not isinstance(name, str) or not name:
            raise ConfigError(
                f"{AGENT_PATH}.{key}: a classic agent needs the name of its action, "
                f'e.g. "shortest-high_gflops"; got {name!r}'
            )
        return name

    def _action_index(self, name: str) -> int:
        path = f"{AGENT_PATH}.{self._policy_key}"
        if not self.action_names:
            raise ConfigError(
                f"{path}: {name!r} cannot be looked up: the environment gives no action_names"
            )
        lowered = [n.lower() for n in self.action_names]
        if name.lower() in lowered:
            return lowered.index(name.lower())
        shown = ", ".join(self.action_names[:12]) + (" ..." if len(self.action_names) > 12 else "")
        raise ConfigError(
            f"{path}: unknown action {name!r}; {suggest(name.lower(), lowered)}choose one of: {shown}"
        )

    def decide(self, observation: Any, mask: np.ndarray) -> int:
        """The configured action, or the first valid one when it is masked out."""
        if mask[self.action]:
            return self.action
        self.fallbacks += 1
        return first_valid(mask)


class LearningAgent(Agent):
    """An agent that learns from the rewards of its episodes (HDeepRM's ``LearningAgent``).

    Keeps the episode's rewards (and, for subclasses that use them, log-probabilities); computes
    discounted returns with ``gamma`` and standardises them.

    Attributes:
        gamma: discount factor in [0, 1] (``pybatsim.agent.gamma``, default 0.99).
        rewards: the rewards of the current episode.
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        observation_space: spaces.Space,
        action_space: spaces.Space,
        action_names: Sequence[str] | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(config, observation_space, action_space, action_names, seed)
        self.gamma = float(read_number(self.config, "gamma", 0.99, minimum=0.0, maximum=1.0))
        self.rewards: list[float] = []

    def start_episode(self) -> None:
        super().start_episode()
        self.rewards = []

    def rewarded(self, reward: float, done: bool) -> None:
        super().rewarded(reward, done)
        if self.training:
            self.rewards.append(float(reward))

    def returns(self, standardise: bool = True) -> np.ndarray:
        """Discounted (and by default standardised) returns of the current episode's rewards."""
        returns = discounted_returns(self.rewards, self.gamma)
        return standardised(returns) if standardise else returns


def discounted_returns(rewards: Sequence[float], gamma: float) -> np.ndarray:
    """``G_t = r_t + gamma * G_{t+1}`` for every step of an episode (float64)."""
    out = np.empty(len(rewards), dtype=np.float64)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = rewards[t] + gamma * running
        out[t] = running
    return out


def standardised(values: np.ndarray, eps: float = 1e-8) -> np.ndarray:
    """``(values - mean) / (std + eps)``; a single value or constant values give zeros."""
    values = np.asarray(values, dtype=np.float64)
    if values.size < 2:
        return np.zeros_like(values)
    return (values - values.mean()) / (values.std() + eps)
