"""Ape-X's actors: each plays its own copy of the environment with its own exploration rate.

An :class:`ApexActor` is a plain object (tests drive it directly); :mod:`hdrm.distributed.apex`
runs N of them as Ray actors. Each holds a DQN agent that explores with a fixed epsilon
(:func:`actor_epsilons`, the schedule of Horgan et al., 2018) and, instead of learning, hands its
n-step transitions out (its ``sink``). Every :meth:`ApexActor.collect` call plays a number
of decisions (episodes go on across calls), computes the initial priorities of the new
transitions with the actor's copy of the networks (their TD errors, as the learner would compute
them) and gives the block to a sink: the replay actor. An actor numbers the episodes it ends and
keeps the latest ones' simulation results, which the learner asks for with
:meth:`ApexActor.result` (the launcher writes its out files from the last reported episode's).
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
from hdrm.distributed.learners import EpisodeTrace, episode_end
from hdrm.env import EnvConfig, SchedulingEnv
from hdrm.launch.agent_failed import agent_call

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

    def make_env(self, index: int = 0) -> SchedulingEnv:
        """A new environment (the same for every actor ``index``)."""
        return SchedulingEnv(config=self.env_config)

    def reset_seed(self, rng: np.random.Generator, index: int, first: bool) -> int | None:
        """Every reset is seeded from the actor's generator."""
        return int(rng.integers(2**31))

    def reset_options(self, rng: np.random.Generator) -> dict[str, Any]:
        """``reset`` options of a new episode."""
        if not self.starts:
            return {}
        return {"start_index": int(self.starts[int(rng.integers(len(self.starts)))])}

    def agent_mask(self, env: Any, mask: np.ndarray) -> np.ndarray:
        """The actions the agent may take."""
        return mask if self.mask_filter is None else self.mask_filter(env, mask)

    def env_action(self, mask: np.ndarray, action: int) -> int:
        """The environment's action for the agent's."""
        return action if self.action_map is None else self.action_map(mask, action)

    def summary(self, env: Any, info: Mapping[str, Any]) -> Any:
        """What an ended episode reports besides its return and steps: nothing."""
        return None

    def result(self, env: Any) -> Any:
        """What an actor keeps of an ended episode for the learner to ask for: nothing (these
        episodes write no out files)."""
        return None


class TaskEpisodes:
    """Episodes of a :class:`~hdrm.distributed.learners.RolloutTask` (``hdeeprm-launch
    --workers``): its environments, first seeds and episode summaries, the env's own masks."""

    def __init__(self, task: Any) -> None:
        self.task = task

    def make_env(self, index: int = 0) -> Any:
        """Environment ``index`` of the task."""
        return self.task.make_env(index)

    def reset_seed(self, rng: np.random.Generator, index: int, first: bool) -> int | None:
        """The task's seed of environment ``index``'s first reset; later ones are not seeded."""
        return self.task.first_seed(index) if first else None

    def reset_options(self, rng: np.random.Generator) -> dict[str, Any]:
        """No options: the task's environment draws its episodes."""
        return {}

    def agent_mask(self, env: Any, mask: np.ndarray) -> np.ndarray:
        """The env's mask."""
        return mask

    def env_action(self, mask: np.ndarray, action: int) -> int:
        """The agent's action."""
        return action

    def summary(self, env: Any, info: Mapping[str, Any]) -> Any:
        """The task's summary of the episode."""
        return self.task.summary(env, info)

    def result(self, env: Any) -> Any:
        """The :class:`~hdrm.distributed.learners.EpisodeEnd` of the episode ``env`` just ended
        (its result and SLA report: the launcher's out files), or None when it has none."""
        return episode_end(env)


def actor_params(epsilon: float) -> dict[str, Any]:
    """What an actor's agent gets merged into its ``params``: a fixed ``epsilon``, decisions on
    the CPU and a one-slot local replay (the actor never learns)."""
    return {"epsilon_start": epsilon, "epsilon_end": epsilon, "buffer_size": 1,
            "rollout_device": "cpu", "update_device": "cpu", "precision": "fp32"}


def dqn_factory(config: Mapping[str, Any], env: Any, params: Mapping[str, Any],
                seed: int) -> DQNAgent:
    """A :class:`~hdrm.agents.dqn.DQNAgent` of the options block ``config`` with ``params``
    merged into its ``params`` (use with :func:`functools.partial`)."""
    merged = {**dict(config), "params": {**dict(config.get("params") or {}), **params},
              "run": "train"}
    return DQNAgent(merged, env.observation_space, env.action_space,
                    action_names=getattr(env, "action_names", None), seed=seed)


@dataclass(frozen=True)
class ActorSpec:
    """What every actor shares (picklable: sent to the actors).

    Attributes:
        episodes: an :class:`EpisodeSpec` or a :class:`TaskEpisodes`.
        make_agent: ``make_agent(env, params, seed)`` builds an actor's DQN agent.
        seed: the run's seed.
        epsilons: the actors' exploration rates (:func:`actor_epsilons`).
    """

    episodes: Any
    make_agent: Callable[[Any, Mapping[str, Any], int], DQNAgent]
    seed: int = 0
    epsilons: tuple[float, ...] = field(default=(0.4,))


