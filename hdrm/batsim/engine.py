"""The ``batsim`` engine's glue: fixed-policy replays, background runs, the machine mirror.

* :func:`replay_with_batsim` (``hdrm replay --engine batsim``) runs the decision core with a fixed
  policy pair under Batsim (:func:`hdrm.batsim.process.run_batsim`), moves Batsim's own
  ``out_jobs.csv`` and ``out_schedule.csv`` into the output folder and returns the run as a
  :class:`~hdrm.sim.engine.SimulationResult` (:func:`result_from_rows`), so the command prints the
  same summary as on the built-in engine.
* :class:`BatsimSession` starts the same run without waiting for it (the environment steps
  through it, :mod:`hdrm.batsim.env_bridge`); :meth:`BatsimSession.check` turns every failure into
  one clear error (Batsim exiting early, with the tail of its log; the decision process failing).
* :class:`MachineMirror` follows a Batsim run with the built-in physics, for the environment's
  observations and rewards.

Batsim always kills jobs at their walltime: ``kill_on_walltime=False`` is refused.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
import weakref
from pathlib import Path
from typing import Any, Mapping, Sequence

from hdrm.batsim.adapter import DecisionStopped, HdrmScheduler
from hdrm.batsim.jobs import check_batsim_ids
from hdrm.batsim.process import (
    EXIT_GRACE_S,
    ENGINE_FIX,
    BatsimRun,
    DecisionThread,
    batsim_command,
    find_batsim,
    log_tail,
    refuse_accelerators,
    run_batsim,
)
from hdrm.core.dependencies import released_copy
from hdrm.core.state import ClusterState
from hdrm.durable import Staging, staged
from hdrm.errors import ConfigError, HdrmError, ProtocolError, SimulationError
from hdrm.options import BatsimOptions
from hdrm.platform.model import Platform
from hdrm.platform.power import SLEEPING
from hdrm.platform.simgrid import write_simgrid_xml
from hdrm.policies.pairs import PolicyPair
from hdrm.registry import suggest
from hdrm.results.csvio import read_jobs_csv, read_schedule_csv
from hdrm.results.overutil import write_overutilizations
from hdrm.results.records import REJECTED, JobResult
from hdrm.sim.engine import Outcome, SimulationConfig, SimulationResult
from hdrm.sim.job_end import start_job
from hdrm.sim.machine import JobEnd, machine_for
from hdrm.workload.batsim_json import write_batsim_json
from hdrm.workload.job import Job, Workload

logger = logging.getLogger(__name__)

#: Seconds Batsim may stay silent in ``hdrm replay --engine batsim``.
DEFAULT_TIMEOUT_S = 60.0
#: Seconds the decision process may go on after Batsim exited before it counts as an early exit.
EARLY_EXIT_GRACE_S = 1.0
#: Batsim's files moved into the output folder of a replay: kind -> file name.
OUTPUT_FILES = {"jobs": "out_jobs.csv", "schedule": "out_schedule.csv"}
_SETTING_KEYS = ("binary", "timeout_s", "extra_args")


def check_walltime_kill(config: SimulationConfig, where: str) -> None:
    """Refuse ``kill_on_walltime=False`` (Batsim kills every job at its walltime) with a
    ConfigError naming ``where`` the user set it (``"--no-walltime-kill"`` ...)."""
    if not config.kill_on_walltime:
        raise ConfigError(f"{where}: Batsim always kills jobs at their walltime; keep walltime "
                          "kills on with engine 'batsim', or use engine 'builtin'")


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

    Args:
        platform: the platform.
    """

    def __init__(self, platform: Platform) -> None:
        self.machine = machine_for(platform, kill_on_walltime=True)
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


