"""Selecting jobs from a workload: the first N, a time window, or sequences of N jobs.

Every selection returns a new :class:`~hdrm.workload.job.Workload` whose jobs are new
:class:`~hdrm.workload.job.Job` objects re-indexed 0..n-1, with ``submit_s`` shifted so that the
earliest selected job is submitted at 0 (the first one, where jobs are in submit order).
``trace_submit_s`` keeps the trace's clock, the header and ``nb_res`` are carried over, and
``skipped`` keeps the source's counts (jobs the reader left out).

The RLScheduler evaluation protocol (Zhang et al., SC20) takes 10 sequences of 1,024 consecutive
jobs at fixed 0-based start indices (:data:`RLSCHEDULER_START_INDICES`) of the trace as their loader
keeps it (read it with ``conventions="rlscheduler"``), each run on an empty cluster.
"""

from __future__ import annotations

import logging
import operator
from dataclasses import fields
from numbers import Integral
from typing import Iterable, Sequence

from hdrm.errors import WorkloadError
from hdrm.workload.job import Job, Workload

logger = logging.getLogger(__name__)

#: A job's fields in the order :class:`Job` takes them (one C-level read of them all).
_JOB_FIELDS = operator.attrgetter(*(f.name for f in fields(Job) if f.init))

#: Start indices of RLScheduler's test sequences (0-based, after the rlscheduler loader's filter).
RLSCHEDULER_START_INDICES = (1981, 2756, 4299, 8850, 3316, 2714, 5228, 7762, 4022, 7085)

#: Jobs per RLScheduler test sequence.
RLSCHEDULER_SEQUENCE_LENGTH = 1024


def rebase(workload: Workload, jobs: Sequence[Job], name: str, in_place: bool = False
           ) -> Workload:
    """Return a workload of copies of ``jobs``, re-indexed and shifted so that the earliest
    submission is at 0 (never below).

    Args:
        workload: the workload the jobs come from (header, nb_res, source and skipped carry over).
        jobs: the selected jobs, in the workload's order (submission order, or job number
            order under the rlscheduler conventions).
        name: the new workload's name.
        in_place: re-index and shift the jobs themselves (not copies): for a workload just
            read, that nothing else holds (its jobs then belong to the selection).

    Raises:
        WorkloadError: ``jobs`` is empty.
    """
    if not jobs:
        raise WorkloadError(f"{_label(workload)}: the selection {name!r} has no jobs")
    # the earliest submission, not the first job's: jobs in id order (the rlscheduler
    # conventions) of a trace whose submit times are not in that order would go below 0
    origin_s = min(job.submit_s for job in jobs)
    deps = workload.dependencies
    deps = deps.subset([j.idx for j in jobs]) if deps is not None else None
    if in_place:
        copies = list(jobs)
        for i, job in enumerate(copies):
            job.idx = i
            job.submit_s -= origin_s
    else:
        # every field carries over (the GPU demand and CPU milli-cores too), with a fresh extra
        # dict; all fields are read by one C-level getter and passed in order
        # (dataclasses.replace, field by field in Python, cost RLScheduler's protocol a third of
        # a second per 100 sequences)
        copies = [Job(*_JOB_FIELDS(j)) for j in jobs]
        for i, (copy, j) in enumerate(zip(copies, jobs)):
            copy.idx = i
            copy.submit_s = j.submit_s - origin_s
            copy.extra = dict(j.extra)
    return Workload(copies, name, workload.source, workload.header, dict(workload.skipped),
                    workload.nb_res, deps)


def first_jobs(workload: Workload, nb_jobs: int, in_place: bool = False) -> Workload:
    """The first ``nb_jobs`` jobs (all of them when the workload is shorter, with a log line);
    ``in_place``: see :func:`rebase`.

    Raises:
        WorkloadError: ``nb_jobs`` < 1.
    """
    _check_count(workload, nb_jobs)
    if nb_jobs > len(workload):
        logger.info("%s: asked for %d jobs, it has %d", _label(workload), nb_jobs, len(workload))
    selected = workload.jobs[:nb_jobs]
    return rebase(workload, selected, f"{workload.name}[:{len(selected)}]", in_place)


