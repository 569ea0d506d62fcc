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

from hdrm.workload.job import PROFILE_DELAY, PROFILE_PARALLEL_HOMOGENEOUS_TOTAL, Job

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


def start_kwargs(job: Job, nb_hosts: int | None = None) -> dict[str, float]:
    """Keyword arguments of :meth:`~hdrm.sim.machine.Machine.start` for ``job``'s profile and
    walltime on ``nb_hosts`` hosts (its ``res`` when None): those :func:`start_job` passes."""
    kwargs: dict[str, float] = {}
    cores = range(job.res if nb_hosts is None else nb_hosts) if job.parts else ()
    start_job(lambda _key, _cores, **given: kwargs.update(given), job, cores)
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
    if job.parts:
        _start_parts(start, job, cores, walltime, runs)
    elif runs is not None:
        if job.profile_type == PROFILE_DELAY:
            start(job.idx, cores, delay_s=job.run_time_s, walltime_s=walltime, runs=runs)
        else:
            start(job.idx, cores, ops_gflop=job.ops_gflop, walltime_s=walltime, runs=runs)
    elif job.profile_type == PROFILE_DELAY:
        start(job.idx, cores, delay_s=job.run_time_s, walltime_s=walltime)
    else:
        start(job.idx, cores, ops_gflop=job.ops_gflop, walltime_s=walltime)


def machine_parts(job: Job, nb_hosts: int) -> tuple[tuple[float | None, float | None], ...]:
    """The parts of ``job`` (a ``composed`` or ``parallel_homogeneous_total`` one) as the
    machine runs them on ``nb_hosts`` hosts: ``(delay_s, None)``, or ``(None, ops_gflop)`` per
    host, a total amount spread evenly over the hosts (Batsim: ``cpu / nb_res`` each)."""
    out: list[tuple[float | None, float | None]] = []
    for part in job.parts:
        if part.kind == PROFILE_DELAY:
            out.append((part.amount, None))
        elif part.kind == PROFILE_PARALLEL_HOMOGENEOUS_TOTAL:
            out.append((None, part.amount / nb_hosts))
        else:
            out.append((None, part.amount))
    return tuple(out)


def _start_parts(start: Callable[..., None], job: Job, cores: Sequence[int], walltime: float,
                 runs: list[tuple[int, int]] | None) -> None:
    parts = machine_parts(job, len(cores))
    more = {} if runs is None else {"runs": runs}
    if len(parts) > 1:
        start(job.idx, cores, parts=parts, walltime_s=walltime, **more)
    elif parts[0][0] is not None:
        start(job.idx, cores, delay_s=parts[0][0], walltime_s=walltime, **more)
    else:
        start(job.idx, cores, ops_gflop=parts[0][1], walltime_s=walltime, **more)
