"""Ape-X's actors: each plays its own copy of the environment with its own exploration rate.

An :class:`ApexActor` is a plain object (tests drive it directly); :mod:`hdrm.distributed.apex`
runs N of them as Ray actors. Each holds an :class:`ActorAgent`, a DQN agent that explores with
a fixed epsilon (:func:`actor_epsilons`, the schedule of Horgan et al., 2018) and, instead of
learning, hands its n-step transitions out. Every :meth:`ApexActor.collect` call plays a number
of decisions (episodes go on across calls), computes the initial priorities of the new
transitions with the actor's copy of the networks (their TD errors, as the learner would compute
them) and gives the block to a sink: the replay actor.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from hdrm.agents.dqn import DQNAgent
from hdrm.agents.replay import Transition
from hdrm.distributed.apex_replay import TransitionBlock, stack_transitions
from hdrm.env import EnvConfig, SchedulingEnv

logger = logging.getLogger(__name__)

#: Which actions the agent may take, from the environment and its mask (None: the env's mask).
MaskFilter = Callable[[Any, np.ndarray], np.ndarray]
#: The environment's action for the agent's action and the env's mask (None: the same action).
ActionMap = Callable[[np.ndarray, int], int]


def actor_epsilons(n_actors: int, epsilon: float = 0.4, alpha: float = 7.0) -> list[float]:
    """Ape-X's exploration rates: ``epsilon^(1 + alpha * i / (N - 1))`` for actor i of N.

    Actor 0 explores most (``epsilon``), actor N-1 least (``epsilon^(1 + alpha)``); a single
    actor gets ``epsilon``.

    Raises:
        ValueError: ``n_actors`` < 1, ``epsilon`` outside [0, 1] or ``alpha`` < 0.
    """
    if n_actors < 1:
        raise ValueError(f"Ape-X needs at least one actor, got {n_actors}")
    if not (0.0 <= epsilon <= 1.0) or alpha < 0 or not math.isfinite(alpha):
        raise ValueError(f"Ape-X epsilons: need 0 <= epsilon <= 1 and alpha >= 0, got "
                         f"epsilon {epsilon}, alpha {alpha}")
    if n_actors == 1:
        return [float(epsilon)]
    return [float(epsilon ** (1.0 + alpha * i / (n_actors - 1))) for i in range(n_actors)]


@dataclass(frozen=True)
class EpisodeSpec:
    """How an actor builds its environment and starts episodes (picklable: sent to the actors).

    Attributes:
        env_config: the environment's settings.
        starts: start indices, one drawn uniformly per episode (``reset``'s ``start_index``);
            empty: the environment's own choice.
        mask_filter: maps the env's mask to the actions the agent may take (e.g. only fitting
            jobs); None keeps the env's mask.
        action_map: maps the agent's action to the env's (e.g. a job that does not fit yet to
            the void action); None keeps it.
    """

    env_config: EnvConfig
    starts: tuple[int, ...] = ()
    mask_filter: MaskFilter | None = None
    action_map: ActionMap | None = None

    def make_env(self) -> SchedulingEnv:
        """A new environment."""
        return SchedulingEnv(config=self.env_config)

    def reset_options(self, rng: np.random.Generator) -> dict[str, Any]:
        """``reset`` options of a new episode."""
        if not self.starts:
            return {}
        return {"start_index": int(self.starts[int(rng.integers(len(self.starts)))])}


@dataclass(frozen=True)
class ActorSpec:
    """What every actor shares: the learner's options block, the episodes and the run's seed."""

    config: Mapping[str, Any]
    episodes: EpisodeSpec
    seed: int = 0
    epsilons: tuple[float, ...] = field(default=(0.4,))


def actor_config(config: Mapping[str, Any], epsilon: float) -> dict[str, Any]:
    """The learner's options block for an actor: a fixed ``epsilon``, decisions on the CPU and
    a one-slot local replay (the actor never learns)."""
    out = dict(config)
    params = dict(out.get("params") or {})
    params.update(epsilon_start=epsilon, epsilon_end=epsilon, buffer_size=1,
                  rollout_device="cpu", update_device="cpu", precision="fp32")
    out["params"] = params
    out["run"] = "train"
    return out


class ActorAgent(DQNAgent):
    """A DQN agent that acts (epsilon-greedy, fixed epsilon) and keeps its transitions for the
    replay actor instead of learning."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.outbox: list[Transition] = []

    def _store(self, transitions: list[Transition]) -> None:
        self.outbox.extend(transitions)

    def _maybe_learn(self) -> None:
        """Actors never learn: the learner does."""

    def take(self) -> list[Transition]:
        """The transitions finished since the last call."""
        out, self.outbox = self.outbox, []
        return out


