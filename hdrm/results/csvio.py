"""Read and write Batsim's ``out_jobs.csv`` and ``out_schedule.csv``, byte-compatible with 4.2.1.

Batsim writes every number with C's ``%f`` (6 decimals), leaves the run columns of a rejected job
empty, and wraps the metadata in double quotes without escaping it. The writers here do the same,
so ``write_jobs_csv(read_jobs_csv(p), q)`` reproduces ``p`` byte for byte, and evalys or any
script written for Batsim reads our files unchanged.

``out_schedule.csv`` holds Batsim's 26 columns (sorted by name, as Batsim writes them) followed
by hdrm's own: ``mean_bounded_slowdown``, ``max_bounded_slowdown``, ``utilization`` and
``mean_power_w``. The reader takes both Batsim's files and ours.
"""

from __future__ import annotations

import itertools
import logging
import math
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from hdrm.durable import replacing
from hdrm.errors import ConfigError
from hdrm.results._files import parse_float, read_lines, require_columns, write_text
from hdrm.results.records import JobResult

logger = logging.getLogger(__name__)

#: The columns of Batsim 4.2.1's out_jobs.csv, in order.
JOBS_COLUMNS = (
    "job_id",
    "workload_name",
    "profile",
    "submission_time",
    "requested_number_of_resources",
    "requested_time",
    "success",
    "final_state",
    "starting_time",
    "execution_time",
    "finish_time",
    "waiting_time",
    "turnaround_time",
    "stretch",
    "allocated_resources",
    "consumed_energy",
    "metadata",
)
_INT_JOB_COLUMNS = ("requested_number_of_resources", "success")
_STR_JOB_COLUMNS = ("job_id", "workload_name", "profile", "final_state", "allocated_resources")
_OPTIONAL_FLOAT_COLUMNS = (
    "starting_time",
    "execution_time",
    "finish_time",
    "waiting_time",
    "turnaround_time",
    "stretch",
    "consumed_energy",
)

#: The columns of Batsim 4.2.1's out_schedule.csv, in order.
BATSIM_SCHEDULE_COLUMNS = (
    "batsim_version",
    "consumed_joules",
    "makespan",
    "max_slowdown",
    "max_turnaround_time",
    "max_waiting_time",
    "mean_slowdown",
    "mean_turnaround_time",
    "mean_waiting_time",
    "nb_computing_machines",
    "nb_grouped_switches",
    "nb_jobs",
    "nb_jobs_finished",
    "nb_jobs_killed",
    "nb_jobs_rejected",
    "nb_jobs_success",
    "nb_machine_switches",
    "scheduling_time",
    "simulation_time",
    "success_rate",
    "time_computing",
    "time_idle",
    "time_sleeping",
    "time_switching_off",
    "time_switching_on",
    "time_unavailable",
)
#: hdrm's columns, written after Batsim's.
HDRM_SCHEDULE_COLUMNS = (
    "mean_bounded_slowdown",
    "max_bounded_slowdown",
    "utilization",
    "mean_power_w",
)
SCHEDULE_COLUMNS = BATSIM_SCHEDULE_COLUMNS + HDRM_SCHEDULE_COLUMNS


def format_float(value: float | None) -> str:
    """A number as Batsim writes it (C's ``%f``); None becomes the empty string."""
    if value is None:
        return ""
    return f"{float(value):.6f}"


#: A row whose every column is known, in one format (Batsim's %f, integer counts).
_FULL_ROW = ",".join(["%s"] * 3 + ["%.6f", "%d", "%.6f", "%d", "%s"] + ["%.6f"] * 6
                     + ["%s", "%.6f", '"%s"'])


def _job_row(result: JobResult) -> str:
    """One out_jobs.csv line (without the newline)."""
    r = result
    try:
        return _FULL_ROW % (
            r.job_id, r.workload_name, r.profile, r.submission_time,
            r.requested_number_of_resources, r.requested_time, r.success, r.final_state,
            r.starting_time, r.execution_time, r.finish_time, r.waiting_time, r.turnaround_time,
            r.stretch, r.allocated_resources, r.consumed_energy, r.metadata,
        )
    except TypeError:  # unknown (None) columns: a rejected job
        return _any_job_row(result)


