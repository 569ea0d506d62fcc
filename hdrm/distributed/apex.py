"""Ape-X DQN on Ray (Horgan et al., 2018): N actors, one prioritized replay actor, one learner.

- N actors (:class:`~hdrm.distributed.apex_actor.ApexActor`, one Ray actor each, one CPU) play
  their own environments with the exploration rates of
  :func:`~hdrm.distributed.apex_actor.actor_epsilons` and send their n-step transitions, with
  the TD errors they computed as initial priorities, to the replay actor.
- The replay actor (:class:`~hdrm.distributed.apex_replay.ApexReplay`) holds the prioritized
  buffer: capacity, batch size and the priority exponents are the DQN options ``buffer_size``,
  ``batch_size``, ``alpha``, ``beta`` (annealed over ``beta_steps``) and ``priority_eps``.
- The learner is a :class:`~hdrm.agents.dqn.DQNAgent` in this (the driver's) process: dueling
  double DQN on n-step returns, as configured. It draws batches from the replay actor (the next
  ``replay_batches`` at a time: the next call goes out as soon as a call's batches arrive, so
  the learner rarely waits for the replay), sends the new TD errors back as priorities with
  its next call, and publishes its weights every ``weight_sync`` gradient steps; each actor
  picks the newest weights up at the start of its next
  :meth:`~hdrm.distributed.apex_actor.ApexActor.collect` call (every ``actor_steps``
  decisions). The priorities a batch is drawn with lack the updates of at most the
  ``2 x replay_batches`` gradient steps before it (asynchronous, as in the paper; the write
  counters of :mod:`~hdrm.distributed.apex_replay` drop an update of a slot rewritten since).

The learner keeps at most ``max_replay_ratio`` gradient steps per collected decision (default:
the single-process DQN's ``1 / train_freq``); it waits for the actors when it is ahead.
Its checkpoints are the single-process DQN's (the learner is a ``DQNAgent``), so
``hdeeprm-launch --inmodel`` and ``benchmarks/compare.py`` read them.

Faults: the actors and the replay actor are restarted by Ray when their process dies
(``kill -9``), up to :data:`MAX_RESTARTS` times each, and the call they were running runs again
on the new process: a restarted actor starts a new episode with the newest weights, a restarted
replay starts empty and the learner waits until it holds a batch again. Actor restarts are
counted in :attr:`ApexProgress.restarts`; an actor or replay lost for good stops the run with
one line.

This module imports ``ray`` only inside its functions.
"""

from __future__ import annotations

import collections
import functools
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple

import numpy as np

from hdrm.agents.dqn import DQNAgent, beta_at
from hdrm.agents.replay import PrioritizedReplayBuffer, ReplayBatch
from hdrm.distributed.apex_actor import (ActorSpec, ApexActor, EpisodeSpec, actor_epsilons,
                                         dqn_factory)
from hdrm.distributed import heap, wire
from hdrm.distributed.apex_replay import ApexReplay
from hdrm.distributed.apex_settings import (  # noqa: F401  (re-exported)
    APEX_PATH,
    ApexSettings,
    parse_apex,
)
from hdrm.distributed.learners import StatsMean
from hdrm.errors import HdrmError
from hdrm.launch.agent_failed import AgentFailed

logger = logging.getLogger(__name__)

#: Times Ray restarts a dead actor (or the replay) before giving up on it.
MAX_RESTARTS = 5


@dataclass
class ApexProgress:
    """Where an Ape-X run stands (read by the stop callback)."""

    env_steps: int = 0
    transitions: int = 0
    updates: int = 0
    episodes: int = 0
    returns: list[float] = field(default_factory=list)
    weights_version: int = 0
    restarts: int = 0
    wall_s: float = 0.0
    stats: dict[str, float] = field(default_factory=dict)
    ended: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    """Episodes ended since the stop callback last emptied the list: (actor, figures); the
    figures are those of :meth:`ApexActor.collect` plus the ``pid`` of the actor's process."""
    learned: StatsMean = field(default_factory=StatsMean)
    """The statistics of the gradient steps since the stop callback last took their means."""


class Step(NamedTuple):
    """One gradient step of the learner: the replay slots it used and their new TD errors."""

    indices: np.ndarray
    td_errors: np.ndarray
    stats: dict[str, float]


