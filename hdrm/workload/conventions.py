"""How the 18 SWF fields become simulated jobs: named, documented, selectable convention sets.

An SWF line records what happened to a job, not what a simulator needs. A *convention set* states
which field gives the requested processors, the requested time, the run time and the memory, and
which jobs cannot be simulated. Two sets are registered in :data:`CONVENTIONS`:

``default`` (hdrm's own rules)
    * processors = field 8 (requested processors), falling back to field 5 (allocated) when <= 0;
    * requested time = field 9; when it is unknown (<= 0; -1 in the archive) the job has no walltime
      (``math.inf``: never killed, no ``walltime`` in Batsim JSON) and schedulers estimate its length
      by its run time (:func:`hdrm.policies.backfill.estimated_duration_s`);
    * run time = field 4;
    * memory per core = field 10 (requested memory, KB per processor), falling back to field 7
      (used memory, KB per processor); converted to MB (1 MB = 1024 KB), 0 when both are unknown;
    * skipped, each job under the first reason it meets: ``"no processors"``,
      ``"run time unknown (< 0)"``, ``"run time 0"``, ``"submit time < 0"``;
    * jobs kept in submission order (stable: ties keep file order).

``rlscheduler`` (the loader of RLScheduler, Zhang et al., SC20)
    * processors = max(field 5, field 8);
    * requested time := run time when field 9 is -1 (or any value <= 0): as in ``default``, such a
      job has no walltime and its length is estimated by its run time;
    * run time < 0 is set to 10 s, then jobs with run time 0 are dropped;
    * jobs sorted by job id (field 1);
    * simulated as RLScheduler's protocol does, unless told otherwise: ``commit`` decisions (a
      picked job is held until it fits) and no walltime kills (:mod:`hdrm.implied`).
    Deviation, on purpose: a job whose fields 5 and 8 are both <= 0 is skipped as
    ``"no processors"`` (RLScheduler keeps it with -1 processors, which no simulator can place; only
    one job of the KTH trace is affected). When both the run time and field 9 are unknown, the
    job has no walltime and its estimate is the corrected run time (10 s), instead of RLScheduler's
    requested time of -1.

The rules are applied to whole columns at once (numpy), never job by job. What a convention set
implies for the simulation (decision semantics, walltime kills) is defined once, in
:mod:`hdrm.implied`, which every entry point applies.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from hdrm.lazy import numpy as np

from hdrm.errors import ConfigError
from hdrm.registry import Registry, suggest

logger = logging.getLogger(__name__)

#: KB per MB in SWF memory fields.
KB_PER_MB = 1024.0

#: Column indices (0-based) of the SWF fields the conventions read.
F_ID, F_SUBMIT, F_RUN, F_ALLOC = 0, 1, 3, 4
F_USED_MEM, F_REQ_PROCS, F_REQ_TIME, F_REQ_MEM = 6, 7, 8, 9

#: Skip reasons, in the order they are tested.
SKIP_NO_PROCESSORS = "no processors"
SKIP_RUN_UNKNOWN = "run time unknown (< 0)"
SKIP_RUN_ZERO = "run time 0"
SKIP_SUBMIT_NEGATIVE = "submit time < 0"

PROCESSOR_RULES = ("requested_or_allocated", "max_requested_allocated")
SORT_KEYS = ("submit", "id")
MEMORY_RULES = ("requested_or_used", "none")


@dataclass(frozen=True)
class Conventions:
    """A set of rules turning SWF fields into job requirements.

    Attributes:
        name: the registry name.
        description: one line for help texts.
        processors: ``"requested_or_allocated"`` (field 8, else field 5) or
            ``"max_requested_allocated"`` (max of fields 5 and 8).
        negative_run_time_s: None to skip jobs with a run time < 0, else the run time they get.
        sort_by: ``"submit"`` (stable on submit time) or ``"id"`` (stable on the job id).
        memory: ``"requested_or_used"`` (field 10, else field 7) or ``"none"`` (always 0).
    """

    name: str
    description: str
    processors: str = "requested_or_allocated"
    negative_run_time_s: float | None = None
    sort_by: str = "submit"
    memory: str = "requested_or_used"

    def __post_init__(self) -> None:
        _check_choice(self.name, "processors", self.processors, PROCESSOR_RULES)
        _check_choice(self.name, "sort_by", self.sort_by, SORT_KEYS)
        _check_choice(self.name, "memory", self.memory, MEMORY_RULES)
        if self.negative_run_time_s is not None and not self.negative_run_time_s > 0:
            raise ConfigError(
                f"conventions {self.name!r}: negative_run_time_s must be > 0 or None, "
                f"got {self.negative_run_time_s!r}"
            )


def _check_choice(name: str, attr: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ConfigError(
            f"conventions {name!r}: {attr} {value!r} is unknown; {suggest(value, choices)}"
            f"choose one of: {', '.join(choices)}"
        )


#: Convention sets by name.
CONVENTIONS: Registry[Conventions] = Registry("SWF convention set")
CONVENTIONS.add(
    "default",
    Conventions(
        "default",
        "requested procs (field 8, else 5), requested time (field 9, else run time); "
        "skip jobs with no processors or run time <= 0",
    ),
)
CONVENTIONS.add(
    "rlscheduler",
    Conventions(
        "rlscheduler",
        "RLScheduler (SC20): procs = max(field 5, field 8); run time < 0 -> 10 s; "
        "run time 0 dropped; sorted by job id; commit decisions, no walltime kills",
        processors="max_requested_allocated",
        negative_run_time_s=10.0,
        sort_by="id",
    ),
)


def get_conventions(spec: str | Conventions, where: str = "conventions") -> Conventions:
    """Return the convention set named ``spec`` (or ``spec`` itself when it is one).

    Raises:
        ConfigError: unknown name; the message suggests close names and lists the choices.
    """
    if isinstance(spec, Conventions):
        return spec
    return CONVENTIONS.get(spec, where)


@dataclass
class Converted:
    """Columns of the jobs a convention set keeps, in the order it keeps them.

    Attributes:
        rows: indices of the kept rows in the input field array.
        res: processors per kept job.
        walltime_s: requested time per kept job.
        run_time_s: run time per kept job.
        mem_mb: memory per core in MB per kept job.
        skipped: number of rows left out per reason.
        adjusted: number of kept rows whose run time was replaced (rlscheduler: run time < 0).
    """

    rows: np.ndarray
    res: np.ndarray
    walltime_s: np.ndarray
    run_time_s: np.ndarray
    mem_mb: np.ndarray
    skipped: dict[str, int]
    adjusted: int = 0


def apply_conventions(fields: np.ndarray, conventions: Conventions) -> Converted:
    """Apply ``conventions`` to an ``(n, 18)`` array of SWF fields.

    Args:
        fields: one row per job line, the 18 SWF fields as floats.
        conventions: the rules to apply.

    Returns:
        The kept rows (sorted as the conventions say) and their derived columns.
    """
    res = _processors(fields, conventions)
    run = fields[:, F_RUN].copy()
    negative = run < 0
    adjusted = 0
    if conventions.negative_run_time_s is not None:
        adjusted = int(np.count_nonzero(negative & (res > 0)))
        run[negative] = conventions.negative_run_time_s
    reasons = (
        (SKIP_NO_PROCESSORS, res <= 0),
        (SKIP_RUN_UNKNOWN, run < 0),
        (SKIP_RUN_ZERO, run == 0),
        (SKIP_SUBMIT_NEGATIVE, fields[:, F_SUBMIT] < 0),
    )
    keep, skipped = _skip(len(fields), reasons)
    rows = np.flatnonzero(keep)
    key = fields[rows, F_SUBMIT if conventions.sort_by == "submit" else F_ID]
    rows = rows[np.argsort(key, kind="stable")]
    run = run[rows]
    requested = fields[rows, F_REQ_TIME]
    # No request: no walltime to kill at (Batsim kills a job whose run time equals its walltime);
    # estimates fall back to the run time where the scheduler needs one.
    walltime = np.where(requested > 0, requested, np.inf)
    return Converted(
        rows, res[rows].astype(np.int64), walltime, run, _memory_mb(fields[rows], conventions),
        skipped, adjusted,
    )


def _processors(fields: np.ndarray, conventions: Conventions) -> np.ndarray:
    requested, allocated = fields[:, F_REQ_PROCS], fields[:, F_ALLOC]
    if conventions.processors == "max_requested_allocated":
        return np.maximum(requested, allocated)
    return np.where(requested > 0, requested, allocated)


def _skip(nb_rows: int, reasons: tuple[tuple[str, np.ndarray], ...]) -> tuple[np.ndarray, dict]:
    """Mark rows to skip, each counted under the first reason it meets."""
    keep = np.ones(nb_rows, dtype=bool)
    skipped: dict[str, int] = {}
    for reason, bad in reasons:
        count = int(np.count_nonzero(bad & keep))
        if count:
            skipped[reason] = count
            keep &= ~bad
    return keep, skipped


def _memory_mb(rows: np.ndarray, conventions: Conventions) -> np.ndarray:
    if conventions.memory == "none":
        return np.zeros(len(rows))
    requested, used = rows[:, F_REQ_MEM], rows[:, F_USED_MEM]
    kb = np.where(requested > 0, requested, np.where(used > 0, used, 0.0))
    return kb / KB_PER_MB
