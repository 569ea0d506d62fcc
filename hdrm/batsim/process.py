"""Run the real Batsim with hdrm's decision core: the ``batsim`` engine's launcher.

:func:`run_batsim` writes ``platform.xml`` (:func:`hdrm.platform.simgrid.write_simgrid_xml`) and
``workload.json`` (:func:`hdrm.workload.batsim_json.write_batsim_json`) into the run folder, binds
the decision process (pybatsim's ``Batsim`` driving a :class:`~hdrm.batsim.adapter.HdrmScheduler`,
in a background thread) to a free port chosen by the system (never a fixed 28000: runs on one
machine do not collide), starts::

    batsim -p platform.xml -w workload.json -e OUT/out -s tcp://localhost:PORT -E \\
        --verbosity quiet --disable-schedule-tracing --disable-machine-state-tracing

and waits for both. Batsim's own ``out_jobs.csv`` and ``out_schedule.csv`` land in ``OUT``; its log in
``batsim.log``. Failures are one clear error: Batsim not installed (:data:`INSTALL_HINT`), Batsim
exiting early (with the tail of its log), Batsim going silent (timeout), or a message the decision
process does not understand (naming its type).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from hdrm.batsim.accelerators import refuse_accelerators, refuse_oversized
from hdrm.batsim.adapter import DecisionStopped, HdrmScheduler
from hdrm.batsim.jobs import check_batsim_ids
from hdrm.batsim.pybatsim_api import Batsim
from hdrm.errors import ConfigError, HdrmError, ProtocolError, SimulationError
from hdrm.platform.model import Platform
from hdrm.platform.simgrid import write_simgrid_xml
from hdrm.results.csvio import read_jobs_csv
from hdrm.results.records import JobResult
from hdrm.workload.batsim_json import check_export_runs, write_batsim_json
from hdrm.workload.job import Workload

logger = logging.getLogger(__name__)

#: The end of the message refusing a job id that Batsim refuses, for the ``batsim`` engine.
ENGINE_FIX = ", or use engine 'builtin'"

INSTALL_HINT = (
    "install Batsim 4.x (4.2.1 is tested; Batsim 5 speaks another protocol): with Nix, the batsim "
    "package of the kapack NUR repository (nur-kapack), pinned to a 4.x release; with Guix, the batsim "
    "package of the guix-hpc channel; or a container image holding Batsim 4.x behind a wrapper "
    "script named batsim on the PATH. Give its path as batsim.binary in options.json when it is not "
    "on the PATH. Without Batsim, 'hdrm serve' plays its part for PyBatsim schedulers"
)
#: Seconds Batsim may take to exit after the last message.
EXIT_GRACE_S = 10.0
#: Lines of Batsim's log quoted in errors.
LOG_TAIL_LINES = 20
#: Batsim's output switches, unless ``extra_args`` set them: errors only in the log (its default
#: info level writes ~18 kB per job), and no Pajé schedule or machine-state trace (hdrm reads
#: only out_jobs.csv and out_schedule.csv, which Batsim always writes).
QUIET_ARGS = ("--verbosity", "quiet", "--disable-schedule-tracing", "--disable-machine-state-tracing")
_VERBOSITY_FLAGS = ("-v", "--verbosity", "-q", "--quiet")


def find_batsim(binary: str = "batsim") -> str:
    """The Batsim executable: ``binary`` as a path, or looked up on PATH.

    Raises:
        ConfigError: not found or not executable, with install instructions.
    """
    if os.sep in binary or (os.altsep and os.altsep in binary):
        path = Path(binary)
        if path.is_file() and os.access(path, os.X_OK):
            return os.path.abspath(path)  # Batsim runs in its run folder: a relative path would break
        raise ConfigError(f"batsim.binary: {binary!r} is not an executable file; {INSTALL_HINT}")
    found = shutil.which(binary)
    if found is None:
        raise ConfigError(f"batsim.binary: {binary!r} not found on PATH; {INSTALL_HINT}")
    return os.path.abspath(found)


def batsim_command(exe: str, xml: Path, workload: Path, prefix: Path, port: int, *,
                   energy: bool = True, extra_args: Sequence[str] = ()) -> list[str]:
    """Batsim's command line: inputs, outputs, the decision process's port, then the quiet
    switches (:data:`QUIET_ARGS`; a verbosity in ``extra_args`` wins) and ``extra_args``."""
    extra = list(extra_args)
    quiet = list(QUIET_ARGS)
    if any(a.split("=")[0] in _VERBOSITY_FLAGS for a in extra):
        quiet = quiet[2:]
    quiet = [a for a in quiet if a not in extra]
    return [exe, "-p", str(xml), "-w", str(workload), "-e", str(prefix),
            "-s", f"tcp://localhost:{port}", *(["-E"] if energy else []), *quiet, *extra]


@dataclass
class BatsimRun:
    """The outcome of one Batsim run.

    Attributes:
        run_dir: the run folder.
        command: the Batsim command line.
        out_prefix: Batsim's ``-e`` prefix.
        results: the rows of Batsim's out_jobs.csv.
        scheduler: the decision process (its ``starts``, ``state_requests`` ...).
        wall_s: wall-clock seconds of the whole run.
    """

    run_dir: Path
    command: list[str]
    out_prefix: Path
    results: list[JobResult] = field(default_factory=list)
    scheduler: HdrmScheduler | None = None
    wall_s: float = 0.0

    @property
    def jobs_csv(self) -> Path:
        """Batsim's out_jobs.csv."""
        return Path(f"{self.out_prefix}_jobs.csv")

    @property
    def schedule_csv(self) -> Path:
        """Batsim's out_schedule.csv."""
        return Path(f"{self.out_prefix}_schedule.csv")


