"""Standard Workload Format (SWF) reader: all 18 fields, the header directives, plain or gzip.

SWF (Feitelson et al., Parallel Workloads Archive) has one job per line, 18 whitespace-separated
numbers, -1 meaning unknown; header lines start with ``;`` and carry directives such as
``; MaxProcs: 1664 (72, 1368, 224)`` (:mod:`hdrm.workload.swf_header`). :func:`read_swf` turns a
trace into a :class:`~hdrm.workload.job.Workload` following a named convention set
(:mod:`hdrm.workload.conventions`).

Lines the standard does not allow are refused by a strict read (the default), with one line naming
the file, the line, the field and the value; ``strict=False`` skips them and counts them in
``Workload.skipped`` under their reason:

* ``"malformed line"``: not 18 finite numbers, or a whole-number field (job, processors, user,
  group or preceding job number) of 2^53 or more, where whole numbers stop being read exactly;
* ``"fractional job number"``, ``"fractional processors"``, ``"fractional user/group"``:
  field 1, field 5 or 8 (allocated, requested processors), or field 12 or 13 (user, group id) is
  not a whole number (``1.5``: never rounded; user 1.5 would become user 1);
* ``"duplicate job number"``: field 1 repeats the number of an earlier line (the first line with a
  number is kept), as job ids must be unique in the outputs;
* ``"partial execution without its job's line"``: a line of status 2, 3 or 4 (below) whose job
  has no other line.

Field 11 (status, :mod:`hdrm.workload.swf_status`): the lines of status 2, 3 or 4 are the
partial executions of a checkpointed or swapped job, whose own line (same job number) is the job;
they are left out, always, and counted as ``"partial execution line"``. Jobs of any other status
(completed, failed, cancelled, unknown) are replayed as their lines say.

Fields 17 and 18 (preceding job, think time) become ``Workload.dependencies``
(:mod:`hdrm.workload.dependencies`): a missing, cyclic or fractional preceding job is refused by a
strict read naming the line, and dropped and counted in ``Workload.dependencies.skipped``
otherwise.

Speed: job lines are checked for their field count with ``str.split`` and parsed in one pass by
numpy; the checks and the conventions run on whole columns. Only when that fast path finds a
problem is the file scanned line by line, to name the bad line and field (or to skip it).

The file is opened by :func:`hdrm.workload.swf_file.read_swf_text` (plain, gzip, bzip2 or xz).
"""

from __future__ import annotations

import logging
import math
import warnings
from pathlib import Path
from typing import Any

from hdrm.lazy import numpy as np

from hdrm.errors import PYTHON_RELAX, SkippableLineError, WorkloadError  # noqa: F401
from hdrm.workload.conventions import Conventions, apply_conventions, get_conventions
from hdrm.workload.dependencies import Dependencies, resolve
from hdrm.workload.job import PROFILE_DELAY, Job, Workload
from hdrm.workload.swf_file import decode_text, read_swf_text  # noqa: F401
from hdrm.workload.swf_header import SwfHeader, parse_count, parse_header
from hdrm.workload.swf_status import drop_partial_executions

__all__ = ["FIELD_NAMES", "NB_FIELDS", "SkippableLineError", "SwfHeader", "decode_text",
           "parse_count", "parse_header", "raw_fields", "read_swf"]

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

#: Skip reasons of lines dropped by ``strict=False``.
SKIP_MALFORMED = "malformed line"
SKIP_FRACTIONAL_ID = "fractional job number"
SKIP_FRACTIONAL_PROCS = "fractional processors"
SKIP_FRACTIONAL_USER = "fractional user/group"
#: Dependencies dropped (``strict=False``): field 17 is not a whole number.
SKIP_FRACTIONAL_PRED = "fractional preceding job"
SKIP_DUPLICATE = "duplicate job number"

