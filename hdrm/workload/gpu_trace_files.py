"""What the Philly, Helios and PAI readers share: the file's text, dates, cells and skips.

* :func:`trace_text`: a trace as published or as users keep it: plain, gzip, bzip2 or xz; a tar
  or zip archive (the PAI tables ship as ``.tar.gz``), binary data and bytes that are not UTF-8
  are refused in one line naming the file and the fix.
* :class:`RecordError`: a bad cell (its column or key and what is wrong); :class:`Records` turns
  it into a one-line :class:`~hdrm.errors.SkippableLineError` naming file, line, column and value
  (``strict``) or counts it by reason in ``Workload.skipped``.
* :func:`parse_datetime`: ``YYYY-MM-DD HH:MM:SS`` (Philly, Helios) as seconds.
"""

from __future__ import annotations

import calendar
import datetime
import gzip
import importlib
import math
import zlib
from pathlib import Path
from typing import Any, Callable

from hdrm.errors import SkippableLineError, WorkloadError
from hdrm.workload.job import Job
from hdrm.workload.text import decode_utf8
from hdrm.workload.unpacked import DECOMPRESSED, not_text

#: The date format of Philly's and Helios' times (wall-clock; no time zone in the files).
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"
#: Bytes of a tar archive's header holding its magic ``ustar``.
_TAR_MAGIC = slice(257, 262)


def trace_text(path: str | Path, what: str) -> str:
    """The text of a trace file: plain, gzip, bzip2 or xz, UTF-8 (a byte order mark dropped).

    Args:
        path: the file.
        what: the trace's name in messages (``"Philly job log"``).

    Raises:
        WorkloadError: missing or unreadable file, corrupt compressed data, an archive, binary
            data, or bytes that are not UTF-8 (``FILE:LINE: not UTF-8 text ...``).
    """
    try:
        content = Path(path).read_bytes()
    except FileNotFoundError:
        raise WorkloadError(f"{path}: no such file; give the path of the {what}") from None
    except OSError as exc:
        raise WorkloadError(f"{path}: cannot read the {what} ({exc.strerror}); check the "
                            "path") from None
    content = _decompressed(path, content, what)
    if content[_TAR_MAGIC] == b"ustar":
        raise WorkloadError(f"{path}: a tar archive, not the {what} itself; extract it "
                            f"(tar -xf {Path(path).name}) and give the file inside")
    found = not_text(content)
    if found is not None:
        raise WorkloadError(f"{path}: {found}, not the text of a {what}; give the file as text "
                            "or gzip, bzip2 or xz data")
    return decode_utf8(content, path)


def _decompressed(path: str | Path, content: bytes, what: str) -> bytes:
    """``content`` decompressed once when it is gzip, bzip2 or xz data."""
    codecs: dict[bytes, tuple[str, Any, str]] = {b"\x1f\x8b": ("gzip", gzip, "gunzip")}
    for magic, (name, module, tool) in DECOMPRESSED.items():
        codecs[magic] = (name, importlib.import_module(module), tool)
    for magic, (name, codec, tool) in codecs.items():
        if content.startswith(magic):
            try:
                inner = codec.decompress(content)
            except (OSError, EOFError, ValueError, zlib.error, getattr(codec, "LZMAError",
                                                                       OSError)) as exc:
                raise WorkloadError(f"{path}: corrupt {name} data ({exc}); re-download the "
                                    f"{what} or {tool} it") from None
            if any(inner.startswith(m) for m in codecs):
                raise WorkloadError(f"{path}: compressed data inside {name} data (compressed "
                                    f"twice); {tool} it once")
            return inner
    return content


def parse_datetime(text: str) -> float:
    """Seconds since 1970 of ``YYYY-MM-DD HH:MM:SS`` read as UTC (only differences are used).

    Raises:
        ValueError: another format, or no such date.
    """
    text = text.strip()
    if len(text) != 19 or text[10] != " ":  # fromisoformat alone takes other ISO forms too
        raise ValueError(f"not {DATE_FORMAT}: {text!r}")
    moment = datetime.datetime.fromisoformat(text)  # 10x faster than strptime
    return float(calendar.timegm(moment.timetuple()))


class RecordError(Exception):
    """A bad cell: its column (or JSON key) and what is wrong; ``key``: the skip reason."""

    def __init__(self, column: str | None, reason: str, value: Any = None,
                 key: str | None = None) -> None:
        super().__init__(reason)
        self.column, self.reason, self.value = column, reason, value
        self.key = key or (f"{column}: {reason.split(',')[0].split(' (')[0]}" if column
                           else reason)


class Records:
    """The bad records of one read: refused (``strict``) or counted by reason."""

    def __init__(self, path: str | Path, strict: bool, fix: str = "fix the row",
                 unit: str = "bad rows") -> None:
        self.path, self.strict, self.fix, self.unit = path, strict, fix, unit
        self.skipped: dict[str, int] = {}

    def bad(self, line: int, exc: RecordError) -> None:
        """Refuse (strict) or count the record at ``line`` (1-based)."""
        if self.strict:
            where = f"column {exc.column!r}: " if exc.column else ""
            value = f" (value {exc.value!r})" if exc.column else ""
            raise SkippableLineError(f"{self.path}:{line}: {where}{exc.reason}{value}",
                                     self.fix, self.unit) from None
        self.count(exc.key)

    def count(self, reason: str) -> None:
        """Count one record left out for ``reason``."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def number(text: Any, column: str, low: float = 0.0, whole: bool = False) -> float:
    """A finite number >= ``low`` (a whole one with ``whole``) from a cell.

    Raises:
        RecordError: not a number, not finite, below ``low``, or not whole.
    """
    try:
        value = float(str(text).strip())
    except ValueError:
        raise RecordError(column, "expected a number", text) from None
    if not math.isfinite(value) or value < low:
        raise RecordError(column, f"expected a finite number >= {low:g}", text)
    if whole and value != math.floor(value):
        raise RecordError(column, "expected a whole number", text)
    return value


def date(text: Any, column: str) -> float:
    """Seconds of a ``YYYY-MM-DD HH:MM:SS`` cell.

    Raises:
        RecordError: another format.
    """
    if not isinstance(text, str):
        raise RecordError(column, f"expected a date {DATE_FORMAT.replace('%', '')} as text",
                          text)
    try:
        return parse_datetime(text)
    except ValueError:
        raise RecordError(column, "expected a date YYYY-MM-DD HH:MM:SS", text) from None


def renumbered(jobs: list[Job], status: Callable[[Job], str]) -> dict[str, int]:
    """Put ``jobs`` in submission order, number them from 0 and start the clock at the first
    submission; returns how many jobs have each ``status``."""
    jobs.sort(key=lambda j: j.submit_s)
    origin = jobs[0].submit_s
    counts: dict[str, int] = {}
    for i, job in enumerate(jobs):
        job.idx, job.submit_s = i, job.submit_s - origin
        key = status(job)
        counts[key] = counts.get(key, 0) + 1
    return counts