class ApexActor:
    """One Ape-X actor: an environment, an acting-only DQN agent and a sink for its transitions.

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
        self.episodes = spec.episodes
        self.env = self.episodes.make_env(self.index)
        seed = int(spec.seed) * 1000 + self.index + 1
        self.agent = spec.make_agent(self.env, actor_params(self.epsilon), seed).train_mode(True)
        self.outbox: list[Transition] = []
        self.agent.sink = self.outbox.extend  # acting only: the transitions come here
        self.rng = np.random.default_rng((int(spec.seed), 3, self.index))
        self.version = -1
        self._obs: Any = None
        self._info: dict[str, Any] = {}
        self._trace = EpisodeTrace()
        self._first = True
        self._ended = 0  # episodes ended: the next one's number
        self._results: list[dict[int, Any]] = [{}, {}]  # see result()

    def collect(self, weights: Mapping[str, Any] | None, version: int, steps: int
                ) -> dict[str, Any]:
        """Load ``weights`` if newer than the actor's, play ``steps`` decisions, send the new
        transitions to the sink; returns the figures of the call.

        Returns:
            ``steps``, ``transitions`` sent, the ``ended`` episodes (each a dict of ``episode``,
            the actor's number of it, ``return``, ``steps``, ``wall_s``, the episodes'
            ``summary`` and its decisions, ``times_s`` and the ``actions`` the environment
            was given), the weights ``version`` used, this actor's ``epsilon`` and ``index``.
        """
        if weights is not None and version != self.version:
            self.agent.load_state_dict(weights)
            self.version = int(version)
        ended, results = [], {}
        for _ in range(int(steps)):
            episode = self._step()
            if episode is not None:
                figures, results[figures["episode"]] = episode
                ended.append(figures)
        if results:
            self._results = [self._results[-1], results]
        sent = self._send()
        return {"steps": int(steps), "transitions": sent, "ended": ended,
                "version": self.version, "epsilon": self.epsilon, "index": self.index}

    def result(self, episode: int) -> Any:
        """The result of this actor's ended episode number ``episode``, or None when it is no
        longer kept (or the episodes have none: :meth:`EpisodeSpec.result`).

        The results of the episodes ended in the last two :meth:`collect` calls that ended any
        are kept. That is enough for the learner's last reported episode: the learner has one
        call of an actor in flight at a time and reports the episodes of each call it receives,
        so when it asks, at most the call in flight since has ended newer episodes.
        """
        for kept in reversed(self._results):
            if episode in kept:
                return kept[episode]
        return None

    def _step(self) -> tuple[dict[str, Any], Any] | None:
        """One decision; returns the episode's figures and result when it ended."""
        episodes = self.episodes
        if self._obs is None:
            seed = episodes.reset_seed(self.rng, self.index, self._first)
            self._obs, self._info = self.env.reset(seed=seed,
                                                   options=episodes.reset_options(self.rng))
            self._first, self._trace = False, EpisodeTrace()  # before: a failure's partial
            self._call("start_episode")
        env_mask = np.asarray(self._info["action_mask"])
        action = self._call("decide", self._obs, episodes.agent_mask(self.env, env_mask))
        played = episodes.env_action(env_mask, action)
        self._trace.decided(self._info, played)
        self._obs, reward, terminated, truncated, self._info = self.env.step(played)
        done = bool(terminated or truncated)
        self._call("rewarded", float(reward), done)
        self._trace.rewarded(reward)
        if not done:
            return None
        self._call("end_episode")
        self._obs = None
        self._ended += 1
        ended = self._trace.ended(self.index, episodes.summary(self.env, self._info))
        figures = {"episode": self._ended - 1, "return": ended.return_, "steps": ended.steps,
                   "wall_s": ended.wall_s, "summary": ended.summary, "times_s": ended.times_s,
                   "actions": ended.actions}
        return figures, episodes.result(self.env)

    def _call(self, method: str, *args: Any) -> Any:
        """``agent.method(*args)``; an exception of the agent's code is
        :class:`~hdrm.launch.agent_failed.AgentFailed` with the decisions and the result so far
        of the episode under way (numbered by the launcher; the episodes that ended earlier in
        this call are not reported)."""
        from hdrm.launch.loop import EpisodeActions

        trace = self._trace
        return agent_call(self.agent, method,
                          lambda: EpisodeActions(0, trace.times_s, trace.actions), *args,
                          end=lambda: (self.episodes.result(self.env), []))

    def _send(self) -> int:
        """Stack the finished transitions, compute their TD errors, give them to the sink."""
        transitions, self.outbox[:] = list(self.outbox), []
        if not transitions:
            return 0
        block = stack_transitions(transitions)
        td = self._call("td_errors", block.as_batch())
        self.sink(block._replace(td_errors=np.asarray(td, dtype=np.float64)))
        return len(transitions)
