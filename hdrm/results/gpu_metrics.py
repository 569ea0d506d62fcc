"""Metrics of GPU runs: cost and time averages of piecewise-constant series.

The job completion time (JCT) is Batsim's turnaround time (finish - submission) of
:class:`~hdrm.results.records.JobResult`; what GPU runs add is computed here, once, from plain
numbers, so that the engine's outputs and any later analysis share the definitions.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

#: Milli-GPU in one whole GPU.
MILLI = 1000


def gpu_cost_usd(gpus: int, milli: int, run_s: float, price_usd_per_hour: float) -> float:
    """GPU-hours times the price: ``gpus * milli / 1000 * run_s / 3600 * price`` (a shared GPU
    is charged for its share)."""
    return gpus * milli / MILLI * run_s / 3600.0 * price_usd_per_hour


def time_average(times_s: Sequence[float], values: Sequence[float], span_s: float) -> float:
    """The mean over ``[0, span_s]`` of a series that holds ``values[i]`` from ``times_s[i]``
    until the next time (0 before the first; times sorted); 0 for an empty span."""
    if span_s <= 0 or not len(times_s):
        return 0.0
    ends = list(times_s[1:]) + [span_s]
    parts = [v * (min(end, span_s) - t) for t, end, v in zip(times_s, ends, values)
             if min(end, span_s) > t]
    return math.fsum(parts) / span_s


class StepIntegral:
    """The running integral over time of a piecewise-constant value (a number or a numpy array).

    The value holds from the time it is :meth:`set` until the next change; before the first
    change it is ``zero``. The integral up to the latest :meth:`mark` is kept too, so a caller
    can ask for the integral up to a time already passed (the makespan, when rejected arrivals
    moved time beyond it). Divided by the span, it is :func:`time_average` of the same series,
    without keeping the series.

    Args:
        zero: the value before the first change (also sets the type of the integral).
    """

    def __init__(self, zero: Any = 0.0) -> None:
        self.t = 0.0
        self.value = zero
        self.total = zero * 0.0
        self._mark = (0.0, self.total)

    def advance(self, t: float) -> None:
        """Accrue the current value up to ``t`` (not before the last change)."""
        if t > self.t:
            self.total = self.total + self.value * (t - self.t)
            self.t = t

    def set(self, t: float, value: Any) -> None:
        """The value changes to ``value`` at ``t``."""
        self.advance(t)
        self.value = value

    def mark(self) -> None:
        """Remember the integral up to now (:meth:`integral_to` of this time stays answerable)."""
        self._mark = (self.t, self.total)

    def integral_to(self, t: float) -> Any:
        """The integral over ``[0, t]``, for ``t`` at the latest mark or after the last change.

        Raises:
            ValueError: ``t`` lies before the last change and is not the marked time.
        """
        if t == self._mark[0]:
            return self._mark[1]
        if t < self.t:
            raise ValueError(f"integral to {t} s asked after a change at {self.t} s "
                             f"(marked: {self._mark[0]} s)")
        return self.total + self.value * (t - self.t)
