"""Batsim's ``composed`` profiles (sequences of other profiles) and their leaf parts.

Batsim 4.2.1 (``src/profiles.cpp``, ``src/jobs_execution.cpp``) reads ``{"type": "composed",
"repeat": R, "seq": [names]}``: ``repeat`` an integer >= 1 (1 when absent), ``seq`` a non-empty
list of profile names, possibly composed themselves. It runs the sequence ``repeat`` times, each
part on all the job's hosts after the one before, with the walltime left passed on from part to
part. :func:`composed_parts` flattens such a profile into :class:`~hdrm.workload.job.JobPart`
leaves in execution order, each with its trail (the sequences above it and Batsim's
``current_task_index`` in each: iteration x length + position), which ``JOB_KILLED`` reports.

Leaves of a type hdrm cannot run (``parallel`` with a matrix, a part with ``com`` > 0 ...) are
kept with a NaN amount, so that engines refuse them by name (:func:`part_problem`).
"""

from __future__ import annotations

import math
from typing import Any

from hdrm.errors import WorkloadError
from hdrm.workload.job import (
    PROFILE_COMPOSED,
    PROFILE_DELAY,
    PROFILE_PARALLEL_HOMOGENEOUS,
    PROFILE_PARALLEL_HOMOGENEOUS_TOTAL,
    Job,
    JobPart,
)

#: FLOP in one GFLOP.
_FLOP_PER_GFLOP = 1e9
#: Leaf types hdrm runs (with ``com`` 0 for the two computing ones).
RUNNABLE_PARTS = (PROFILE_DELAY, PROFILE_PARALLEL_HOMOGENEOUS, PROFILE_PARALLEL_HOMOGENEOUS_TOTAL)


def composed_parts(name: str, profiles: dict, source: str) -> tuple[JobPart, ...]:
    """The leaf parts of composed profile ``name`` of ``profiles``, in execution order.

    Raises:
        WorkloadError: a bad ``repeat`` or ``seq``, an unknown profile name in ``seq``, a
            sequence that contains itself, or a bad leaf field, naming the profile and the fix.
    """
    parts: list[JobPart] = []
    _flatten(name, profiles, source, (), (name,), parts)
    return tuple(parts)


def used_profiles(name: str, profiles: dict) -> dict[str, Any]:
    """Every profile ``name`` refers to through its sequences (itself excluded), in first-use
    order: what a writer must keep beside it and what Batsim keeps when it drops the others."""
    found: dict[str, Any] = {}
    stack = [name]
    while stack:
        body = profiles.get(stack.pop())
        if isinstance(body, dict) and body.get("type") == PROFILE_COMPOSED:
            for sub in reversed(body.get("seq", [])):
                if sub not in found and sub != name and sub in profiles:
                    found[sub] = profiles[sub]
                    stack.append(sub)
    return found


def _flatten(name: str, profiles: dict, source: str, trail: tuple[tuple[str, int], ...],
             path: tuple[str, ...], out: list[JobPart]) -> None:
    from hdrm.workload.batsim_jobs import _number, require

    where = f"profiles.{name}"
    body = profiles[name]
    repeat = body.get("repeat", 1)
    if type(repeat) is not int or repeat < 1:
        raise WorkloadError(f"{source}: {where}.repeat must be an integer >= 1, got {repeat!r} "
                            "(Batsim 4 refuses it); leave it out to run the sequence once")
    seq = require(body, "seq", source, where)
    if not isinstance(seq, list) or not seq:
        raise WorkloadError(f"{source}: {where}.seq must be a non-empty list of profile names, "
                            f"got {seq!r}")
    for i, sub in enumerate(seq):
        if not isinstance(sub, str) or sub not in profiles:
            raise WorkloadError(f"{source}: {where}.seq[{i}] {sub!r} is not a profile of the "
                                f"workload; name one of {', '.join(map(str, profiles))}")
        if sub in path:
            raise WorkloadError(f"{source}: {where}.seq[{i}] {sub!r} contains {where} again "
                                f"({' -> '.join(path + (sub,))}); a sequence cannot repeat "
                                "itself: use 'repeat'")
    for iteration in range(repeat):
        for i, sub in enumerate(seq):
            step = trail + ((name, iteration * len(seq) + i),)
            sub_body = profiles[sub]
            if not isinstance(sub_body, dict):
                raise WorkloadError(f"{source}: profiles.{sub} must be an object")
            kind = require(sub_body, "type", source, f"profiles.{sub}")
            if kind == PROFILE_COMPOSED:
                _flatten(sub, profiles, source, step, path + (sub,), out)
                continue
            amount = math.nan
            if kind == PROFILE_DELAY:
                amount = _number(sub_body, "delay", source, f"profiles.{sub}", minimum=0.0)
            elif kind in (PROFILE_PARALLEL_HOMOGENEOUS, PROFILE_PARALLEL_HOMOGENEOUS_TOTAL):
                cpu = _number(sub_body, "cpu", source, f"profiles.{sub}", minimum=0.0)
                if not sub_body.get("com", 0):
                    amount = cpu / _FLOP_PER_GFLOP
            out.append(JobPart(kind, amount, sub, step))


def part_problem(job: Job) -> str:
    """Why hdrm cannot run ``job``'s composed profile ('' when it can): its first part of
    another type, or with communication, which needs SimGrid's network model."""
    if job.profile_type != PROFILE_COMPOSED:
        if job.parts and math.isnan(job.parts[0].amount):
            return (f"job {job.id!r}: profile {job.profile!r} of type {job.profile_type!r} has "
                    "com > 0 (SimGrid's network model)")
        return ""
    for part in job.parts:
        if part.kind not in RUNNABLE_PARTS:
            return (f"job {job.id!r}: profile {job.profile!r} has a part {part.profile!r} of type "
                    f"{part.kind!r}")
        if math.isnan(part.amount):
            return (f"job {job.id!r}: profile {job.profile!r} has a part {part.profile!r} with "
                    "com > 0 (SimGrid's network model)")
    return ""


def parts_run_time_s(parts: tuple[JobPart, ...], res: int, ref: float | None) -> float:
    """A composed job's run time on ``res`` hosts at ``ref`` GFLOP/s (its delays alone when
    ``ref`` is None and it computes nothing; NaN when unknown)."""
    total = 0.0
    for part in parts:
        if part.kind == PROFILE_DELAY:
            total += part.amount
        elif ref is None or part.kind not in RUNNABLE_PARTS:
            return math.nan
        elif part.kind == PROFILE_PARALLEL_HOMOGENEOUS_TOTAL:
            total += part.amount / res / ref
        else:
            total += part.amount / ref
    return total


def progress_tree(job: Job, part_i: int, progress: float) -> dict[str, Any]:
    """Batsim's ``job_progress`` of a ``composed`` job killed in its part ``part_i`` (done to
    ``progress``): each sequence's ``current_task_index`` and ``current_task`` down to the
    running leaf's ``profile_name`` and ``progress`` (``src/protocol.cpp``)."""
    part = job.parts[part_i]
    node: dict[str, Any] = {"profile_name": part.profile, "progress": float(progress)}
    for name, index in reversed(part.trail):
        node = {"profile_name": name, "current_task_index": index, "current_task": node}
    return node
