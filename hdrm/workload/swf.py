"""Standard Workload Format (SWF) reader: all 18 fields, the header directives, plain or gzip.

SWF (Feitelson et al., Parallel Workloads Archive) has one job per line, 18 whitespace-separated
numbers, -1 meaning unknown; header lines start with ``;`` and carry directives such as
``; MaxProcs: 1664 (72, 1368, 224)``. :func:`read_swf` turns a trace into a
:class:`~hdrm.workload.job.Workload` following a named convention set
(:mod:`hdrm.workload.conventions`).

Speed: job lines are checked for their field count with ``str.split`` and parsed in one pass by
numpy; the conventions run on whole columns. Only when that fast path finds a problem is the file
scanned line by line, to name the bad line and field (or, with ``strict=False``, to skip it).
"""

from __future__ import annotations

import gzip
import logging
import math
import warnings
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hdrm.errors import WorkloadError
from hdrm.workload.conventions import Conventions, apply_conventions, get_conventions
from hdrm.workload.job import PROFILE_DELAY, Job, Workload

logger = logging.getLogger(__name__)

#: Number of fields on an SWF job line.
NB_FIELDS = 18

#: Names of the 18 SWF fields (field k is ``FIELD_NAMES[k - 1]``).
FIELD_NAMES = (
    "job number", "submit time", "wait time", "run time", "allocated processors",
    "average CPU time used", "used memory", "requested processors", "requested time",
    "requested memory", "status", "user id", "group id", "executable number", "queue number",
    "partition number", "preceding job number", "think time",
)

#: Skip reason for lines dropped by ``strict=False``.
SKIP_MALFORMED = "malformed line"

_TEXT_DIRECTIVES = {
    "Version": "version", "Computer": "computer", "Installation": "installation",
    "Acknowledge": "acknowledge", "Information": "information", "Conversion": "conversion",
    "Preemption": "preemption", "TimeZoneString": "time_zone_string", "StartTime": "start_time",
    "EndTime": "end_time", "AllowOveruse": "allow_overuse", "Queues": "queues_description",
    "Partitions": "partitions_description",
}
_INT_DIRECTIVES = {
    "MaxJobs": "max_jobs", "MaxRecords": "max_records", "UnixStartTime": "unix_start_time_s",
    "TimeZone": "time_zone_s", "MaxRuntime": "max_runtime_s", "MaxMemory": "max_memory_kb",
    "MaxQueues": "max_queues", "MaxPartitions": "max_partitions",
}
_COUNT_DIRECTIVES = {"MaxNodes": "max_nodes", "MaxProcs": "max_procs"}


