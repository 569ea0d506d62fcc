"""The ``batsim`` engine's glue: fixed-policy replays, background runs, the machine mirror.

* :func:`replay_with_batsim` (``hdrm replay --engine batsim``) runs the decision core with a fixed
  policy pair under Batsim (:func:`hdrm.batsim.process.run_batsim`), moves Batsim's own
  ``out_jobs.csv`` and ``out_schedule.csv`` into the output folder and returns the run as a
  :class:`~hdrm.sim.engine.SimulationResult` (:func:`result_from_rows`), so the command prints the
  same summary as on the built-in engine.
* :class:`~hdrm.batsim.session.BatsimSession` (re-exported here) starts the same run without
  waiting for it (the environment steps through it, :mod:`hdrm.batsim.env_bridge`).
* :class:`MachineMirror` follows a Batsim run with the built-in physics, for the environment's
  observations and rewards.

Batsim always kills jobs at their walltime: ``kill_on_walltime=False`` is refused.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from hdrm.batsim.adapter import HdrmScheduler
from hdrm.batsim.process import BatsimRun, refuse_accelerators, run_batsim
from hdrm.batsim.session import (  # noqa: F401  (re-exported)
    DEFAULT_TIMEOUT_S,
    EARLY_EXIT_GRACE_S,
    BatsimSession,
)
from hdrm.core.dependencies import released_copy
from hdrm.core.state import ClusterState
from hdrm.durable import Staging, staged
from hdrm.errors import ConfigError, ProtocolError, WorkloadError
from hdrm.options import BatsimOptions
from hdrm.platform.model import Platform
from hdrm.platform.power import SLEEPING
from hdrm.policies.pairs import PolicyPair
from hdrm.registry import suggest
from hdrm.results.csvio import read_jobs_csv, read_schedule_csv
from hdrm.results.overutil import write_overutilizations
from hdrm.results.records import REJECTED, JobResult
from hdrm.sim.engine import Outcome, SimulationConfig, SimulationResult
from hdrm.sim.job_end import start_job
from hdrm.sim.machine import JobEnd, machine_for
from hdrm.sim.simgrid_machine import simgrid_machine_for
from hdrm.workload.batsim_json import (
    SUPPORTED_PROFILE_TYPES,
    check_export_runs,
    unsupported_profiles,
)
from hdrm.workload.job import Job, Workload

logger = logging.getLogger(__name__)

#: Batsim's files moved into the output folder of a replay: kind -> file name.
OUTPUT_FILES = {"jobs": "out_jobs.csv", "schedule": "out_schedule.csv"}
_SETTING_KEYS = ("binary", "timeout_s", "extra_args")


def check_walltime_kill(config: SimulationConfig, where: str) -> None:
    """Refuse ``kill_on_walltime=False`` (Batsim kills every job at its walltime) with a
    ConfigError naming ``where`` the user set it (``"--no-walltime-kill"`` ...)."""
    if not config.kill_on_walltime:
        raise ConfigError(f"{where}: Batsim always kills jobs at their walltime; keep walltime "
                          "kills on with engine 'batsim', or use engine 'builtin'")


def check_mirror_profiles(workload: Workload) -> None:
    """Refuse, for the batsim engine's environment, the jobs it cannot run: those no hdrm
    engine runs (:func:`~hdrm.workload.batsim_json.check_export_runs`), then the ones Batsim
    runs but the machine mirror cannot follow (``parallel`` profiles), which a fixed-policy
    replay runs.

    Raises:
        WorkloadError: one line naming the file, the profile types, a few jobs and the fix.
    """
    check_export_runs(workload)
    kinds = [kind for kind in unsupported_profiles(workload) if kind not in SUPPORTED_PROFILE_TYPES]
    if kinds:
        ids = [job.id for job in workload.jobs if job.profile_type in kinds]
        some = ", ".join(map(repr, ids[:3])) + (", ..." if len(ids) > 3 else "")
        raise WorkloadError(
            f"{workload.source or workload.name}: profile type {', '.join(map(repr, kinds))} "
            f"({len(ids)} jobs: {some}): the batsim engine's environment follows only "
            f"{', '.join(map(repr, SUPPORTED_PROFILE_TYPES))} profiles (its mirror of the "
            "machine computes observations and rewards); replay the workload with a fixed policy "
            "('hdrm replay --engine batsim'), or give these jobs such profiles")


def replay_with_batsim(
    platform: Platform,
    workload: Workload,
    pair: PolicyPair,
    config: SimulationConfig,
    outdir: str | Path,
    *,
    binary: str = "batsim",
    timeout_s: float | None = None,
    extra_args: Sequence[str] = (),
    stage: Staging | None = None,
) -> tuple[SimulationResult, dict[str, Path]]:
    """Replay ``workload`` on ``platform`` with ``pair`` under Batsim; the outputs go to ``outdir``.

    Args:
        platform: the platform (exported to ``outdir/platform.xml``).
        workload: the jobs (written to ``outdir/workload.json``).
        pair: the fixed policy pair.
        config: contention, backfilling, decision semantics and seed, as on the built-in engine.
        outdir: the output folder (created).
        binary: the Batsim executable, a path or a name on PATH.
        timeout_s: how long Batsim may stay silent (None: :data:`DEFAULT_TIMEOUT_S`).
        extra_args: more Batsim arguments.
        stage: the caller's staging, which out_jobs.csv, out_schedule.csv and
            overutilizations.json join (published with the run's other outputs); None: they
            are renamed into place together here (:func:`hdrm.durable.staged`).

    Returns:
        The run as a result (Batsim's job rows and consumed energy), and the files written by kind
        (``jobs``, ``schedule``, ``overutilizations``, ``platform``, ``workload``, ``log``).

    Raises:
        ConfigError: Batsim not found (saying how to get Batsim 4.x), a setting it cannot run, or
            a platform with GPUs (Batsim cannot express them).
        SimulationError: Batsim exited early (with the tail of its log) or with an error.
        ProtocolError: Batsim stopped answering or sent a message the adapter does not know.
    """
    check_walltime_kill(config, "--no-walltime-kill")
    if config.preemption.startswith("block"):
        raise ConfigError("--preemption: Batsim cannot suspend a job and resume its remaining "
                          "work with its progress kept; use --engine builtin, or --preemption "
                          "none or request")
    refuse_accelerators(platform)
    scheduler = HdrmScheduler(platform=platform, policy=pair.name, contention=config.contention,
                              backfilling=config.backfilling, decision=config.decision,
                              seed=config.seed)
    scheduler.pair = pair
    out = Path(os.path.abspath(outdir))
    run = run_batsim(platform, workload, out, scheduler, binary=binary,
                     timeout_s=DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s,
                     extra_args=extra_args)
    with staged(stage) as stage:
        result = result_from_run(platform, workload, run)
        paths = collect_outputs(run, out, stage)
        paths["overutilizations"] = out / "overutilizations.json"
        write_overutilizations(result.overutilizations, stage.path(paths["overutilizations"]))
    return result, paths


def collect_outputs(run: BatsimRun, outdir: Path, stage: Staging | None = None
                    ) -> dict[str, Path]:
    """Move Batsim's out_jobs.csv and out_schedule.csv from its export folder into ``outdir``
    (with ``stage``: staged, moved into place when the caller publishes it).

    Returns:
        Every file of the run by kind (the moved outputs, ``platform``, ``workload``, ``log``).
    """
    paths: dict[str, Path] = {}
    for kind, source in (("jobs", run.jobs_csv), ("schedule", run.schedule_csv)):
        if source.is_file():
            target = outdir / OUTPUT_FILES[kind]
            os.replace(source, stage.path(target) if stage is not None else target)
            paths[kind] = target
    export_dir = run.out_prefix.parent
    if export_dir != outdir and export_dir.is_dir() and not any(export_dir.iterdir()):
        export_dir.rmdir()
    if "jobs" in paths:
        run.out_prefix = outdir / "out"
    paths.update(platform=run.run_dir / "platform.xml", workload=run.run_dir / "workload.json",
                 log=run.run_dir / "batsim.log")
    return paths


def result_from_run(platform: Platform, workload: Workload, run: BatsimRun) -> SimulationResult:
    """A finished Batsim run as a result: its out_jobs.csv rows and its consumed energy."""
    energy_j = 0.0
    if run.schedule_csv.is_file():
        energy_j = float(read_schedule_csv(run.schedule_csv).get("consumed_joules", 0.0))
    rows = run.results or (read_jobs_csv(run.jobs_csv) if run.jobs_csv.is_file() else [])
    result = result_from_rows(platform, workload, rows, energy_j)
    result.wall_s = run.wall_s
    scheduler = run.scheduler
    if scheduler is not None:
        if scheduler.dependents is not None:  # report release times as submission times
            released = {job.id: job.submit_s for job in scheduler.dependents.copies.values()}
            for outcome in result.outcomes:
                if outcome.job.id in released:
                    outcome.job = released_copy(outcome.job, released[outcome.job.id])
        result.decisions = scheduler.decisions
        now = max((o.finish_s for o in result.outcomes), default=0.0)
        scheduler.core.state.close(now)
        result.overutilizations = scheduler.core.state.records.data
    return result


def result_from_rows(platform: Platform, workload: Workload, rows: Sequence[JobResult],
                     energy_j: float) -> SimulationResult:
    """hdrm's result records from Batsim's out_jobs.csv rows (jobs matched by id).

    Raises:
        ProtocolError: a row names a job that is not in the workload.
    """
    jobs = {str(job.id): job for job in workload.jobs}
    outcomes: dict[int, Outcome] = {}
    for row in rows:
        job = jobs.get(row.job_id)
        if job is None:
            raise ProtocolError(f"Batsim's out_jobs.csv has job {row.job_id!r}, which is not in "
                                f"workload {workload.name!r}")
        outcomes[job.idx] = _outcome(job, row)
    ordered = [outcomes[j.idx] for j in workload.jobs if j.idx in outcomes]
    makespan = max((o.finish_s for o in ordered), default=0.0)
    return SimulationResult(platform, workload, ordered, energy_j=energy_j,
                            makespan_s=max(makespan, 0.0))


def _outcome(job, row: JobResult) -> Outcome:
    if row.final_state == REJECTED:
        return Outcome(job, REJECTED, reason="rejected by the decision process")
    return Outcome(job, row.final_state, float(row.starting_time), float(row.finish_time),
                   tuple(row.core_ids()), float(row.consumed_energy or 0.0))


def batsim_settings(value: BatsimOptions | Mapping[str, Any] | None) -> BatsimOptions:
    """The ``batsim`` block of the options from a block, a dict or None (the defaults).

    Raises:
        ConfigError: an unknown key or a timeout that is not positive.
    """
    if value is None:
        return BatsimOptions()
    if isinstance(value, BatsimOptions):
        return value
    unknown = sorted(set(value) - set(_SETTING_KEYS))
    if unknown:
        raise ConfigError(f"batsim: unknown setting {unknown[0]!r}; {suggest(unknown[0], _SETTING_KEYS)}"
                          f"valid settings: {', '.join(_SETTING_KEYS)}")
    settings = BatsimOptions(str(value.get("binary", "batsim")), float(value.get("timeout_s", 60.0)),
                             tuple(str(a) for a in value.get("extra_args", ())))
    if not settings.timeout_s > 0:
        raise ConfigError(f"batsim.timeout_s: must be > 0 seconds, got {settings.timeout_s!r}")
    return settings


class MachineMirror:
    """The built-in physics following a Batsim run: power, energy and job progress for the env.

    On a platform read from SimGrid XML the physics is the built-in engine's
    :class:`~hdrm.sim.simgrid_machine.SimgridMachine` (the file's watts, energy from the first
    submission), as for the built-in engine's environment; else hdrm's power table.

    Args:
        platform: the platform.
        jobs: the episode's jobs (their first submission starts the energy count on XML).
    """

    def __init__(self, platform: Platform, jobs: Sequence[Job] = ()) -> None:
        machine = simgrid_machine_for(platform, True, Workload(list(jobs)))
        self.machine = machine if machine is not None else machine_for(platform, True)
        self._applied = [(SLEEPING, 1.0)] * platform.nb_cores
        self._ended: dict[int, JobEnd] = {}

    def advance(self, t: float) -> None:
        """Move to time ``t`` (never back); jobs the physics ends meanwhile are kept aside."""
        for end in self.machine.advance(max(t, self.machine.now)):
            self._ended[end.key] = end

    def sync(self, state: ClusterState) -> None:
        """Apply the power states the decision core set since the last call."""
        changes = {}
        applied = self._applied
        for c, key in enumerate(zip(state.core_state, state.core_factor)):
            if applied[c] != key:
                applied[c] = key
                changes[c] = key
        if changes:
            self.machine.apply_states(changes)

    def start(self, job: Job, cores: list[int]) -> None:
        """Start ``job`` on ``cores`` now, as the built-in engine does."""
        start_job(self.machine.start, job, cores)

    def job_left(self, idx: int, t: float) -> float:
        """Batsim ended job ``idx`` at ``t``: drop it; returns the energy its hosts used (J)."""
        self.advance(t)
        end = self._ended.pop(idx, None)
        if end is None and self.machine.is_running(idx):
            end = self.machine.kill(idx)
        return end.energy_j if end is not None else 0.0
