"""``hdeeprm-launch --workers N`` and ``--num-envs K``: the episodes played by rollout workers.

The experiment's agent stays the learner (it is loaded from ``--inmodel`` and saved as usual);
:func:`hdrm.distributed.learners.train_with_workers` picks the distributed learner of its class
and plays the launch's episodes in N worker processes of K environments each (N = 0: the K
environments in this process). Every episode that ends becomes an
:class:`~hdrm.launch.loop.EpisodeRecord` numbered in the order the learner reports them, and goes
to the same hooks as in the single-process loop (episodes.csv, actions.csv, checkpoints,
progress, TensorBoard). The workers build their environments and agents from the options file
and the agent file, which must therefore be readable by every worker at the same path (they are,
on one machine).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple

import numpy as np

from hdrm.errors import ConfigError
from hdrm.launch.agent_failed import AgentFailed
from hdrm.launch.experiment import Experiment, make_agent, seed_globals
from hdrm.launch.loop import EpisodeActions, EpisodeRecord, EpisodeStopped, Hooks, episode_record

logger = logging.getLogger(__name__)


def add_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--workers``, ``--address`` and ``--num-envs`` to the launcher's parser."""
    parser.add_argument("--workers", type=int, default=0, metavar="N",
                        help="train with N rollout worker processes on Ray (PPO: distributed "
                        "PPO); 0 (default): in this process")
    parser.add_argument("--address", metavar="ADDR",
                        help="with --workers: join the Ray cluster at ADDR (auto or HOST:PORT "
                        "from ray start --head) instead of starting Ray in this process")
    parser.add_argument("--num-envs", type=int, metavar="K",
                        help="environments per worker (or in this process) stepped together, one "
                        "forward pass for all (default: pybatsim.agent.params.num_envs, 1)")


class LaunchTask:
    """How a worker builds the launch's environments and agent (pickled: paths and numbers only).

    Args:
        options_path: the options file.
        agent_path: the agent file.
        seed: the launch's seed; environment i is first reset with ``seed + i``.
        start: the first episode of the launch; a resumed launch (``start > 0``) seeds its
            environments from ``(seed, start, i)`` instead, so that it does not play again the
            episodes the interrupted launch began with.
    """

    def __init__(self, options_path: str | Path, agent_path: str | Path, seed: int,
                 start: int = 0) -> None:
        self.options_path = str(Path(options_path).resolve())
        self.agent_path = str(Path(agent_path).resolve())
        self.seed, self.start = int(seed), int(start)
        self._options: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_options": None}  # parsed options hold read-only mappings

    @property
    def options(self) -> Any:
        """The parsed options (read once per process)."""
        if self._options is None:
            from hdrm.options import load_options

            self._options = load_options(self.options_path)
        return self._options

    def make_env(self, index: int) -> Any:
        """A fresh environment of the options."""
        from hdrm.env.scheduling_env import SchedulingEnv

        return SchedulingEnv(options=self.options)

    def first_seed(self, index: int) -> int | None:
        """``seed + index`` (environment 0 starts as the single-process launch does); for a
        resumed launch, a seed drawn from ``(seed, start, index)``."""
        if self.start == 0:
            return self.seed + index
        return int(np.random.SeedSequence([self.seed, self.start, index]).generate_state(1)[0])

    def make_agent(self, env: Any, params: Mapping[str, Any], seed: int) -> Any:
        """The agent of the agent file, with ``params`` merged into its settings."""
        from hdrm.agents.loader import load_agent_class

        cls = load_agent_class(Path(self.agent_path))
        seed_globals(seed)
        return make_agent(cls, self.options, env, Path(self.agent_path), params, seed)

    def summary(self, env: Any, info: Mapping[str, Any]) -> EpisodeRecord:
        """The episode's figures (numbered, counted and timed by :func:`play_with_workers`)."""
        return episode_record(env.unwrapped, 0, 0, 0, 0.0, dict(info), {}, 0.0)


class _Finished:
    """Stands for an environment whose last episode ended as ``end`` (an
    :class:`~hdrm.distributed.learners.EpisodeEnd`), for the output writers."""

    def __init__(self, end: Any) -> None:
        self._end = end

    @property
    def unwrapped(self) -> "_Finished":
        return self

    def result(self) -> Any:
        """The episode's simulation result."""
        return self._end.result

    def sla_report(self) -> Any:
        """The episode's SLA report (None without tenants)."""
        return self._end.sla_report


def num_envs(exp: Experiment, requested: int | None) -> int:
    """Environments per worker: ``--num-envs``, else the learner's ``num_envs`` setting, else 1."""
    settings = getattr(exp.agent, "settings", None)
    return requested or int(getattr(settings, "num_envs", 1))