@dataclass(frozen=True)
class SwfHeader:
    """The header of an SWF file: typed known directives plus every directive raw.

    Text directives keep their continuation lines, joined by newlines. Counts such as
    ``MaxProcs: 1664 (72, 1368, 224)`` give the total (1664) and the numbered parts.

    Attributes:
        version ... partitions_description: text directives (None when absent);
            ``queues_description`` and ``partitions_description`` are ``Queues:``/``Partitions:``.
        max_jobs ... max_partitions: integer directives; ``unix_start_time_s`` is the origin of
            the trace clock (Unix seconds), ``time_zone_s`` its offset.
        max_nodes, max_procs: totals; max_nodes_parts, max_procs_parts: parenthetical parts.
        queues, partitions: numbered ``Queue:``/``Partition:`` lines, number -> description.
        notes: each ``Note:`` with its continuation lines.
        raw: every directive name -> its values, in file order.
        lines: the header lines exactly as read (without line ends).
    """

    version: str | None = None
    computer: str | None = None
    installation: str | None = None
    acknowledge: str | None = None
    information: str | None = None
    conversion: str | None = None
    preemption: str | None = None
    time_zone_string: str | None = None
    start_time: str | None = None
    end_time: str | None = None
    allow_overuse: str | None = None
    queues_description: str | None = None
    partitions_description: str | None = None
    max_jobs: int | None = None
    max_records: int | None = None
    unix_start_time_s: int | None = None
    time_zone_s: int | None = None
    max_runtime_s: int | None = None
    max_memory_kb: int | None = None
    max_queues: int | None = None
    max_partitions: int | None = None
    max_nodes: int | None = None
    max_nodes_parts: tuple[int, ...] = ()
    max_procs: int | None = None
    max_procs_parts: tuple[int, ...] = ()
    queues: dict[int, str] = field(default_factory=dict)
    partitions: dict[int, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    raw: dict[str, list[str]] = field(default_factory=dict)
    lines: tuple[str, ...] = ()

    @property
    def nb_res(self) -> int | None:
        """MaxProcs, else MaxNodes, else None."""
        for value in (self.max_procs, self.max_nodes):
            if value is not None and value > 0:
                return value
        return None


def parse_count(value: str) -> tuple[int, tuple[int, ...]]:
    """Parse a count directive such as ``"1664 (72, 1368, 224)"`` into (1664, (72, 1368, 224)).

    Parenthetical items that do not start with a number (``"338 (batch partition; 512 total)"``)
    give no parts.

    Raises:
        ValueError: the value does not start with an integer.
    """
    head, _, rest = value.partition("(")
    total = int(head.strip())
    items = [item.split() for item in rest.rpartition(")")[0].split(",")] if rest else []
    if items and all(tokens and tokens[0].isdigit() for tokens in items):
        return total, tuple(int(tokens[0]) for tokens in items)
    return total, ()


def parse_header(lines: list[str], path: str = "<header>", strict: bool = True) -> SwfHeader:
    """Parse SWF header lines (each starting with ``;``) into an :class:`SwfHeader`.

    Args:
        lines: the comment lines in file order, each as ``(line_number, text)`` or as text.
        path: the file name, for error messages.
        strict: raise on a directive whose value should be an integer but is not; else ignore it
            (it stays in ``raw``).

    Raises:
        WorkloadError: a malformed integer directive (strict only), naming ``file:line``.
    """
    raw: dict[str, list[str]] = {}
    entries: list[list[Any]] = []  # [line number, key, value], value grows with continuations
    current: list[Any] | None = None
    for number, text in _numbered(lines):
        content = text.lstrip()[1:]
        stripped = content.strip()
        if not stripped:
            current = None
            continue
        key, sep, value = stripped.partition(":")
        leading = len(content) - len(content.lstrip())
        if sep and key.isalnum() and leading <= 2:
            current = [number, key, value.strip()]
            entries.append(current)
        elif current is not None:
            current[2] = f"{current[2]}\n{stripped}" if current[2] else stripped
    kwargs: dict[str, Any] = {"queues": {}, "partitions": {}, "notes": [], "raw": raw}
    for number, key, value in entries:
        raw.setdefault(key, []).append(value)
        _apply_directive(kwargs, key, value, f"{path}:{number}", strict)
    kwargs["notes"] = tuple(kwargs["notes"])
    kwargs["lines"] = tuple(text for _, text in _numbered(lines))
    return SwfHeader(**kwargs)


def _numbered(lines: list) -> list[tuple[int, str]]:
    if lines and isinstance(lines[0], tuple):
        return lines
    return list(enumerate(lines, 1))


def _apply_directive(kwargs: dict, key: str, value: str, where: str, strict: bool) -> None:
    """Store one directive's typed value in ``kwargs`` (first occurrence wins for scalars)."""
    try:
        if key in _TEXT_DIRECTIVES:
            kwargs.setdefault(_TEXT_DIRECTIVES[key], value)
        elif key in _INT_DIRECTIVES:
            kwargs.setdefault(_INT_DIRECTIVES[key], int(value.split()[0]))
        elif key in _COUNT_DIRECTIVES:
            total, parts = parse_count(value)
            kwargs.setdefault(_COUNT_DIRECTIVES[key], total)
            kwargs.setdefault(_COUNT_DIRECTIVES[key] + "_parts", parts)
        elif key in ("Queue", "Partition"):
            number, _, name = value.partition(" ")
            kwargs["queues" if key == "Queue" else "partitions"][int(number)] = name.strip()
        elif key == "Note":
            kwargs["notes"].append(value)
    except (ValueError, IndexError):
        message = (
            f"{where}: header directive {key} should start with an integer, got {value!r}; "
            "fix the header line or read with strict=False"
        )
        if strict:
            raise WorkloadError(message) from None
        logger.warning("%s (ignored)", message)


def read_swf(
    path: str | Path,
    conventions: str | Conventions = "default",
    strict: bool = True,
    keep_fields: bool = False,
) -> Workload:
    """Read an SWF trace (plain or gzip) into a :class:`~hdrm.workload.job.Workload`.

    ``submit_s`` and ``trace_submit_s`` are both in the trace's own clock; selections
    (:mod:`hdrm.workload.select`) shift ``submit_s`` so that they start at 0.

    Args:
        path: the trace file; gzip is recognised by its magic bytes, not its name.
        conventions: a convention set or its name (``"default"``, ``"rlscheduler"``).
        strict: raise on a malformed line; when False, skip such lines and count them in
            ``Workload.skipped["malformed line"]``.
        keep_fields: keep each job's 18 raw fields as a tuple in ``job.extra["swf"]`` (about
            500 more bytes a job, doubling the memory); then
            :func:`~hdrm.workload.generate.write_swf` writes the jobs back verbatim.

    Returns:
        The jobs the conventions keep, re-indexed 0..n-1, with profile type ``"delay"`` and
        profile names ``"p<id>"``; ``skipped`` counts the rest per reason; ``nb_res`` is the
        header's MaxProcs (else MaxNodes).

    Raises:
        WorkloadError: missing or unreadable file, a malformed line (strict), no job left.
        ConfigError: unknown convention set name.
    """
    conv = get_conventions(conventions)
    path_s = str(path)
    lines = _read_text(path_s).splitlines()
    comments, data = _split(lines)
    header = parse_header(comments, path_s, strict)
    if not data:
        raise WorkloadError(
            f"{path_s}: no job lines found ({len(comments)} header lines); "
            f"an SWF job line has {NB_FIELDS} numbers"
        )
    fields, nb_bad = _parse_fields(data, lines, path_s, strict)
    converted = apply_conventions(fields, conv)
    skipped = dict(converted.skipped)
    if nb_bad:
        skipped[SKIP_MALFORMED] = nb_bad
    if not len(converted.rows):
        raise WorkloadError(
            f"{path_s}: all {len(data)} jobs were skipped ({_reasons(skipped)}) under the "
            f"{conv.name!r} conventions; check the trace or choose other conventions"
        )
    if converted.adjusted:
        logger.info("%s: run time < 0 replaced for %d jobs", path_s, converted.adjusted)
    jobs = _build_jobs(fields, converted, keep_fields)
    return Workload(jobs, _stem(path_s), path_s, header, skipped, header.nb_res)


def _reasons(skipped: dict[str, int]) -> str:
    return ", ".join(f"{reason}: {count}" for reason, count in skipped.items()) or "none"


def _stem(path: str) -> str:
    return Path(path).name.removesuffix(".gz").removesuffix(".swf")


def _read_text(path: str) -> str:
    """Return the decoded text of a plain or gzip file; errors name the file and the fix."""
    try:
        with open(path, "rb") as handle:
            content = handle.read()
    except FileNotFoundError:
        raise WorkloadError(
            f"{path}: no such file; give the path of an SWF trace (.swf or .swf.gz)"
        ) from None
    except OSError as exc:
        raise WorkloadError(f"{path}: cannot be read ({exc.strerror}); check the path") from None
    if content[:2] == b"\x1f\x8b":
        try:
            content = gzip.decompress(content)
        except (OSError, EOFError, zlib.error) as exc:
            raise WorkloadError(
                f"{path}: corrupt gzip data ({exc}); re-download or decompress the trace"
            ) from None
    return content.decode("utf-8", errors="replace")


def _split(lines: list[str]) -> tuple[list[tuple[int, str]], list[str]]:
    """Split lines into numbered header lines and job lines (blank lines dropped)."""
    comments = [(i, line) for i, line in enumerate(lines, 1) if line.lstrip()[:1] == ";"]
    if not comments:
        return [], [line for line in lines if line and not line.isspace()]
    data = [line for line in lines if line.lstrip()[:1] not in (";", "")]
    return comments, data


def _parse_fields(
    data: list[str], lines: list[str], path: str, strict: bool
) -> tuple[np.ndarray, int]:
    """Return the ``(n, 18)`` field array and the number of malformed lines skipped."""
    counts = list(map(len, map(str.split, data)))
    if counts.count(NB_FIELDS) == len(data):
        values = _fast_numbers("\n".join(data))
        if values is not None and values.size == NB_FIELDS * len(data):
            if np.isfinite(values).all():
                return values.reshape(-1, NB_FIELDS), 0
    return _slow_parse(lines, path, strict)


def _fast_numbers(text: str) -> np.ndarray | None:
    """Parse whitespace-separated numbers in C; None when some token is not a number."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        try:
            return np.fromstring(text, sep=" ")
        except (DeprecationWarning, ValueError):
            return None


def _slow_parse(lines: list[str], path: str, strict: bool) -> tuple[np.ndarray, int]:
    """Check line by line: raise on the first bad line (strict) or skip and count bad lines."""
    rows: list[list[float]] = []
    nb_bad = 0
    for number, line in enumerate(lines, 1):
        if line.lstrip()[:1] in (";", ""):
            continue
        tokens = line.split()
        values, problem = _line_values(tokens)
        if problem is None:
            rows.append(values)
            continue
        if strict:
            raise WorkloadError(
                f"{path}:{number}: {problem}; fix the line or read with strict=False "
                "(hdrm workload --no-strict) to skip malformed lines"
            )
        nb_bad += 1
        logger.debug("%s:%d: skipped: %s", path, number, problem)
    if nb_bad:
        logger.warning("%s: skipped %d malformed lines", path, nb_bad)
    return np.array(rows, dtype=np.float64).reshape(-1, NB_FIELDS), nb_bad


def _line_values(tokens: list[str]) -> tuple[list[float], str | None]:
    """Convert one line's tokens; return the values and a description of the first problem."""
    if len(tokens) < NB_FIELDS:
        k = len(tokens) + 1
        return [], (
            f"found {len(tokens)} fields, SWF needs {NB_FIELDS}: "
            f"field {k} ({FIELD_NAMES[k - 1]}) is missing"
        )
    if len(tokens) > NB_FIELDS:
        return [], (
            f"found {len(tokens)} fields, SWF needs {NB_FIELDS}: "
            f"unexpected field {NB_FIELDS + 1} {tokens[NB_FIELDS]!r} after field 18 (think time)"
        )
    values = []
    for k, token in enumerate(tokens, 1):
        try:
            value = float(token)
        except ValueError:
            return [], f"field {k} ({FIELD_NAMES[k - 1]}) is not a number: {token!r}"
        if not math.isfinite(value):
            return [], f"field {k} ({FIELD_NAMES[k - 1]}) is not a finite number: {token!r}"
        values.append(value)
    return values, None


def raw_fields(rows: np.ndarray) -> list[tuple]:
    """Rows of SWF fields as tuples; integer-valued columns as ints, others as floats."""
    columns = []
    for k in range(rows.shape[1]):
        column = rows[:, k]
        as_int = column.astype(np.int64)
        columns.append(as_int.tolist() if np.array_equal(as_int, column) else column.tolist())
    return list(zip(*columns))


def _build_jobs(fields: np.ndarray, converted: Any, keep_fields: bool) -> list[Job]:
    """Create the Job objects from the converted columns (one pass, positional arguments)."""
    rows = fields[converted.rows]
    ids = rows[:, 0].astype(np.int64).tolist()
    submit = rows[:, 1].tolist()
    users = rows[:, 11].astype(np.int64).tolist()
    res = converted.res.tolist()
    wall = converted.walltime_s.tolist()
    run = converted.run_time_s.tolist()
    mem = converted.mem_mb.tolist()
    extras = [{"swf": raw} for raw in raw_fields(rows)] if keep_fields else None
    return [
        Job(i, ids[i], submit[i], res[i], wall[i], run[i], mem[i], 0.0, 0.0, 0.0, submit[i],
            f"p{ids[i]}", PROFILE_DELAY, users[i], extras[i] if extras else {})
        for i in range(len(ids))
    ]
