"""How a run of the benchmark is scored: the mean and what the mean hides.

A :class:`Score` holds, for one sequence, the average bounded slowdown (the protocol's figure),
utilisation and energy, and the tail of the same schedule: the 95th percentile and the maximum
of the jobs' bounded slowdowns, the longest wait, the makespan and the share of jobs that waited
more than :data:`LONG_WAIT_FACTOR` times their (bounded) run time. :meth:`Score.mean` combines the
sequences of a row: the maxima are maxima over all sequences, everything else the mean over them.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from hdrm.results.metrics import avg_bounded_slowdown, avg_utilization, makespan
from hdrm.results.records import BSLD_THRESHOLD_S, REJECTED, JobResult
from hdrm.sim.engine import SimulationResult
from hdrm.sim.outputs import job_results

#: A job "waits too long" when its wait exceeds this many times ``max(run, 10 s)``.
LONG_WAIT_FACTOR = 10.0
#: Fields combined by their maximum over sequences (the others by their mean).
MAX_FIELDS = ("max_bsld", "max_wait_s")


@dataclass(frozen=True)
class Score:
    """What a run is judged by.

    Attributes:
        bsld: average bounded slowdown.
        utilisation: busy share of the cores over the makespan.
        energy_mj: energy in MJ.
        p95_bsld: 95th percentile of the jobs' bounded slowdowns.
        max_bsld: largest bounded slowdown.
        max_wait_s: longest wait, in seconds.
        makespan_s: end of the last job (the sequence starts at 0), in seconds.
        long_wait_share: share of the jobs whose wait exceeds ``LONG_WAIT_FACTOR x max(run, 10 s)``.
    """

    bsld: float
    utilisation: float
    energy_mj: float
    p95_bsld: float = math.nan
    max_bsld: float = math.nan
    max_wait_s: float = math.nan
    makespan_s: float = math.nan
    long_wait_share: float = math.nan

    def value(self, objective: str) -> float:
        """The value of ``objective``: energy (MJ) for energy_consumption, else bounded slowdown."""
        return self.energy_mj if objective == "energy_consumption" else self.bsld

    @staticmethod
    def mean(scores: Iterable["Score"]) -> "Score":
        """The scores of a row's sequences combined: the maxima of :data:`MAX_FIELDS`, the
        means of the other fields."""
        items = list(scores)
        if not items:
            return Score(math.nan, math.nan, math.nan)
        values = []
        for f in dataclasses.fields(Score):
            column = [getattr(s, f.name) for s in items]
            values.append(float(np.max(column) if f.name in MAX_FIELDS else np.mean(column)))
        return Score(*values)


def tail_scores(rows: Sequence[JobResult], nb_cores: int, energy_j: float) -> Score:
    """The :class:`Score` of one schedule's job rows."""
    ran = [r for r in rows if r.final_state != REJECTED]
    bslds = np.array([r.bounded_slowdown(BSLD_THRESHOLD_S) for r in ran], dtype=float)
    waits = np.array([r.waiting_time for r in ran], dtype=float)
    runs = np.array([max(r.execution_time, BSLD_THRESHOLD_S) for r in ran], dtype=float)
    empty = len(ran) == 0
    return Score(
        avg_bounded_slowdown(rows), avg_utilization(rows, nb_cores), energy_j / 1e6,
        p95_bsld=math.nan if empty else float(np.percentile(bslds, 95)),
        max_bsld=math.nan if empty else float(bslds.max()),
        max_wait_s=math.nan if empty else float(waits.max()),
        makespan_s=makespan(rows),
        long_wait_share=math.nan if empty else float(np.mean(waits > LONG_WAIT_FACTOR * runs)),
    )


def score_result(result: SimulationResult) -> Score:
    """Score a finished simulation."""
    return tail_scores(job_results(result), result.platform.nb_cores, result.energy_j)