class ApexActor:
    """One Ape-X actor: an environment, an :class:`ActorAgent` and a sink for its transitions.

    Args:
        index: the actor's number (0 explores most).
        spec: the shared settings; ``spec.epsilons[index]`` is this actor's epsilon.
        sink: called with each :class:`~hdrm.distributed.apex_replay.TransitionBlock`.
    """

    def __init__(self, index: int, spec: ActorSpec,
                 sink: Callable[[TransitionBlock], Any]) -> None:
        self.index = int(index)
        self.spec = spec
        self.sink = sink
        self.epsilon = float(spec.epsilons[index])
        self.env = spec.episodes.make_env()
        seed = int(spec.seed) * 1000 + self.index + 1
        self.agent = ActorAgent(actor_config(spec.config, self.epsilon),
                                self.env.observation_space, self.env.action_space,
                                action_names=self.env.action_names, seed=seed).train_mode(True)
        self.rng = np.random.default_rng((int(spec.seed), 3, self.index))
        self.version = -1
        self._obs: Any = None
        self._info: dict[str, Any] = {}
        self._return = 0.0

    def collect(self, weights: Mapping[str, Any] | None, version: int, steps: int
                ) -> dict[str, Any]:
        """Load ``weights`` if newer than the actor's, play ``steps`` decisions, send the new
        transitions to the sink; returns the figures of the call.

        Returns:
            ``steps``, ``transitions`` sent, the ``returns`` of the episodes that ended, the
            weights ``version`` used, this actor's ``epsilon`` and ``index``.
        """
        if weights is not None and version != self.version:
            self.agent.load_state_dict(weights)
            self.version = int(version)
        returns = []
        for _ in range(int(steps)):
            ended = self._step()
            if ended is not None:
                returns.append(ended)
        sent = self._send()
        return {"steps": int(steps), "transitions": sent, "returns": returns,
                "version": self.version, "epsilon": self.epsilon, "index": self.index}

    def _step(self) -> float | None:
        """One decision; returns the episode's return when it ended."""
        episodes = self.spec.episodes
        if self._obs is None:
            seed = int(self.rng.integers(2**31))
            self._obs, self._info = self.env.reset(seed=seed,
                                                   options=episodes.reset_options(self.rng))
            self.agent.start_episode()
            self._return = 0.0
        env_mask = np.asarray(self._info["action_mask"])
        mask = env_mask if episodes.mask_filter is None else episodes.mask_filter(self.env,
                                                                                  env_mask)
        action = self.agent.decide(self._obs, mask)
        if episodes.action_map is not None:
            action = episodes.action_map(env_mask, action)
        self._obs, reward, terminated, truncated, self._info = self.env.step(action)
        done = bool(terminated or truncated)
        self.agent.rewarded(float(reward), done)
        self._return += float(reward)
        if not done:
            return None
        self.agent.end_episode()
        self._obs = None
        return self._return

    def _send(self) -> int:
        """Stack the finished transitions, compute their TD errors, give them to the sink."""
        transitions = self.agent.take()
        if not transitions:
            return 0
        block = stack_transitions(transitions)
        td = self.agent.td_errors(block.as_batch())
        self.sink(block._replace(td_errors=np.asarray(td, dtype=np.float64)))
        return len(transitions)
