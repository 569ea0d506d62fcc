"""How a job enters and leaves the simulated machine (:class:`~hdrm.sim.machine.Machine`).

A job enters with the arguments of its profile (:func:`start_kwargs`: a fixed delay or an amount
of work per host, and its walltime or none) and leaves with a :class:`JobEnd`: its final state,
the times it started and ended, the hosts it held, the energy they consumed while it ran and the
fraction of it that was done. The three final states are Batsim's names
(``COMPLETED_SUCCESSFULLY``, ``COMPLETED_WALLTIME_REACHED``, ``COMPLETED_KILLED``), so engines and
outputs write them unchanged.

Every engine (the built-in simulator, the Batsim-protocol server, the GPU machine) speaks these
records; :mod:`hdrm.sim.machine` re-exports them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

from hdrm.workload.job import PROFILE_DELAY, Job

COMPLETED_SUCCESSFULLY = "COMPLETED_SUCCESSFULLY"
COMPLETED_WALLTIME_REACHED = "COMPLETED_WALLTIME_REACHED"
COMPLETED_KILLED = "COMPLETED_KILLED"


@dataclass(slots=True)
class JobEnd:
    """How and when a job left the machine.

    ``cores`` are in the order the job was given them: a tuple, or for more than
    :data:`~hdrm.core.runs.WIDE` cores a :class:`~hdrm.results.core_sets.CoreRuns` (equal to that
    tuple).
    """

    key: int
    state: str
    start_s: float
    finish_s: float
    cores: Sequence[int]
    energy_j: float
    progress: float


def start_kwargs(job: Job) -> dict[str, float]:
    """Keyword arguments of :meth:`~hdrm.sim.machine.Machine.start` for ``job``'s profile and
    walltime: those :func:`start_job` passes."""
    kwargs: dict[str, float] = {}
    start_job(lambda _key, _cores, **given: kwargs.update(given), job, ())
    return kwargs


def start_job(start: Callable[..., None], job: Job, cores: Sequence[int],
              runs: list[tuple[int, int]] | None = None) -> None:
    """Call ``start`` (a machine's :meth:`~hdrm.sim.machine.Machine.start`) for ``job`` on
    ``cores``: its profile's work (a fixed delay or an amount of computation) and its walltime
    (inf when it has none), passed without making a dict; ``runs`` (the runs of consecutive ids
    of ``cores``, where known) passed on when given."""
    walltime = job.walltime_s
    if not 0.0 < walltime < math.inf:  # Job.has_walltime, inline
        walltime = math.inf
    if runs is not None:
        if job.profile_type == PROFILE_DELAY:
            start(job.idx, cores, delay_s=job.run_time_s, walltime_s=walltime, runs=runs)
        else:
            start(job.idx, cores, ops_gflop=job.ops_gflop, walltime_s=walltime, runs=runs)
    elif job.profile_type == PROFILE_DELAY:
        start(job.idx, cores, delay_s=job.run_time_s, walltime_s=walltime)
    else:
        start(job.idx, cores, ops_gflop=job.ops_gflop, walltime_s=walltime)
