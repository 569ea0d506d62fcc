"""The system over time: ``out_timeline.csv``, or a timeline derived from ``out_jobs.csv``.

The built-in engine writes one row per decision instant with the columns
``time,queue_size,running_jobs,busy_cores,contended_cores,power_w,energy_j`` (time in seconds,
power in watts, cumulative energy in joules). Batsim writes no such file; :func:`derive_timeline`
rebuilds queue size, running jobs and busy cores from the job results (queue = submitted but not
started, busy cores = cores of the running jobs), and a power estimate from the per-job energy
(each job's consumed_energy / execution time, summed over the running jobs) when Batsim simulated
energy. Contended cores are unknown there (nan).
"""

from __future__ import annotations

import logging
import math
from array import array
from collections.abc import Sequence as SequenceABC
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from hdrm.lazy import numpy as np

from hdrm.errors import ConfigError
from hdrm.results._files import parse_float, read_lines, require_columns
from hdrm.results.csvio import format_float, write_lines
from hdrm.results.records import JobResult

logger = logging.getLogger(__name__)

#: Columns of out_timeline.csv, in order.
TIMELINE_COLUMNS = (
    "time",
    "queue_size",
    "running_jobs",
    "busy_cores",
    "contended_cores",
    "power_w",
    "energy_j",
)

#: Where a timeline's power comes from.
POWER_FROM_ENGINE = "engine"
POWER_FROM_JOBS = "jobs"
POWER_UNKNOWN = "none"


@dataclass(slots=True)
class TimelineRow:
    """The state of the system just after one decision instant.

    Attributes:
        time_s: simulated time in seconds.
        queue_size: jobs submitted and not started.
        running_jobs: jobs running.
        busy_cores: cores running a job.
        contended_cores: busy cores slowed by memory-bandwidth contention.
        power_w: power the platform draws from now on, in watts.
        energy_j: energy consumed since time 0, in joules.
    """

    time_s: float
    queue_size: int
    running_jobs: int
    busy_cores: int
    contended_cores: int
    power_w: float
    energy_j: float


