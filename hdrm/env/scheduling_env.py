"""The Gymnasium environment: a thin view of the decision core driven by the built-in engine.

An episode is one pass over a workload selection. At each step the agent makes one decision:

``policy_pair`` mode (HDeepRM)
    The action is a job-core policy pair (or the void action). The pair starts as many queued jobs
    as it places (with the configured backfilling) at the current instant; the next decision comes
    at the next event (arrival or end of a job) at which some queued job fits.
``job_pick`` mode (RLScheduler)
    The action picks one of the first ``window`` queued jobs (or the void action, the last one).
    With ``decision="event"`` only jobs that fit now are valid, and the void action waits for the
    next event; the agent is asked again at the same instant while jobs still fit. With
    ``decision="commit"`` any queued job may be picked: one that does not fit is held (and
    backfilled around) until it fits, and later arrivals cannot overtake it.

The agent is only asked when it has a real choice: instants at which nothing fits pass by
themselves. Rewards are defined in :mod:`hdrm.env.objectives` so that the episode return is
minus the objective. ``info["action_mask"]`` and :meth:`SchedulingEnv.action_masks` give the valid
actions (sb3-contrib's MaskablePPO reads the latter).

On GPU inputs (an openb or Gavel workload) ``SchedulingEnv(...)`` makes a
:class:`~hdrm.env.gpu_env.GpuSchedulingEnv`: the same loop over the GPU decision core, with
(queue order x placement) pairs as actions.

With ``engine="batsim"`` each episode is one run of the real Batsim
(:class:`hdrm.batsim.env_bridge.BatsimEpisode`, which steps like the built-in simulation: the same
decisions, observations, masks and rewards); ``close()`` (or the next ``reset()``) ends the run.
"""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from hdrm.env.action_space import MaskedDiscrete, action_index
from hdrm.env.config import EnvConfig
from hdrm.env.decision_loop import VOID, DecisionLoop
from hdrm.env.objectives import OBJECTIVES, Accrual, Tracker, accrues, make_objective
from hdrm.env.observations import job_static_features, job_window_kinds, make_observation
from hdrm.env.render import RENDER_MODES, render_ansi, render_rgb
from hdrm.env.reservation_view import ReservationMarks, ReservationView
from hdrm.env.tenants import check_actions, env_tenants
from hdrm.errors import ConfigError
from hdrm.options import BatsimOptions, Options
from hdrm.policies.core_selection import CORE_POLICIES
from hdrm.policies.pairs import ALL_PAIRS, resolve_policy
from hdrm.registry import suggest
from hdrm.sim.engine import Outcome, Simulation, SimulationConfig, SimulationResult
from hdrm.sim.preemption import check_policy, refuse_accelerators
from hdrm.sim.inputs import load_platform_any, read_workload_any
from hdrm.workload.job import Job, Workload
from hdrm.workload.load import scale_arrivals
from hdrm.workload.requirements import attach_requirements
from hdrm.workload.select import select

ENGINES = ("builtin", "batsim")


