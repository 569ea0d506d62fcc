"""Trace-driven arrivals: a Poisson process whose rate follows a rate trace file.

A rate trace is a CSV file with the header ``time_s,rate_per_s`` and one row per change of
rate: from each row's ``time_s`` to the next row's, requests arrive as a Poisson process of that
``rate_per_s`` (0 allowed: a quiet spell); the last row's rate holds from its time on. The first
row is at time 0, times increase, rates are >= 0 and the last is > 0 (else a workload bounded
by a number of requests might never end). Every error is one line naming the file, the line,
the value and the fix.
"""

from __future__ import annotations

import csv
import io
import logging
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hdrm.errors import ConfigError
from hdrm.workload.text import decode_utf8

logger = logging.getLogger(__name__)

#: The header of a rate trace.
HEADER = ["time_s", "rate_per_s"]


@dataclass(frozen=True)
class RateTrace:
    """A piecewise-constant arrival rate.

    Attributes:
        start_s: when each rate starts (the first is 0, increasing).
        rates_per_s: the rate from that time to the next start (the last: for ever).
    """

    start_s: tuple[float, ...]
    rates_per_s: tuple[float, ...]

    @property
    def mean_rate_per_s(self) -> float:
        """The time-averaged rate over the trace's rows (the last rate when it has one row)."""
        if len(self.start_s) == 1:
            return self.rates_per_s[0]
        spans = np.diff(self.start_s)
        return float(np.dot(spans, self.rates_per_s[:-1]) / self.start_s[-1])

    def times(self, duration_s: float, rng: np.random.Generator) -> np.ndarray:
        """Sorted arrival times in ``[0, duration_s)``."""
        ends = (*self.start_s[1:], math.inf)
        parts = []
        for start, end, rate in zip(self.start_s, ends, self.rates_per_s):
            if start >= duration_s:
                break
            end = min(end, duration_s)
            count = rng.poisson(rate * (end - start))
            parts.append(np.sort(rng.uniform(start, end, count)))
        return np.concatenate(parts)


def read_rate_trace(path: str | Path, where: str) -> RateTrace:
    """Read a rate trace CSV file (``where`` names the spec key that refers to it).

    Raises:
        ConfigError: a missing file, a wrong header or a bad row (one line).
    """
    try:
        content = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read rate trace {str(path)!r} ({exc.strerror}); "
                          "the path is relative to the spec file") from None
    rows = list(csv.reader(io.StringIO(decode_utf8(content, path, ConfigError), newline="")))
    if not rows or [h.strip() for h in rows[0]] != HEADER:
        raise ConfigError(f"{path}, line 1: expected the header 'time_s,rate_per_s', got "
                          f"{','.join(rows[0]) if rows else 'an empty file'!r}")
    starts: list[float] = []
    rates: list[float] = []
    for lineno, row in enumerate(rows[1:], 2):
        if not "".join(row).strip():
            continue
        time_s, rate = _row(path, lineno, row)
        if not starts and time_s != 0:
            raise ConfigError(f"{path}, line {lineno}: the first time_s is {time_s:g}; start at 0")
        if starts and time_s <= starts[-1]:
            raise ConfigError(f"{path}, line {lineno}: time_s {time_s:g} is not after "
                              f"{starts[-1]:g}; list the changes in increasing time")
        starts.append(time_s)
        rates.append(rate)
    if not starts or rates[-1] <= 0:
        raise ConfigError(f"{path}: the last rate_per_s must be > 0 (it holds to the end); "
                          f"got {rates[-1] if rates else 'no rows'}")
    return RateTrace(tuple(starts), tuple(rates))


def _row(path: str | Path, lineno: int, row: list[str]) -> tuple[float, float]:
    if len(row) != 2:
        raise ConfigError(f"{path}, line {lineno}: {len(row)} columns {row!r}; expected "
                          "time_s,rate_per_s")
    try:
        time_s, rate = float(row[0]), float(row[1])
    except ValueError:
        time_s = rate = math.nan
    if not (math.isfinite(time_s) and math.isfinite(rate) and rate >= 0):
        raise ConfigError(f"{path}, line {lineno}: {','.join(row)!r}; expected a time in "
                          "seconds and a rate >= 0 per second")
    return time_s, rate
