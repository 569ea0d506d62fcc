"""One finished (or rejected) job as Batsim reports it in ``out_jobs.csv``, and interval sets.

:class:`JobResult` carries Batsim 4.2.1's ``out_jobs.csv`` columns under Batsim's own names (all
times in seconds, energy in joules). The derived columns (``finish_time``, ``waiting_time``,
``turnaround_time``, ``stretch``) are computed when not given; a reader passes the values it read
so that writing the results back reproduces the file byte for byte.

Interval sets are the text form Batsim and procset use for resource sets: sorted, merged ranges
separated by one space, a range written ``lo-hi`` and a single id written alone (``"0-3 8"``).
In memory, a job's cores are a :class:`CoreRuns`: runs of consecutive ids in their order, so a
record costs what its runs cost, not one integer per core.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

import numpy as np

from hdrm.errors import ConfigError

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


def consecutive_runs(cores: Sequence[int] | np.ndarray) -> list[tuple[int, int]]:
    """``cores`` as runs of consecutive ids ``(first, last + 1)``, in their order.

    ``[4, 5, 6, 0, 1, 9] -> [(4, 7), (0, 2), (9, 10)]``; long lists and numpy arrays are split
    in numpy; a :class:`CoreRuns` gives its runs.
    """
    if isinstance(cores, CoreRuns):
        return cores.runs
    n = len(cores)
    if n == 0:
        return []
    if n > 256 or isinstance(cores, np.ndarray):  # numpy pays off on long lists only
        if isinstance(cores, np.ndarray):
            ids = cores
        else:
            ids = np.fromiter(cores, dtype=np.int64, count=n)
        cut = np.flatnonzero(np.diff(ids) != 1) + 1
        starts = np.concatenate(([0], cut))
        ends = np.concatenate((cut, [n]))
        return list(zip(ids[starts].tolist(), (ids[ends - 1] + 1).tolist()))
    runs = []
    lo = prev = cores[0]
    for c in cores[1:]:
        if c != prev + 1:
            runs.append((lo, prev + 1))
            lo = c
        prev = c
    runs.append((lo, prev + 1))
    return runs


class CoreRuns(Sequence):
    """A job's core ids kept as runs of consecutive ids, in the order they were given.

    A read-only stand-in for the tuple of the ids that costs two integers per run: a job on
    100,000 consecutive cores keeps ``(lo, hi)``. Iteration, ``len``, indexing and ``in`` behave
    as on the tuple; it equals (and hashes as) the tuple of its ids, and any sequence of the
    same ids in the same order.

    Args:
        runs: ``(first, last + 1)`` pairs in order; empty runs are dropped and a run that
            continues the previous one is merged into it.
    """

    __slots__ = ("_bounds", "_len")

    def __init__(self, runs: Iterable[tuple[int, int]] = ()) -> None:
        bounds: list[int] = []
        size = 0
        for lo, hi in runs:
            if hi <= lo:
                continue
            if bounds and bounds[-1] == lo:
                bounds[-1] = hi
            else:
                bounds += (lo, hi)
            size += hi - lo
        self._bounds = tuple(bounds)
        self._len = size

    @classmethod
    def of(cls, cores: Sequence[int] | np.ndarray) -> CoreRuns:
        """``cores`` (ids, or a numpy array of ids) as runs; itself when it already is a
        :class:`CoreRuns`."""
        if isinstance(cores, CoreRuns):
            return cores
        return cls(consecutive_runs(cores))

    @property
    def runs(self) -> list[tuple[int, int]]:
        """The runs ``(first, last + 1)``, in order (a new list each time)."""
        bounds = self._bounds
        if len(bounds) == 2:  # one run (most wide jobs): its bounds are the pair
            return [bounds]
        return list(zip(bounds[0::2], bounds[1::2]))

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[int]:
        bounds = self._bounds
        return itertools.chain.from_iterable(map(range, bounds[0::2], bounds[1::2]))

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self)[index]
        i = range(self._len)[index]  # negative indices; IndexError as a tuple gives it
        bounds = self._bounds
        for k in range(0, len(bounds), 2):
            size = bounds[k + 1] - bounds[k]
            if i < size:
                return bounds[k] + i
            i -= size
        raise IndexError(index)  # unreachable: i < len(self)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """The ids as a numpy array (numpy indexing and ``np.asarray``), made run by run in C."""
        bounds = self._bounds
        ids = (np.concatenate([np.arange(lo, hi) for lo, hi in zip(bounds[0::2], bounds[1::2])])
               if bounds else np.zeros(0, dtype=np.int64))
        return ids if dtype is None else ids.astype(dtype, copy=False)

    def __contains__(self, core: object) -> bool:
        bounds = self._bounds
        return any(bounds[k] <= core < bounds[k + 1] for k in range(0, len(bounds), 2))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CoreRuns):
            return self._bounds == other._bounds
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return self._len == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"CoreRuns({self.runs})"


def interval_ranges(core_ids: Iterable[int]) -> list[tuple[int, int]]:
    """Merge core ids into sorted, disjoint, inclusive ``(lo, hi)`` ranges.

    Args:
        core_ids: non-negative core ids, in any order, duplicates allowed (a
            :class:`CoreRuns` is merged run by run).

    Returns:
        The maximal runs of consecutive ids, e.g. ``[0, 1, 2, 3, 8] -> [(0, 3), (8, 8)]``.
    """
    if isinstance(core_ids, CoreRuns):
        return _merged(sorted(core_ids.runs))
    ordered = sorted(set(map(int, core_ids)))
    ranges: list[tuple[int, int]] = []
    if not ordered:
        return ranges
    if len(ordered) > 64:  # wide jobs: find the breaks in C
        ids = np.fromiter(ordered, dtype=np.int64, count=len(ordered))
        breaks = np.flatnonzero(np.diff(ids) != 1)
        los = np.concatenate(([ids[0]], ids[breaks + 1])).tolist()
        his = np.concatenate((ids[breaks], [ids[-1]])).tolist()
        return list(zip(los, his))
    lo = prev = ordered[0]
    for core in ordered[1:]:  # one pass, no tuple rebuilt per core: wide jobs hold 1000s of cores
        if core != prev + 1:
            ranges.append((lo, prev))
            lo = core
        prev = core
    ranges.append((lo, prev))
    return ranges


def _merged(runs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted ``(first, last + 1)`` runs merged where they touch or overlap, as inclusive ranges."""
    ranges: list[tuple[int, int]] = []
    for lo, hi in runs:
        if ranges and lo <= ranges[-1][1] + 1:
            if hi - 1 > ranges[-1][1]:
                ranges[-1] = (ranges[-1][0], hi - 1)
        else:
            ranges.append((lo, hi - 1))
    return ranges


