"""Settings of the scheduling environment, from options.json or keyword arguments."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hdrm.env.objectives import REWARD_TIMINGS
from hdrm.errors import ConfigError
from hdrm.implied import ImpliedSimulation, implied_simulation
from hdrm.options import Options
from hdrm.registry import suggest
from hdrm.sim.preemption import Preemption, parse_preemption

DATA = Path(__file__).resolve().parents[1] / "data"
EXAMPLE_WORKLOAD = str(DATA / "example_workload.swf")
EXAMPLE_PLATFORM = str(DATA / "example_platform.json")
MODES = ("policy_pair", "job_pick")
WINDOW_ORDERS = ("submission", "laxity")
PICK_LIMITS = ("fits", "easy")


@dataclass(frozen=True)
class EnvConfig:
    """Everything the environment needs.

    Attributes:
        workload_file: SWF or Batsim JSON workload (default: a 500-job SDSC-SP2 slice shipped
            with hdrm).
        platform_file: platform JSON (default: the shipped 384-core heterogeneous example);
            None with ``homogeneous_procs``.
        homogeneous_procs: N identical one-core resources instead of a platform file (-1: the
            trace's MaxProcs).
        nb_jobs: jobs per episode (0: the whole workload from the start index).
        start_index: where episodes start: None (0), an index, a tuple of indices (episodes
            cycle through them) or ``"random"`` (uniform over valid starts at each reset).
        conventions: SWF conventions, ``default`` or ``rlscheduler``.
        strict: fail on malformed SWF lines.
        bandwidth: memory-bandwidth distribution of SWF jobs on a platform file.
        objective: what the rewards minimise (:mod:`hdrm.env.objectives`).
        reward_timing: ``end`` (a per-job objective rewards as jobs end) or ``accrued`` (also
            what the jobs in the system have accrued so far, DeepRM's slowdown reward).
        observation: observation kind (:mod:`hdrm.env.observations`); ``job_pick`` mode
            uses ``job_window`` unless a job-window kind (``job_window``,
            ``job_window_reservation``, ``job_window_predicted``) is given.
        mode: ``policy_pair`` (HDeepRM) or ``job_pick`` (RLScheduler).
        selection: the policy pairs of ``policy_pair`` mode (None: all 36, job-major order).
        void: add a void action (do nothing until the next event) in ``policy_pair`` mode; in
            ``job_pick`` mode the void action (the last one) is valid in ``event`` decisions.
        window: jobs visible in ``job_pick`` mode.
        window_order: which queued jobs the ``job_pick`` window shows: ``submission`` (the
            first ones) or ``laxity`` (needs tenants: the jobs whose deadline can still be met,
            least laxity first, then the others; :mod:`hdrm.env.tenants`).
        queue_sensitivity: scale of the queue-change feature.
        pick_limit: which jobs ``job_pick`` mode with ``event`` decisions lets the agent start:
            ``fits`` (any window job that fits now) or ``easy`` (only those EASY backfilling
            would start now: the jobs before the first job that does not fit in the
            ``reservation`` order while any waits, then the fitting jobs that do not delay that
            job's reservation; :mod:`hdrm.env.reservation_view`).
        reservation: the job selection policy whose first waiting job the
            ``job_window_reservation`` and ``job_window_predicted`` observations reserve for
            (``fcfs``: EASY's).
        core_selection: placement of picked jobs in ``job_pick`` mode.
        placement: on a GPU platform, the placement of picked tasks in ``job_pick`` mode
            (:mod:`hdrm.policies.placement`).
        throughputs: Gavel's throughput file, for a Gavel trace as workload (GPU platforms).
        accelerator_types: extra GPU models for the GPU platform (``--accelerator-types``;
            options.json ``accelerator_types_path``); refused on CPU inputs.
        timeline: keep the simulation's per-instant timeline (utilisation; on GPU platforms also
            GPU allocation and fragmentation over time, which the run's outputs report); None
            (the default): kept on CPU platforms, not on GPU platforms, where recording it costs
            as much as the simulation (``hdeeprm-launch`` asks for it: it writes the outputs).
        backfilling: ``none``, ``easy``, ``easy_first`` or ``conservative``.
        contention: contention model.
        decision: ``event`` or ``commit``; None (the default): what the conventions imply
            (``commit`` for ``rlscheduler``, else ``event``: :mod:`hdrm.implied`).
        kill_on_walltime: kill jobs at their requested time, as Batsim does; None (the
            default): what the conventions imply (never for ``rlscheduler`` on the built-in
            engine, else always).
        engine: ``builtin`` (the built-in simulator) or ``batsim`` (one real Batsim run per
            episode, the decisions handed over by :mod:`hdrm.batsim.env_bridge`).
        seed: base seed of the bandwidth draw and of the simulation.
        tenants: the jobs' tenants (``user``, ``group``, ``qos``, ``job``, a mapping CSV or a
            tenants JSON file: :mod:`hdrm.workload.tenant_files`); None: no tenants. Needed by
            the SLA objectives and the ``edf``, ``least_laxity``, ``fair_share`` and
            ``sla_class`` selections.
        sla: the SLA of tenants without one (``relative:3``, ``latency:600`` ...).
        sla_energy_weight_per_j: weight of the energy per job (per joule) in the
            ``sla_energy`` objective (default 1e-6, i.e. 1 per MJ).
        preemption: ``none``, ``request`` or ``block:SECONDS`` (:mod:`hdrm.sim.preemption`;
            ``block`` needs engine ``builtin``, a CPU platform and, in ``policy_pair`` mode,
            job selections with an order; refused in ``job_pick`` mode).
        preemption_overhead_s: checkpoint and restore time of a suspended request.
        implied: the decision and walltime rule in effect and where each came from (set
            from the fields above; for summaries).
    """

    workload_file: str = EXAMPLE_WORKLOAD
    platform_file: str | None = EXAMPLE_PLATFORM
    homogeneous_procs: int = 0
    nb_jobs: int = 0
    start_index: Any = None
    conventions: str = "default"
    strict: bool = True
    bandwidth: str = "hdeeprm"
    objective: str = "avg_bounded_slowdown"
    reward_timing: str = "end"
    observation: str = "normal"
    mode: str = "policy_pair"
    selection: tuple[str, ...] | None = None
    void: bool = False
    window: int = 128
    window_order: str = "submission"
    queue_sensitivity: float = 0.05
    pick_limit: str = "fits"
    reservation: str = "fcfs"
    core_selection: str = "high_gflops"
    placement: str = "fgd"
    throughputs: str | None = None
    accelerator_types: str | None = None
    timeline: bool | None = None
    backfilling: str = "none"
    contention: str = "hdeeprm"
    decision: str | None = None
    kill_on_walltime: bool | None = None
    engine: str = "builtin"
    seed: int = 0
    tenants: str | None = None
    sla: str = "relative:3"
    sla_energy_weight_per_j: float = 1e-6
    preemption: str = "none"
    preemption_overhead_s: float = 0.0
    implied: ImpliedSimulation | None = dataclasses.field(default=None, init=False, repr=False,
                                                          compare=False)

    def __post_init__(self) -> None:
        implied = implied_simulation(self.conventions, self.decision, self.kill_on_walltime,
                                     self.engine)
        object.__setattr__(self, "decision", implied.decision)
        object.__setattr__(self, "kill_on_walltime", implied.kill_on_walltime)
        object.__setattr__(self, "implied", implied)
        if self.mode not in MODES:
            raise ConfigError(f"mode: unknown action mode {self.mode!r}; "
                              f"{suggest(self.mode, MODES)}choose one of: {', '.join(MODES)}")
        if self.reward_timing not in REWARD_TIMINGS:
            raise ConfigError(f"reward_timing: unknown value {self.reward_timing!r}; "
                              f"{suggest(self.reward_timing, REWARD_TIMINGS)}choose one of: "
                              f"{', '.join(REWARD_TIMINGS)}")
        if self.window < 1:
            raise ConfigError(f"window: expected a positive number of jobs, got {self.window}")
        if self.window_order not in WINDOW_ORDERS:
            raise ConfigError(f"window_order: unknown order {self.window_order!r}; "
                              f"{suggest(self.window_order, WINDOW_ORDERS)}choose one of: "
                              f"{', '.join(WINDOW_ORDERS)}")
        self.check_pick_limit()
        self.preemption_spec()
        if not (self.sla_energy_weight_per_j >= 0):
            raise ConfigError("sla_energy_weight_per_j: expected a weight >= 0 per joule, got "
                              f"{self.sla_energy_weight_per_j!r}")

    def check_pick_limit(self) -> None:
        """Refuse an unknown ``pick_limit``, or ``easy`` where no job is picked now.

        Raises:
            ConfigError: one line naming the value and the fix.
        """
        if self.pick_limit not in PICK_LIMITS:
            raise ConfigError(f"pick_limit: unknown value {self.pick_limit!r}; "
                              f"{suggest(self.pick_limit, PICK_LIMITS)}choose one of: "
                              f"{', '.join(PICK_LIMITS)}")
        if self.pick_limit == "easy" and (self.mode != "job_pick" or self.decision != "event"):
            raise ConfigError(f"pick_limit: 'easy' limits the jobs an agent starts now, in "
                              f"actions mode 'job_pick' with decision 'event' (here mode "
                              f"{self.mode!r}, decision {self.decision!r}); use those, or "
                              "pick_limit 'fits'")

    def preemption_spec(self, where: str = "preemption") -> Preemption:
        """The parsed preemption option (``hdrm replay --preemption``'s parser and errors).

        Raises:
            ConfigError: a bad value, or block preemption with engine ``batsim`` or in
                ``job_pick`` mode; one line naming ``where``.
        """
        spec = parse_preemption(self.preemption, self.preemption_overhead_s, where)
        if spec.suspends and self.engine == "batsim":
            raise ConfigError(f"{where}: Batsim cannot suspend a job and resume its remaining "
                              "work with its progress kept; use engine builtin, or preemption "
                              "none or request")
        if spec.suspends and self.mode == "job_pick":
            raise ConfigError(f"{where}: block preemption ranks requests by a job selection's "
                              "order, and job_pick mode has none; use actions mode policy_pair "
                              "or preemption none or request")
        return spec

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> "EnvConfig":
        """Build from keyword arguments; unknown names are a ConfigError with suggestions."""
        names = [f.name for f in dataclasses.fields(cls) if f.init]
        for key in kwargs:
            if key not in names:
                raise ConfigError(f"unknown environment argument {key!r}; {suggest(key, names)}"
                                  f"valid arguments: {', '.join(names)}")
        if isinstance(kwargs.get("selection"), list):
            kwargs["selection"] = tuple(kwargs["selection"])
        if isinstance(kwargs.get("start_index"), list):
            kwargs["start_index"] = tuple(kwargs["start_index"])
        return cls(**kwargs)

    @classmethod
    def resolve(cls, options: Options | None, config: "EnvConfig | None",
                **settings: Any) -> "EnvConfig":
        """What an environment's ``(options, config, **settings)`` mean: parsed options.json
        with the settings as overrides, else the given config, else the settings alone."""
        if options is not None:
            return cls.from_options(options, **settings)
        return config if config is not None else cls.from_kwargs(**settings)

    @classmethod
    def from_options(cls, options: Options, **overrides: Any) -> "EnvConfig":
        """Build from parsed options.json (the launcher's settings)."""
        env = options.pybatsim.env
        implied = implied_simulation(options.workload.conventions, engine=options.engine)
        selection = None
        if env.actions.selection is not None:
            selection = tuple(f"{job}-{core}" for entry in env.actions.selection
                              for job, cores in entry.items() for core in cores)
        values = dict(
            workload_file=options.workload_file_path,
            platform_file=options.platform_file_path,
            homogeneous_procs=(options.nb_resources or -1) if not options.platform_file_path else 0,
            nb_jobs=options.nb_jobs or 0,
            start_index=options.workload.start_index,
            conventions=options.workload.conventions,
            strict=options.workload.strict,
            bandwidth=options.workload.bandwidth,
            objective=env.objective,
            reward_timing=env.reward_timing,
            observation=env.observation,
            mode=env.actions.mode,
            selection=selection,
            void=env.actions.void,
            window=env.actions.window,
            window_order=env.actions.window_order,
            pick_limit=env.actions.pick_limit,
            queue_sensitivity=env.queue_sensitivity,
            reservation=env.reservation,
            backfilling=options.simulation.backfilling,
            contention=options.simulation.contention,
            decision=_unless_implied(options.simulation.decision, implied.decision),
            kill_on_walltime=_unless_implied(options.simulation.kill_on_walltime,
                                             implied.kill_on_walltime),
            engine=options.engine,
            seed=options.seed,
            throughputs=options.workload.throughputs,
            accelerator_types=options.accelerator_types_path,
            tenants=_tenants_path(options),
            sla=options.workload.sla,
            sla_energy_weight_per_j=env.sla_energy_weight_per_j,
            preemption=env.preemption,
            preemption_overhead_s=env.preemption_overhead_s,
        )
        values.update(overrides)
        try:
            return cls.from_kwargs(**values)
        except ConfigError as exc:  # name the file and the JSON path of these keys
            if str(exc).startswith("preemption:"):
                raise ConfigError(f"{options.source}: pybatsim.env.{exc}") from None
            if str(exc).startswith("pick_limit:"):
                raise ConfigError(f"{options.source}: pybatsim.env.actions.{exc} (the "
                                  "decision is simulation.decision, or what "
                                  "workload.conventions imply)") from None
            raise


def _tenants_path(options: Options) -> str | None:
    """``workload.tenants``, a relative file path resolved against the options file's folder."""
    tenants = options.workload.tenants
    if tenants is None or not tenants.lower().endswith((".csv", ".json")) or os.path.isabs(tenants):
        return tenants
    if os.path.isfile(options.source):
        return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(options.source)),
                                             tenants))
    return tenants


def _unless_implied(value: Any, implied: Any) -> Any:
    """None (the conventions' value, and the summary says so) when ``value`` is what the
    conventions imply, else ``value``."""
    return None if value == implied else value