class _ActorHost:
    """The Ray actor around an :class:`ApexActor` (its sink is the replay actor)."""

    def __init__(self, index: int, spec: ActorSpec, replay: Any) -> None:
        import torch

        torch.set_num_threads(1)
        self.actor = ApexActor(index, spec, lambda block: replay.add.remote(block))
        heap.freeze_setup(f"Ape-X actor {index}")  # alone in its process

    def collect(self, weights: Any, version: int, steps: int) -> dict[str, Any]:
        """:meth:`ApexActor.collect` with the published weights (numpy arrays: every call is
        given them, and Ray reads arrays from its store without unpickling torch tensors)."""
        import os

        if weights is not None and version != self.actor.version:
            weights = wire.from_wire(weights)
        return {**self.actor.collect(weights, version, steps), "pid": os.getpid()}

    def pid(self) -> int:
        import os

        return os.getpid()

    def result(self, episode: int, pid: int) -> Any:
        """The result of episode ``episode`` that process ``pid`` ended (None if this is a
        restarted process: it numbers its episodes from 0 again and kept nothing of pid's)."""
        import os

        return self.actor.result(episode) if pid == os.getpid() else None


class _ReplayHost(ApexReplay):
    """The Ray actor around the replay (with its process id, for fault tests)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        heap.freeze_setup("Ape-X replay")  # alone in its process

    def pid(self) -> int:
        import os

        return os.getpid()


class ApexTrainer:
    """Runs Ape-X on a connected Ray: starts the replay and actors, then learns in this process.

    Args:
        ray: the ``ray`` module, initialised.
        learner: the DQN agent that learns (its own replay buffer is replaced by a one-slot
            one: it draws from the replay actor).
        episodes: how actors build their environments and start episodes
            (:class:`~hdrm.distributed.apex_actor.EpisodeSpec` or
            :class:`~hdrm.distributed.apex_actor.TaskEpisodes`).
        settings: the distribution's settings.
        seed: the run's seed (actors' agents, episodes and the replay's draws derive from it).
        make_agent: ``make_agent(env, params, seed)`` builds an actor's agent (default: a
            ``DQNAgent`` of the learner's options block).
    """

    def __init__(self, ray: Any, learner: DQNAgent, episodes: Any, settings: ApexSettings,
                 seed: int = 0, make_agent: Callable[..., DQNAgent] | None = None) -> None:
        self.ray, self.learner, self.settings = ray, learner, settings
        s = learner.settings
        self.epsilons = actor_epsilons(settings.actors, settings.epsilon, settings.epsilon_alpha)
        if make_agent is None:
            make_agent = functools.partial(dqn_factory, dict(learner.config))
        spec = ActorSpec(episodes, make_agent, seed, tuple(self.epsilons))
        alpha = s.alpha if s.prioritized else 0.0
        shape = tuple(int(d) for d in learner.observation_space.shape)
        # the learner draws from the replay actor: its own buffer is replaced by a 1-slot one
        learner.replay = PrioritizedReplayBuffer(1, shape, learner.n_actions, alpha)
        # a call in flight when its actor dies runs again on the restarted actor
        options = {"max_restarts": MAX_RESTARTS, "max_task_retries": MAX_RESTARTS}
        self.replay = ray.remote(num_cpus=0, **options)(_ReplayHost).remote(
            s.buffer_size, shape, learner.n_actions, alpha, s.priority_eps, seed)
        host = ray.remote(num_cpus=settings.actor_cpus, **options)(_ActorHost)
        self.actors = [host.remote(i, spec, self.replay) for i in range(settings.actors)]
        self.max_ratio = float(settings.max_replay_ratio or 1.0 / s.train_freq)
        self.min_ratio = min(float(settings.min_replay_ratio), self.max_ratio)
        # decisions the actors may be ahead of the learner's minimum: enough to start learning
        self.lead = max(s.learning_starts, s.batch_size) + settings.actors * settings.actor_steps
        self.progress = ApexProgress(env_steps=learner.env_steps, updates=learner.updates)
        self._weights = ray.put(wire.to_wire(learner.state_dict()))
        self._inflight: dict[Any, int] = {}
        self._pending: Any = None  # the replay call whose batches come next
        self._batches: collections.deque[Any] = collections.deque()
        self._updates: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._pids: dict[int, int] = {}
        self._parked: list[int] = []

    def run(self, stop: Callable[[DQNAgent, ApexProgress], bool]) -> ApexProgress:
        """Learn until ``stop(learner, progress)`` is true (asked after every gradient step and
        every round of actor results); may be called again to go on. Returns the progress."""
        t0 = time.perf_counter() - self.progress.wall_s
        busy = set(self._inflight.values()) | set(self._parked)
        for index in range(len(self.actors)):
            if index not in busy:
                self._submit(index)
        while True:
            self._unpark()
            self.progress.wall_s = time.perf_counter() - t0
            learn = self._may_learn()
            if not learn or not self._batches:  # the actors are looked at a call's batches apart
                self._harvest(timeout=0.0 if learn else 0.5)
            if stop(self.learner, self.progress):
                return self.progress
            if learn and self.learn_step() is None:
                self._harvest(timeout=0.5)  # the replay holds less than a batch: wait for data

    def _may_learn(self) -> bool:
        s, p = self.learner.settings, self.progress
        if p.transitions < max(s.learning_starts, s.batch_size):
            return False
        return p.updates < self.max_ratio * p.env_steps

    def _ahead(self) -> bool:
        """Whether the actors are more than allowed ahead of the learner (min_replay_ratio)."""
        p = self.progress
        return self.min_ratio > 0 and p.env_steps > p.updates / self.min_ratio + self.lead

    def _unpark(self) -> None:
        while self._parked and not self._ahead():
            self._submit(self._parked.pop())

    def _submit(self, index: int) -> None:
        if self._ahead():
            self._parked.append(index)
            return
        ref = self.actors[index].collect.remote(self._weights, self.progress.weights_version,
                                                self.settings.actor_steps)
        self._inflight[ref] = index

    def _harvest(self, timeout: float) -> None:
        """Take the actors' finished calls and give each actor its next one."""
        refs = list(self._inflight)
        if not refs:  # every actor waits for the learner
            time.sleep(min(timeout, 0.05))
            return
        ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=timeout)
        if not ready and timeout > 0:  # nothing within the timeout: take the first to finish
            ready, _ = self.ray.wait(refs, num_returns=1)
        for ref in ready:
            index = self._inflight.pop(ref)
            result = self._get(ref, f"Ape-X actor {index}")
            if self._pids.get(index, result["pid"]) != result["pid"]:
                self.progress.restarts += 1
                logger.warning("Ape-X actor %d was restarted by Ray (process %d, now %d)",
                               index, self._pids[index], result["pid"])
            self._pids[index] = result["pid"]
            self._record(result)
            self._submit(index)

    def _get(self, ref: Any, who: str) -> Any:
        """``ray.get(ref)``; a call whose actor Ray gave up restarting stops the run in one
        line naming ``who``."""
        try:
            return self.ray.get(ref)
        except self.ray.exceptions.RayTaskError as exc:
            if isinstance(exc.cause, (HdrmError, AgentFailed)):  # the actor's agent code raised
                raise exc.cause from None
            raise
        except self.ray.exceptions.RayActorError as exc:
            raise HdrmError(f"{who} is lost ({type(exc).__name__}): Ray restarted it "
                            f"{MAX_RESTARTS} times; see the Ray logs "
                            "(/tmp/ray/session_latest/logs)") from None

    def _record(self, result: Mapping[str, Any]) -> None:
        p = self.progress
        p.env_steps += int(result["steps"])
        p.transitions += int(result["transitions"])
        p.episodes += len(result["ended"])
        p.returns.extend(float(e["return"]) for e in result["ended"])
        p.ended.extend((int(result["index"]), {**e, "pid": result["pid"]})
                       for e in result["ended"])
        self.learner.env_steps = p.env_steps  # drives beta, and is saved in the checkpoint

    def _exchange(self) -> Any:
        """Send the priority updates made so far and ask for the next batches."""
        updates, self._updates = self._updates, []
        beta = beta_at(self.progress.env_steps, self.learner.settings)
        return self.replay.exchange.remote(updates, self.settings.replay_batches,
                                           self.learner.settings.batch_size, beta)

    def flush_priorities(self) -> Any:
        """Send the priority updates not sent yet; returns the call's reference (``ray.get``
        it to wait until the replay holds them)."""
        updates, self._updates = self._updates, []
        return self.replay.exchange.remote(updates, 0, self.learner.settings.batch_size, 1.0)

    def learn_step(self) -> Step | None:
        """One gradient step on the next batch drawn from the replay (the new TD errors go back
        as its priorities with the next call to the replay); None when the replay had no batch
        to give."""
        if not self._batches:
            ref = self._pending if self._pending is not None else self._exchange()
            drawn = self._get(ref, "the Ape-X replay")
            self._pending = self._exchange()  # drawn while the learner works on these
            if not drawn:
                return None
            self._batches.extend(drawn)
        sample = self._batches.popleft()
        batch = ReplayBatch(*(np.require(a, requirements="W") for a in sample.batch))
        stats, td = self.learner.learn_on(batch)  # arrays from Ray are read-only: copied
        self._updates.append((batch.indices, sample.writes, td))
        p = self.progress
        p.updates, p.stats = self.learner.updates, stats
        p.learned.add(stats)
        if p.updates % self.settings.weight_sync == 0:
            self.publish()
        return Step(batch.indices, td, stats)

    def episode_result(self, index: int, episode: int, pid: int) -> Any:
        """The result of actor ``index``'s ended episode ``episode`` (the ``episode`` and ``pid``
        of its figures in :attr:`ApexProgress.ended`), or None when the actor no longer keeps it
        (its process died since, or it ended episodes in two calls since: see
        :meth:`ApexActor.result`). Ask before :meth:`close`."""
        try:
            return self.ray.get(self.actors[index].result.remote(episode, pid))
        except self.ray.exceptions.RayActorError as exc:
            logger.warning("Ape-X actor %d is lost (%s): the result of its episode %d with it",
                           index, type(exc).__name__, episode)
            return None

    def publish(self) -> None:
        """Make the learner's current weights the ones actors pick up next."""
        self._weights = self.ray.put(wire.to_wire(self.learner.state_dict()))
        self.progress.weights_version += 1

    def replay_stats(self) -> dict[str, float]:
        """The replay actor's counters (size, added, drawn, updated, stale) and memory (its
        arrays' bytes, the formula's, its process's resident set)."""
        stats, memory = self.ray.get([self.replay.stats.remote(), self.replay.memory.remote()])
        return {**stats, **memory}

    def close(self) -> None:
        """Stop the actors and the replay."""
        self._inflight.clear()  # killing the actors ends their calls
        self._parked.clear()
        for handle in [*self.actors, self.replay]:
            self.ray.kill(handle, no_restart=True)