class DecisionThread(threading.Thread):
    """pybatsim's ``Batsim`` loop with a scheduler, in the background, bound to a free port.

    Args:
        scheduler: the decision process.
        timeout_s: how long to wait for each Batsim message.
        host: the address to bind.
    """

    def __init__(self, scheduler: HdrmScheduler, timeout_s: float, host: str = "127.0.0.1") -> None:
        super().__init__(name="hdrm-decision", daemon=True)
        self.scheduler = scheduler
        scheduler.timeout_s = timeout_s
        self.endpoint_pattern = f"tcp://{host}:*"
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            Batsim(self.scheduler, self.endpoint_pattern, int(self.scheduler.timeout_s * 1000)).start()
        except BaseException as exc:  # handed to the main thread
            self.error = exc
        finally:
            self.scheduler.bound.set()
            network = getattr(self.scheduler.bs, "network", None)
            if network is not None:
                network.close()
                network.context.term()

    def port(self, wait_s: float = 10.0) -> int:
        """The port the decision process is bound to (waits until it is).

        Raises:
            ProtocolError: the thread failed before binding.
        """
        if not self.scheduler.bound.wait(wait_s) or self.scheduler.endpoint is None:
            raise ProtocolError(f"the decision process could not bind a socket: {self.error!r}")
        return int(self.scheduler.endpoint.rsplit(":", 1)[1])

    def stop(self, wait_s: float = 5.0) -> None:
        """Ask the loop to stop and wait for it."""
        self.scheduler.stop_event.set()
        self.join(wait_s)


def run_batsim(
    platform: Platform,
    workload: Workload,
    run_dir: str | Path,
    scheduler: HdrmScheduler,
    *,
    binary: str = "batsim",
    timeout_s: float = 60.0,
    extra_args: Sequence[str] = (),
    energy: bool = True,
) -> BatsimRun:
    """Simulate ``workload`` on ``platform`` with the real Batsim, deciding with ``scheduler``.

    Args:
        platform: the platform (exported to ``run_dir/platform.xml``).
        workload: the jobs (written to ``run_dir/workload.json``).
        run_dir: the run folder (created); Batsim's outputs go to ``run_dir/out/out_*``.
        scheduler: the decision process, built on the same platform.
        binary: the Batsim executable (a path or a name on PATH).
        timeout_s: how long Batsim may stay silent, and may take to exit at the end.
        extra_args: more Batsim arguments.
        energy: energy accounting (``-E``).

    Raises:
        ConfigError: a platform with GPUs (:func:`refuse_accelerators`) or too many cores
            (:func:`refuse_oversized`), or Batsim not found.
        WorkloadError: a job id the real Batsim refuses
            (:func:`~hdrm.batsim.jobs.check_batsim_ids`).
        SimulationError: Batsim exited early or with an error.
        ProtocolError: Batsim stopped answering, or sent a message the adapter does not understand.
    """
    refuse_accelerators(platform)
    refuse_oversized(platform)
    check_export_runs(workload)
    check_batsim_ids(workload, ENGINE_FIX)
    exe = find_batsim(binary)
    run_dir = Path(os.path.abspath(run_dir))  # Batsim runs in run_dir: every path it gets is absolute
    (run_dir / "out").mkdir(parents=True, exist_ok=True)
    xml = write_simgrid_xml(platform, run_dir / "platform.xml")
    wl = run_dir / "workload.json"
    write_batsim_json(workload, wl)
    prefix = run_dir / "out" / "out"
    t0 = time.perf_counter()
    thread = DecisionThread(scheduler, timeout_s)
    thread.start()
    command = batsim_command(exe, xml, wl, prefix, thread.port(), energy=energy, extra_args=extra_args)
    run = BatsimRun(run_dir, command, prefix, scheduler=scheduler)
    log_path = run_dir / "batsim.log"
    logger.info("starting %s", " ".join(command))
    with open(log_path, "w", encoding="utf-8") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=run_dir)
        try:
            _supervise(process, thread, log_path, timeout_s)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(5)
            if thread.is_alive():
                thread.stop()
    run.wall_s = time.perf_counter() - t0
    if run.jobs_csv.is_file():
        run.results = read_jobs_csv(run.jobs_csv)
    return run


def _supervise(process: subprocess.Popen, thread: DecisionThread, log_path: Path, timeout_s: float) -> None:
    """Wait for the decision loop and Batsim; turn every failure into one clear error."""
    exited_at: float | None = None
    while thread.is_alive():
        thread.join(0.05)
        if process.poll() is not None:
            exited_at = exited_at or time.monotonic()
            if time.monotonic() - exited_at > 1.0:
                thread.stop()
                raise SimulationError(
                    f"batsim exited with status {process.returncode} before the simulation ended; "
                    f"last lines of {log_path}:\n{log_tail(log_path)}"
                )
    error = thread.error
    if error is not None and not isinstance(error, DecisionStopped):
        if isinstance(error, HdrmError):
            raise type(error)(f"{error} (batsim log: {log_path})") from None
        raise ProtocolError(f"the decision process failed: {type(error).__name__}: {error} "
                            f"(batsim log: {log_path})") from error
    try:
        status = process.wait(max(timeout_s, EXIT_GRACE_S))
    except subprocess.TimeoutExpired:
        raise ProtocolError(f"batsim did not exit {max(timeout_s, EXIT_GRACE_S):g} s after the "
                            f"simulation ended; see {log_path}") from None
    if status != 0:
        raise SimulationError(f"batsim exited with status {status}; last lines of {log_path}:\n"
                              f"{log_tail(log_path)}")


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log file ('(empty log)' when there is nothing)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    tail = text.strip().splitlines()[-lines:]
    return "\n".join(tail) if tail else "(empty log)"