def sequence(workload: Workload, start_index: int, nb_jobs: int, in_place: bool = False
             ) -> Workload:
    """The ``nb_jobs`` consecutive jobs starting at ``start_index`` (0-based); ``in_place``:
    see :func:`rebase`.

    Raises:
        WorkloadError: ``nb_jobs`` < 1, or the sequence does not fit in the workload; the message
            gives the valid start indices.
    """
    _check_count(workload, nb_jobs)
    last_start = len(workload) - nb_jobs
    if not 0 <= start_index <= last_start:
        valid = f"valid start indices: 0..{last_start}" if last_start >= 0 else "it is too short"
        raise WorkloadError(
            f"{_label(workload)}: cannot take {nb_jobs} jobs from index {start_index}: the "
            f"workload has {len(workload)} jobs ({valid})"
        )
    end = start_index + nb_jobs
    return rebase(workload, workload.jobs[start_index:end], f"{workload.name}[{start_index}:{end}]",
                  in_place)


def select(workload: Workload, start_index: int = 0, nb_jobs: int = 0, in_place: bool = False
           ) -> Workload:
    """``nb_jobs`` jobs from ``start_index`` (0: all the jobs from there), shifted to start at 0.

    The one selection of the user-facing commands and options (``nb_jobs`` and ``start_index``):
    from index 0 it is :func:`first_jobs` (a shorter workload gives all its jobs, with a log
    line), from any other index a :func:`sequence` that must fit. ``in_place`` shifts and
    re-indexes the workload's own jobs (see :func:`rebase`): for a workload just read.

    Raises:
        WorkloadError: ``nb_jobs`` negative, ``start_index`` outside the workload, or a sequence
            that does not fit; the message names the workload and the valid values.
    """
    if isinstance(nb_jobs, bool) or not isinstance(nb_jobs, Integral) or nb_jobs < 0:
        raise WorkloadError(
            f"{_label(workload)}: number of jobs must be a positive integer, or 0 for all the "
            f"jobs from the start index; got {nb_jobs!r}"
        )
    n = len(workload)
    if not n:
        raise WorkloadError(f"{_label(workload)}: the workload has no jobs to select from")
    if isinstance(start_index, bool) or not isinstance(start_index, Integral) or not (
            0 <= start_index < n):
        raise WorkloadError(
            f"{_label(workload)}: start index {start_index!r} is outside the workload's {n} "
            f"jobs (valid start indices: 0..{n - 1})"
        )
    if nb_jobs == 0:
        nb_jobs = n - start_index
    if start_index == 0:
        return first_jobs(workload, nb_jobs, in_place)
    return sequence(workload, start_index, nb_jobs, in_place)


def sequences(
    workload: Workload,
    start_indices: Iterable[int] = RLSCHEDULER_START_INDICES,
    nb_jobs: int = RLSCHEDULER_SEQUENCE_LENGTH,
) -> list[Workload]:
    """One :func:`sequence` of ``nb_jobs`` jobs per start index (RLScheduler's protocol by default).

    Raises:
        WorkloadError: a sequence does not fit (see :func:`sequence`).
    """
    return [sequence(workload, int(start), nb_jobs) for start in start_indices]


def time_window(workload: Workload, start_s: float, end_s: float) -> Workload:
    """The jobs submitted in ``[start_s, end_s)`` of the workload's ``submit_s`` clock.

    The selection is shifted so that its first job is submitted at 0.

    Raises:
        WorkloadError: ``end_s <= start_s``, or no job is submitted in the window (the message
            gives the workload's submission range).
    """
    if not end_s > start_s:
        raise WorkloadError(
            f"{_label(workload)}: time window [{start_s}, {end_s}) is empty; "
            "the end must be after the start"
        )
    selected = [job for job in workload.jobs if start_s <= job.submit_s < end_s]
    if not selected:
        first, last = _submit_range(workload)
        raise WorkloadError(
            f"{_label(workload)}: no job submitted in [{start_s}, {end_s}) s; jobs are submitted "
            f"from {first} s to {last} s"
        )
    return rebase(workload, selected, f"{workload.name}@[{start_s}, {end_s})")


def _submit_range(workload: Workload) -> tuple[float, float]:
    if not workload.jobs:
        return 0.0, 0.0
    return workload.jobs[0].submit_s, workload.jobs[-1].submit_s


def _check_count(workload: Workload, nb_jobs: int) -> None:
    if isinstance(nb_jobs, bool) or not isinstance(nb_jobs, Integral) or nb_jobs < 1:
        raise WorkloadError(
            f"{_label(workload)}: number of jobs must be a positive integer, got {nb_jobs!r}"
        )
    if not workload.jobs:
        raise WorkloadError(f"{_label(workload)}: the workload has no jobs to select from")


def _label(workload: Workload) -> str:
    return workload.source or workload.name or "workload"