def train_apex(config: Mapping[str, Any], episodes: EpisodeSpec, settings: ApexSettings,
               stop: Callable[[DQNAgent, ApexProgress], bool], seed: int = 0,
               address: str | None = None, num_cpus: int | None = None,
               learner: DQNAgent | None = None) -> tuple[DQNAgent, ApexProgress]:
    """Train a DQN agent with Ape-X until ``stop`` says so.

    Ray is started in this process (or ``address``'s cluster joined) unless it already runs.

    Args:
        config: the DQN options block (``lr``, ``gamma``, ``params``).
        episodes: the actors' environments and episode starts.
        settings: Ape-X's settings (:func:`parse_apex`).
        stop: called as ``stop(learner, progress)``; true ends the run.
        seed: the run's seed.
        address: a Ray cluster to join; None starts a local Ray.
        num_cpus: CPUs of a local Ray (None: this machine's).
        learner: the agent to go on training (e.g. loaded from a checkpoint); None: a new one.

    Returns:
        the learner (the trained DQN agent) and the run's progress.
    """
    from hdrm.distributed.ray_backend import connect

    if learner is None:
        env = episodes.make_env()
        learner = DQNAgent(config, env.observation_space, env.action_space,
                           action_names=env.action_names, seed=seed)
        env.close()
    learner.train_mode(True)
    with connect(address, num_cpus) as ray:
        trainer = ApexTrainer(ray, learner, episodes, settings, seed)
        try:
            progress = trainer.run(stop)
            progress.stats = {**progress.stats, **trainer.replay_stats()}
        finally:
            trainer.close()
    return learner, progress

