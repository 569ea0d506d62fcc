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
  between rollouts;
* optionally a :class:`ResumeHandle`: a learner that can save its state (distributed PPO) sets
  its ``capture`` while it runs, so that ``on_episode`` may save the whole training there
  (``benchmarks/train.py``'s resume state), and starts from ``saved`` when given one.

Nothing here imports Ray or torch.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple, Protocol

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

    def record(self) -> dict[str, Any]:
        """This episode as plain values (a resume state), :meth:`from_record`'s input."""
        return {"env": self.env, "steps": self.steps, "return": self.return_,
                "summary": self.summary, "times_s": list(self.times_s),
                "actions": list(self.actions),
                "update_stats": [dict(s) for s in self.update_stats], "wall_s": self.wall_s,
                "awaiting_update": self.awaiting_update}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> "EndedEpisode":
        """The episode :meth:`record` gave."""
        return cls(int(record["env"]), int(record["steps"]), float(record["return"]),
                   record["summary"], list(record["times_s"]), list(record["actions"]),
                   [dict(s) for s in record["update_stats"]], float(record["wall_s"]),
                   bool(record["awaiting_update"]))

    def stats(self) -> dict[str, float]:
        """What ``end_episode`` returns for it: the updates' mean statistics (``loss`` nan when
        none), ``return`` and ``steps``."""
        out = {"loss": math.nan, "return": self.return_, "steps": float(self.steps)}
        if self.update_stats:
            out.update({key: sum(s[key] for s in self.update_stats) / len(self.update_stats)
                        for key in self.update_stats[0]})
        return out


@dataclass
class EpisodeTrace:
    """An episode under way in a worker: what becomes its :class:`EndedEpisode` (shared by the
    PPO collectors and the Ape-X actors, so both report what the single-process loop does)."""

    steps: int = 0
    return_: float = 0.0
    times_s: list[float] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    update_stats: list[dict[str, float]] = field(default_factory=list)
    t0: float = field(default_factory=time.perf_counter)

    def decided(self, info: Mapping[str, Any], action: int) -> None:
        """The environment is given ``action`` in the state of ``info`` (its ``time``)."""
        self.times_s.append(float(info.get("time", math.nan)))
        self.actions.append(int(action))

    def rewarded(self, reward: float) -> None:
        """The step of the last decision gave ``reward``."""
        self.return_ += float(reward)
        self.steps += 1

    def ended(self, env: int, summary: Any, awaiting_update: bool = False) -> EndedEpisode:
        """The :class:`EndedEpisode` of environment ``env``, timed from this trace's start."""
        return EndedEpisode(env, self.steps, self.return_, summary, self.times_s, self.actions,
                            self.update_stats, time.perf_counter() - self.t0, awaiting_update)


class EpisodeEnd(NamedTuple):
    """What a worker keeps of an ended episode for the launcher's out files.

    Attributes:
        result: the simulation result (out_jobs.csv, out_schedule.csv ...).
        sla_report: its :class:`~hdrm.results.sla.SlaReport` (out_sla.csv); None without
            tenants.
    """

    result: Any
    sla_report: Any = None


def episode_end(env: Any) -> EpisodeEnd | None:
    """The :class:`EpisodeEnd` of the episode ``env`` has just finished; None when the
    environment has no ``result`` (read before the environment is reset)."""
    base = env.unwrapped
    result = getattr(base, "result", None)
    if not callable(result):
        return None
    report = getattr(base, "sla_report", None)
    return EpisodeEnd(result(), report() if callable(report) else None)


@dataclass
class StatsMean:
    """Running sums of update statistics, taken as their means (Ape-X: the learner's gradient
    steps since the episodes were last reported)."""

    count: int = 0
    sums: dict[str, float] = field(default_factory=dict)

    def add(self, stats: Mapping[str, float]) -> None:
        """One more update's statistics."""
        self.count += 1
        for key, value in stats.items():
            self.sums[key] = self.sums.get(key, 0.0) + float(value)

    def take(self) -> dict[str, float] | None:
        """The means so far and ``gradient_steps`` (their count), then start again; None when
        there was no update."""
        if self.count == 0:
            return None
        means = {key: total / self.count for key, total in self.sums.items()}
        means["gradient_steps"] = float(self.count)
        self.count, self.sums = 0, {}
        return means


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
        final: the :class:`EpisodeEnd` of the last reported episode (its simulation result
            and SLA report, for the launcher's out files), or None.
    """

    episodes: int = 0
    env_steps: int = 0
    updates: int = 0
    wall_s: float = 0.0
    workers: int = 0
    restarts: int = 0
    final: Any = None


@dataclass
class ResumeHandle:
    """The state of a distributed learner, saved between two episodes and started from.

    Attributes:
        saved: a state ``capture`` returned earlier, to continue from (None: start anew).
        capture: set by a learner that can save its state, while it runs (None otherwise, and
            once it has ended): returns its state (plain values and tensors) as it is while
            ``on_episode`` runs, the episodes still to report included.
    """

    saved: dict[str, Any] | None = None
    capture: Callable[[], dict[str, Any]] | None = None


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
                       should_stop: Callable[[], bool] = lambda: False,
                       resume: ResumeHandle | None = None) -> TrainingRun:
    """Train ``agent`` with the distributed learner its class routes to (see the module doc).

    ``resume`` goes to a learner that takes it (its ``resume`` argument); with another learner
    its ``capture`` stays None and a ``saved`` state is refused.

    Raises:
        ConfigError: a saved state for a learner that cannot resume.
    """
    target = route(agent)
    module, _, name = target.partition(":")
    learner = getattr(importlib.import_module(module), name)
    logger.info("training %s with %s: %s", type(agent).__name__, target, plan)
    if resume is not None and "resume" in inspect.signature(learner).parameters:
        return learner(agent, task, plan, on_episode, should_stop, resume=resume)
    if resume is not None and resume.saved is not None:
        raise ConfigError(f"{target} cannot continue from a saved state; start anew")
    return learner(agent, task, plan, on_episode, should_stop)


__all__ = ["EndedEpisode", "EpisodeEnd", "EpisodeTrace", "ROUTES", "ResumeHandle", "RolloutTask",
           "StatsMean", "TrainingRun", "WorkerPlan", "episode_end", "route", "train_with_workers"]
