"""The header of an SWF trace: directive lines such as ``; MaxProcs: 1664 (72, 1368, 224)``.

What is a directive: the SWF standard (Parallel Workloads Archive, version 2.2) defines a fixed set
of header keywords, each written as ``Keyword: value`` on a line starting with ``;``. Archive files
align them in two ways: left (``; MaxProcs: 140``) and right (``;        MaxProcs: 140``, the
colons of all directives in one column). So a header line is a directive when

* its first word is a keyword of the standard followed by a colon, whatever its indentation; or
* its first word is any other single word followed by a colon (a site's own directive, such as
  ``Copyright:``), written at the left margin (at most 2 spaces after ``;``) or with its colon in
  the column of the right-aligned standard directives.

A standard keyword in other letter cases (``maxprocs:``, ``MAXPROCS:``, as hand-written or
converted headers have it) is that keyword where a site's own directive would be one (at the left
margin or in the column). Any other line continues the directive above it (``Information:`` with
a second URL, a ``Note:`` on several lines) or is free text. Header values describe the trace;
none is needed to replay its jobs, so a value that is unknown or informational
(``MaxRuntime: N/A``) is kept raw, left out of the typed fields and reported with one warning
naming its line: it never stops a read.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)

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

#: The header keywords of the SWF standard (version 2.2).
STANDARD_KEYWORDS = frozenset(
    [*_TEXT_DIRECTIVES, *_INT_DIRECTIVES, *_COUNT_DIRECTIVES, "Queue", "Partition", "Note"]
)

#: The standard keywords by their lower-case spelling: ``; maxprocs: 128`` and ``; MAXPROCS: 128``,
#: as hand-written or converted headers have them, are ``MaxProcs``.
_CANONICAL = {keyword.lower(): keyword for keyword in STANDARD_KEYWORDS}

#: Largest indentation (spaces after ``;``) of a left-aligned directive with a non-standard keyword.
LEFT_MARGIN = 2


@dataclass(frozen=True)
class SwfHeader:
    """The header of an SWF file: typed known directives plus every directive raw.

    Text directives keep their continuation lines, joined by newlines. Counts such as
    ``MaxProcs: 1664 (72, 1368, 224)`` give the total (1664) and the numbered parts.

    Attributes:
        version ... partitions_description: text directives (None when absent);
            ``queues_description`` and ``partitions_description`` are ``Queues:``/``Partitions:``.
        max_jobs ... max_partitions: integer directives; ``unix_start_time_s`` is the origin of
            the trace clock (Unix seconds), ``time_zone_s`` its offset. None when absent or when
            the value is not an integer (``N/A``: see ``ignored``).
        max_nodes, max_procs: totals; max_nodes_parts, max_procs_parts: parenthetical parts.
        queues, partitions: numbered ``Queue:``/``Partition:`` lines, number -> description.
        notes: each ``Note:`` with its continuation lines.
        raw: every directive name -> its values, in file order.
        lines: the header lines exactly as read (without line ends).
        ignored: ``(line number, directive, value)`` of each value left out of the typed fields.
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
    ignored: tuple[tuple[int, str, str], ...] = ()

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


def parse_header(lines: list, path: str = "<header>") -> SwfHeader:
    """Parse SWF header lines (each starting with ``;``) into an :class:`SwfHeader`.

    A value that should be an integer but is not (``MaxRuntime: N/A``) is left out of the typed
    fields (it stays in ``raw``, and in ``ignored``) with one warning naming ``file:line``.

    Args:
        lines: the comment lines in file order, each as ``(line_number, text)`` or as text.
        path: the file name, for the warnings.
    """
    numbered = _numbered(lines)
    raw: dict[str, list[str]] = {}
    kwargs: dict[str, Any] = {"queues": {}, "partitions": {}, "notes": [], "raw": raw}
    ignored = []
    for number, key, value in _directives(numbered):
        raw.setdefault(key, []).append(value)
        if not _apply_directive(kwargs, key, value):
            ignored.append((number, key, value))
            logger.warning("%s:%d: header directive %s: %r is not an integer; ignored (header "
                           "values are informational)", path, number, key, value)
    kwargs["notes"] = tuple(kwargs["notes"])
    kwargs["lines"] = tuple(text for _, text in numbered)
    kwargs["ignored"] = tuple(ignored)
    return SwfHeader(**kwargs)


def _numbered(lines: list) -> list[tuple[int, str]]:
    if lines and isinstance(lines[0], tuple):
        return lines
    return list(enumerate(lines, 1))


def _directives(numbered: list[tuple[int, str]]) -> list[list[Any]]:
    """``[line number, keyword, value]`` of each directive, continuation lines joined."""
    aligned = _standard_colon_columns(numbered)
    entries: list[list[Any]] = []
    current: list[Any] | None = None
    for number, text in numbered:
        content = text.lstrip()[1:]
        stripped = content.strip()
        if not stripped:
            current = None
            continue
        key, sep, value = stripped.partition(":")
        leading = len(content) - len(content.lstrip())
        if sep and key.isalnum() and (
                key in STANDARD_KEYWORDS or leading <= LEFT_MARGIN
                or leading + len(key) in aligned):
            current = [number, _CANONICAL.get(key.lower(), key), value.strip()]
            entries.append(current)
        elif current is not None:
            current[2] = f"{current[2]}\n{stripped}" if current[2] else stripped
    return entries


def _standard_colon_columns(numbered: list[tuple[int, str]]) -> set[int]:
    """Colon columns (after ``;``) of the right-aligned standard directives."""
    columns = set()
    for _, text in numbered:
        content = text.lstrip()[1:]
        key, sep, _ = content.lstrip().partition(":")
        leading = len(content) - len(content.lstrip())
        if sep and key in STANDARD_KEYWORDS and leading > LEFT_MARGIN:
            columns.add(leading + len(key))
    return columns


def _apply_directive(kwargs: dict, key: str, value: str) -> bool:
    """Store one directive's typed value in ``kwargs`` (first occurrence wins for scalars).

    Returns:
        False when the value should be an integer and is not (nothing stored).
    """
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
        return False
    return True
