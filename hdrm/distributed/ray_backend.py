"""Run a sweep's runs as Ray tasks, on a Ray started in this process or on a cluster.

Without ``address`` a local, single-node Ray starts inside this process and stops at the end:
every server it opens (GCS, raylet, object manager, workers, runtime-env agent) listens on the
loopback interface only and the dashboard is off. On Linux Ray would pick the machine's network
address and listen on every interface; the start therefore asks for the single-machine mode Ray
uses on laptops (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, unless the user set that variable).

Ray lowers the priority of its worker processes by default (niceness +15 over the process that
started it), to keep its own servers responsive on a busy node. On a machine shared with other
work that starves the workers: everything else at a normal or mildly lowered priority runs
first, so a rollout worker or a sweep's task gets a fraction of a core while the same work in
one process gets a whole one. A local Ray started here runs its workers at the priority of the
process that started it (:data:`WORKER_NICENESS`), unless the variable ``RAY_worker_niceness``
is set (then Ray applies that value). With ``address`` (``auto``, or ``HOST:PORT`` of a head started by
``ray start --head``) the driver joins that cluster and leaves it running, with the settings its
head was started with. A Ray this process already started (``ray.init`` in a test or a notebook)
is used as it is.

This module imports ``ray`` only inside its functions.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from hdrm.distributed import RAY_MISSING
from hdrm.distributed.local import OnDone
from hdrm.distributed.runner import done_info, execute_reporting, is_done, raise_failure
from hdrm.distributed.spec import RunSpec
from hdrm.errors import ConfigError, HdrmError

logger = logging.getLogger(__name__)

#: Ray's switch for a single-machine node on the loopback interface (read when ray is imported).
LOCAL_NODE_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
#: Times a task is retried when its worker process dies (not when the run itself fails).
MAX_RETRIES = 2
#: Most runs one Ray task plays (see :func:`run_ray`).
MAX_CHUNK = 32
#: A chunk holds at most the runs left over this many per run at a time (:func:`chunk_size`).
CHUNK_SPLIT = 4
#: Niceness a local Ray adds to its worker processes (Ray's own default is 15): 0 runs them at
#: the priority of the process that started Ray, as the same work would run in that process.
WORKER_NICENESS = 0
#: Ray's variable for that niceness; when set, a local Ray keeps its value.
NICENESS_ENV = "RAY_worker_niceness"


def import_ray() -> Any:
    """Import Ray.

    Raises:
        ConfigError: Ray is not installed (the message names the extra to install).
    """
    try:
        import ray
    except ModuleNotFoundError as exc:
        if exc.name == "ray":
            raise ConfigError(RAY_MISSING) from None
        raise
    return ray


@contextmanager
def _single_machine(ray: Any) -> Iterator[None]:
    """While a local Ray starts: make it a single-machine node on the loopback interface.

    Ray reads :data:`LOCAL_NODE_ENV` once, when it is imported (its driver here may have been
    imported long before), and again in every process it starts (they inherit this process's
    environment). Both are set for the start and restored afterwards; a value the user gave to
    the variable is kept.
    """
    saved = os.environ.get(LOCAL_NODE_ENV)
    os.environ.setdefault(LOCAL_NODE_ENV, "0")
    single = os.environ[LOCAL_NODE_ENV].strip().lower() in ("0", "false", "no", "off")
    constants = getattr(getattr(ray, "_private", None), "ray_constants", None)
    before = getattr(constants, "ENABLE_RAY_CLUSTER", None)
    if before is not None:
        constants.ENABLE_RAY_CLUSTER = not single
    try:
        yield
    finally:
        if before is not None:
            constants.ENABLE_RAY_CLUSTER = before
        if saved is None:
            os.environ.pop(LOCAL_NODE_ENV, None)


@contextmanager
def _sigterm_kept() -> Iterator[None]:
    """While a Ray started here runs: the program's own SIGTERM handler, and when it has stopped,
    the handler from before it started.

    ``ray.init`` replaces the SIGTERM handler of the main thread with one that calls
    ``sys.exit(15)`` (and a local node's start with one that stops its processes and calls
    ``sys.exit(1)``), and leaves it after ``ray.shutdown()``: a program that turns SIGTERM into
    its own clean-up, one line and exit 143 (:func:`hdrm.cli.script.guarded`) died of
    ``SystemExit(15)`` instead, no line said why, and its ``finally`` blocks ran in the middle of
    whatever the signal interrupted. A handler of the program's own (a Python callable) is put
    back once Ray has started (the Ray started here is stopped by :func:`connect`'s
    ``ray.shutdown()`` as the program's clean-up unwinds); where SIGTERM had its default action
    or was ignored, Ray's handler stays while Ray runs. Main thread only (Ray sets none elsewhere).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if before is not None and signal.getsignal(signal.SIGTERM) is not before:
            signal.signal(signal.SIGTERM, before)


@contextmanager
def connect(address: str | None = None, num_cpus: int | None = None) -> Iterator[Any]:
    """Ray, ready for tasks: the one already running, a cluster's, or a local one.

    Args:
        address: a cluster to join (``"auto"`` or ``"HOST:PORT"``); None starts a local Ray.
        num_cpus: CPUs of a local Ray (None: this machine's count); ignored for a cluster.

    Yields:
        the ``ray`` module. A Ray started here is shut down on exit.
    """
    ray = import_ray()
    if address is not None:
        check_reachable(address)
    if ray.is_initialized():
        yield ray
        return
    settings: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                "logging_level": logging.WARNING}
    if address is None:
        # "local": always a new Ray of our own, never a cluster ray start left on this machine
        settings.update(address="local", num_cpus=num_cpus or os.cpu_count() or 1)
        if NICENESS_ENV not in os.environ:  # the user's own setting wins
            settings["_system_config"] = {"worker_niceness": WORKER_NICENESS}
    else:
        settings["address"] = address
    with _sigterm_kept():  # Ray's handler out of the way (see there)
        try:
            with _sigterm_kept() if callable(signal.getsignal(signal.SIGTERM)) else nullcontext():
                if address is None or _is_loopback(address):
                    with _single_machine(ray):  # a head on 127.0.0.1 is reached from it only
                        ray.init(**settings)
                else:
                    ray.init(**settings)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            where = f"the Ray cluster at {address}" if address else "a local Ray"
            raise ConfigError(f"--address: cannot start or join {where}: {exc}".split("\n")[0]
                              + "; check the address (ray status) or leave --address out"
                              ) from None
        try:
            yield ray
        finally:
            ray.shutdown()