def apply_num_envs(exp: Experiment, requested: int | None) -> None:
    """Rebuild the experiment's agent for ``--num-envs`` environments (when it is not set so).

    Raises:
        ConfigError: the agent cannot decide for several environments at once.
    """
    if requested is None or requested == num_envs(exp, None):
        return
    if not hasattr(exp.agent, "decide_batch"):
        raise ConfigError(f"--num-envs {requested}: {type(exp.agent).__name__} has no "
                          "decide_batch: vectorised rollouts need a learner that decides for "
                          "several environments at once (ppo)")
    seed_globals(exp.options.seed)
    exp.agent = make_agent(type(exp.agent), exp.options, exp.env, exp.agent_path,
                           {"num_envs": requested})
    exp.agent.train_mode(exp.training)


def uses_workers(exp: Experiment, workers: int, requested: int | None) -> bool:
    """Whether the episodes are played by rollout workers or by several environments at once."""
    return workers > 0 or num_envs(exp, requested) > 1


def check_workers(exp: Experiment, workers: int, num_envs: int) -> None:
    """Refuse what rollout workers cannot do, in one line.

    Raises:
        ConfigError: Ray is missing, the agent does not learn, or the engine is batsim.
    """
    flag = f"--workers {workers}" if workers else f"--num-envs {num_envs}"
    if workers:
        from hdrm.distributed import RAY_MISSING, ray_installed

        if not ray_installed():
            raise ConfigError(f"--workers {workers}: {RAY_MISSING}; or leave --workers out to "
                              "train in this process")
    if exp.classic or not exp.training:
        raise ConfigError(f"{flag}: rollout workers train a learning agent; "
                          f"{exp.agent_path} {'is classic' if exp.classic else 'is evaluated'} "
                          "(pybatsim.agent.run is 'test'): drop the option")
    if exp.options.engine != "builtin":
        raise ConfigError(f"{flag}: rollout workers step the builtin engine; "
                          f"{exp.options.source} sets engine {exp.options.engine!r}")
    if workers == 0 and not hasattr(exp.agent, "decide_batch"):
        raise ConfigError(f"--num-envs {num_envs}: {type(exp.agent).__name__} has no "
                          "decide_batch: vectorised rollouts need a learner that decides for "
                          "several environments at once (ppo)")


def play_with_workers(exp: Experiment, workers: int, num_envs: int, address: str | None,
                      nbruns: int, hooks: Hooks, stop: Callable[[], bool], start: int = 0
                      ) -> "Played":
    """Play the launch's remaining episodes (from ``start``) with rollout workers."""
    from hdrm.distributed.learners import EndedEpisode, WorkerPlan, train_with_workers

    planned = exp.episodes * nbruns
    records: list[EpisodeRecord] = []

    def on_episode(ended: EndedEpisode) -> None:
        number = start + len(records)
        stats = ended.stats()
        record = dataclasses.replace(
            ended.summary, episode=number, run=number // exp.episodes, steps=ended.steps,
            return_=ended.return_, loss=stats["loss"], wall_s=ended.wall_s, stats=stats)
        records.append(record)
        hooks.episode_started(number, record.nb_jobs)
        hooks.episode_ended(record, EpisodeActions(number, ended.times_s, ended.actions))
        if (number + 1) % exp.episodes == 0:
            hooks.run_ended(number // exp.episodes, records)

    plan = WorkerPlan(workers, num_envs, address, episodes=planned - start)
    task = LaunchTask(exp.options.source, exp.agent_path, exp.options.seed, start)
    try:
        run = train_with_workers(exp.agent, task, plan, on_episode, stop)
    except AgentFailed as exc:  # raised in a worker: numbered here, its result so far kept
        for ended in exc.ended[:max(planned - start - len(records), 0)]:
            on_episode(ended)  # the failing worker's episodes that ended before the error
        exc.partial = exc.partial._replace(episode=start + len(records))
        exp.final_env = _Finished(exc.end) if exc.end is not None else None
        raise
    logger.info("rollout workers: %d episodes, %d env steps, %d updates, %d restarts, %.1f s",
                run.episodes, run.env_steps, run.updates, run.restarts, run.wall_s)
    final = _Finished(run.final) if run.final is not None else exp.env
    stopped = None
    if start + len(records) < planned:
        stopped = EpisodeStopped(EpisodeActions(start + len(records), [], []), mid_episode=False)
    return Played(records, final, stopped)


class Played(NamedTuple):
    """What :func:`play_with_workers` played.

    Attributes:
        records: the records of the episodes played.
        final: an environment-like object whose ``unwrapped.result()`` is the last episode's
            result (for :meth:`~hdrm.launch.logs.RunLog.finish`).
        stopped: the stop that ended the launch before its last episode (``stop()`` became
            true between two rollouts), or None.
    """

    records: list[EpisodeRecord]
    final: Any
    stopped: EpisodeStopped | None


__all__ = ["LaunchTask", "Played", "add_options", "apply_num_envs", "check_workers", "num_envs",
           "play_with_workers", "uses_workers"]
