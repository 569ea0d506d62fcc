"""One finished (or rejected) job as Batsim reports it in ``out_jobs.csv``.

:class:`JobResult` carries Batsim 4.2.1's ``out_jobs.csv`` columns under Batsim's own names (all
times in seconds, energy in joules). The derived columns (``finish_time``, ``waiting_time``,
``turnaround_time``, ``stretch``) are computed when not given; a reader passes the values it read
so that writing the results back reproduces the file byte for byte. Its cores are an interval
set (:mod:`hdrm.results.core_sets`, whose names this module also exports).
"""

from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import dataclass

from hdrm.errors import ConfigError
from hdrm.results.core_sets import (  # noqa: F401 (re-exported: their former home)
    CoreRuns,
    consecutive_runs,
    format_interval_set,
    format_runs,
    interval_ranges,
    parse_interval_ranges,
    parse_interval_set,
    sorted_runs,
)

logger = logging.getLogger(__name__)

COMPLETED_SUCCESSFULLY = "COMPLETED_SUCCESSFULLY"
COMPLETED_FAILED = "COMPLETED_FAILED"
COMPLETED_WALLTIME_REACHED = "COMPLETED_WALLTIME_REACHED"
COMPLETED_KILLED = "COMPLETED_KILLED"
REJECTED = "REJECTED"
#: Every final state Batsim writes in the ``final_state`` column.
FINAL_STATES = (
    COMPLETED_SUCCESSFULLY,
    COMPLETED_FAILED,
    COMPLETED_WALLTIME_REACHED,
    COMPLETED_KILLED,
    REJECTED,
)
#: Default threshold of the bounded slowdown, in seconds.
BSLD_THRESHOLD_S = 10.0

_USER_RE = re.compile(r"\buser(?:_id)?\s*[=:]\s*['\"]?([^'\",;\s}]+)")


def metadata_user(metadata: str) -> str | None:
    """The user named in a job's metadata, or None.

    Understands a JSON object with a ``user`` (or ``user_id``) key and ``user=NAME`` /
    ``user: NAME`` text.
    """
    text = metadata.strip()
    if not text:
        return None
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            for key in ("user", "user_id"):
                if data.get(key) not in (None, ""):
                    return str(data[key])
            return None
    match = _USER_RE.search(text)
    return match.group(1) if match else None


@dataclass(slots=True)
class JobResult:
    """One row of Batsim's ``out_jobs.csv`` (times in seconds, energy in joules).

    Attributes:
        job_id: the job's id within its workload (Batsim writes it without the ``w0!`` prefix).
        workload_name: the workload the job came from.
        profile: the job's profile name.
        submission_time: when the job was submitted.
        requested_number_of_resources: cores requested.
        requested_time: the walltime (Batsim writes -1 when none).
        success: 1 when the job completed successfully, else 0.
        final_state: one of :data:`FINAL_STATES`.
        starting_time: when it started; None when rejected.
        execution_time: how long it ran; None when rejected.
        finish_time: when it ended; computed as start + execution when None.
        waiting_time: start - submission; computed when None.
        turnaround_time: finish - submission; computed when None.
        stretch: turnaround / execution (Batsim's "slowdown"); computed when None.
        allocated_resources: the cores it ran on, as an interval set (``"0-3 8"``).
        consumed_energy: energy its machines consumed while it ran; -1 when energy is not
            simulated; None when rejected.
        metadata: the job's free-text metadata ("" by default).
    """

    job_id: str
    workload_name: str = "w0"
    profile: str = ""
    submission_time: float = 0.0
    requested_number_of_resources: int = 1
    requested_time: float = -1.0
    success: int = 1
    final_state: str = COMPLETED_SUCCESSFULLY
    starting_time: float | None = None
    execution_time: float | None = None
    finish_time: float | None = None
    waiting_time: float | None = None
    turnaround_time: float | None = None
    stretch: float | None = None
    allocated_resources: str = ""
    consumed_energy: float | None = -1.0
    metadata: str = ""

    def __post_init__(self) -> None:
        if self.final_state not in FINAL_STATES:
            raise ConfigError(
                f"job {self.job_id!r}: unknown final_state {self.final_state!r}; "
                f"choose one of: {', '.join(FINAL_STATES)}"
            )
        if self.final_state == REJECTED:
            return
        if self.starting_time is None or self.execution_time is None:
            raise ConfigError(
                f"job {self.job_id!r} ({self.final_state}): starting_time and execution_time "
                f"are required unless the job was REJECTED"
            )
        self._derive()

    def _derive(self) -> None:
        """Fill the derived columns that were not given, as Batsim computes them."""
        if self.finish_time is None:
            self.finish_time = self.starting_time + self.execution_time
        if self.waiting_time is None:
            self.waiting_time = self.starting_time - self.submission_time
        if self.turnaround_time is None:
            self.turnaround_time = self.finish_time - self.submission_time
        if self.stretch is None:
            self.stretch = _ratio(self.turnaround_time, self.execution_time)

    @property
    def rejected(self) -> bool:
        """True when the job was rejected (it never ran)."""
        return self.final_state == REJECTED

    @property
    def finished(self) -> bool:
        """True when the job ran to an end (successfully, failed, killed or out of walltime)."""
        return self.final_state != REJECTED

    @property
    def killed(self) -> bool:
        """True when the job ran but did not complete successfully (Batsim's nb_jobs_killed)."""
        return self.finished and self.final_state != COMPLETED_SUCCESSFULLY

    def core_ids(self) -> list[int]:
        """The cores the job ran on, sorted."""
        return parse_interval_set(self.allocated_resources)

    def core_ranges(self) -> list[tuple[int, int]]:
        """The cores the job ran on as sorted, merged, inclusive ``(lo, hi)`` ranges."""
        return parse_interval_ranges(self.allocated_resources)

    def bounded_slowdown(self, threshold_s: float = BSLD_THRESHOLD_S) -> float | None:
        """``max(1, (wait + run) / max(run, threshold_s))``; None when the job was rejected."""
        if self.rejected:
            return None
        return bounded_slowdown(float(self.waiting_time), float(self.execution_time), threshold_s)

    def user(self) -> str | None:
        """The user named in the metadata, or None (see :func:`metadata_user`)."""
        return metadata_user(self.metadata)


def bounded_slowdown(wait_s: float, run_s: float, threshold_s: float = BSLD_THRESHOLD_S) -> float:
    """``max(1, (wait + run) / max(run, threshold_s))`` of a job that waited ``wait_s`` and ran
    ``run_s`` seconds (the one definition: :meth:`JobResult.bounded_slowdown` uses it)."""
    return max(1.0, (wait_s + run_s) / max(run_s, threshold_s))


def _ratio(num: float, den: float) -> float:
    """``num / den`` with C's float semantics at zero (inf, or nan for 0/0)."""
    if den == 0:
        if num == 0:
            return math.nan
        return math.copysign(math.inf, num)
    return num / den