#: Fields (0-based) that hold whole numbers, with the skip reason of a fractional value.
_WHOLE_FIELDS = ((0, SKIP_FRACTIONAL_ID), (4, SKIP_FRACTIONAL_PROCS), (7, SKIP_FRACTIONAL_PROCS),
                 (11, SKIP_FRACTIONAL_USER), (12, SKIP_FRACTIONAL_USER))

#: Fields (0-based) read as integers: job, processor, user, group and preceding job numbers.
_INTEGER_FIELDS = (0, 4, 7, 11, 12, 16)

#: Whole numbers below this size (2^53) are read exactly; from it on, one may be another's float.
MAX_EXACT = 2**53

#: Longest value quoted in an error message (a longer one is cut, its length said).
_MAX_QUOTED = 40


def read_swf(
    path: str | Path,
    conventions: str | Conventions = "default",
    strict: bool = True,
    keep_fields: bool = False,
    dependencies: bool = True,
) -> Workload:
    """Read an SWF trace (plain or gzip) into a :class:`~hdrm.workload.job.Workload`.

    ``submit_s`` and ``trace_submit_s`` are both in the trace's own clock; selections
    (:mod:`hdrm.workload.select`) shift ``submit_s`` so that they start at 0. Header values never
    stop a read (one warning names a value that cannot be used, such as ``MaxRuntime: N/A``).

    Args:
        path: the trace file; gzip is recognised by its magic bytes, not its name.
        conventions: a convention set or its name (``"default"``, ``"rlscheduler"``).
        strict: raise on a line the standard does not allow (see the module docstring); when
            False, skip such lines and count them in ``Workload.skipped`` per reason.
        keep_fields: keep each job's 18 raw fields as a tuple in ``job.extra["swf"]`` (about
            500 more bytes a job, doubling the memory); then
            :func:`~hdrm.workload.generate.write_swf` writes the jobs back verbatim.
        dependencies: read fields 17 and 18 into ``Workload.dependencies``
            (:mod:`hdrm.workload.dependencies`); False leaves them out (and unchecked).

    Returns:
        The jobs the conventions keep, re-indexed 0..n-1, with profile type ``"delay"`` and
        profile names ``"p<id>"``; ``skipped`` counts the rest per reason; ``nb_res`` is the
        header's MaxProcs (else MaxNodes).

    Raises:
        SkippableLineError: a line the standard does not allow (strict only).
        WorkloadError: missing or unreadable file, no job left.
        ConfigError: unknown convention set name.
    """
    conv = get_conventions(conventions)
    path_s = str(path)
    text = read_swf_text(path_s)
    comments, data, numbers = _split(text.splitlines())
    header = parse_header(comments, path_s)
    if not data:
        found = (f"no job lines found ({len(comments)} header lines)" if text.strip()
                 else "the file is empty (a download or copy cut short?)")
        raise WorkloadError(f"{path_s}: {found}; an SWF job line has {NB_FIELDS} numbers")
    if data[0].lstrip()[:1] in ("{", "["):  # else "found 29 fields, SWF needs 18"
        raise WorkloadError(f"{path_s}:{numbers[0]}: JSON, not an SWF trace; a Batsim JSON "
                            "workload is read from a file named *.json")
    fields, numbers, skipped = _parse_fields(data, numbers, path_s, strict)
    fields, numbers, skipped_partial = drop_partial_executions(fields, numbers, path_s, strict)
    fields, numbers, skipped_rows = _check_rows(fields, numbers, path_s, strict)
    skipped.update(skipped_rows)
    skipped.update(skipped_partial)
    converted = apply_conventions(fields, conv)
    skipped = {**converted.skipped, **skipped}
    if not len(converted.rows):
        raise WorkloadError(
            f"{path_s}: all {len(data)} jobs were skipped ({_reasons(skipped)}) under the "
            f"{conv.name!r} conventions; check the trace or choose other conventions"
        )
    if converted.adjusted:
        logger.info("%s: run time < 0 replaced for %d jobs", path_s, converted.adjusted)
    jobs = _build_jobs(fields, converted, keep_fields)
    workload = Workload(jobs, _stem(path_s), path_s, header, skipped, header.nb_res)
    if dependencies:
        workload.dependencies = _dependencies(fields, numbers, converted.rows, path_s, strict)
    return workload


