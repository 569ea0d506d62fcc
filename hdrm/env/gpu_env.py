"""The environment on a GPU platform: the same Gymnasium view over the GPU decision core.

``SchedulingEnv(...)`` whose inputs are a GPU workload (an openb pod list, ``.csv``, or a Gavel
trace with ``throughputs``) or an openb node list as platform is a :class:`GpuSchedulingEnv`
(:func:`is_gpu_config`). The episode loop, masks, rewards and reward timings are
:class:`~hdrm.env.scheduling_env.SchedulingEnv`'s; what differs:

* inputs: :func:`hdrm.sim.gpu_inputs.load_gpu_platform` and
  :func:`~hdrm.sim.gpu_inputs.load_gpu_workload`; each episode is a
  :class:`~hdrm.sim.gpu_engine.GpuSimulation` (seeded tie order, backfilling ``none`` or
  ``greedy``; engine ``batsim`` is refused: Batsim cannot express GPUs);
* ``policy_pair`` actions are (queue order x placement) pairs, ``"ORDER-PLACEMENT"``
  (:func:`~hdrm.core.gpu_scheduler.resolve_gpu_policy`); by default every order with every
  placement, order-major (``fifo-best_fit``, ``fifo-dot_product``, ...); ``job_pick`` places the
  picked task with ``config.placement`` (``fgd`` by default);
* a task fits now when some node can hold it (CPU, memory, GPU shares, model);
* observations ``gpu`` and ``gpu_job_window`` (:mod:`hdrm.env.gpu_observations`; the default
  ``normal`` means ``gpu``, and ``job_pick`` mode uses ``gpu_job_window``);
* objectives ``avg_jct``, ``gpu_cost`` and ``gpu_allocation`` (:mod:`hdrm.env.objectives`) count
  the GPUs (cost: ``count x milli / 1000 x run time / 3600 x price``, as ``hdrm replay`` charges).
"""

from __future__ import annotations

import logging

import numpy as np

from hdrm.core.gpu_scheduler import gpu_pairs, resolve_gpu_policy
from hdrm.env.action_space import MaskedDiscrete
from hdrm.env.gpu_observations import gpu_task_features
from hdrm.env.gpu_render import render_gpu_ansi, render_gpu_rgb
from hdrm.env.gpu_view import GpuClusterView
from hdrm.env.scheduling_env import SchedulingEnv
from hdrm.errors import ConfigError
from hdrm.policies.gpu_price import platform_prices
from hdrm.policies.gpu_state import MILLI
from hdrm.policies.placement import PLACEMENTS
from hdrm.sim.engine import Outcome, Simulation, SimulationConfig
from hdrm.sim.gpu_inputs import is_gpu_input, load_gpu_platform, load_gpu_workload
from hdrm.workload.job import Job

logger = logging.getLogger(__name__)

HOUR_S = 3600.0
#: What observation kinds mean on a GPU platform (the CPU defaults stand for the GPU views).
GPU_OBSERVATION_OF = {"normal": "gpu", "job_window": "gpu_job_window"}


def is_gpu_config(config) -> bool:
    """Whether an :class:`~hdrm.env.config.EnvConfig` names GPU inputs (by file name)."""
    return is_gpu_input(config.platform_file, config.workload_file, config.throughputs)


def gpu_pair_names() -> list[str]:
    """The default ``policy_pair`` actions: every (queue order x placement) pair, order-major,
    each order once under its own name (:func:`~hdrm.core.gpu_scheduler.gpu_pairs`, the one
    definition)."""
    return gpu_pairs()


