"""Periodic DAG pipeline scheduling as a Gymnasium environment (``hdrm/PeriodicDag-v0``).

An episode is one run of a periodic task set (:mod:`hdrm.dag.periodic`) on a platform: the same
run as ``hdrm dag periodic`` (the jobs of :func:`~hdrm.dag.periodic_devices.expand_on`, one
:class:`~hdrm.sim.engine.Simulation` with ``kill_on_walltime=False`` and the backfilling of
:func:`~hdrm.dag.periodic_rules.backfilling_for`), driven decision by decision. Tasks with a GPU
time run on GPUs when the platform has accelerators.

Inputs: ``platform_file`` (an hdrm platform, with or without accelerators) and ``workload_file``:
a task set JSON, or a *task set list* ``{"tasksets": ["a.json", "b.json", ...]}`` (paths relative
to the list) whose sets are played in turn, episode ``e`` the set ``e mod n`` (``start_index``
``"random"``: a set drawn with the episode's generator).

Actions (``mode``):

``policy_pair``
    a priority rule (:data:`ALL_RULES`: the four rules of
    :data:`~hdrm.dag.periodic_devices.RULES`, then their deferring variants of
    :data:`~hdrm.dag.periodic_rules.DEFER_RULES`, which put instances that can no longer meet
    their deadline last; or the ``selection`` of them): the engine starts the ready tasks that
    fit in that rule's order. The agent is asked at each
    instant where at least two tasks are ready and one fits; at other instants the first rule
    decides (a lone ready task starts the same under every rule). Always choosing ``heft_edf``
    gives ``hdrm dag periodic --policy heft_edf``'s schedule exactly.
``job_pick``
    a ready task and a processor (:class:`~hdrm.env.dag_view.Processors`), action
    ``slot * P + p`` for the task in window slot ``slot`` (``window`` slots: the ready tasks that
    can start now first, then the others, each group in ``heft_edf`` order) on processor ``p``.
    Masked: only a listed task on a processor of its device type that can hold it now. The agent
    is asked again at the same instant while some listed task can start.

Observation (a flat vector, float32): 4 global values ``[now / horizon, ready tasks / window,
missed / ended instances, free share of the processors]``, then ``window`` rows of
:func:`~hdrm.env.dag_view.task_features` (10 values) and one row per processor of
:meth:`~hdrm.env.dag_view.Processors.features` (3 values). Times are divided by the task set's
longest relative deadline. The space is a bounded Box
(:func:`~hdrm.env.dag_view.observation_bounds`: fractions in [0, 1], ranks and times in [0, their
largest value over the task sets], the queue in [0, the most tasks of a set / window]); a task's
age, its negative laxity and the clock past the horizon saturate at
:data:`~hdrm.env.dag_view.TIME_CAP` longest deadlines.

Reward: when an instance ends (its last task ends), ``-(MISS_PENALTY x missed +
RESPONSE_WEIGHT x response / relative deadline)``; so the return is minus the number of missed
deadlines (an instance ending after release + deadline) minus a tenth of the instances'
deadline-relative response times. ``info["objective"]`` is the miss ratio of the ended instances.
The ``objective`` option must keep its default: this environment's reward is fixed.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hdrm.dag.periodic import TaskSet
from hdrm.dag.periodic_devices import RULES, expand_on
from hdrm.dag.periodic_io import read_taskset
from hdrm.dag.periodic_rules import (
    DEFER_RULES,
    backfilling_for,
    resolve_periodic_policy,
    rule_of,
)
from hdrm.env.action_space import MaskedDiscrete
from hdrm.env.config import EnvConfig
from hdrm.env.dag_view import TIME_CAP, Processors, observation_bounds, task_features
from hdrm.env.scheduling_env import SchedulingEnv
from hdrm.errors import ConfigError, WorkloadError
from hdrm.jsonfile import read_json
from hdrm.options import EnvOptions
from hdrm.platform.loader import load_platform
from hdrm.sim.engine import Simulation, SimulationConfig, SimulationResult
from hdrm.sim.machine import COMPLETED_SUCCESSFULLY

logger = logging.getLogger(__name__)

MISS_PENALTY = 1.0
RESPONSE_WEIGHT = 0.1
GLOBAL_FEATURES = 4
#: The default actions of ``policy_pair`` mode: the rules, then their deferring variants.
ALL_RULES = RULES + DEFER_RULES


def is_periodic_file(path: str | None) -> bool:
    """Whether ``path`` is a task set JSON or a task set list (top-level ``graphs`` or
    ``tasksets``)."""
    if not path or not str(path).lower().endswith(".json") or not Path(path).is_file():
        return False
    with open(path, encoding="utf-8") as f:
        head = f.read(4096)
    return '"graphs"' in head or '"tasksets"' in head


def read_tasksets(path: str | Path) -> list[TaskSet]:
    """The task sets of a task set JSON or of a task set list (see the module)."""
    path = Path(path)
    data = read_json(path, "task set or task set list", WorkloadError)
    if isinstance(data, dict) and "tasksets" in data:
        names = data["tasksets"]
        if not isinstance(names, list) or not names:
            raise ConfigError(f"{path}: tasksets: expected a non-empty list of task set JSON "
                              f"paths, got {names!r}")
        return [read_taskset(path.parent / str(name)) for name in names]
    return [read_taskset(path)]


class DagEnv(SchedulingEnv):
    """Periodic DAG scheduling (see the module). Arguments as
    :class:`~hdrm.env.scheduling_env.SchedulingEnv`, plus ``tasksets``: task sets to play
    instead of ``workload_file``'s."""

    metadata = {"render_modes": [], "render_fps": 4}
    is_dag = True

    def __init__(self, options: Any = None, config: EnvConfig | None = None, batsim: Any = None,
                 render_mode: str | None = None, tasksets: list[TaskSet] | None = None,
                 **kwargs: Any) -> None:
        gym.Env.__init__(self)
        if render_mode is not None:
            raise ConfigError(f"render_mode: the periodic DAG environment renders nothing; got "
                              f"{render_mode!r}, give None")
        self.render_mode = None
        self.config = config = EnvConfig.resolve(options, config, **kwargs)
        self._check_config(config)
        self.platform = self.platform_base = load_platform(config.platform_file)
        self.tasksets = list(tasksets) if tasksets else read_tasksets(config.workload_file)
        self._bridge = None
        self._episode = 0
        self._start_episode(self.tasksets[0])
        self._setup_spaces()

    @staticmethod
    def _check_config(config: EnvConfig) -> None:
        if config.engine != "builtin":
            raise ConfigError(f"engine: the periodic DAG environment runs on the built-in engine; "
                              f"got {config.engine!r}")
        if not config.platform_file:
            raise ConfigError(f"{config.workload_file}: a periodic task set needs platform_file "
                              f"(an hdrm platform JSON, GPUs as accelerators)")
        if config.objective not in (EnvConfig.objective, EnvOptions.objective):  # the defaults
            raise ConfigError(f"objective: the periodic DAG environment's reward is fixed "
                              f"(missed deadlines and response times); got {config.objective!r}, "
                              f"leave it out")
        if config.preemption_spec().suspends:
            raise ConfigError(f"preemption: the periodic DAG environment runs its tasks to their "
                              f"end; got {config.preemption!r}, use none or request")
        if config.pick_limit != "fits":
            raise ConfigError(f"pick_limit: the periodic DAG environment offers the tasks that "
                              f"can run now, with no reservation; got {config.pick_limit!r}, "
                              f"use fits")

    def _setup_spaces(self) -> None:
        c = self.config
        if c.mode == "policy_pair":
            names = [str(n).strip().lower() for n in (c.selection or ALL_RULES)]
            unknown = [n for n in names if rule_of(n) is None]
            if unknown:
                raise ConfigError(f"actions.selection: {unknown[0]!r} is not a periodic rule; "
                                  f"choose among {', '.join(ALL_RULES)} (optionally "
                                  f"'-CORE_SELECTION', or '-PLACEMENT' with GPUs)")
            where = "actions.selection"
            self.pairs = [resolve_periodic_policy(n, self.platform, where) for n in names]
            self.action_names = names
        else:
            self.action_names = [f"task{s}@{p}" for s in range(c.window)
                                 for p in self.procs.names]
        self.action_space = MaskedDiscrete(len(self.action_names))
        low, high = observation_bounds(self.tasksets, self.procs.gpu, c.window, len(self.procs))
        self.observation_space = spaces.Box(low, high, dtype=np.float32)
        #: a processor's time to its next end is at most the longest task (rounding aside)
        self._end_cap = float(high[-1]) if len(self.procs) else 0.0

    # ------------------------------------------------------------------ episodes
    def _start_episode(self, taskset: TaskSet) -> None:
        self.taskset = taskset
        workload = expand_on(taskset, self.platform)
        config = SimulationConfig(backfilling=backfilling_for(self.platform),
                                  kill_on_walltime=False, record_timeline=False)
        self.sim = Simulation(self.platform, workload, config)
        self.sim.on_outcome = self._on_outcome
        self.procs = Processors(self.sim)
        self.scale_s = max(g.deadline_s for g in taskset.graphs)
        self.horizon_s = taskset.horizon_s
        self._clock_cap = (taskset.horizon_s + TIME_CAP * self.scale_s) / taskset.horizon_s
        self._left: dict[tuple[str, int], int] = {}
        for job in workload.jobs:
            key = (job.extra["graph"], job.extra["instance"])
            self._left[key] = self._left.get(key, 0) + 1
        self.ended = self.missed = 0
        #: response time of every instance that has ended with all its tasks completed
        self.responses: list[float] = []
        self._gain = 0.0
        self._finish: dict[tuple[str, int], float] = {}
        self._ends: dict[int, float] = {}
        self._open = False
        self._window: list | None = None
        self._done = False

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start an episode on the next task set (see the module)."""
        if seed is None and self._episode == 0:
            seed = self.config.seed
        gym.Env.reset(self, seed=seed)
        n = len(self.tasksets)
        index = (int(self.np_random.integers(n)) if self.config.start_index == "random"
                 else self._episode % n)
        self._episode += 1
        self._start_episode(self.tasksets[index])
        self._done = not self._advance()
        return self._observe(), self._info()

    def step(self, action):
        """Apply one decision; returns (observation, reward, terminated, truncated, info)."""
        action = self._checked_action(action)
        mask = self.action_masks()
        if not mask[action]:
            action = int(np.flatnonzero(mask)[0])
        if self.config.mode == "policy_pair":
            self._started(self.sim.decide(self.pairs[action]))
            self._open = False
        else:
            slot, p = divmod(action, len(self.procs))
            self._started(self.procs.start(self._ready_window()[slot], p))
        self._window = None
        self._done = not self._advance()
        reward, self._gain = self._gain, 0.0
        return self._observe(), float(reward), self._done, False, self._info()

    def _advance(self) -> bool:
        """Run to the next state with a choice; False when the run has ended."""
        sim = self.sim
        while True:
            if self._open and self._has_choice():
                return True
            if self._open:  # close the instant as `hdrm dag periodic` would
                if self.config.mode == "policy_pair":
                    self._started(sim.decide(self.pairs[0]))
                else:
                    sim.decide_nothing()
            self._window = None
            if not sim.next_decision():
                return False
            self._open = True

    def _has_choice(self) -> bool:
        queue = self.sim.core.queue
        if self.config.mode == "job_pick":
            window = self._ready_window()
            return bool(window) and bool(self.procs.mask(window[0]).any())
        return len(queue) >= 2 and any(self.procs.mask(job).any() for job in queue)

    def _ready_window(self) -> list:
        if self._window is None:
            queue = self.sim.core.queue
            masks = {job.idx: self.procs.mask(job) for job in queue}
            order = sorted(queue, key=lambda j: (not masks[j.idx].any(), j.extra["dag_edf"]))
            self._window = order[:self.config.window]
            if self.config.mode != "policy_pair":  # job_pick's mask, computed once per window
                width = len(self.procs)
                self._mask = np.zeros(self.action_space.n, dtype=bool)
                for slot, job in enumerate(self._window):
                    self._mask[slot * width:(slot + 1) * width] = masks[job.idx]
        return self._window

    def _started(self, starts: list) -> None:
        now = self.sim.now
        for job, _ in starts:
            self._ends[job.idx] = now + job.run_time_s

    def _on_outcome(self, job, outcome) -> None:
        self._ends.pop(job.idx, None)
        e = job.extra
        key = (e["graph"], e["instance"])
        self._left[key] -= 1
        done = outcome.state == COMPLETED_SUCCESSFULLY
        latest = self._finish.get(key, 0.0)
        self._finish[key] = max(latest, outcome.finish_s) if done else float("inf")
        if self._left[key]:
            return
        # the instance has ended: its latest task finish (inf when a task did not complete)
        finish = self._finish.pop(key)
        relative = e["deadline_s"] - e["release_s"]
        missed = not finish <= e["deadline_s"]
        self.ended += 1
        self.missed += missed
        if finish < float("inf"):
            self.responses.append(finish - e["release_s"])
        response = min(finish - e["release_s"], 10 * relative)
        self._gain -= MISS_PENALTY * missed + RESPONSE_WEIGHT * response / relative

    # ------------------------------------------------------------------ views
    def action_masks(self) -> np.ndarray:
        """Valid actions now (True = valid); at least one is valid while the run goes on."""
        n = self.action_space.n
        if self._done:
            return np.ones(n, dtype=bool)
        if self.config.mode == "policy_pair":
            return np.ones(n, dtype=bool)
        self._ready_window()
        return self._mask.copy()

    def _observe(self) -> np.ndarray:
        now, scale, window = self.sim.now, self.scale_s, self.config.window
        ready = [] if self._done else self._ready_window()
        rows = [task_features(ready[i] if i < len(ready) else None, now, scale)
                for i in range(window)]
        procs = self.procs.features(now, scale, self._ends, self._end_cap)
        head = [min(now / self.horizon_s, self._clock_cap), len(self.sim.core.queue) / window,
                self.missed / max(self.ended, 1), float(procs[:, 1].mean())]
        return np.concatenate([np.asarray(head, dtype=np.float32),  # all float32: no copy after
                               np.asarray(rows, dtype=np.float32).ravel(), procs.ravel()])

    def _info(self) -> dict[str, Any]:
        return {"action_mask": self.action_masks(), "time": self.sim.now,
                "objective": self.missed / max(self.ended, 1), "missed": self.missed,
                "instances": self.ended}

    def result(self) -> SimulationResult:
        """The episode's engine result (outcomes, makespan ...)."""
        return self.sim.result()

    def sla_report(self) -> None:
        """No tenants here: None."""
        return None

    def batsim_outputs(self) -> dict:
        """No Batsim run: empty."""
        return {}

    def render(self) -> None:
        """Nothing to render."""
        return None

    def close(self) -> None:
        """Nothing to release."""
        gym.Env.close(self)
