"""Metrics of GPU runs: cost and time averages of piecewise-constant series.

The job completion time (JCT) is Batsim's turnaround time (finish - submission) of
:class:`~hdrm.results.records.JobResult`; what GPU runs add is computed here, once, from plain
numbers, so that the engine's outputs and any later analysis share the definitions.
"""

from __future__ import annotations

import math
from typing import Sequence

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