class GpuSchedulingEnv(SchedulingEnv):
    """:class:`~hdrm.env.scheduling_env.SchedulingEnv` on a GPU platform (see the module)."""

    #: observations and helpers check this
    is_gpu = True

    # ------------------------------------------------------------------ set-up
    def _new_simulation(self, workload):
        """The episode's :class:`~hdrm.sim.gpu_engine.GpuSimulation`, with a per-instant
        timeline only when ``config.timeline`` asks (the observations read
        :class:`GpuClusterView`)."""
        c = self.config
        return Simulation(self.platform, workload,
                          SimulationConfig(backfilling=c.backfilling, decision=c.decision,
                                           record_timeline=bool(c.timeline), seed=c.seed))

    def _load_inputs(self) -> None:
        c = self.config
        if c.engine != "builtin":
            raise ConfigError(f"engine: {c.engine!r} cannot run GPU platforms (Batsim has no "
                              "accelerators); use engine 'builtin'")
        if not c.platform_file:
            raise ConfigError(f"{c.workload_file}: a GPU workload needs a GPU platform; give "
                              "platform_file (a platform JSON with accelerators or an openb "
                              "node list .csv)")
        self.platform_base = self.platform = load_gpu_platform(c.platform_file,
                                                               c.accelerator_types)
        self.trace = load_gpu_workload(c.workload_file, c.throughputs, c.strict, self.platform)
        self._needs_requirements = False

    def _setup_actions(self) -> None:
        c = self.config
        if c.pick_limit != "fits":
            raise ConfigError(f"pick_limit: {c.pick_limit!r} reserves cores for a CPU job by "
                              "EASY's rule; a GPU platform places tasks on GPUs: use pick_limit "
                              "'fits' (or a backfilling of the GPU engine)")
        if c.mode == "policy_pair":
            names = list(c.selection) if c.selection else gpu_pair_names()
            self.pairs = [resolve_gpu_policy(n, "actions.selection") for n in names]
            self.action_names = [p.name for p in self.pairs] + (["void"] if c.void else [])
            self.action_space = MaskedDiscrete(len(self.action_names))
        else:
            super()._setup_actions()
        PLACEMENTS.get(c.placement, "placement")
        self.core_policy = c.placement

    def _observation_name(self) -> str:
        name = GPU_OBSERVATION_OF.get(self.config.observation, self.config.observation)
        if self.config.mode == "job_pick" and name == "gpu":
            name = "gpu_job_window"
        return name

    def _bind_episode(self) -> None:
        super()._bind_episode()
        sim = self.sim
        core, cluster = sim.core, sim.core.cluster
        self.gpu_static = gpu_task_features(self)
        self.gpu_shared = np.array([core.shape(j).is_shared for j in sim.workload.jobs],
                                   dtype=np.float32)
        self._price = platform_prices(self.platform)
        self.tracker.nb_gpu_milli = cluster.total_gpu_milli
        self.view = GpuClusterView(cluster, core.types)
        if getattr(sim, "frag", None) is not None:
            sim.frag = self.view  # the engine integrates the same, memoised, fragmentation

    def render(self) -> str | np.ndarray | None:
        """The GPU view of the current state: text (``render_mode="ansi"``) or an RGB image
        (``"rgb_array"``), :mod:`hdrm.env.gpu_render`; None without a render mode."""
        if self.render_mode == "ansi":
            return render_gpu_ansi(self)
        if self.render_mode == "rgb_array":
            return render_gpu_rgb(self)
        return None

    # ------------------------------------------------------------------ state queries
    def fits_mask(self, jobs: list[Job]) -> np.ndarray:
        """For each task, whether some node could hold it now."""
        fits, shape = self.view.fits, self.sim.core.shape
        return np.fromiter((fits(shape(j)) for j in jobs), dtype=bool, count=len(jobs))

    def _has_choice(self) -> bool:
        core = self.sim.core
        if self.config.decision == "commit" and core.committed is None:
            return True
        jobs = core.queue if self.config.mode == "policy_pair" else self.window_jobs()
        fits, shape = self.view.fits, core.shape
        return any(fits(shape(j)) for j in jobs)

    # ------------------------------------------------------------------ rewards
    def _on_outcome(self, job: Job, outcome: Outcome) -> None:
        super()._on_outcome(job, outcome)
        placed = self.sim.core.placements.get(job.idx)
        if outcome.start_s < 0 or placed is None:
            return
        run = outcome.finish_s - outcome.start_s
        milli = placed.shape.total_milli
        price = self._price.get(placed.model, 0.0)
        self.tracker.gpu_job_ended(milli * run, milli / MILLI * run / HOUR_S * price)


def env_class(*args, **kwargs) -> type[SchedulingEnv]:
    """The environment class for ``SchedulingEnv(*args, **kwargs)``: :class:`GpuSchedulingEnv`
    on GPU inputs, :class:`~hdrm.env.dag_env.DagEnv` on a periodic task set, else
    :class:`~hdrm.env.scheduling_env.SchedulingEnv`."""
    from hdrm.env.config import EnvConfig
    from hdrm.env.dag_env import DagEnv, is_periodic_file

    options = kwargs.get("options", args[0] if args else None)
    config = kwargs.get("config", args[1] if len(args) > 1 else None)
    settings = {k: v for k, v in kwargs.items()
                if k not in ("options", "config", "batsim", "render_mode")}
    config = EnvConfig.resolve(options, config, **settings)
    if is_periodic_file(config.workload_file):
        return DagEnv
    if is_gpu_config(config):
        return GpuSchedulingEnv
    if config.accelerator_types is not None:
        raise ConfigError(f"accelerator_types: {config.accelerator_types} adds GPU models, but "
                          "the inputs are not GPU inputs (an openb node list, or a GPU "
                          "workload); a platform JSON file defines its own accelerator_types")
    return SchedulingEnv
