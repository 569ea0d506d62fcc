"""Logs of a learning run: ``episodes.csv`` (one row per episode) and ``actions.csv`` (one row per
decision).

* ``episodes.csv``: ``episode,return,loss,makespan,mean_waiting,mean_bounded_slowdown,energy_j,
  wall_s`` (makespan and mean waiting in seconds; an empty loss means none was computed).
* ``actions.csv``: ``episode,step,time,action,action_name`` (time in simulated seconds).
"""

from __future__ import annotations

import csv
import io
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from hdrm.lazy import numpy as np

from hdrm.errors import ConfigError
from hdrm.results._files import parse_float, read_lines, require_columns, write_text

logger = logging.getLogger(__name__)

#: Columns of episodes.csv, in order.
EPISODES_COLUMNS = (
    "episode",
    "return",
    "loss",
    "makespan",
    "mean_waiting",
    "mean_bounded_slowdown",
    "energy_j",
    "wall_s",
)
#: Columns of actions.csv, in order.
ACTIONS_COLUMNS = ("episode", "step", "time", "action", "action_name")


@dataclass
class Episodes:
    """episodes.csv as numpy columns (nan where a value is empty).

    Attributes:
        episode: episode numbers (int).
        returns: total reward of each episode.
        loss: training loss (nan when none).
        makespan_s: makespan of each episode, in seconds.
        mean_waiting_s: mean waiting time, in seconds.
        mean_bounded_slowdown: mean bounded slowdown.
        energy_j: energy consumed, in joules.
        wall_s: wall-clock seconds the episode took.
    """

    episode: np.ndarray
    returns: np.ndarray
    loss: np.ndarray
    makespan_s: np.ndarray
    mean_waiting_s: np.ndarray
    mean_bounded_slowdown: np.ndarray
    energy_j: np.ndarray
    wall_s: np.ndarray

    def __len__(self) -> int:
        return int(self.episode.size)


@dataclass
class Actions:
    """actions.csv as columns.

    Attributes:
        episode, step, action: int arrays.
        time_s: simulated time of each decision, in seconds.
        action_name: the name of each action (a policy pair, a job slot ...).
    """

    episode: np.ndarray
    step: np.ndarray
    time_s: np.ndarray
    action: np.ndarray
    action_name: list[str]

    def __len__(self) -> int:
        return int(self.episode.size)

    def counts(self) -> list[tuple[int, str, int]]:
        """``(action, name, times chosen)`` for each action, by action number."""
        names: dict[int, str] = {}
        for action, name in zip(self.action.tolist(), self.action_name):
            names.setdefault(int(action), name)
        values, counts = np.unique(self.action, return_counts=True)
        return [(int(v), names[int(v)], int(c)) for v, c in zip(values, counts)]


def _read_rows(path: Path, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    """``(line number, row)`` pairs of a CSV file that must hold ``columns``."""
    text = "\n".join(read_lines(path))
    reader = csv.DictReader(io.StringIO(text))
    require_columns(path, list(reader.fieldnames or []), columns)
    rows = []
    for row in reader:
        if None in row or any(v is None for v in row.values()):
            raise ConfigError(f"{path}:{reader.line_num}: field count differs from the header")
        rows.append((reader.line_num, row))
    return rows


def _number(path: Path, lineno: int, column: str, text: str) -> float:
    """A number; an empty field is nan."""
    return math.nan if text.strip() == "" else parse_float(path, lineno, column, text)


def read_episodes_csv(path: str | Path) -> Episodes:
    """Read episodes.csv.

    Raises:
        ConfigError: missing file or column, or a bad number (named with its line).
    """
    path = Path(path)
    rows = _read_rows(path, EPISODES_COLUMNS)
    cols = {c: np.asarray([_number(path, n, c, r[c]) for n, r in rows], dtype=float)
            for c in EPISODES_COLUMNS}
    return Episodes(
        episode=cols["episode"].astype(np.int64),
        returns=cols["return"],
        loss=cols["loss"],
        makespan_s=cols["makespan"],
        mean_waiting_s=cols["mean_waiting"],
        mean_bounded_slowdown=cols["mean_bounded_slowdown"],
        energy_j=cols["energy_j"],
        wall_s=cols["wall_s"],
    )


def read_actions_csv(path: str | Path) -> Actions:
    """Read actions.csv.

    Raises:
        ConfigError: missing file or column, or a bad number (named with its line).
    """
    path = Path(path)
    rows = _read_rows(path, ACTIONS_COLUMNS)

    def column(name: str) -> np.ndarray:
        """One numeric column."""
        return np.asarray([parse_float(path, n, name, r[name]) for n, r in rows], dtype=float)

    return Actions(
        episode=column("episode").astype(np.int64),
        step=column("step").astype(np.int64),
        time_s=column("time"),
        action=column("action").astype(np.int64),
        action_name=[r["action_name"] for _, r in rows],
    )


def _csv_text(columns: tuple[str, ...], rows: Iterable[Mapping[str, Any]]) -> str:
    """CSV text (Unix line ends) with ``columns``; floats in 10 significant digits."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(c)) for c in columns])
    return out.getvalue()


def _cell(value: Any) -> str:
    """One CSV cell: None and nan are empty, floats keep 10 significant digits."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return format(value, ".10g")
    return str(value)


def write_episodes_csv(rows: Iterable[Mapping[str, Any]], path: str | Path) -> Path:
    """Write episodes.csv from mappings keyed by :data:`EPISODES_COLUMNS` (a missing or None
    value is written empty)."""
    path = Path(path)
    write_text(path, _csv_text(EPISODES_COLUMNS, rows))
    return path


def write_actions_csv(rows: Iterable[Mapping[str, Any]], path: str | Path) -> Path:
    """Write actions.csv from mappings keyed by :data:`ACTIONS_COLUMNS`."""
    path = Path(path)
    write_text(path, _csv_text(ACTIONS_COLUMNS, rows))
    return path


def moving_average(values: np.ndarray, window: int) -> np.ndarray:
    """Trailing mean over the last ``window`` values (fewer at the start), skipping nan.

    Example: ``moving_average([1, 2, 3, 4], 2) -> [1, 1.5, 2.5, 3.5]``. An entry whose window
    holds only nan is nan.

    Raises:
        ConfigError: ``window`` is below 1.
    """
    if window < 1:
        raise ConfigError(f"moving-average window must be at least 1, got {window}")
    values = np.asarray(values, dtype=float)
    known = ~np.isnan(values)
    sums = np.cumsum(np.where(known, values, 0.0))
    counts = np.cumsum(known)
    lagged_sums = np.concatenate([np.zeros(window), sums])[: values.size]
    lagged_counts = np.concatenate([np.zeros(window), counts])[: values.size]
    n = counts - lagged_counts
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, (sums - lagged_sums) / np.maximum(n, 1), np.nan)
