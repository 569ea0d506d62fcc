"""The episode loop of the launcher: an agent drives the environment, episode after episode.

One episode::

    obs, info = env.reset(seed=seed)        # seed only for the very first episode of a launch
    agent.start_episode()
    until the episode ends:
        action = agent.decide(obs, info["action_mask"])
        obs, reward, terminated, truncated, info = env.step(action)
        agent.rewarded(reward, terminated or truncated)
    stats = agent.end_episode()             # REINFORCE and A2C learn here; PPO learns per rollout

The agent decides when it learns: the loop is the same for training and testing (the agent's
``training`` flag says which). Observers (:class:`Hooks`) see each episode start and end, every
``step_every`` steps and the end of each run; the loop itself prints nothing.

Every action is checked before the environment sees it (:mod:`hdrm.launch.actions`): an invalid
one raises :class:`InvalidAction`, an exception of the agent's own code
:class:`~hdrm.launch.agent_failed.AgentFailed`. A
``stop`` callable, polled after every decision, ends the loop with :class:`EpisodeStopped` (the
launcher's answer to Ctrl-C and SIGTERM; an error of the environment once a stop was asked for
too: Ctrl-C kills the real Batsim with the launcher). All three carry the decisions of the
unfinished episode.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from hdrm.agents.base import Agent
from hdrm.env.scheduling_env import SchedulingEnv
from hdrm.errors import HdrmError
from hdrm.launch.actions import ActionProblem, valid_action
from hdrm.launch.agent_failed import agent_call as _agent_call
from hdrm.results import metrics
from hdrm.sim.outputs import job_results

if TYPE_CHECKING:  # pragma: no cover
    from hdrm.launch.experiment import Experiment

logger = logging.getLogger(__name__)


@dataclass
class EpisodeRecord:
    """The figures of one episode (one row of episodes.csv, plus a few more).

    Attributes:
        episode: episode number, 0-based, counted over all runs of a launch.
        run: run number, 0-based.
        steps: decisions taken.
        return_: sum of the rewards.
        objective: the objective's final value (``return_ == -objective`` by construction).
        loss: the agent's training loss of the episode (nan when nothing was learned).
        makespan_s: latest finish time, in seconds.
        mean_waiting_s: mean waiting time, in seconds.
        mean_bounded_slowdown: mean bounded slowdown (threshold 10 s).
        energy_j: energy the platform consumed, in joules.
        nb_jobs: jobs of the episode.
        wall_s: wall-clock seconds of the episode, learning included.
        stats: every statistic the agent's ``end_episode`` returned.
    """

    episode: int
    run: int
    steps: int
    return_: float
    objective: float
    loss: float
    makespan_s: float
    mean_waiting_s: float
    mean_bounded_slowdown: float
    energy_j: float
    nb_jobs: int
    wall_s: float
    stats: dict[str, float] = field(default_factory=dict)

    def csv_row(self) -> dict[str, Any]:
        """The episodes.csv row (see :data:`hdrm.results.learning.EPISODES_COLUMNS`)."""
        return {
            "episode": self.episode,
            "return": self.return_,
            "loss": self.loss,
            "makespan": self.makespan_s,
            "mean_waiting": self.mean_waiting_s,
            "mean_bounded_slowdown": self.mean_bounded_slowdown,
            "energy_j": self.energy_j,
            "wall_s": self.wall_s,
        }


class EpisodeActions(NamedTuple):
    """The decisions of one episode: simulated time (s) and action index of each step."""

    episode: int
    times_s: list[float]
    actions: list[int]


class EpisodeStopped(Exception):
    """The loop was asked to stop (``stop()`` returned true) in the middle of an episode.

    Attributes:
        partial: the decisions of the unfinished episode.
        mid_episode: whether an episode was under way (its outputs are partial).
    """

    def __init__(self, partial: EpisodeActions, mid_episode: bool | None = None) -> None:
        super().__init__(f"stopped in episode {partial.episode} after {len(partial.actions)} "
                         "decisions")
        self.partial = partial
        self.mid_episode = bool(partial.actions) if mid_episode is None else mid_episode


class InvalidAction(HdrmError):
    """The agent returned an action that is not valid (wrong type, out of range, masked out).

    Attributes:
        partial: the decisions of the episode before the invalid one.
        time_s: the simulated time of the decision.
        action: what the agent returned.
        reason: why it is not valid (:class:`~hdrm.launch.actions.ActionProblem`'s message).
    """

    def __init__(self, partial: EpisodeActions, time_s: float, action: Any, reason: str) -> None:
        self.partial = partial
        self.time_s = time_s
        self.action = action
        self.reason = reason
        super().__init__(
            f"invalid action {action!r} at decision {len(partial.actions)} of episode "
            f"{partial.episode} (simulated time {time_s:g} s): {reason}"
        )


class Hooks:
    """Observers of the loop; every method does nothing by default.

    Attributes:
        step_every: call :meth:`stepped` every this many steps (0: never).
    """

    step_every = 0

    def episode_started(self, episode: int, nb_jobs: int) -> None:
        """An episode of ``nb_jobs`` jobs was reset."""

    def stepped(self, steps: int, info: dict[str, Any]) -> None:
        """``steps`` decisions were taken in the current episode; ``info`` is the last step's."""

    def episode_ended(self, record: EpisodeRecord, actions: EpisodeActions) -> None:
        """An episode ended (the agent has already run ``end_episode``)."""

    def run_ended(self, run: int, records: list[EpisodeRecord]) -> None:
        """Run ``run`` ended; ``records`` are every episode so far."""


class HookList(Hooks):
    """Several hooks called in order."""

    def __init__(self, *hooks: Hooks) -> None:
        self.hooks = [h for h in hooks if h is not None]
        every = [h.step_every for h in self.hooks if h.step_every > 0]
        self.step_every = min(every) if every else 0

    def episode_started(self, episode: int, nb_jobs: int) -> None:
        for hook in self.hooks:
            hook.episode_started(episode, nb_jobs)

    def stepped(self, steps: int, info: dict[str, Any]) -> None:
        for hook in self.hooks:
            if hook.step_every and steps % hook.step_every == 0:
                hook.stepped(steps, info)

    def episode_ended(self, record: EpisodeRecord, actions: EpisodeActions) -> None:
        for hook in self.hooks:
            hook.episode_ended(record, actions)

    def run_ended(self, run: int, records: list[EpisodeRecord]) -> None:
        for hook in self.hooks:
            hook.run_ended(run, records)


def run_episode(env: SchedulingEnv, agent: Agent, episode: int = 0, *, run: int = 0,
                seed: int | None = None, hooks: Hooks | None = None,
                stop: Callable[[], bool] | None = None) -> tuple[EpisodeRecord, EpisodeActions]:
    """Play one episode of ``agent`` in ``env`` and measure it.

    Args:
        env: the environment (wrappers allowed; the figures come from ``env.unwrapped``).
        agent: the agent (learns or not according to its ``training`` flag).
        episode: the episode number, for the record.
        run: the run number, for the record.
        seed: seed of ``env.reset`` (None continues the environment's own generator).
        hooks: observers.
        stop: polled after every decision; true ends the episode with :class:`EpisodeStopped`.

    Returns:
        The episode's record and its decisions.

    Raises:
        InvalidAction: the agent returned an action that is not valid.
        AgentFailed: the agent's code raised.
        EpisodeStopped: ``stop()`` became true.
    """
    hooks = hooks or Hooks()
    t0 = time.perf_counter()
    obs, info = env.reset(seed=seed)
    base = env.unwrapped
    hooks.episode_started(episode, len(base.sim.workload))
    times: list[float] = []
    actions: list[int] = []

    def so_far() -> EpisodeActions:
        return EpisodeActions(episode, times, actions)

    _agent_call(agent, "start_episode", so_far)
    every = hooks.step_every
    total = 0.0
    done = base.sim.done  # an episode without a single choice ends at reset
    while not done:
        chosen = _agent_call(agent, "decide", so_far, obs, info["action_mask"])
        try:
            action = valid_action(chosen, info["action_mask"])
        except ActionProblem as exc:
            raise InvalidAction(EpisodeActions(episode, times, actions), info["time"], chosen,
                                str(exc)) from None
        times.append(info["time"])
        actions.append(action)
        obs, reward, terminated, truncated, info = _step(env, action, stop, so_far)
        done = terminated or truncated
        _agent_call(agent, "rewarded", so_far, reward, done)
        total += reward
        if every and len(actions) % every == 0:
            hooks.stepped(len(actions), info)
        if stop is not None and not done and stop():
            raise EpisodeStopped(EpisodeActions(episode, times, actions))
    stats = dict(_agent_call(agent, "end_episode", so_far))
    record = episode_record(base, episode, run, len(actions), total, info, stats,
                            time.perf_counter() - t0)
    played = EpisodeActions(episode, times, actions)
    hooks.episode_ended(record, played)
    return record, played


def _step(env: SchedulingEnv, action: int, stop: Callable[[], bool] | None,
          so_far: Callable[[], EpisodeActions]) -> tuple:
    """``env.step(action)``; an error after a stop was asked for ends the episode with
    :class:`EpisodeStopped` and its decisions so far: a terminal's Ctrl-C reaches the whole
    process group, and the real Batsim (engine ``batsim``) dies of it during the step, while
    the jobs that ended before are the outputs of the stopped launch."""
    try:
        return env.step(action)
    except HdrmError as exc:
        if stop is None or not stop():
            raise
        logger.info("stopped during a step: %s", exc)
        raise EpisodeStopped(so_far()) from exc


def episode_record(base: SchedulingEnv, episode: int, run: int, steps: int, total: float,
                   info: dict[str, Any], stats: dict[str, float], wall_s: float) -> EpisodeRecord:
    """The record of the episode ``base`` has just finished (``info``: its last step's)."""
    result = base.result()
    rows = job_results(result)
    return EpisodeRecord(
        episode=episode,
        run=run,
        steps=steps,
        return_=float(total),
        objective=float(info.get("objective", math.nan)),
        loss=float(stats.get("loss", math.nan)),
        makespan_s=metrics.makespan(rows),
        mean_waiting_s=metrics.avg_waiting_time(rows),
        mean_bounded_slowdown=metrics.avg_bounded_slowdown(rows),
        energy_j=float(result.energy_j),
        nb_jobs=len(rows),
        wall_s=wall_s,
        stats={k: float(v) for k, v in stats.items()},
    )


def run_episodes(env: SchedulingEnv, agent: Agent, episodes: int, nbruns: int = 1, *,
                 seed: int | None = None, hooks: Hooks | None = None,
                 stop: Callable[[], bool] | None = None, start: int = 0) -> list[EpisodeRecord]:
    """Play ``nbruns`` runs of ``episodes`` episodes each with the same agent (its model carries on).

    Args:
        env: the environment.
        agent: the agent.
        episodes: episodes per run.
        nbruns: runs.
        seed: seed of the first ``env.reset`` (later episodes continue the env's generator).
        hooks: observers.
        stop: polled after every decision and between episodes (see :func:`run_episode`).
        start: the first episode to play (a resumed training run); episodes before it are
            taken as played, and ``seed`` is not used.

    Returns:
        The records of the episodes played, numbered ``start`` .. nbruns x episodes - 1.

    Raises:
        InvalidAction, AgentFailed, EpisodeStopped: see :func:`run_episode`.
    """
    hooks = hooks or Hooks()
    records: list[EpisodeRecord] = []
    for index in range(start, nbruns * episodes):
        if stop is not None and stop():
            raise EpisodeStopped(EpisodeActions(index, [], []))
        run = index // episodes
        record, _ = run_episode(env, agent, index, run=run,
                                seed=seed if index == 0 else None, hooks=hooks, stop=stop)
        records.append(record)
        logger.info("episode %d: return %.6g, %d steps, %.2f s", index, record.return_,
                    record.steps, record.wall_s)
        if (index + 1) % episodes == 0:
            hooks.run_ended(run, records)
    return records


def run_experiment(experiment: "Experiment", nbruns: int = 1, hooks: Hooks | None = None, *,
                   stop: Callable[[], bool] | None = None, start: int = 0) -> list[EpisodeRecord]:
    """Play a built :class:`~hdrm.launch.experiment.Experiment` (seeded with its options' seed)."""
    return run_episodes(experiment.env, experiment.agent, experiment.episodes, nbruns,
                        seed=experiment.options.seed, hooks=hooks, stop=stop, start=start)