def _dependencies(fields: np.ndarray, numbers: np.ndarray, rows: np.ndarray, path: str,
                  strict: bool) -> Dependencies | None:
    """Fields 17 and 18 of the replayed jobs as :class:`Dependencies` (None: no job has one)."""
    kept = fields[rows]
    if not (kept[:, 16] > 0).any():
        return None

    def refuse(job: int, problem: str) -> None:
        raise SkippableLineError(
            f"{path}:{numbers[rows[job]]}: {problem}",
            "set field 17 to -1 (no preceding job) or leave every dependency out (hdrm replay "
            "--no-dependencies)",
            "such dependencies (the jobs are submitted at their trace times)",
        )

    preds = kept[:, 16]
    fractional = (preds > 0) & (preds != np.floor(preds))  # else 1.5 would name job 1
    if fractional.any():
        if strict:
            job = int(np.argmax(fractional))
            refuse(job, f"field 17 (preceding job number) is {preds[job]:g}, not a whole number")
        preds = np.where(fractional, -1.0, preds)
    deps = resolve(kept[:, 0].astype(np.int64), preds.astype(np.int64), kept[:, 17],
                   fields[:, 0].astype(np.int64), refuse if strict else None)
    if fractional.any():
        if deps is None:
            empty = np.zeros(0, dtype=np.int64)
            deps = Dependencies(empty, empty, np.zeros(0))
        deps.skipped[SKIP_FRACTIONAL_PRED] = int(np.count_nonzero(fractional))
    if deps is not None and deps.skipped:
        logger.warning("%s: dependencies dropped: %s", path, _reasons(deps.skipped))
    return deps


def _check_rows(
    fields: np.ndarray, numbers: np.ndarray, path: str, strict: bool
) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """Refuse (strict) or drop and count rows with fractional counts or a repeated job number."""
    bad = np.zeros(len(fields), dtype=bool)
    skipped: dict[str, int] = {}
    for column, reason in _WHOLE_FIELDS:
        values = fields[:, column]
        fractional = (values != np.floor(values)) & ~bad
        if fractional.any():
            row = int(np.argmax(fractional))
            if strict:
                raise SkippableLineError(
                    f"{path}:{numbers[row]}: field {column + 1} ({FIELD_NAMES[column]}) is "
                    f"{values[row]:g}, not a whole number",
                    "write a whole number (hdrm never rounds it)", "such lines",
                )
            skipped[reason] = skipped.get(reason, 0) + int(np.count_nonzero(fractional))
            bad |= fractional
    repeated = _repeated(fields[:, 0], bad)
    if repeated.any():
        row = int(np.argmax(repeated))
        if strict:
            first = int(np.argmax((fields[:, 0] == fields[row, 0]) & ~bad))
            raise SkippableLineError(
                f"{path}:{numbers[row]}: field 1 (job number) is {fields[row, 0]:g}, already the "
                f"number of line {numbers[first]}",
                "give each job its own number", "lines that repeat a number",
            )
        skipped[SKIP_DUPLICATE] = int(np.count_nonzero(repeated))
        bad |= repeated
    if not bad.any():
        return fields, numbers, skipped
    logger.warning("%s: skipped %s", path, _reasons(skipped))
    return fields[~bad], numbers[~bad], skipped


def _repeated(ids: np.ndarray, bad: np.ndarray) -> np.ndarray:
    """Rows (outside ``bad``) whose id an earlier row outside ``bad`` already has."""
    rows = np.flatnonzero(~bad)
    _, first = np.unique(ids[rows], return_index=True)
    repeated = np.zeros(len(ids), dtype=bool)
    repeated[rows] = True
    repeated[rows[first]] = False
    return repeated