def _any_job_row(result: JobResult) -> str:
    """One out_jobs.csv line of any row, unknown columns left empty."""
    fields = [
        result.job_id,
        result.workload_name,
        result.profile,
        format_float(result.submission_time),
        str(int(result.requested_number_of_resources)),
        format_float(result.requested_time),
        str(int(result.success)),
        result.final_state,
    ]
    fields += [format_float(getattr(result, name)) for name in _OPTIONAL_FLOAT_COLUMNS[:-1]]
    fields.append(result.allocated_resources)
    fields.append(format_float(result.consumed_energy))
    fields.append('"' + result.metadata + '"')
    return ",".join(fields)


#: Lines written to a file at once by :func:`write_lines` (the text of a block, not the file's).
LINES_PER_BLOCK = 4096


def write_lines(path: Path, header: str, lines: Iterable[str]) -> None:
    """Write ``header`` then each line, every one ending with a newline (Unix line ends).

    The lines are joined and written :data:`LINES_PER_BLOCK` at a time, so a million-row file
    never exists as one string in memory. They go to a temporary file renamed over ``path`` at
    the end (:func:`hdrm.durable.replacing`): an interruption never leaves a file cut after a
    block, which would read as a complete one with fewer rows.

    Raises:
        ConfigError: the file cannot be written (named, with the reason).
    """
    rows: Iterator[str] = iter(lines)
    try:
        with replacing(path) as scratch, open(scratch, "w", encoding="utf-8", newline="") as out:
            out.write(header + "\n")
            while block := list(itertools.islice(rows, LINES_PER_BLOCK)):
                block.append("")
                out.write("\n".join(block))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write: {exc.strerror or exc}") from None


def write_jobs_csv(results: Iterable[JobResult], path: str | Path) -> Path:
    """Write job results as Batsim's out_jobs.csv, rows in the given order (streamed block by
    block: see :func:`write_lines`).

    Returns:
        The path written.
    """
    path = Path(path)
    write_lines(path, ",".join(JOBS_COLUMNS), map(_job_row, results))
    return path


def read_jobs_csv(path: str | Path) -> list[JobResult]:
    """Read a Batsim (or hdrm) out_jobs.csv, rows in file order.

    Columns are found by name in the header; ``job_id``, ``submission_time``,
    ``requested_number_of_resources`` and ``final_state`` (or ``success``) are required. The
    metadata column, when last, may hold commas and quotes, as Batsim does not escape it.

    Raises:
        ConfigError: the file is missing or malformed; the message names the file, the line,
            the column and the bad value.
    """
    path = Path(path)
    lines = read_lines(path)
    if not lines:
        raise ConfigError(f"{path}: empty file; expected Batsim's out_jobs.csv header")
    header = lines[0].split(",")
    require_columns(path, header, ("job_id", "submission_time", "requested_number_of_resources"))
    results = []
    for lineno, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        row = _split_row(path, lineno, line, header)
        results.append(_job_from_row(path, lineno, row))
    logger.debug("read %d job results from %s", len(results), path)
    return results


def _split_row(path: Path, lineno: int, line: str, header: list[str]) -> dict[str, str]:
    """Split one line into ``{column: text}``; a last metadata column keeps its commas."""
    if header[-1] == "metadata":
        values = line.split(",", len(header) - 1)
    else:
        values = line.split(",")
    if len(values) != len(header):
        raise ConfigError(
            f"{path}:{lineno}: expected {len(header)} comma-separated fields as in the header, "
            f"found {len(values)}"
        )
    row = dict(zip(header, values))
    meta = row.get("metadata", "")
    if len(meta) >= 2 and meta[0] == '"' and meta[-1] == '"':
        row["metadata"] = meta[1:-1]
    return row


