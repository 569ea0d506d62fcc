"""Distributed PPO: rollout workers (Ray actors, each with its own environments) feed one learner.

The learner is the agent of this process (the one the launcher or ``train.py`` built, loaded and
saves); each of the N workers owns K environments and a copy of the agent
(:class:`~hdrm.distributed.ppo_rollout.RolloutCollector`). One iteration:

1. the learner's weights are sent to every worker (inside the calls when they are small, else
   put once in Ray's object store: :func:`send_weights`), with the statistics of the last update
   and, to worker 0, the state of the learner's sampling generator (as numpy arrays,
   :mod:`hdrm.distributed.wire`);
2. every worker plays its share of the rollout (``rollout_steps / (N x K)`` steps per
   environment, rounded up), stepping its environments in its own process with no call to the
   learner, and returns it in one object: the share's columns (observations, masks, actions,
   log-probabilities, values, and advantages and returns computed against its own bootstrap
   values) as numpy arrays, and the episodes that ended;
3. the learner concatenates the shares in worker order and runs one PPO update on them, shuffling
   its minibatches with worker 0's generator; its state goes back to worker 0 with the weights.

For one worker this is, step for step, the single-process learner: the same seeds, the same
order of random draws (one stream shared by sampling and shuffling), the same updates; the test
``tests/distributed/test_ppo.py`` checks the weights bit for bit. With N workers it is
synchronous PPO over N x K environments: workers wait for the update, so a rollout is never
collected with stale weights.

A worker process that dies (killed, out of memory, its node lost) is restarted by Ray and its
rollout call retried, up to :data:`MAX_RESTARTS` times per worker; the restarted worker starts
new episodes from its environments' first seeds. The learner stays in this process, so its
checkpoints are written as before (atomically, by the caller).

With ``workers=0`` the K environments are stepped in this process by the learner itself
(vectorised rollouts, :func:`hdrm.agents.vector.run_vector` with episode records).

Given a :class:`~hdrm.distributed.learners.ResumeHandle`, the learner saves its state whenever
``on_episode`` asks (``capture``): the counters, the last update's statistics, the episodes of
the last rollout not yet reported and every collector's state
(:meth:`RolloutCollector.resume_state`, asked of the workers between two rollouts); the
learner agent's own state is the caller's to save. Started from such a state, it reports those
episodes first and goes on as the saved run would have, step for step (the workers' episodes
under way are replayed); a worker that Ray restarted meanwhile starts new episodes, as above.
"""

from __future__ import annotations

import logging
import math
import os
import time
from typing import Any, Callable

from hdrm.distributed import heap, ray_backend, wire
from hdrm.distributed.learners import (
    EndedEpisode,
    ResumeHandle,
    RolloutTask,
    TrainingRun,
    WorkerPlan,
)
from hdrm.distributed.ppo_rollout import Collected, RolloutCollector
from hdrm.errors import ConfigError, HdrmError
from hdrm.launch.agent_failed import AgentFailed, agent_call

logger = logging.getLogger(__name__)

#: Times Ray restarts a dead rollout worker (and retries its call) before training stops.
MAX_RESTARTS = 3
#: Largest weights (bytes of their arrays) sent inside each rollout call; larger ones go through
#: Ray's object store once (:func:`send_weights`). Below Ray's own limit for arguments sent with
#: the call (100 KiB), with room for the names and pickling.
INLINE_WEIGHTS_BYTES = 64 * 1024

OnEpisode = Callable[[EndedEpisode], None]