def _is_loopback(address: str) -> bool:
    """Whether ``HOST:PORT`` names this machine's loopback interface."""
    host = address.rpartition(":")[0].strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast on a ``HOST:PORT`` where no Ray head answers (Ray itself retries for minutes).

    ``auto`` and ``ray://`` client addresses are left to Ray.

    Raises:
        ConfigError: the address is malformed, or nothing accepts a connection there.
    """
    if address == "auto" or "://" in address:
        return
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--address: expected 'auto' or HOST:PORT of a Ray head (ray start "
                          f"--head prints it), got {address!r}")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"--address: no Ray head answers at {address} ({reason}); start one "
                          "with 'ray start --head' there, check the address with 'ray status', "
                          "or leave --address out to start Ray in this process") from None


def cluster_cpus(ray: Any) -> int:
    """The CPUs of the Ray cluster this process is connected to (at least 1)."""
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def chunk_size(left: int, parallel: int) -> int:
    """Runs in the next chunk when ``left`` runs are still to submit: at most
    :data:`MAX_CHUNK`, and at most ``left / (CHUNK_SPLIT x parallel)`` (at least one), so the last
    chunks shrink and the workers finish together."""
    return max(1, min(MAX_CHUNK, left // (CHUNK_SPLIT * max(parallel, 1))))


def run_chunk(runs: Sequence[RunSpec], runs_dir: str,
              function: Callable[[RunSpec, str], dict] = execute_reporting) -> list[dict]:
    """One Ray task: ``function(run, runs_dir)`` for each run in order, in this process.

    A run already finished (the task is a retry: its worker died after that run) is reported
    from its done.json and not run again. The first run that fails ends the chunk.

    Returns:
        one result of ``function`` (or of the done.json) per run played, in order.
    """
    results = []
    for run in runs:
        info = done_info(run, runs_dir) or function(run, runs_dir)
        results.append(info)
        if "error" in info:
            break
    return results


def run_ray(ray: Any, runs: Sequence[RunSpec], runs_dir: Path, on_done: OnDone,
            max_parallel: int, function: Callable[[RunSpec, str], dict] = execute_reporting
            ) -> None:
    """Run the runs as Ray tasks (one CPU each), at most ``max_parallel`` at a time.

    Each task plays a chunk of runs one after the other (:func:`chunk_size`, :func:`run_chunk`):
    a task costs milliseconds of submission, scheduling and reply, a short replay tens of them.
    Every run is still written on its own (scratch folder, done.json, rename: :mod:`runner`), so
    an interruption keeps the finished runs of a chunk and a resume skips them; ``on_done`` is
    called for each run when its chunk returns.

    The run folder must be on storage every node sees (it is, on one machine). A task whose
    worker dies is retried (:data:`MAX_RETRIES`; it resumes after its finished runs); a run that
    fails stops the sweep with its error; an interruption cancels the tasks in flight.

    Args:
        function: what each task calls with a run and the run folder (tests replace it).
    """
    task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES)(run_chunk)
    queue = list(reversed(runs))
    pending: dict[Any, list[RunSpec]] = {}
    folder = str(Path(runs_dir).resolve())
    try:
        while queue or pending:
            while queue and len(pending) < max_parallel:
                chunk = [queue.pop() for _ in range(chunk_size(len(queue), max_parallel))]
                pending[task.remote(chunk, folder, function)] = chunk
            finished, _ = ray.wait(list(pending), num_returns=1)
            for ref in finished:
                chunk = pending.pop(ref)
                for info in _value(ray, ref, chunk, folder):
                    on_done(raise_failure(info))
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise


def _value(ray: Any, ref: Any, chunk: Sequence[RunSpec], folder: str) -> list[dict]:
    """A chunk's results; Ray's own failures (a worker lost more often than retried, a node
    gone) become one line naming the chunk's first run that did not finish."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayError as exc:
        run = next((r for r in chunk if not is_done(r, folder)), chunk[0])
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise HdrmError(f"run {run.name}: Ray could not run it ({type(exc).__name__}: {reason}); "
                        "its worker was retried "
                        f"{MAX_RETRIES} times; run the same command again to resume") from None