class TimelineRows(SequenceABC):
    """A growing timeline kept as seven typed columns: 56 bytes an instant instead of a
    :class:`TimelineRow` and its number objects (~200 bytes).

    It reads as a sequence of :class:`TimelineRow`, made when read: ``len``, indexing (a slice
    gives a list), iteration, and equality with any sequence of the same rows (a list of
    :class:`TimelineRow` included). Counts are kept as 64-bit integers, times, power and
    energy as doubles, so a row reads back exactly as it was added. Rows are added as tuples
    to a short list and moved into the columns by blocks of :data:`BLOCK_ROWS` (one C-level
    extend per column), or when read.

    Args:
        rows: rows to start with.
    """

    __slots__ = ("_columns", "_added")

    def __init__(self, rows: Iterable[TimelineRow] = ()) -> None:
        self._columns = (array("d"), array("q"), array("q"), array("q"), array("q"),
                         array("d"), array("d"))
        self._added: list[tuple] = []
        for row in rows:
            self.append(row)

    def add(self, *row: Any) -> None:
        """Append one instant: ``add(time_s, queue_size, running_jobs, busy_cores,
        contended_cores, power_w, energy_j)`` (the fields of :class:`TimelineRow`, in order;
        counts integral)."""
        added = self._added
        added.append(row)
        if len(added) >= BLOCK_ROWS:
            self._settle()

    def append(self, row: TimelineRow) -> None:
        """Append one :class:`TimelineRow` (its counts taken as integers)."""
        self.add(row.time_s, int(row.queue_size), int(row.running_jobs), int(row.busy_cores),
                 int(row.contended_cores), row.power_w, row.energy_j)

    def adder(self) -> Callable[[tuple], None]:
        """A C-level callable that appends one row given as a 7-tuple (the arguments of
        :meth:`add`), for a loop that adds a row per instant; such a loop calls :meth:`settle`
        every :data:`BLOCK_ROWS` rows or so (reads settle anyway)."""
        return self._added.append

    def settle(self) -> None:
        """Move the rows added since the last call into the typed columns.

        Raises:
            TypeError: a row is not 7 values, or a count is not an integer (the columns are
                then left as they were).
        """
        self._settle()

    def _settle(self) -> tuple[array, ...]:
        """Move the rows added since the last call into the columns; returns the columns."""
        added, columns = self._added, self._columns
        if added:
            try:  # rows of one length (strict), and that length 7
                values = list(zip(*added, strict=True))
            except ValueError:
                values = []
            if len(values) != 7:
                raise TypeError("a timeline row has 7 values: time_s, queue_size, "
                                "running_jobs, busy_cores, contended_cores, power_w, energy_j")
            kept = len(columns[0])
            try:
                for column, column_values in zip(columns, values):
                    column.fromlist(list(column_values))  # (faster than extend from a tuple)
            except TypeError:  # a count that is not an integer: the columns as they were
                for column in columns:
                    del column[kept:]
                raise
            added.clear()
        return columns

    def column_tuples(self) -> Iterator[tuple]:
        """The rows as plain tuples, in column order (what the writer formats)."""
        return zip(*self._settle())

    def __len__(self) -> int:
        return len(self._columns[0]) + len(self._added)

    def __getitem__(self, index: Any) -> Any:
        columns = self._settle()
        if isinstance(index, slice):
            return [TimelineRow(*values) for values in zip(*(c[index] for c in columns))]
        return TimelineRow(*(c[index] for c in columns))

    def __iter__(self) -> Iterator[TimelineRow]:
        return (TimelineRow(*values) for values in zip(*self._settle()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TimelineRows):
            return self._settle() == other._settle()
        if isinstance(other, SequenceABC) and not isinstance(other, (str, bytes)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, as a list

    def __repr__(self) -> str:
        return f"TimelineRows({len(self)} rows)"


#: Rows a :class:`TimelineRows` keeps as tuples before moving them into its columns.
BLOCK_ROWS = 2048


@dataclass
class Timeline:
    """A timeline as columns (one entry per instant, times increasing).

    Attributes:
        time_s, queue_size, running_jobs, busy_cores, contended_cores, power_w, energy_j:
            the columns of out_timeline.csv as numpy arrays (float; nan where unknown).
        power_source: :data:`POWER_FROM_ENGINE`, :data:`POWER_FROM_JOBS` (estimated from
            per-job energy) or :data:`POWER_UNKNOWN`.
        derived: True when rebuilt from out_jobs.csv rather than read from out_timeline.csv.
    """

    time_s: np.ndarray
    queue_size: np.ndarray
    running_jobs: np.ndarray
    busy_cores: np.ndarray
    contended_cores: np.ndarray
    power_w: np.ndarray
    energy_j: np.ndarray
    power_source: str = POWER_FROM_ENGINE
    derived: bool = False

    def __len__(self) -> int:
        return int(self.time_s.size)

    @property
    def has_power(self) -> bool:
        """True when the power column is known."""
        return self.power_source != POWER_UNKNOWN

    def mean_busy_cores(self, until_s: float | None = None) -> float:
        """Time-weighted mean of busy cores over ``[0, until_s]`` (default: the last instant)."""
        return _time_weighted_mean(self.time_s, self.busy_cores, until_s)


def _time_weighted_mean(time_s: np.ndarray, values: np.ndarray, until_s: float | None) -> float:
    """Mean of a step function (value held until the next instant) over ``[0, until_s]``."""
    if time_s.size == 0:
        return 0.0
    end_s = float(time_s[-1]) if until_s is None else float(until_s)
    if end_s <= 0:
        return 0.0
    edges = np.clip(np.append(time_s, end_s), 0.0, end_s)
    return float(np.sum(values * np.diff(edges)) / end_s)


def _row_text(row: TimelineRow | Mapping[str, Any]) -> str:
    """One out_timeline.csv line from a TimelineRow or a mapping keyed by column names."""
    if isinstance(row, TimelineRow):
        values = [getattr(row, f.name) for f in fields(TimelineRow)]
    else:
        values = [row["time"] if "time" in row else row["time_s"]]
        values += [row[c] for c in TIMELINE_COLUMNS[1:]]
    ints = [str(int(v)) for v in values[1:5]]
    floats = [format_float(v) for v in (values[0], values[5], values[6])]
    return ",".join([floats[0], *ints, floats[1], floats[2]])


def write_timeline_csv(rows: Iterable[TimelineRow | Mapping[str, Any]], path: str | Path) -> Path:
    """Write out_timeline.csv: a header then one line per row (times as given).

    The lines are written block by block (:func:`~hdrm.results.csvio.write_lines`).

    Args:
        rows: :class:`TimelineRow` objects (or a :class:`TimelineRows`), or mappings keyed by
            the column names.
        path: the file to write.

    Returns:
        The path written.
    """
    path = Path(path)
    line = "%.6f,%d,%d,%d,%d,%.6f,%.6f"  # as _row_text: Batsim's %f, integer counts
    if isinstance(rows, TimelineRows):
        lines: Iterable[str] = map(line.__mod__, rows.column_tuples())
    else:
        lines = (line % (row.time_s, row.queue_size, row.running_jobs, row.busy_cores,
                         row.contended_cores, row.power_w, row.energy_j)
                 if isinstance(row, TimelineRow) else _row_text(row) for row in rows)
    write_lines(path, ",".join(TIMELINE_COLUMNS), lines)
    return path


def read_timeline_csv(path: str | Path) -> Timeline:
    """Read out_timeline.csv into a :class:`Timeline` (power from the engine).

    Raises:
        ConfigError: the file is missing, lacks a column or holds a bad number (named with
            its line), or its times decrease.
    """
    path = Path(path)
    lines = [line for line in read_lines(path) if line.strip()]
    header = lines[0].split(",") if lines else []
    require_columns(path, header, TIMELINE_COLUMNS)
    columns: dict[str, list[float]] = {c: [] for c in TIMELINE_COLUMNS}
    for lineno, line in enumerate(lines[1:], start=2):
        values = line.split(",")
        if len(values) != len(header):
            raise ConfigError(
                f"{path}:{lineno}: expected {len(header)} fields, found {len(values)}"
            )
        for name, text in zip(header, values):
            if name in columns:
                columns[name].append(parse_float(path, lineno, name, text))
    time_s = np.asarray(columns["time"], dtype=float)
    bad = np.flatnonzero(np.diff(time_s) < 0)
    if bad.size:
        raise ConfigError(
            f"{path}:{int(bad[0]) + 3}: time {time_s[bad[0] + 1]} is before the previous row's "
            f"{time_s[bad[0]]}; rows must be in time order"
        )
    arrays = {c: np.asarray(columns[c], dtype=float) for c in TIMELINE_COLUMNS[1:]}
    return Timeline(time_s=time_s, **arrays)


def derive_timeline(results: Sequence[JobResult]) -> Timeline:
    """Rebuild a timeline from job results (for runs without out_timeline.csv).

    Rejected jobs are left out. Power is each running job's consumed_energy / execution_time
    summed, when every job that ran has a known, non-negative energy; otherwise it is unknown
    (nan) and ``power_source`` is :data:`POWER_UNKNOWN`.
    """
    ran = [r for r in results if r.finished]
    with_power = bool(ran) and all(
        r.consumed_energy is not None and r.consumed_energy >= 0 for r in ran
    )
    events = _job_events(ran, with_power)
    if events.shape[0] == 0:
        events = np.zeros((1, 5))
    time_s, first = np.unique(events[:, 0], return_index=True)
    last = np.append(first[1:], events.shape[0]) - 1
    totals = np.cumsum(events[:, 1:], axis=0)[last]
    if time_s[0] > 0:
        time_s = np.insert(time_s, 0, 0.0)
        totals = np.vstack([np.zeros((1, totals.shape[1])), totals])
    power_w = np.where(np.abs(totals[:, 3]) < 1e-9, 0.0, totals[:, 3])
    if with_power:
        energy_j = np.concatenate([[0.0], np.cumsum(power_w[:-1] * np.diff(time_s))])
    else:
        power_w = energy_j = np.full(time_s.size, math.nan)
    return Timeline(
        time_s=time_s,
        queue_size=np.rint(totals[:, 0]),
        running_jobs=np.rint(totals[:, 1]),
        busy_cores=np.rint(totals[:, 2]),
        contended_cores=np.full(time_s.size, math.nan),
        power_w=power_w,
        energy_j=energy_j,
        power_source=POWER_FROM_JOBS if with_power else POWER_UNKNOWN,
        derived=True,
    )


def _job_events(ran: list[JobResult], with_power: bool) -> np.ndarray:
    """Rows ``(time, d_queue, d_running, d_busy_cores, d_power_w)``, sorted by time, for every
    submission, start and end."""
    rows = []
    for r in ran:
        res = float(r.requested_number_of_resources)
        power_w = 0.0
        if with_power and r.execution_time > 0:
            power_w = float(r.consumed_energy) / float(r.execution_time)
        rows.append((r.submission_time, 1.0, 0.0, 0.0, 0.0))
        rows.append((r.starting_time, -1.0, 1.0, res, power_w))
        rows.append((r.finish_time, 0.0, -1.0, -res, -power_w))
    rows.sort(key=lambda row: row[0])
    return np.asarray(rows, dtype=float).reshape(-1, 5)