def _job_from_row(path: Path, lineno: int, row: dict[str, str]) -> JobResult:
    """Build a JobResult from one split row, naming the file and line on bad values."""
    kwargs: dict[str, Any] = {}
    for name in _STR_JOB_COLUMNS + ("metadata",):
        if name in row:
            kwargs[name] = row[name]
    for name in _INT_JOB_COLUMNS:
        if name in row:
            kwargs[name] = int(parse_float(path, lineno, name, row[name]))
    for name in ("submission_time", "requested_time"):
        if name in row:
            kwargs[name] = parse_float(path, lineno, name, row[name])
    for name in _OPTIONAL_FLOAT_COLUMNS:
        if name in row:
            text = row[name]
            kwargs[name] = None if text == "" else parse_float(path, lineno, name, text)
    if "final_state" not in row:
        kwargs["final_state"] = _state_from_success(kwargs.get("success", 1))
    try:
        return JobResult(**kwargs)
    except ConfigError as exc:
        raise ConfigError(f"{path}:{lineno}: {exc}") from None


def _state_from_success(success: int) -> str:
    """Final state of a row from an old Batsim file that has no final_state column."""
    return "COMPLETED_SUCCESSFULLY" if success else "COMPLETED_FAILED"


def _schedule_value(name: str, value: Any) -> str:
    """One out_schedule.csv value as Batsim writes it."""
    if name == "batsim_version":
        return str(value)
    if name.startswith("nb_"):
        return str(int(value))
    if isinstance(value, float) and math.isnan(value):
        return "-nan"  # glibc's printf of 0.0 / 0.0: Batsim's means over no job
    return format_float(value)


def write_schedule_csv(summary: Mapping[str, Any], path: str | Path) -> Path:
    """Write a schedule summary (see :func:`hdrm.results.metrics.summarize`) as out_schedule.csv.

    Batsim's 26 columns come first, in Batsim's order, then those of hdrm's columns the summary
    holds (all of them for a summary from ``summarize``).

    Raises:
        ConfigError: the summary lacks one of Batsim's columns.
    """
    path = Path(path)
    missing = [c for c in BATSIM_SCHEDULE_COLUMNS if c not in summary]
    if missing:
        raise ConfigError(f"{path}: schedule summary lacks column(s) {', '.join(missing)}")
    columns = BATSIM_SCHEDULE_COLUMNS + tuple(c for c in HDRM_SCHEDULE_COLUMNS if c in summary)
    values = [_schedule_value(c, summary[c]) for c in columns]
    write_text(path, ",".join(columns) + "\n" + ",".join(values) + "\n")
    return path


def read_schedule_csv(path: str | Path) -> dict[str, Any]:
    """Read an out_schedule.csv (Batsim's or ours) into ``{column: value}``.

    ``batsim_version`` stays text, ``nb_*`` columns become ints, the others floats (an empty
    value becomes nan). Unknown columns are kept, as numbers when they parse.

    Raises:
        ConfigError: the file is missing or has not exactly one header and one value line.
    """
    path = Path(path)
    lines = [line for line in read_lines(path) if line.strip()]
    if len(lines) != 2:
        raise ConfigError(
            f"{path}: expected a header line and one value line, found {len(lines)} lines"
        )
    header, values = lines[0].split(","), lines[1].split(",")
    if len(header) != len(values):
        raise ConfigError(f"{path}:2: {len(values)} values for {len(header)} columns in the header")
    require_columns(path, header, ("makespan", "nb_jobs"))
    return {name: _parse_schedule_value(path, name, text) for name, text in zip(header, values)}


def _parse_schedule_value(path: Path, name: str, text: str) -> Any:
    """Type one out_schedule.csv value by its column."""
    if name == "batsim_version":
        return text
    if text == "":
        return math.nan
    try:
        number = float(text)
    except ValueError:
        if name in SCHEDULE_COLUMNS:
            raise ConfigError(f"{path}:2: column {name}: {text!r} is not a number") from None
        return text
    return int(number) if name.startswith("nb_") else number