def share_steps(rollout_steps: int, workers: int, num_envs: int) -> int:
    """Steps of one worker's share of a rollout: ``num_envs`` x ``ceil(rollout_steps / (workers x
    num_envs))`` (each environment fills the same number of steps)."""
    per_env = -(-int(rollout_steps) // (max(workers, 1) * num_envs))
    return num_envs * per_env


class RolloutWorker:
    """The body of a rollout worker actor: a :class:`RolloutCollector` and its process id.

    What crosses the process boundary is numpy (:mod:`hdrm.distributed.wire`): the weights and
    the generator state it is given, the fragment and the generator state it returns.

    Args:
        task, worker, num_envs, rollout_steps, seed: see :class:`RolloutCollector`.
        own_process: the worker is alone in its process (a Ray actor): once its environments
            and agent are built, what the process holds is frozen out of garbage collection
            (:func:`hdrm.distributed.heap.freeze_setup`).
    """

    def __init__(self, task: RolloutTask, worker: int, num_envs: int, rollout_steps: int,
                 seed: int, own_process: bool = False) -> None:
        self.collector = RolloutCollector(task, worker, num_envs, rollout_steps, seed)
        if own_process:
            heap.freeze_setup(f"rollout worker {worker}")

    def collect(self, weights: dict[str, Any] | None, generator_state: Any,
                update_stats: dict[str, float] | None, max_episodes: float
                ) -> tuple[Collected, int]:
        """:meth:`RolloutCollector.collect`, and this process's id (a changed one: restarted)."""
        collected = self.collector.collect(
            None if weights is None else wire.from_wire(weights),
            wire.generator_from_wire(generator_state), update_stats, max_episodes)
        if collected.batch is not None:
            collected.batch = wire.batch_to_wire(collected.batch)
        collected.generator_state = wire.generator_to_wire(collected.generator_state)
        return collected, os.getpid()

    def resume_state(self) -> dict[str, Any]:
        """:meth:`RolloutCollector.resume_state`."""
        return self.collector.resume_state()

    def load_resume_state(self, state: dict[str, Any]) -> int:
        """:meth:`RolloutCollector.load_resume_state`; returns this process's id."""
        self.collector.load_resume_state(state)
        return os.getpid()

    def result(self, position: int) -> Any:
        """The simulation result of the ``position``-th episode that ended in the last call."""
        return self.collector.results.get(position)

    def pid(self) -> int:
        """This worker's process id."""
        return os.getpid()


def send_weights(ray: Any, weights: dict[str, Any]) -> Any:
    """What the rollout calls are given as the learner's weights (numpy, :func:`wire.to_wire`).

    Weights up to :data:`INLINE_WEIGHTS_BYTES` go with each call, inside it (Ray sends arguments
    that small with the task itself); larger ones are put once in Ray's object store, and every
    worker reads them from there. Through the store, each call costs a write and, per worker, a
    read of the store: about 1.3 ms more per worker for the 57 KB of the examples' PPO (2.6 ms
    against 1.3 ms for one actor call given the weights, 5.1 against 2.6 ms for two, measured
    on the 2-core development machine).
    """
    size = sum(getattr(value, "nbytes", 0) for value in weights.values())
    return weights if size <= INLINE_WEIGHTS_BYTES else ray.put(weights)


def train_ppo(agent: Any, task: RolloutTask, plan: WorkerPlan, on_episode: OnEpisode,
              should_stop: Callable[[], bool] = lambda: False,
              resume: ResumeHandle | None = None) -> TrainingRun:
    """Train the PPO ``agent`` with ``plan.workers`` rollout workers (0: in this process).

    Raises:
        ConfigError: Ray is missing or cannot start, or the learner is not set for
            ``plan.num_envs`` environments in this process.
        HdrmError: a worker died more often than Ray restarts it.
    """
    resume = resume if resume is not None else ResumeHandle()
    try:
        if plan.workers == 0:
            return _train_local(agent, task, plan, on_episode, should_stop, resume)
        with ray_backend.connect(plan.address) as ray:
            trainer = PPOWorkers(ray, agent, task, plan)
            try:
                return trainer.run(on_episode, should_stop, resume)
            finally:
                trainer.close()
    finally:
        resume.capture = None


class _Reporter:
    """Hands a rollout's episodes to ``on_episode`` and knows which are still to report."""

    def __init__(self, on_episode: OnEpisode) -> None:
        self.on_episode = on_episode
        self.pending: list[EndedEpisode] = []

    def report(self, episodes: list[EndedEpisode]) -> None:
        """Report ``episodes`` in order."""
        for i, episode in enumerate(episodes):
            self.pending = episodes[i + 1:]
            self.on_episode(episode)
        self.pending = []

    def records(self) -> list[dict[str, Any]]:
        """The episodes still to report, as :meth:`EndedEpisode.record` values."""
        return [episode.record() for episode in self.pending]


def _counters(run: TrainingRun) -> dict[str, int]:
    return {"episodes": run.episodes, "env_steps": run.env_steps, "updates": run.updates,
            "restarts": run.restarts}


def _restore_counters(run: TrainingRun, saved: dict[str, Any]) -> list[EndedEpisode]:
    """Put the saved counters back into ``run``; returns the episodes still to report."""
    c = saved["counters"]
    run.episodes, run.env_steps = int(c["episodes"]), int(c["env_steps"])
    run.updates, run.restarts = int(c["updates"]), int(c["restarts"])
    return [EndedEpisode.from_record(r) for r in saved["pending"]]


def _train_local(agent: Any, task: RolloutTask, plan: WorkerPlan, on_episode: OnEpisode,
                 should_stop: Callable[[], bool], resume: ResumeHandle) -> TrainingRun:
    wanted = int(agent.settings.num_envs)
    if wanted != plan.num_envs:
        raise ConfigError(f"--num-envs {plan.num_envs}: the learner is set for {wanted} "
                          f"environment(s) (pybatsim.agent.params.num_envs); give the same number")
    t0 = time.perf_counter()
    collector = RolloutCollector(task, 0, plan.num_envs, agent=agent)
    run, reporter = TrainingRun(), _Reporter(on_episode)
    pending: list[EndedEpisode] | None = None
    if resume.saved is not None:
        pending = _restore_counters(run, resume.saved)
        collector.load_resume_state(resume.saved["collectors"][0])
    updates = agent.updates - run.updates
    resume.capture = lambda: {"counters": {**_counters(run), "updates": agent.updates - updates},
                              "pending": reporter.records(),
                              "collectors": [collector.resume_state()]}
    while True:
        if pending is None:
            if not (run.episodes < plan.episodes and run.env_steps < plan.env_steps):
                break
            collected = collector.collect(max_episodes=plan.episodes - run.episodes)
            run.env_steps += collected.env_steps
            pending = collected.episodes[: _left(plan, run)]
            run.episodes += len(pending)
            if pending:
                run.final = collector.results.get(len(pending) - 1)
        reporter.report(pending)
        pending = None
        if should_stop():
            break
    run.updates, run.wall_s = agent.updates - updates, time.perf_counter() - t0
    return run


def _left(plan: WorkerPlan, run: TrainingRun) -> int | None:
    """Episodes still to report (None: no limit)."""
    return None if math.isinf(plan.episodes) else int(plan.episodes) - run.episodes


def _no_decisions() -> Any:
    """No decision of an episode: the learner's update failed between two rollouts."""
    from hdrm.launch.loop import EpisodeActions

    return EpisodeActions(0, [], [])


def _first_failure(ray: Any, refs: list[Any], raised: Any) -> Any:
    """The failure of the first call of ``refs`` (in worker order) that failed, each call waited
    for (``ray.get`` raised ``raised``, the first to fail in time; a failed call left unread
    would have Ray print its trace later)."""
    failures = []
    for ref in refs:
        try:
            ray.get(ref)
        except ray.exceptions.RayError as exc:
            failures.append(exc)
    return failures[0] if failures else raised


class PPOWorkers:
    """The learner's side: N rollout worker actors and the iteration of the module docstring."""

    def __init__(self, ray: Any, agent: Any, task: RolloutTask, plan: WorkerPlan) -> None:
        self.ray, self.agent, self.plan = ray, agent, plan
        self.t0 = time.perf_counter()
        cpus = min(1.0, ray_backend.cluster_cpus(ray) / plan.workers)
        actor = ray.remote(num_cpus=cpus, max_restarts=MAX_RESTARTS,
                           max_task_retries=MAX_RESTARTS)(RolloutWorker)
        share = share_steps(agent.settings.rollout_steps, plan.workers, plan.num_envs)
        self.workers = [actor.remote(task, w, plan.num_envs, share, agent.seed + w,
                                     own_process=True) for w in range(plan.workers)]
        self.pids = self._get([w.pid.remote() for w in self.workers])
        self.restarts = 0
        logger.info("%d rollout workers of %d environments, %d steps each per rollout (pids %s)",
                    plan.workers, plan.num_envs, share, self.pids)

    def run(self, on_episode: OnEpisode, should_stop: Callable[[], bool],
            resume: ResumeHandle | None = None) -> TrainingRun:
        """Iterate until the plan's budget is spent or ``should_stop()``; see the module doc
        (``resume``: the state to start from, and where ``capture`` is set)."""
        resume = resume if resume is not None else ResumeHandle()
        run, reporter = TrainingRun(workers=self.plan.workers), _Reporter(on_episode)
        stats: dict[str, float] | None = None
        last: tuple[int, int] | None = None
        kept: list[EndedEpisode] | None = None
        if resume.saved is not None:
            kept = _restore_counters(run, resume.saved)
            stats, self.restarts = resume.saved["stats"], run.restarts
            self.load_states(resume.saved["collectors"])
        resume.capture = lambda: {"counters": {**_counters(run), "restarts": self.restarts},
                                  "pending": reporter.records(), "stats": stats,
                                  "collectors": self._get([w.resume_state.remote()
                                                           for w in self.workers])}
        while True:
            if kept is None:
                if not (run.episodes < self.plan.episodes and run.env_steps < self.plan.env_steps):
                    break
                results = self.collect(stats, self.plan.episodes - run.episodes)
                run.env_steps += sum(c.env_steps for c in results)
                stats = self.learn(results)
                run.updates += stats is not None
                kept, last = self._episodes(results, _left(self.plan, run), last)
                run.episodes += len(kept)
            reporter.report(kept)
            kept = None
            if stats is None or should_stop():
                break
        run.restarts, run.wall_s = self.restarts, time.perf_counter() - self.t0
        if last is not None:
            run.final = self._get([self.workers[last[0]].result.remote(last[1])])[0]
        return run

    def collect(self, stats: dict[str, float] | None, max_episodes: float) -> list[Collected]:
        """One rollout from every worker, with the learner's weights (see :func:`send_weights`)."""
        weights = send_weights(self.ray, wire.to_wire(self.agent.state_dict()))
        generator = wire.generator_to_wire(self.agent.generator.get_state())
        refs = [w.collect.remote(weights, generator if i == 0 else None, stats, max_episodes)
                for i, w in enumerate(self.workers)]
        replies = self._get(refs)
        for i, (_, pid) in enumerate(replies):
            if pid != self.pids[i]:
                self.restarts += 1
                logger.warning("rollout worker %d (pid %d) died; Ray restarted it as pid %d",
                               i, self.pids[i], pid)
                self.pids[i] = pid
        return [collected for collected, _ in replies]

    def load_states(self, states: list[dict[str, Any]]) -> None:
        """Put every worker's saved collector state back (:meth:`RolloutWorker.load_resume_state`).

        Raises:
            HdrmError: a state for another number of workers.
        """
        if len(states) != len(self.workers):
            raise HdrmError(f"distributed PPO: a saved state of {len(states)} rollout workers "
                            f"for {len(self.workers)}")
        self.pids = self._get([w.load_resume_state.remote(state)
                               for w, state in zip(self.workers, states)])

    def learn(self, results: list[Collected]) -> dict[str, float] | None:
        """One update from the workers' shares; None when a share was cut by the budget."""
        if any(c.batch is None for c in results):
            return None
        self.agent.generator.set_state(wire.generator_from_wire(results[0].generator_state))
        stats = agent_call(self.agent, "learn_rollout", _no_decisions,
                           wire.join_batches([c.batch for c in results]))
        for collected in results:
            for episode in collected.episodes:
                if episode.awaiting_update:
                    episode.update_stats.append(stats)
        return stats

    @staticmethod
    def _episodes(results: list[Collected], left: int | None, last: tuple[int, int] | None
                  ) -> tuple[list[EndedEpisode], tuple[int, int] | None]:
        """The episodes to report, in worker order, and (worker, position) of the last one."""
        kept = []
        for w, collected in enumerate(results):
            for position, episode in enumerate(collected.episodes):
                if left is not None and len(kept) >= left:
                    return kept, last
                kept.append(episode)
                last = (w, position)
        return kept, last

    def _get(self, refs: list[Any]) -> list[Any]:
        try:
            return self.ray.get(refs)
        except self.ray.exceptions.RayError as exc:
            exc = _first_failure(self.ray, refs, exc)
            cause = getattr(exc, "cause", None)
            if isinstance(cause, (HdrmError, AgentFailed)):
                # the worker's own error (a bad action, a bad input, the agent code's exception)
                raise cause from None
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise HdrmError(f"distributed PPO: a rollout worker failed ({type(exc).__name__}: "
                            f"{reason}); Ray restarts a dead worker {MAX_RESTARTS} times; resume "
                            "from the last checkpoint with --inmodel") from None

    def close(self) -> None:
        """Stop the worker actors."""
        for worker in self.workers:
            self.ray.kill(worker)


__all__ = ["INLINE_WEIGHTS_BYTES", "MAX_RESTARTS", "PPOWorkers", "RolloutWorker", "send_weights",
           "share_steps", "train_ppo"]
