"""Field 11 of an SWF line (status), and the partial-execution lines it marks.

SWF 2.2 (Parallel Workloads Archive) defines the status of a job as 1 completed, 0 failed,
5 cancelled (-1 unknown, as in models). A job that was checkpointed or swapped out is recorded on
several lines with the same job number: one line for the whole job (its summary, with one of the
statuses above), and one line per partial execution, with status 2 (a partial execution that will
be continued), 3 (the last partial execution; the job completed) or 4 (the last partial execution;
the job failed).

hdrm replays the job from its summary line and leaves the partial-execution lines out, always,
counting them as ``"partial execution line"`` (no job is lost). A partial-execution line whose job
has no other line breaks the standard: a strict read refuses it naming the line, a read with
``strict=False`` skips it and counts it as ``"partial execution without its job's line"``.

Jobs of every other status are replayed as their lines say: a failed or cancelled job that ran
held its processors for its run time; one cancelled before it started has no run time or no
processors (-1) and is skipped by the conventions under that reason
(:mod:`hdrm.workload.conventions`).
"""

from __future__ import annotations

import logging

from hdrm.lazy import numpy as np

from hdrm.errors import SkippableLineError

__all__ = ["PARTIAL_STATUS", "SKIP_PARTIAL", "SKIP_PARTIAL_ORPHAN", "drop_partial_executions"]

logger = logging.getLogger(__name__)

#: Field 11 (status) of the lines of a job's partial executions.
PARTIAL_STATUS = (2, 3, 4)

#: Skip reasons: partial executions of a job read from its summary line; those without one.
SKIP_PARTIAL = "partial execution line"
SKIP_PARTIAL_ORPHAN = "partial execution without its job's line"

#: Column (0-based) of field 11.
_STATUS = 10


def drop_partial_executions(
    fields: np.ndarray, numbers: np.ndarray, path: str, strict: bool
) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """Leave out the partial-execution lines (status 2, 3, 4) of an ``(n, 18)`` field array.

    Args:
        fields: the SWF fields of the job lines, one row per line.
        numbers: the file line number of each row.
        path: the file, for the messages.
        strict: refuse a partial execution whose job has no other line (else skip it).

    Returns:
        The other rows, their line numbers, and the lines left out per reason.

    Raises:
        SkippableLineError: ``FILE:LINE: field 11 (status) is 3, a partial execution of job 7,
            and no line of job 7 has another status ...`` (strict only).
    """
    partial = np.isin(fields[:, _STATUS], PARTIAL_STATUS)
    if not partial.any():
        return fields, numbers, {}
    orphan = partial & ~np.isin(fields[:, 0], fields[~partial, 0])
    if orphan.any() and strict:
        row = int(np.argmax(orphan))
        job = f"job {fields[row, 0]:g}"
        raise SkippableLineError(
            f"{path}:{numbers[row]}: field 11 (status) is {fields[row, _STATUS]:g}, a partial "
            f"execution of {job}, and no line of {job} has another status (its summary line)",
            "add the job's summary line before its partial executions",
            "partial executions without their job's line",
        )
    counts = {SKIP_PARTIAL_ORPHAN: int(np.count_nonzero(orphan)),
              SKIP_PARTIAL: int(np.count_nonzero(partial & ~orphan))}
    if counts[SKIP_PARTIAL_ORPHAN]:
        logger.warning("%s: skipped %d partial execution lines without their job's line", path,
                       counts[SKIP_PARTIAL_ORPHAN])
    if counts[SKIP_PARTIAL]:
        logger.info("%s: %d partial execution lines (status 2-4) left out; their jobs are read "
                    "from their summary lines", path, counts[SKIP_PARTIAL])
    return fields[~partial], numbers[~partial], {k: n for k, n in counts.items() if n}