class SchedulingEnv(DecisionLoop, gym.Env):
    """Job scheduling on a (heterogeneous) cluster as a Gymnasium environment.

    Args:
        options: parsed options.json (:class:`hdrm.options.Options`); or
        config: an :class:`EnvConfig`; or keyword arguments of :class:`EnvConfig`.
        batsim: with ``engine="batsim"``: the Batsim executable, timeout and extra arguments (a
            :class:`~hdrm.options.BatsimOptions` or a dict of it); default ``options.batsim``.
        render_mode: None (no rendering), ``"ansi"`` (:meth:`render` returns a text view of the
            cluster and the queue) or ``"rgb_array"`` (an image of it): :mod:`hdrm.env.render`.
    """

    metadata = {"render_modes": list(RENDER_MODES), "render_fps": 4}

    def __init__(self, options: Options | None = None, config: EnvConfig | None = None,
                 batsim: BatsimOptions | dict | None = None, render_mode: str | None = None,
                 **kwargs: Any):
        super().__init__()
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ConfigError(f"render_mode: unknown mode {render_mode!r}; "
                              f"{suggest(str(render_mode), RENDER_MODES)}choose None or one of: "
                              f"{', '.join(RENDER_MODES)}")
        self.render_mode = render_mode
        self.config = config = EnvConfig.resolve(options, config, **kwargs)
        if config.engine not in ENGINES:
            raise ConfigError(f"engine: unknown engine {config.engine!r}; "
                              f"{suggest(config.engine, ENGINES)}choose one of: {', '.join(ENGINES)}")
        self._load_inputs()
        self.preemption = config.preemption_spec()
        refuse_accelerators(self.preemption.suspends and (getattr(self, "is_gpu", False)
                                                          or bool(self.platform.accelerators)))
        self._bridge = None
        if config.engine == "batsim":
            self._bridge = self._batsim_bridge(batsim if batsim is not None or options is None
                                               else options.batsim)
        self.objective = make_objective(config.objective, "objective")
        if getattr(self.objective, "needs_gpus", False) and not getattr(self, "is_gpu", False):
            raise ConfigError(f"objective: {config.objective!r} counts GPUs; it needs a GPU "
                              "platform and an openb or Gavel workload")
        self._tenants = env_tenants(config, self.trace, self.objective)  # docs/tenants.rst
        if config.reward_timing == "accrued" and not accrues(self.objective):
            names = sorted({OBJECTIVES.get(n).name for n in OBJECTIVES.names()
                            if accrues(OBJECTIVES.get(n)())})  # aliases (avg_jct) once
            raise ConfigError(f"reward_timing: 'accrued' counts what the jobs in the system have "
                              f"accrued, defined for {', '.join(names)}; objective "
                              f"{config.objective!r} takes 'end'")
        self.core_policy = CORE_POLICIES.get(config.core_selection, "core_selection")
        self._setup_actions()
        self._reservation_view: ReservationView | None = None
        self._episode = 0
        self.sim = self._new_simulation(self._episode_workload(0, np.random.default_rng(config.seed)))
        obs_name = self._observation_name()
        if config.mode == "policy_pair" and obs_name in job_window_kinds():
            raise ConfigError(f"observation: {obs_name!r} goes with actions mode 'job_pick'")
        self._bind_episode()
        self.observer = make_observation(obs_name, self, "observation")
        self.observation_space = self.observer.space()
        if config.pick_limit == "easy" or getattr(self.observer, "reads_reservation", False):
            self.reservation_view()  # an unknown reservation order is refused now
        self.full_power_w = self.platform.total_power_w or 1.0

    def __new__(cls, *args: Any, **kwargs: Any) -> "SchedulingEnv":
        """On GPU inputs (an openb or Gavel workload, an openb node list), a
        :class:`~hdrm.env.gpu_env.GpuSchedulingEnv`."""
        if cls is SchedulingEnv and (args or kwargs):
            from hdrm.env.gpu_env import env_class  # it subclasses this one

            cls = env_class(*args, **kwargs)
        return super().__new__(cls)

    # ------------------------------------------------------------------ set-up
    def _observation_name(self) -> str:
        """The observation kind of this environment (``job_pick`` mode: a job-window kind)."""
        name = self.config.observation
        if self.config.mode == "job_pick" and name not in job_window_kinds():
            name = "job_window"
        return name

    def _load_inputs(self) -> None:
        c = self.config
        self.platform_base = None if not c.platform_file else load_platform_any(c.platform_file)
        if self.platform_base is not None and self.platform_base.accelerators:
            # the GPU environment is chosen by the workload's file name: a CPU workload here
            # would meet the GPU simulator the platform makes (a traceback at the first step)
            raise ConfigError(
                f"{c.platform_file}: a platform with {len(self.platform_base.accelerators)} "
                f"accelerators and a CPU workload ({c.workload_file}); the environment runs GPU "
                "platforms with an openb pod list (.csv) or a Gavel trace (with throughputs): "
                "give one of those, or a platform without accelerators (hdrm replay runs this "
                "pair as CPU-only tasks)")
        ref = self.platform_base.reference_gflops if self.platform_base else 1.0
        self.trace = read_workload_any(c.workload_file, c.conventions, c.strict, ref)
        if self.platform_base is None:
            from hdrm.platform.model import Platform

            nb = c.homogeneous_procs if c.homogeneous_procs > 0 else (self.trace.nb_res or 0)
            if nb <= 0:
                raise ConfigError(
                    f"{c.workload_file}: the workload states no MaxProcs (nor MaxNodes); give "
                    "a platform or a number of processors (options.json: platform_file_path or "
                    "nb_resources; EnvConfig: platform_file or homogeneous_procs)")
            self.platform_base = Platform.homogeneous(nb)
        self.platform = self.platform_base
        self._needs_requirements = bool(c.platform_file) and not c.workload_file.lower().endswith(".json")

    def _setup_actions(self) -> None:
        c = self.config
        if c.mode == "policy_pair":
            names = list(c.selection) if c.selection else list(ALL_PAIRS)
            self.pairs = [resolve_policy(n, "actions.selection") for n in names]
            check_actions(self.pairs, c)
            if self.preemption.suspends:  # refused now, not at the first step
                for pair in self.pairs:
                    check_policy(pair.job, "actions.selection")
            self.action_names = [str(n).lower() for n in names] + ([VOID] if c.void else [])
        else:
            self.pairs = []
            self.action_names = [f"job_{i}" for i in range(c.window)] + [VOID]
        self._pair_templates = list(self.pairs)
        self.action_space = MaskedDiscrete(len(self.action_names))

    def _episode_workload(self, episode: int, rng: np.random.Generator,
                          start_index: int | None = None) -> Workload:
        c = self.config
        n = c.nb_jobs if c.nb_jobs > 0 else 0
        start = start_index
        if start is None:
            spec = c.start_index
            if spec == "random":
                last = len(self.trace) - max(n, 1)
                start = int(rng.integers(0, last + 1)) if last > 0 else 0
            elif isinstance(spec, tuple):
                start = int(spec[episode % len(spec)])
            else:
                start = int(spec or 0)
        workload = select(self.trace, start, n)
        if self._needs_requirements:
            workload = attach_requirements(workload, self.platform.reference_gflops, rng, c.bandwidth)
        return workload

    def _new_simulation(self, workload: Workload) -> Simulation:
        c = self.config
        sim_config = SimulationConfig(c.contention, c.backfilling, c.decision, c.kill_on_walltime,
                                      record_timeline=c.timeline is not False, seed=c.seed,
                                      preemption=c.preemption,
                                      preemption_overhead_s=c.preemption_overhead_s)
        if self._bridge is not None:
            return self._bridge.episode(workload, sim_config)  # closes the previous episode's run
        return Simulation(self.platform, workload, sim_config)

    # ------------------------------------------------------------------ engine "batsim"
    def _batsim_bridge(self, settings: BatsimOptions | dict | None):
        from hdrm.batsim.env_bridge import BatsimBridge  # pybatsim and zmq: only for this engine

        return BatsimBridge(self.platform, settings)

    def batsim_outputs(self) -> dict[str, Path]:
        """Batsim's own files of the last finished episode (``jobs``, ``schedule``,
        ``batsim_log``); empty on the built-in engine."""
        return self._bridge.outputs() if self._bridge is not None else {}

    def __getstate__(self) -> dict[str, Any]:
        """Everything, for pickling (copies, vectorised and remote workers); refused while a
        Batsim run is attached, since a process and its socket cannot travel."""
        if self._bridge is not None:
            raise TypeError("SchedulingEnv with engine 'batsim' holds a running Batsim process "
                            "and cannot be pickled; build it where it runs (make_vec_env and "
                            "gymnasium.make build it in each worker)")
        return self.__dict__.copy()

    def close(self) -> None:
        """End the current Batsim run, if any, and remove its temporary files."""
        if self._bridge is not None:
            self._bridge.close()
        super().close()

    def _bind_episode(self) -> None:
        sim = self.sim
        self.static = job_static_features(self)
        self.submit = np.array([j.submit_s for j in sim.workload.jobs], dtype=float)
        self.tracker = Tracker(nb_jobs=len(sim.workload), nb_cores=self.platform.nb_cores)
        self._accrual = None
        if self.config.reward_timing == "accrued":
            run = np.array([j.run_time_s for j in sim.workload.jobs], dtype=float)
            self._accrual = Accrual.of(self.objective.accrual_weights(run), self.submit)
        self._sla = None if self._tenants is None else self._tenants.episode(sim, self.tracker)
        if self._sla is not None:  # SLA orders read this episode's tenants
            self.pairs = self._sla.bind(getattr(self, "_pair_templates", self.pairs))
        sim.on_outcome = self._on_outcome
        self._last_value = 0.0
        self._held: Job | None = None
        self._done = False
        self._window_fits: np.ndarray | None = None
        self._window: list[Job] | None = None
        self._marks: ReservationMarks | None = None

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start an episode.

        ``options`` may hold ``"start_index"`` (the sequence's first job) and ``"load_factor"``
        (the episode's submission times are divided by it, multiplying its offered load: a way to
        train on heavier or lighter variants of the trace's sequences; default 1).
        """
        if seed is None and self._episode == 0:
            seed = self.config.seed  # unseeded first reset: the configured seed, for reproducibility
        super().reset(seed=seed)
        options = options or {}
        workload = self._episode_workload(self._episode, self.np_random, options.get("start_index"))
        factor = options.get("load_factor", 1)
        if factor != 1:
            workload = scale_arrivals(workload, factor)
        self.sim = self._new_simulation(workload)
        self.sim.rng = np.random.default_rng(int(self.np_random.integers(2**31)))
        self.sim.core.rng = self.sim.rng
        self._episode += 1
        self._bind_episode()
        self.observer.reset()
        self._done = not self._advance(self.sim.next_decision())
        self._forget_decision()
        return self.observer.build(), self._info()

    def _forget_decision(self) -> None:
        """Drop what was computed of the window while the simulation moved on (it is recomputed
        for the state the agent now decides in). With ``pick_limit="easy"``, :meth:`_has_choice`
        computed it for that very state, so it is kept unless the episode is over."""
        if self._done or self.config.pick_limit != "easy":
            self._window_fits = self._window = self._marks = None

    def _checked_action(self, action) -> int:
        """``action`` as an int; a step after the episode's end, or an action outside the action
        space, is refused (RuntimeError, ValueError)."""
        if self._done:
            raise RuntimeError("step() called after the episode ended; call reset()")
        try:
            action = operator.index(action)  # int, numpy integer, 0-d integer array
        except TypeError:
            action = action_index(action, self.action_space.n)
        if not 0 <= action < self.action_space.n:
            raise ValueError(f"action {action} outside Discrete({self.action_space.n})")
        return action

    def step(self, action):
        """Apply one decision; returns (observation, reward, terminated, truncated, info)."""
        action = self._checked_action(action)
        action = self._void_or_first_valid(action)
        if self.config.mode == "policy_pair":
            alive = self._step_pair(action)
        else:
            alive = self._step_pick(action)
        self._done = not self._advance(alive)
        self._forget_decision()
        reward = self._reward()
        return self.observer.build(), reward, self._done, False, self._info()

    def render(self) -> str | np.ndarray | None:
        """The current state as text (``render_mode="ansi"``) or an RGB image (``"rgb_array"``);
        None without a render mode."""
        if self.render_mode == "ansi":
            return render_ansi(self)
        if self.render_mode == "rgb_array":
            return render_rgb(self)
        return None

    def action_masks(self) -> np.ndarray:
        """Valid actions now (True = valid); at least one is always valid."""
        n = self.action_space.n
        mask = np.zeros(n, dtype=bool)
        if self._done:
            mask[:] = True
            return mask
        if self.config.mode == "policy_pair":
            mask[:] = True
            if self.config.void:
                mask[-1] = self._event_pending()
            return mask
        window = self.window_jobs()
        k = len(window)
        if self.config.decision == "commit":
            mask[:k] = True
            mask[-1] = (self.config.void and self._event_pending()) or k == 0
        else:
            mask[:k] = self.window_startable()
            mask[-1] = self._event_pending()
        return mask

    # ------------------------------------------------------------------ helpers for observations
    def window_jobs(self) -> list[Job]:
        """The first ``window`` queued jobs in submission order, or in the ``laxity`` order
        (``window_order``; :meth:`hdrm.env.tenants.Episode.laxity_window`), computed once per
        decision."""
        if self.config.window_order == "submission":
            return self.sim.core.queue[: self.config.window]
        if self._window is None:
            self._window = self._sla.laxity_window(self.sim.core.queue, self.sim.now,
                                                   self.config.window)
        return self._window

    def window_fits(self) -> np.ndarray:
        """:meth:`fits_mask` of :meth:`window_jobs`, computed once per decision (the mask and
        the job-window observations both need it)."""
        if self._window_fits is None:
            self._window_fits = self.fits_mask(self.window_jobs())
        return self._window_fits

    def window_startable(self) -> np.ndarray:
        """The window jobs the agent may start now (event decisions): those that fit; with
        ``pick_limit="easy"`` only those EASY would start now: the jobs ahead of the reserved
        one while there are any, then those that do not delay its reservation."""
        fits = self.window_fits()
        if self.config.pick_limit != "easy":
            return fits
        marks = self.reservation_marks()
        return marks.ahead if marks.ahead.any() else fits & ~marks.delays

    def reservation_marks(self) -> ReservationMarks:
        """EASY's view of the window now (:mod:`hdrm.env.reservation_view`), computed once per
        decision (the ``job_window_reservation`` observations and ``pick_limit="easy"`` read
        it)."""
        if self._marks is None:
            self._marks = self.reservation_view().marks(self.window_jobs(), self.window_fits())
        return self._marks

    def reservation_view(self) -> ReservationView:
        """The environment's :class:`~hdrm.env.reservation_view.ReservationView` (one for its
        life: a ``random`` reservation order draws on across episodes)."""
        if self._reservation_view is None:
            self._reservation_view = ReservationView(self)
        return self._reservation_view

    def fits_mask(self, jobs: list[Job]) -> np.ndarray:
        """For each job, whether it could start now."""
        state = self.sim.core.state
        free = state.free_cores
        if not state.bounded_memory:
            return np.fromiter((j.res <= free for j in jobs), dtype=bool, count=len(jobs))
        fits = state.fits  # asked only of jobs that need memory: the others need free cores
        return np.fromiter((j.res <= free and (j.mem_mb <= 0 or fits(j)) for j in jobs),
                           dtype=bool, count=len(jobs))

    def result(self) -> SimulationResult:
        """The outcomes of the current episode (complete once it has ended)."""
        return self.sim.result()

    def sla_report(self) -> Any:
        """The current episode's :class:`~hdrm.results.sla.SlaReport`; None without tenants."""
        return None if self._sla is None else self._sla.report(self.sim.result())

    # ------------------------------------------------------------------ rewards and info
    def _on_outcome(self, job: Job, outcome: Outcome) -> None:
        if outcome.start_s >= 0:
            self.tracker.job_ended(job.submit_s, outcome.start_s, outcome.finish_s, job.res)
        if self._sla is not None:
            self._sla.ended(self.tracker, job, outcome)
        if self._accrual is not None:  # rejected jobs leave the system too
            self._accrual.leave(self.tracker, job.idx, self.submit[job.idx])

    def _reward(self) -> float:
        t = self.tracker
        t.now_s = self.sim.now
        t.energy_j = self.sim.machine.energy_j()
        if self._accrual is not None:
            self._accrual.enter_until(t, t.now_s)
        value = self.objective.value(t, final=self._done)
        reward = self._last_value - value
        self._last_value = value
        return float(reward)

    def _info(self) -> dict[str, Any]:
        sim = self.sim
        return {
            "action_mask": self.action_masks(),
            "time": sim.now,
            "queue_size": len(sim.core.queue),
            "jobs_done": len(sim.outcomes),
            "objective": self._last_value,
        }
