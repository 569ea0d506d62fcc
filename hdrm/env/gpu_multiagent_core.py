"""The decision core of the multi-agent GPU environment: one decision in two phases.

:class:`TwoPhaseCore` is a :class:`~hdrm.env.gpu_env.GpuSchedulingEnv` in ``job_pick`` mode
(``event`` decisions) used as an engine driver, not as a Gymnasium environment: it loads the
inputs, builds each episode's :class:`~hdrm.sim.gpu_engine.GpuSimulation`, keeps the reward
tracker and the incremental cluster view exactly as the single-agent environment does, and adds
the two phases of :class:`~hdrm.env.gpu_multiagent.GpuMultiAgentEnv`:

* :meth:`TwoPhaseCore.choose`: the ordering agent picks a task of the window (it must fit now
  on some node); nothing changes in the engine;
* :meth:`TwoPhaseCore.place`: the placing agent picks a node for the chosen task; the engine
  starts it there (:meth:`~hdrm.sim.gpu_engine.GpuSimulation.place_on`, the GPUs on that node
  chosen by the configured placement's within-node rule), then moves on to the next real choice;
* :meth:`TwoPhaseCore.wait`: the ordering agent waits; the engine moves to its next decision
  point.

A weighted sum of objectives (:class:`WeightedObjective`) may replace the configured objective;
it telescopes like any objective since it is linear in the running values.

With ``fitting_first`` the ordering agent's window shows the queued tasks that fit now first
(each group in submission order), then the others, so that a work-conserving agent sees every
task it may start (up to ``window`` of them) however long the queue; by default it shows the
first ``window`` queued tasks in submission order, and a task behind them that fits is not
started while none of them fits.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Mapping

import numpy as np

from hdrm.env.config import EnvConfig
from hdrm.env.gpu_env import GpuSchedulingEnv, is_gpu_config
from hdrm.env.objectives import Objective, Tracker, make_objective
from hdrm.errors import ConfigError
from hdrm.options import Options
from hdrm.workload.job import Job

logger = logging.getLogger(__name__)

#: Settings the two-phase decision fixes (a different value given as an argument is refused;
#: options.json's are replaced).
FIXED = {"mode": "job_pick", "decision": "event", "engine": "builtin",
         "observation": "gpu_job_window"}


class WeightedObjective(Objective):
    """``sum_k w_k x objective_k``: a weighted sum of registered objectives.

    Args:
        weights: objective name -> weight (``{"avg_jct": 1.0, "gpu_cost": 0.001}``).
        where: the setting's name, for errors.

    Raises:
        ConfigError: an empty mapping, an unknown name (with suggestions) or a weight that is
            not a finite number.
    """

    def __init__(self, weights: Mapping[str, float], where: str = "objective_weights") -> None:
        if not weights:
            raise ConfigError(f"{where}: give at least one objective and its weight, e.g. "
                              "{'avg_jct': 1.0, 'gpu_cost': 0.001}")
        self.parts: list[tuple[float, Objective]] = []
        for name, weight in weights.items():
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) \
                    or not np.isfinite(weight):
                raise ConfigError(f"{where}.{name}: expected a finite number, got {weight!r}")
            self.parts.append((float(weight), make_objective(name, f"{where}.{name}")))
        self.name = " + ".join(f"{w:g} x {n}" for n, w in weights.items())
        self.needs_gpus = any(getattr(o, "needs_gpus", False) for _, o in self.parts)
        self.needs_tenants = any(getattr(o, "needs_tenants", False) for _, o in self.parts)
        self._names = list(weights)

    def representative(self) -> str:
        """The part the environment's set-up checks stand for (tenants and GPUs first): the
        name of a part that needs tenants, else one that counts GPUs, else the first."""
        for flag in ("needs_tenants", "needs_gpus"):
            for name, (_, objective) in zip(self._names, self.parts):
                if getattr(objective, flag, False):
                    return name
        return self._names[0]

    def value(self, t: Tracker, final: bool) -> float:
        return sum(w * o.value(t, final) for w, o in self.parts)


class TwoPhaseCore(GpuSchedulingEnv):
    """The engine driver of the multi-agent environment (see the module docstring).

    Args:
        options: parsed options.json, or None.
        objective_weights: a weighted sum of objectives to minimise instead of ``objective``.
        render_mode: as :class:`~hdrm.env.gpu_env.GpuSchedulingEnv`'s.
        fitting_first: the window shows the tasks that fit now first (module docstring).
        **settings: :class:`~hdrm.env.config.EnvConfig` fields.

    Raises:
        ConfigError: inputs that are not a GPU workload and platform, or a setting the
            two-phase decision fixes (:data:`FIXED`) given another value.
    """

    def __init__(self, options: Options | None = None,
                 objective_weights: Mapping[str, float] | None = None,
                 render_mode: str | None = None, fitting_first: bool = False,
                 **settings: Any) -> None:
        self.fitting_first = bool(fitting_first)
        for key, value in FIXED.items():
            if settings.get(key, value) not in (value, None):
                raise ConfigError(f"{key}: the multi-agent environment fixes it to {value!r} "
                                  f"(its two agents share one decision and have their own "
                                  f"observations), got {settings[key]!r}; leave {key} out")
        settings.update(FIXED)
        config = EnvConfig.resolve(options, None, **settings)
        if not is_gpu_config(config):
            raise ConfigError(f"{config.workload_file}: the multi-agent environment needs GPU "
                              "inputs (an openb pod list .csv or a Gavel trace with throughputs, "
                              "on a platform with accelerators or an openb node list)")
        weighted = WeightedObjective(objective_weights) if objective_weights else None
        if weighted is not None:
            if config.reward_timing != "end":
                raise ConfigError("reward_timing: a weighted objective takes 'end', got "
                                  f"{config.reward_timing!r}")
            config = dataclasses.replace(config, objective=weighted.representative())
        super().__init__(config=config, render_mode=render_mode)
        if weighted is not None:
            self.objective = weighted
        self.chosen: Job | None = None
        self.waits = 0

    # ------------------------------------------------------------------ episodes
    def start(self, seed: int | None, options: dict | None) -> None:
        """Start an episode (:meth:`~hdrm.env.scheduling_env.SchedulingEnv.reset`'s options:
        ``start_index``, ``load_factor``)."""
        self.reset(seed=seed, options=options)
        self.chosen = None
        self.waits = 0

    @property
    def done(self) -> bool:
        """True once the episode has ended."""
        return self._done

    @property
    def objective_value(self) -> float:
        """The objective's running value after the last step (minus the return so far)."""
        return self._last_value

    @property
    def instant(self) -> tuple[int, float, int]:
        """Identifies the engine's current decision instant (episode, time, waits so far)."""
        return self._episode, self.sim.now, self.waits

    # ------------------------------------------------------------------ the two phases
    def window_jobs(self) -> list[Job]:
        """The ordering agent's window: the base environment's (the first ``window`` queued
        tasks in submission order), or with ``fitting_first`` the queued tasks that fit now
        first; computed once per decision."""
        if not self.fitting_first:
            return super().window_jobs()
        if self._window is None:
            queue = self.sim.core.queue
            fits = self.fits_mask(queue)
            w = self.config.window
            first = [job for job, ok in zip(queue, fits) if ok][:w]
            rest = [job for job, ok in zip(queue, fits) if not ok][:w - len(first)]
            self._window = first + rest
            self._window_fits = np.arange(len(self._window)) < len(first)
        return self._window

    def _has_choice(self) -> bool:
        """Whether a task of the window fits now; asked as the engine moves on, so the window
        kept from the last look is dropped first (the queue and the cluster may have changed)."""
        self._window_fits = self._window = None
        return super()._has_choice()

    def order_mask(self) -> np.ndarray:
        """``[window + 1]`` bool: the window's tasks that fit now, then wait (valid while an
        event can still come)."""
        w = self.config.window
        mask = np.zeros(w + 1, dtype=bool)
        if self._done:
            return mask
        fits = self.window_fits()
        mask[:len(fits)] = fits
        mask[w] = self._event_pending()
        return mask

    def choose(self, index: int) -> None:
        """The ordering agent picks window task ``index``, which must fit now."""
        window = self.window_jobs()
        if not 0 <= index < len(window) or not self.window_fits()[index]:
            raise ValueError(f"order: action {index} is masked (the window holds {len(window)} "
                             "tasks; a task is valid only when it fits now on some node)")
        self.chosen = window[index]

    def place(self, node: int) -> float:
        """The placing agent starts the chosen task on ``node``; returns the step's reward."""
        job = self.chosen
        if job is None:
            raise RuntimeError("place() without a chosen task")
        cluster = self.sim.core.cluster
        if not cluster.feasible(self.sim.core.shape(job), np.array([node]))[0]:
            raise ValueError(f"place: action {node} is masked (task {job.id} does not fit on "
                             "that node now; valid nodes have 1 in obs['place']['action_mask'])")
        self.sim.place_on(job, node, self.core_policy)
        self.chosen = None
        return self._moved_on(True)

    def wait(self) -> float:
        """The ordering agent waits: on to the engine's next decision point; the reward."""
        self.sim.decide_nothing()
        self.waits += 1
        return self._moved_on(self.sim.next_decision())

    def no_choice(self) -> float:
        """The step's reward when nothing was decided (a task was only chosen)."""
        return self._reward()

    def _moved_on(self, alive: bool) -> float:
        self._done = not self._advance(alive)
        self._window_fits = self._window = None
        return self._reward()
