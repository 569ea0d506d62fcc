"""Ape-X as the distributed learner of DQN agents (``hdeeprm-launch --workers N``).

:func:`train_apex_workers` has the signature of
:func:`hdrm.distributed.learners.train_with_workers`, which routes DQN agents here: the agent the
caller built (and maybe loaded with ``--inmodel``) is Ape-X's learner, the N workers are Ape-X's
actors, each playing environment ``i`` of the task with the agent the task builds, its epsilon
fixed to Ape-X's ``epsilon_i``. Ape-X's other settings come from the DQN's ``apex`` setting
(``pybatsim.agent.params.apex``: :class:`~hdrm.distributed.apex.ApexSettings`, ``actors`` set by
``--workers``). Every ended episode is reported to ``on_episode`` as it arrives, in the order the
learner receives them (actors run freely, so the order is not fixed from run to run), and the
run's ``final`` is the simulation result of the last one reported, asked of the actor that
played it (as with distributed PPO: the launcher writes its out files from it).

Each reported episode carries its decisions as its actor played them (actions.csv) and, as its
statistics (episodes.csv's ``loss``), the means of the learner's gradient steps made since the
previous report of episodes: episodes reported together share them; an episode reported before
the learner's first step has none (``loss`` nan, as the single-process DQN before
``learning_starts``).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from typing import Any, Callable

from hdrm.distributed import ray_backend
from hdrm.distributed.apex import ApexProgress, ApexTrainer, parse_apex
from hdrm.distributed.apex_actor import TaskEpisodes
from hdrm.distributed.learners import EndedEpisode, RolloutTask, TrainingRun, WorkerPlan
from hdrm.errors import ConfigError

logger = logging.getLogger(__name__)

#: Where the Ape-X settings are read in options.json, for messages.
APEX_OPTIONS_PATH = "pybatsim.agent.params.apex"


def train_apex_workers(agent: Any, task: RolloutTask, plan: WorkerPlan,
                       on_episode: Callable[[EndedEpisode], None],
                       should_stop: Callable[[], bool] = lambda: False) -> TrainingRun:
    """Train the DQN ``agent`` with Ape-X: ``plan.workers`` actors, a replay actor, the learner
    in this process.

    Raises:
        ConfigError: no actors (``--workers 0``), several environments per actor, bad ``apex``
            settings, or Ray missing or unable to start.
        HdrmError: an actor or the replay died more often than Ray restarts it.
    """
    if plan.workers < 1:
        raise ConfigError("--workers 0: Ape-X needs at least one actor; give --workers N, or "
                          "drop --workers to train DQN in this process")
    if plan.num_envs != 1:
        raise ConfigError(f"--num-envs {plan.num_envs}: each Ape-X actor plays one environment; "
                          "add actors with --workers instead")
    settings = parse_apex(agent.settings.apex, where=APEX_OPTIONS_PATH)
    settings = dataclasses.replace(settings, actors=plan.workers)
    reporter = _Reporter(plan, on_episode, should_stop)
    t0 = time.perf_counter()
    updates = agent.updates
    with ray_backend.connect(plan.address) as ray:
        trainer = ApexTrainer(ray, agent.train_mode(True), TaskEpisodes(task), settings,
                              seed=int(agent.seed), make_agent=task.make_agent)
        try:
            progress = trainer.run(reporter)
            final = _final_result(trainer, reporter.last)
        finally:
            trainer.close()
    return TrainingRun(episodes=reporter.reported, env_steps=progress.env_steps,
                       updates=agent.updates - updates, wall_s=time.perf_counter() - t0,
                       workers=plan.workers, restarts=progress.restarts, final=final)


def _final_result(trainer: ApexTrainer, last: tuple[int, int, int] | None) -> Any:
    """The result of the last reported episode, ``last`` = (actor, its episode number, pid);
    None when no episode was reported (or its actor lost it: logged)."""
    if last is None:
        return None
    result = trainer.episode_result(*last)
    if result is None:
        logger.warning("Ape-X: actor %d was restarted and lost the result of the last reported "
                       "episode: out_jobs.csv and the other engine outputs will hold no jobs",
                       last[0])
    return result


class _Reporter:
    """The stop callback: reports ended episodes, stops at the plan's budgets or when asked."""

    def __init__(self, plan: WorkerPlan, on_episode: Callable[[EndedEpisode], None],
                 should_stop: Callable[[], bool]) -> None:
        self.plan, self.on_episode, self.should_stop = plan, on_episode, should_stop
        self.reported = 0
        self.last: tuple[int, int, int] | None = None  # (actor, episode, pid) last reported

    def __call__(self, agent: Any, progress: ApexProgress) -> bool:
        ended, progress.ended = progress.ended, []
        learned = progress.learned.take() if ended else None
        for index, figures in ended:
            if self.reported >= self.plan.episodes:
                break
            self.on_episode(EndedEpisode(
                env=index, steps=int(figures["steps"]), return_=float(figures["return"]),
                summary=figures["summary"], times_s=list(figures["times_s"]),
                actions=list(figures["actions"]), update_stats=[learned] if learned else [],
                wall_s=float(figures["wall_s"])))
            self.reported += 1
            self.last = (index, int(figures["episode"]), int(figures["pid"]))
        done = (self.reported >= self.plan.episodes
                or progress.env_steps >= self.plan.env_steps)
        if not math.isinf(self.plan.episodes) and done:
            logger.info("Ape-X: %d episodes reported, stopping", self.reported)
        return done or self.should_stop()
