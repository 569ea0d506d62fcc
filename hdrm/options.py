"""The experiment options (``options.json``), parsed once into frozen dataclasses.

The schema is HDeepRM's (``seed``, ``nb_resources``, ``nb_jobs``, ``workload_file_path``,
``platform_file_path`` and a ``pybatsim`` block with ``log_level``, ``env`` and ``agent``), extended
with the engine, workload, simulation and action settings of hdrm. HDeepRM's own files load
unchanged.

Every key but ``workload_file_path`` has a default. Relative paths resolve against the folder of the
options file. A bad key or value raises :class:`~hdrm.errors.ConfigError` with one line naming the
file, the JSON path, the bad value, the closest valid name and the valid choices. Closed choices
(engine, decision, ...) are checked here, case-insensitively; open names (objectives, observations,
policies ...) live in registries of higher layers, which check them with :func:`check_names`.

Example::

    options = load_options("examples/classic/options.json")
    options.pybatsim.agent.gamma                        # 0.99
    faster = dataclasses.replace(options, nb_jobs=100)  # a new object; options is unchanged
    data = options.to_dict()                            # options_from_dict(data) == options

Layer L0: standard library only (the JSON conversion lives in :mod:`hdrm.typedjson`).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple, get_type_hints

from hdrm.implied import implied_simulation
from hdrm.jsonfile import read_json
from hdrm.typedjson import Context, convert_block, describe_type, join_path, thaw

logger = logging.getLogger(__name__)

Engine = Literal["builtin", "batsim"]
Conventions = Literal["default", "rlscheduler"]
Backfilling = Literal["none", "easy", "easy_first", "conservative"]
Decision = Literal["event", "commit"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
ActionMode = Literal["policy_pair", "job_pick"]
AgentType = Literal["classic", "learning"]
RunMode = Literal["train", "test"]

_EMPTY: Mapping[str, Any] = types.MappingProxyType({})


def _opt(
    default: Any = dataclasses.MISSING, *, factory: Any = dataclasses.MISSING, **meta: Any
) -> Any:
    """A dataclass field with validation metadata (ge, gt, le, nonempty, path, check)."""
    return field(default=default, default_factory=factory, metadata=meta)


def _check_window(value: tuple[float, float] | None) -> str:
    """Return an error text when a time window ends before it starts."""
    if value is not None and value[1] < value[0]:
        return f"expected [t0, t1] with t0 <= t1, got {list(value)}"
    return ""


class _Block:
    """Behaviour shared by every options block."""

    def to_dict(self) -> dict[str, Any]:
        """This block as plain JSON data; parsing it again gives an equal block."""
        return thaw(self)


@dataclass(frozen=True)
class BatsimOptions(_Block):
    """How the ``batsim`` engine starts the real Batsim simulator."""

    binary: str = _opt("batsim", path="command")
    """The Batsim executable, a name looked up on PATH or a path (relative to the options file)."""
    timeout_s: float = _opt(60.0, gt=0)
    """Seconds to wait for Batsim to answer before giving up."""
    extra_args: tuple[str, ...] = ()
    """Extra command-line arguments passed to Batsim as they are."""


@dataclass(frozen=True)
class WorkloadOptions(_Block):
    """How jobs are read from the workload file and which of them are simulated."""

    conventions: Conventions = "default"
    """The SWF reading conventions, ``default`` or ``rlscheduler`` (RLScheduler's loader)."""
    strict: bool = True
    """Whether a malformed trace line is an error (true) or skipped and counted (false)."""
    start_index: int | tuple[int, ...] | Literal["random"] | None = _opt(None, ge=0, nonempty=True)
    """Where episodes start, as null (the first job), an index, a list of indices or ``random``."""
    bandwidth: str = "hdeeprm"
    """Distribution of the memory bandwidth per core in GB/s: ``hdeeprm`` (uniform over 4, 8, ...,
    24, as HDeepRM), ``none``, ``constant:X``, ``uniform:A:B`` or ``choice:[X,Y,...]``."""
    window: tuple[float, float] | None = _opt(None, ge=0, check=_check_window)
    """Only jobs submitted within [t0, t1] (seconds, trace clock); null for no time window."""
    tenants: str | None = None
    """The jobs' tenants: ``user``, ``group``, ``qos``, ``job``, or a mapping CSV or tenants JSON
    file (relative to the options file); null for none (see the tenants page)."""
    sla: str = "relative:3"
    """The SLA of tenants without one: ``relative:K``, ``latency:SECONDS``, ``absolute`` or
    ``none``."""
    throughputs: str | None = _opt(None, path="file")
    """Gavel's throughput file (``simulation_throughputs.json``, relative to the options file) when
    the workload is a Gavel trace (GPU platforms); null otherwise."""


@dataclass(frozen=True)
class SimulationOptions(_Block):
    """How the decision core and the engines simulate the cluster."""

    contention: str = "hdeeprm"
    """Name of the memory-bandwidth contention model."""
    backfilling: Backfilling = "none"
    """Backfilling between decisions, ``none``, ``easy`` or ``conservative``."""
    decision: Decision = "event"
    """``event`` re-decides at every event; ``commit`` holds a pick until it fits (RLScheduler).
    Defaults to what ``workload.conventions`` imply: ``commit`` for ``rlscheduler``."""
    kill_on_walltime: bool = True
    """Whether a job still running at its requested time (walltime) is killed. Defaults to what
    ``workload.conventions`` imply: false for ``rlscheduler`` (RLScheduler never kills), except
    with engine ``batsim`` (Batsim always kills)."""


@dataclass(frozen=True)
class ActionsOptions(_Block):
    """The action space of the environment."""

    mode: ActionMode = "policy_pair"
    """``policy_pair`` (as HDeepRM, one action per job-core selection pair) or ``job_pick``
    (as RLScheduler, one action per queued job of the window)."""
    selection: tuple[Mapping[str, tuple[str, ...]], ...] | None = _opt(None, nonempty=True)
    """Policy pairs as ``[{"shortest": ["high_gflops", "low_power"]}, ...]``; null for all 36."""
    void: bool = False
    """Whether there is a void action (do nothing until the next event)."""
    window: int = _opt(128, ge=1)
    """Number of queued jobs the ``job_pick`` mode offers."""
    window_order: Literal["submission", "laxity"] = "submission"
    """Which queued jobs the ``job_pick`` window shows: the first in ``submission`` order, or
    (with tenants) those of least ``laxity`` whose deadline can still be met, then the lost ones."""
    pick_limit: Literal["fits", "easy"] = "fits"
    """Which window jobs ``job_pick`` mode with event decisions lets the agent start: any that
    ``fits`` now, or only those ``easy`` backfilling would start now (the jobs before the first
    one, in ``reservation`` order, that does not fit, while any waits; then none that delays
    that job's reservation)."""

    def selected_pairs(self) -> tuple[tuple[str, str], ...] | None:
        """The (job selection, core selection) pairs in order, or None for all pairs."""
        if self.selection is None:
            return None
        return tuple((job, core) for entry in self.selection for job, cores in entry.items()
                     for core in cores)


@dataclass(frozen=True)
class EnvOptions(_Block):
    """The environment: reward objective, actions and observation."""

    objective: str = "avg_job_slowdown"
    """Objective the reward optimises (``avg_job_slowdown``, ``makespan``, ``energy_consumption``,
    ...)."""
    reward_timing: Literal["end", "accrued"] = "end"
    """When a per-job objective's rewards arrive: ``end`` (as jobs end) or ``accrued`` (also what
    the jobs in the system have accrued so far, e.g. their slowdown while they wait)."""
    actions: ActionsOptions = _opt(factory=ActionsOptions)
    """The action space."""
    observation: str = "normal"
    """Observation name (``normal``, ``small``, ``small_waits``, ``minimal`` ...)."""
    queue_sensitivity: float = _opt(0.05, ge=0)
    """Sensitivity of the queue-change observation feature."""
    reservation: str = "fcfs"
    """Job selection policy whose first waiting job the ``job_window_reservation`` and
    ``job_window_predicted`` observations reserve for (``fcfs``: EASY's head of queue; ``wfp3``,
    ``sjf``, ``wfp3_pred`` ...)."""
    sla_energy_weight_per_j: float = _opt(1e-6, ge=0)
    """Weight of the energy per job, per joule, in the ``sla_energy`` objective (default 1e-6:
    1 per MJ, for CPU clusters; an inference scenario at ~0.2 J a request needs ~5)."""
    preemption: str = "none"
    """Preemption of running requests (built-in CPU engine): ``none``, ``request`` (the queue is
    re-ordered at each decision, no request is suspended) or ``block:SECONDS`` (PREMA-style: a
    queued request of a higher priority suspends a running one at its next block boundary);
    checked by the environment (see the tenants page)."""
    preemption_overhead_s: float = _opt(0.0, ge=0)
    """Checkpoint and restore time, in seconds, added when a suspended request resumes."""


@dataclass(frozen=True)
class AgentOptions(_Block):
    """The agent and how it runs."""

    type: AgentType = "classic"
    """``classic`` (a fixed policy) or ``learning``; HDeepRM's ``CLASSIC`` and ``LEARNING`` work."""
    run: RunMode = "train"
    """``train`` updates the model; ``test`` only evaluates it."""
    policy: str = "shortest-high_gflops"
    """Policy of a classic agent, a pair ``job-core`` or a heuristic name. Defaults to the only pair
    of ``actions.selection`` when it holds exactly one (HDeepRM's classic files)."""
    hidden: int | tuple[int, ...] | None = _opt(None, ge=1)
    """Units per hidden layer of the agent's networks: one number (every layer) or a list (one per
    layer); null lets each network choose (e.g. 32, 16, 8 for PPO's per-job scorer)."""
    lr: float = _opt(0.001, gt=0)
    """Learning rate of the optimiser."""
    gamma: float = _opt(0.99, ge=0, le=1)
    """Discount factor of the returns, in [0, 1]."""
    episodes: int = _opt(1, ge=1)
    """Number of episodes to run."""
    greedy: bool = True
    """When testing, take the most likely action (true) or sample it (false)."""
    save_every_episodes: int = _opt(10, ge=0)
    """When training, save the model every this many episodes (0: not by count); the launcher's
    ``--save-every-episodes`` overrides it."""
    save_every_minutes: float = _opt(10.0, ge=0)
    """When training, save the model at the end of the first episode after this many minutes
    since the last save (0: not by time); the launcher's ``--save-every-minutes`` overrides it."""
    params: Mapping[str, Any] = _opt(factory=lambda: _EMPTY)
    """Free-form hyper-parameters of a specific agent (read-only)."""


@dataclass(frozen=True)
class PybatsimOptions(_Block):
    """HDeepRM's ``pybatsim`` block: logging, environment and agent."""

    log_level: LogLevel = "WARNING"
    """Log level of the decision system."""
    env: EnvOptions = _opt(factory=EnvOptions)
    """The environment."""
    agent: AgentOptions = _opt(factory=AgentOptions)
    """The agent."""


@dataclass(frozen=True)
class Options(_Block):
    """A whole experiment, as read from ``options.json``."""

    workload_file_path: str = _opt(path="file")
    """The workload, an SWF trace (plain or .gz) or a Batsim JSON workload. Required."""
    seed: int = _opt(2009, ge=0)
    """Seed of the run's random generator."""
    nb_resources: int | None = _opt(None, ge=1)
    """Homogeneous platform of this many one-core resources, used when no platform file is given."""
    nb_jobs: int | None = _opt(None, ge=1)
    """Number of jobs of the selection (the first N from the start index); null for all."""
    platform_file_path: str | None = _opt(None, path="file")
    """The platform, a platform JSON file (or a SimGrid XML file for ``hdrm serve``)."""
    accelerator_types_path: str | None = _opt(None, path="file")
    """Extra GPU models for a GPU platform (an openb node list or a platform JSON): a file shaped
    like the type library's ``accelerators.json``, relative to the options file; null for none."""
    engine: Engine = "builtin"
    """``builtin`` (the pure-Python simulator) or ``batsim`` (the real Batsim through PyBatsim)."""
    batsim: BatsimOptions = _opt(factory=BatsimOptions)
    """Settings of the ``batsim`` engine."""
    workload: WorkloadOptions = _opt(factory=WorkloadOptions)
    """How the workload is read and selected."""
    simulation: SimulationOptions = _opt(factory=SimulationOptions)
    """How the cluster is simulated."""
    pybatsim: PybatsimOptions = _opt(factory=PybatsimOptions)
    """Logging, environment and agent."""
    source: str = field(default="<dict>", compare=False, repr=False, metadata={"internal": True})
    """Where the options came from (a file path), for error messages; not an options key."""


# --------------------------------------------------------------------------- loading


def load_options(path: str | os.PathLike[str]) -> Options:
    """Read and validate an options file.

    Args:
        path: the options.json file; relative paths inside it resolve against its folder.

    Raises:
        ConfigError: the file is missing, is not valid JSON, or holds a bad key or value.
    """
    data = read_json(path, "options file")
    logger.debug("loaded options from %s", path)
    return options_from_dict(data, source=os.fspath(path), base_dir=Path(path).resolve().parent)


def options_from_dict(
    data: Any, source: str = "<dict>", base_dir: str | os.PathLike[str] | None = None
) -> Options:
    """Validate parsed JSON data into :class:`Options`.

    Args:
        data: the JSON object (a dict).
        source: where the data came from, for error messages.
        base_dir: folder relative paths resolve against; None leaves them as given.

    Raises:
        ConfigError: a bad key or value; the message names the JSON path.
    """
    ctx = Context(source, None if base_dir is None else os.fspath(base_dir))
    options = convert_block(data, Options, "", ctx)
    options = dataclasses.replace(options, source=source)
    return _apply_implied(options, data)


def _apply_implied(options: Options, data: dict[str, Any]) -> Options:
    """Fill the defaults that depend on other settings."""
    replace = dataclasses.replace
    given = data.get("simulation", {})
    sim = options.simulation
    implied = implied_simulation(options.workload.conventions,
                                 sim.decision if "decision" in given else None,
                                 sim.kill_on_walltime if "kill_on_walltime" in given else None,
                                 options.engine)
    options = replace(options, simulation=replace(sim, decision=implied.decision,
                                                  kill_on_walltime=implied.kill_on_walltime))
    pairs = options.pybatsim.env.actions.selected_pairs()
    if pairs and len(pairs) == 1 and "policy" not in data.get("pybatsim", {}).get("agent", {}):
        agent = replace(options.pybatsim.agent, policy="-".join(pairs[0]))
        options = replace(options, pybatsim=replace(options.pybatsim, agent=agent))
    return options


class OptionField(NamedTuple):
    """One key of the schema, for references and help texts.

    Attributes:
        path: JSON path, e.g. ``"pybatsim.agent.lr"``.
        owner: the dataclass that declares the field.
        name: the field (and key) name.
        type_text: the accepted values in words.
        default: the default as JSON data (None when required).
        required: whether the key must be given.
        is_block: whether the value is a nested block of options.
    """

    path: str
    owner: type
    name: str
    type_text: str
    default: Any
    required: bool
    is_block: bool


def option_fields(cls: type = Options, prefix: str = "") -> list[OptionField]:
    """Every key of the schema under ``cls``, depth first, in declaration order."""
    rows: list[OptionField] = []
    hints = get_type_hints(cls)
    for spec in dataclasses.fields(cls):
        if spec.metadata.get("internal"):
            continue
        path, hint = join_path(prefix, spec.name), hints[spec.name]
        required = spec.default is dataclasses.MISSING
        required = required and spec.default_factory is dataclasses.MISSING
        if required:
            default = None
        elif spec.default is not dataclasses.MISSING:
            default = thaw(spec.default)
        else:
            default = thaw(spec.default_factory())
        block = dataclasses.is_dataclass(hint)
        rows.append(OptionField(path, cls, spec.name, describe_type(hint, spec.metadata),
                                default, required, block))
        if block:
            rows.extend(option_fields(hint, path))
    return rows


# the check of open names lives in its own module; importable from here as before
from hdrm.option_names import SELECTION_PATH, check_names  # noqa: E402,F401