def sorted_runs(cores: Iterable[int]) -> list[tuple[int, int]]:
    """The ids of ``cores`` as sorted, merged, half-open runs ``(first, last + 1)``.

    ``[8, 0, 1, 2, 3] -> [(0, 4), (8, 9)]``. What placements mostly give costs C-level passes
    and one step per run: a :class:`CoreRuns` whose runs ascend with gaps between them returns
    its runs; a list or tuple of ascending ints is split where ids skip (one comparison when
    they are consecutive); anything else goes through :func:`interval_ranges`.
    """
    kind = type(cores)
    if kind is CoreRuns:
        bounds = cores._bounds
        if len(bounds) == 2 or all(map(operator.lt, bounds[1:-1:2], bounds[2::2])):
            return list(zip(bounds[0::2], bounds[1::2]))
    elif kind is tuple or kind is list:
        n = len(cores)
        if n and type(cores[0]) is int:
            first = cores[0]
            if cores[-1] - first == n - 1 and cores == kind(range(first, first + n)):
                return [(first, first + n)]
            if all(map(operator.lt, cores, cores[1:])):
                return consecutive_runs(cores)
    return [(lo, hi + 1) for lo, hi in interval_ranges(cores)]


def format_interval_set(core_ids: Iterable[int]) -> str:
    """Write core ids as an interval set, exactly as ``str(procset.ProcSet(...))`` does.

    Example: ``format_interval_set([8, 0, 1, 2, 3]) == "0-3 8"``; no ids give ``""``. The runs
    are those of :func:`sorted_runs` (C-level passes for what placements mostly give).
    """
    return format_runs(sorted_runs(core_ids))


def format_runs(runs: Sequence[tuple[int, int]]) -> str:
    """The interval set of sorted, merged runs ``(first, last + 1)`` (as :func:`sorted_runs`
    gives them): ``[(0, 4), (8, 9)] -> "0-3 8"``."""
    if len(runs) == 1:
        lo, hi = runs[0]
        return str(lo) if lo == hi - 1 else f"{lo}-{hi - 1}"
    return " ".join([str(lo) if lo == hi - 1 else f"{lo}-{hi - 1}" for lo, hi in runs])


def parse_interval_ranges(text: str) -> list[tuple[int, int]]:
    """Read an interval set (``"0-3 8"``) into sorted, merged, inclusive ``(lo, hi)`` ranges.

    Raises:
        ConfigError: a part is not ``N`` or ``LO-HI`` with ``LO <= HI``.
    """
    ranges: list[tuple[int, int]] = []
    for part in text.split():
        lo_text, dash, hi_text = part.partition("-")
        # isdecimal: the digits a regex's \d matches in a str, without a regex
        if not lo_text.isdecimal() or (dash and not hi_text.isdecimal()):
            raise ConfigError(
                f"bad interval set {text!r}: part {part!r} is not 'N' or 'LO-HI' "
                f"(write core ids like '0-3 8')"
            )
        lo = int(lo_text)
        hi = int(hi_text) if dash else lo
        if hi < lo:
            raise ConfigError(f"bad interval set {text!r}: range {part!r} ends before it starts")
        ranges.append((lo, hi))
    ranges.sort()
    merged: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged


def parse_interval_set(text: str) -> list[int]:
    """Read an interval set into the sorted list of its core ids: ``"0-3 8" -> [0, 1, 2, 3, 8]``.

    Raises:
        ConfigError: the text is not an interval set.
    """
    return [core for lo, hi in parse_interval_ranges(text) for core in range(lo, hi + 1)]


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
