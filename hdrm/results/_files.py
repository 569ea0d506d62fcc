"""Small file helpers shared by the results readers and writers: every failure is a ConfigError."""

from __future__ import annotations

from pathlib import Path

from hdrm.durable import write_text_atomically
from hdrm.errors import ConfigError

#: The names of a run's files (:class:`hdrm.results.run.Run` reads them; the launchers write
#: them), kept here so that a writer need not import the readers.
JOBS_FILE = "out_jobs.csv"
SCHEDULE_FILE = "out_schedule.csv"
TIMELINE_FILE = "out_timeline.csv"
OVERUTILIZATIONS_FILE = "overutilizations.json"
EPISODES_FILE = "episodes.csv"
ACTIONS_FILE = "actions.csv"


def read_lines(path: Path) -> list[str]:
    """The file's lines without line ends (UTF-8, a byte order mark dropped: a spreadsheet
    program writes one when it saves out_jobs.csv), or a ConfigError naming the file."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    return text.splitlines()


def write_text(path: Path, text: str) -> None:
    """Write text with Unix line ends, whole or not at all (:func:`hdrm.durable.replacing`), or
    raise a ConfigError naming the file."""
    try:
        write_text_atomically(path, text)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write: {exc.strerror or exc}") from None


def parse_float(path: Path, lineno: int, column: str, text: str) -> float:
    """Parse a number, or raise a ConfigError naming the file, line, column and value."""
    try:
        return float(text)
    except ValueError:
        raise ConfigError(f"{path}:{lineno}: column {column}: {text!r} is not a number") from None


def require_columns(path: Path, header: list[str], required: tuple[str, ...]) -> None:
    """Raise a ConfigError naming the columns of ``required`` that the header lacks."""
    missing = [c for c in required if c not in header]
    if missing:
        raise ConfigError(
            f"{path}:1: header lacks column(s) {', '.join(missing)} "
            f"(found: {', '.join(header) or 'nothing'})"
        )