class BatsimSession:
    """One Batsim run in the background: the caller steps it and polls :meth:`check`.

    Args:
        platform: the platform (exported to ``run_dir/platform.xml``).
        workload: the jobs (written to ``run_dir/workload.json``).
        run_dir: the run folder; Batsim's outputs go to ``run_dir/out/out_*``.
        scheduler: the decision process.
        binary: the Batsim executable, a path or a name on PATH.
        timeout_s: how long Batsim may stay silent, and may take to exit at the end.
        extra_args: more Batsim arguments.

    Raises:
        ConfigError: a platform with GPUs, or Batsim not found (with how to get Batsim 4.x).
    """

    def __init__(self, platform: Platform, workload: Workload, run_dir: str | Path,
                 scheduler: HdrmScheduler, *, binary: str = "batsim",
                 timeout_s: float = DEFAULT_TIMEOUT_S, extra_args: Sequence[str] = ()) -> None:
        refuse_accelerators(platform)
        self.exe = find_batsim(binary)
        self.platform = platform
        self.workload = workload
        self.scheduler = scheduler
        self.timeout_s = timeout_s
        self.extra_args = tuple(extra_args)
        run_dir = Path(os.path.abspath(run_dir))  # Batsim runs in run_dir: every path it gets is absolute
        self.run = BatsimRun(run_dir, [], run_dir / "out" / "out", scheduler=scheduler)
        self.thread: DecisionThread | None = None
        self.process: subprocess.Popen | None = None
        self._exited_at: float | None = None
        self._t0 = 0.0
        self._finalizer: weakref.finalize | None = None

    @property
    def log_path(self) -> Path:
        """Batsim's log (stdout and stderr)."""
        return self.run.run_dir / "batsim.log"

    def start(self) -> None:
        """Write the inputs, start the decision process on a free port, then Batsim."""
        run = self.run
        (run.run_dir / "out").mkdir(parents=True, exist_ok=True)
        check_batsim_ids(self.workload, ENGINE_FIX)
        xml = write_simgrid_xml(self.platform, run.run_dir / "platform.xml")
        wl = run.run_dir / "workload.json"
        write_batsim_json(self.workload, wl)
        self._t0 = time.perf_counter()
        self.thread = DecisionThread(self.scheduler, self.timeout_s)
        self.thread.start()
        try:
            run.command = batsim_command(self.exe, xml, wl, run.out_prefix, self.thread.port(),
                                         extra_args=self.extra_args)
            self.process = self._spawn(run.command)
        except BaseException:
            self.thread.stop()
            raise
        self._finalizer = weakref.finalize(self, _stop, self.process, self.thread)

    def _spawn(self, command: list[str]) -> subprocess.Popen:
        logger.info("starting %s", " ".join(command))
        with open(self.log_path, "w", encoding="utf-8") as log:
            try:
                return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                        cwd=self.run.run_dir)
            except OSError as exc:
                raise ConfigError(f"batsim.binary: cannot run {self.exe!r} ({exc.strerror or exc}); "
                                  "check that it is a Batsim 4.x executable") from None

    def check(self) -> bool:
        """Whether the decision process has finished; raises when the run failed.

        Raises:
            SimulationError: Batsim exited before the end of the simulation (with its log tail).
            ConfigError, ProtocolError ...: the decision process failed (naming Batsim's log).
        """
        thread, process = self.thread, self.process
        if thread is None or process is None:
            return False
        error = thread.error
        if error is not None and not isinstance(error, DecisionStopped):
            raise _decision_error(error, self.log_path)
        if not thread.is_alive():
            return True
        if process.poll() is not None:
            self._exited_at = self._exited_at or time.monotonic()
            if time.monotonic() - self._exited_at > EARLY_EXIT_GRACE_S:
                raise SimulationError(
                    f"batsim exited with status {process.returncode} before the simulation ended; "
                    f"last lines of {self.log_path}:\n{log_tail(self.log_path)}"
                )
        return False

    def finish(self) -> BatsimRun:
        """Wait for Batsim to exit after the simulation ended and read its outputs.

        Raises:
            SimulationError: Batsim exited with an error status.
            ProtocolError: Batsim did not exit in time.
        """
        process = self.process
        limit_s = max(self.timeout_s, EXIT_GRACE_S)
        try:
            status = process.wait(limit_s) if process is not None else 0
        except subprocess.TimeoutExpired:
            self.close()
            raise ProtocolError(f"batsim did not exit {limit_s:g} s after the simulation ended; "
                                f"see {self.log_path}") from None
        self.close()
        if status != 0:
            raise SimulationError(f"batsim exited with status {status}; last lines of "
                                  f"{self.log_path}:\n{log_tail(self.log_path)}")
        self.run.wall_s = time.perf_counter() - self._t0
        if self.run.jobs_csv.is_file():
            self.run.results = read_jobs_csv(self.run.jobs_csv)
        return self.run

    def close(self) -> None:
        """Stop the decision process and Batsim (killed if still running); safe to call twice."""
        if self._finalizer is not None:
            self._finalizer()


def _stop(process: subprocess.Popen, thread: DecisionThread) -> None:
    """Kill Batsim if it still runs and stop the decision thread (both waits bounded)."""
    if process.poll() is None:
        process.kill()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:  # pragma: no cover - a process that ignores SIGKILL
            logger.warning("batsim (pid %d) did not die within 5 s", process.pid)
    if thread.is_alive():
        thread.stop()


def _decision_error(error: BaseException, log_path: Path) -> HdrmError:
    """The failure of the decision process as one hdrm error naming Batsim's log."""
    if isinstance(error, HdrmError):
        return type(error)(f"{error} (batsim log: {log_path})")
    return ProtocolError(f"the decision process failed: {type(error).__name__}: {error} "
                         f"(batsim log: {log_path})")
