"""Which distributed learner trains an agent, and what every distributed learner is given.

``hdeeprm-launch --workers N`` and ``benchmarks/train.py --workers N`` call
:func:`train_with_workers`; it picks the learner from the agent's class in :data:`ROUTES` (the
first class the agent is an instance of): PPO agents train with rollout workers
(:mod:`hdrm.distributed.ppo`), DQN agents with Ape-X. A learner is one function with the signature
of :func:`train_with_workers`, named ``"module:function"`` so that nothing is
imported before it is used.

What the caller gives every learner:

* the agent, built and loaded by the caller in this process: it is the learner whose weights are
  trained and saved (so checkpoints keep their format);
* a :class:`RolloutTask`, which the workers use to build their own environments and agents (it is
  pickled and sent to them: no open files or locks);
* a :class:`WorkerPlan` (workers, environments per worker, Ray address, the episode budget);
* ``on_episode``, called in this process with every :class:`EndedEpisode` in a fixed order, after
  the learner has learned from the rollout the episode ended in; and ``should_stop``, polled
  between rollouts.

Nothing here imports Ray or torch.
"""

from __future__ import annotations

import importlib
import logging
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol

from hdrm.errors import ConfigError

logger = logging.getLogger(__name__)

#: (agent class, the distributed learner that trains it), as "module:name"; first match wins.
ROUTES: list[tuple[str, str]] = [
    ("hdrm.agents.ppo:PPOAgent", "hdrm.distributed.ppo:train_ppo"),
    ("hdrm.agents.dqn:DQNAgent", "hdrm.distributed.apex_workers:train_apex_workers"),
]


class RolloutTask(Protocol):
    """How a worker builds its environments and agent, and what it reports of an episode."""

    def make_env(self, index: int) -> Any:
        """Environment number ``index`` (over all workers: worker x num_envs + i)."""

    def first_seed(self, index: int) -> int | None:
        """Seed of the first ``reset`` of environment ``index`` (later resets are not seeded)."""

    def make_agent(self, env: Any, params: Mapping[str, Any], seed: int) -> Any:
        """A worker's agent for ``env``, with ``params`` merged into its ``params`` block."""

    def summary(self, env: Any, info: Mapping[str, Any]) -> Any:
        """What the caller keeps of an episode that just ended in ``env`` (picklable)."""


@dataclass(frozen=True)
class WorkerPlan:
    """How a training is spread.

    Attributes:
        workers: rollout worker processes (Ray actors); 0 collects in this process.
        num_envs: environments per worker, stepped together (one forward pass decides for all).
        address: Ray cluster to join (``auto`` or ``HOST:PORT``); None starts a local Ray.
        episodes: stop once this many episodes have ended (``math.inf``: no limit).
        env_steps: stop after the rollout in which this many environment steps were made.
    """

    workers: int = 0
    num_envs: int = 1
    address: str | None = None
    episodes: float = math.inf
    env_steps: float = math.inf

    def __post_init__(self) -> None:
        if self.workers < 0:
            raise ConfigError(f"--workers: expected 0 (this process) or a positive number of "
                              f"rollout workers, got {self.workers}")
        if self.num_envs < 1:
            raise ConfigError(f"--num-envs: expected a positive number of environments, got "
                              f"{self.num_envs}")
        if self.address is not None and self.workers == 0:
            raise ConfigError(f"--address {self.address}: a Ray cluster is used by rollout "
                              "workers; add --workers N")


@dataclass
class EndedEpisode:
    """An episode one of the environments finished.

    Attributes:
        env: the environment's number (over all workers).
        steps: decisions taken.
        return_: sum of the rewards.
        summary: what :meth:`RolloutTask.summary` returned.
        times_s: simulated time of each decision (when the environment's info has ``time``).
        actions: the action of each decision.
        update_stats: the statistics of each update made while the episode ran.
        wall_s: wall-clock seconds from its reset to its end, in its worker.
        awaiting_update: it ended at the last step of a rollout that the next update learns
            from; that update belongs to it (as in the single-process learner).
    """

    env: int
    steps: int
    return_: float
    summary: Any
    times_s: list[float] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    update_stats: list[dict[str, float]] = field(default_factory=list)
    wall_s: float = 0.0
    awaiting_update: bool = False

    def stats(self) -> dict[str, float]:
        """What ``end_episode`` returns for it: the updates' mean statistics (``loss`` nan when
        none), ``return`` and ``steps``."""
        out = {"loss": math.nan, "return": self.return_, "steps": float(self.steps)}
        if self.update_stats:
            out.update({key: sum(s[key] for s in self.update_stats) / len(self.update_stats)
                        for key in self.update_stats[0]})
        return out


@dataclass
class TrainingRun:
    """What a distributed learner did.

    Attributes:
        episodes: episodes reported to ``on_episode``.
        env_steps: environment steps of the rollouts learned from (and of a last, cut one).
        updates: learner updates made.
        wall_s: wall-clock seconds, workers' start included.
        workers: rollout worker processes used (0: this process).
        restarts: workers Ray restarted after they died.
        final: ``final_result()`` of the learner: the last reported episode's end state (the
            simulation result, for the launcher's outputs), or None.
    """

    episodes: int = 0
    env_steps: int = 0
    updates: int = 0
    wall_s: float = 0.0
    workers: int = 0
    restarts: int = 0
    final: Any = None


def route(agent: Any) -> str:
    """The ``module:function`` of the distributed learner of ``agent``'s class.

    Raises:
        ConfigError: no distributed learner trains this kind of agent.
    """
    for class_path, learner in ROUTES:
        module, _, name = class_path.partition(":")
        if isinstance(agent, getattr(importlib.import_module(module), name)):
            return learner
    kinds = ", ".join(path.rpartition(":")[2] for path, _ in ROUTES)
    raise ConfigError(f"--workers: {type(agent).__name__} has no distributed learner; rollout "
                      f"workers train agents derived from {kinds}; drop --workers")


def train_with_workers(agent: Any, task: RolloutTask, plan: WorkerPlan,
                       on_episode: Callable[[EndedEpisode], None],
                       should_stop: Callable[[], bool] = lambda: False) -> TrainingRun:
    """Train ``agent`` with the distributed learner its class routes to (see the module doc)."""
    target = route(agent)
    module, _, name = target.partition(":")
    learner = getattr(importlib.import_module(module), name)
    logger.info("training %s with %s: %s", type(agent).__name__, target, plan)
    return learner(agent, task, plan, on_episode, should_stop)


__all__ = ["EndedEpisode", "ROUTES", "RolloutTask", "TrainingRun", "WorkerPlan", "route",
           "train_with_workers"]
