"""Run a sweep's runs without Ray: one after the other in this process, or in worker processes.

Both call :func:`hdrm.distributed.runner.execute`, as the Ray backend does, so the outputs are the
same whichever backend ran them.
"""

from __future__ import annotations

import logging
import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path

from hdrm.distributed.runner import execute, execute_reporting, raise_failure
from hdrm.distributed.spec import RunSpec

logger = logging.getLogger(__name__)

#: Called with each finished run's ``{"name", "wall_s", "cpu_s"}``.
OnDone = Callable[[dict], None]


def run_serial(runs: Sequence[RunSpec], runs_dir: Path, on_done: OnDone) -> None:
    """Run every run in this process, in order."""
    for run in runs:
        on_done(execute(run, runs_dir))


def run_processes(runs: Sequence[RunSpec], runs_dir: Path, on_done: OnDone,
                  max_parallel: int) -> None:
    """Run the runs in ``max_parallel`` worker processes (spawned: no state shared with this one).

    At most ``max_parallel`` runs are submitted ahead, so an interruption (Ctrl-C) stops after
    the runs in progress; the first run that fails stops the sweep with its error.
    """
    context = multiprocessing.get_context("spawn")
    queue = list(reversed(runs))
    with ProcessPoolExecutor(max_workers=max_parallel, mp_context=context) as pool:
        pending: set[Future] = set()
        try:
            while queue or pending:
                while queue and len(pending) < max_parallel:
                    pending.add(pool.submit(execute_reporting, queue.pop(), runs_dir))
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    on_done(raise_failure(future.result()))
        except BaseException:
            for future in pending:
                future.cancel()
            raise