def _reasons(skipped: dict[str, int]) -> str:
    return ", ".join(f"{reason}: {count}" for reason, count in skipped.items()) or "none"


def _stem(path: str) -> str:
    name = Path(path).name
    for suffix in (".gz", ".bz2", ".xz"):
        name = name.removesuffix(suffix)
    return name.removesuffix(".swf")


def _split(lines: list[str]) -> tuple[list[tuple[int, str]], list[str], np.ndarray]:
    """Numbered header lines, job lines and the job lines' numbers (blank lines dropped)."""
    comments = [(i, line) for i, line in enumerate(lines, 1) if line.lstrip()[:1] == ";"]
    numbers = [i for i, line in enumerate(lines, 1) if line.lstrip()[:1] not in (";", "")]
    return comments, [lines[i - 1] for i in numbers], np.array(numbers, dtype=np.int64)


def _parse_fields(
    data: list[str], numbers: np.ndarray, path: str, strict: bool
) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """The ``(n, 18)`` field array, the kept lines' numbers and the malformed lines skipped."""
    counts = list(map(len, map(str.split, data)))
    if counts.count(NB_FIELDS) == len(data):
        values = _fast_numbers("\n".join(data))
        if values is not None and values.size == NB_FIELDS * len(data):
            values = values.reshape(-1, NB_FIELDS)
            if np.isfinite(values).all() and _exact(values[:, _INTEGER_FIELDS]).all():
                return values, numbers, {}
    return _slow_parse(data, numbers, path, strict)


def _fast_numbers(text: str) -> np.ndarray | None:
    """Parse whitespace-separated numbers in C; None when some token is not a number."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        try:
            return np.fromstring(text, sep=" ")
        except (DeprecationWarning, ValueError):
            return None


def _exact(values: np.ndarray) -> np.ndarray:
    """Whether each value is small enough (below 2^53) to be a whole number read exactly."""
    return np.abs(values) < MAX_EXACT


def _quoted(token: str) -> str:
    """``repr(token)``, cut to its first characters when it is long."""
    if len(token) <= _MAX_QUOTED:
        return repr(token)
    return f"{token[:_MAX_QUOTED]!r}... ({len(token)} characters)"


def _slow_parse(
    data: list[str], numbers: np.ndarray, path: str, strict: bool
) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """Check line by line: raise on the first bad line (strict) or skip and count bad lines."""
    rows: list[list[float]] = []
    kept: list[int] = []
    for number, line in zip(numbers.tolist(), data):
        values, problem = _line_values(line.split())
        if problem is None:
            rows.append(values)
            kept.append(number)
            continue
        if strict:
            raise SkippableLineError(f"{path}:{number}: {problem}", "fix the line",
                                     "malformed lines")
        logger.debug("%s:%d: skipped: %s", path, number, problem)
    nb_bad = len(data) - len(rows)
    if nb_bad:
        logger.warning("%s: skipped %d malformed lines", path, nb_bad)
    fields = np.array(rows, dtype=np.float64).reshape(-1, NB_FIELDS)
    return fields, np.array(kept, dtype=np.int64), {SKIP_MALFORMED: nb_bad} if nb_bad else {}


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
            f"unexpected field {NB_FIELDS + 1} {_quoted(tokens[NB_FIELDS])} after field 18 "
            "(think time)"
        )
    values = []
    for k, token in enumerate(tokens, 1):
        try:
            value = float(token)
        except ValueError:
            return [], f"field {k} ({FIELD_NAMES[k - 1]}) is not a number: {_quoted(token)}"
        if not math.isfinite(value):
            return [], (f"field {k} ({FIELD_NAMES[k - 1]}) is not a finite number: "
                        f"{_quoted(token)}")
        if k - 1 in _INTEGER_FIELDS and not _exact(value):
            return [], (f"field {k} ({FIELD_NAMES[k - 1]}) is {_quoted(token)}, too large: "
                        f"whole numbers are read exactly only below 2^53 = {MAX_EXACT}")
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
