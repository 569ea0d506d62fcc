"""One Batsim run in the background, stepped by its caller (the ``batsim`` engine's environment).

:class:`BatsimSession` writes the inputs, starts the decision process and Batsim without waiting
for them (:mod:`hdrm.batsim.env_bridge` steps through the run); :meth:`BatsimSession.check` turns
every failure into one clear error (Batsim exiting early, with the tail of its log; the decision
process failing, naming Batsim's log); :meth:`BatsimSession.finish` reads Batsim's outputs.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
import weakref
from pathlib import Path
from typing import Sequence

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
    refuse_oversized,
)
from hdrm.errors import ConfigError, HdrmError, ProtocolError, SimulationError
from hdrm.platform.model import Platform
from hdrm.platform.simgrid import write_simgrid_xml
from hdrm.results.csvio import read_jobs_csv
from hdrm.workload.batsim_json import write_batsim_json
from hdrm.workload.job import Workload

logger = logging.getLogger(__name__)

#: Seconds Batsim may stay silent in ``hdrm replay --engine batsim``.
DEFAULT_TIMEOUT_S = 60.0
#: Seconds the decision process may go on after Batsim exited before it counts as an early exit.
EARLY_EXIT_GRACE_S = 1.0


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
        refuse_oversized(platform)
        self.exe = find_batsim(binary)
        self.platform = platform
        self.workload = workload
        self.scheduler = scheduler
        self.timeout_s = timeout_s
        self.extra_args = tuple(extra_args)
        # Batsim runs in run_dir: every path it gets is absolute
        run_dir = Path(os.path.abspath(run_dir))
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
                raise ConfigError(f"batsim.binary: cannot run {self.exe!r} "
                                  f"({exc.strerror or exc}); check that it is a Batsim 4.x "
                                  "executable") from None

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
