"""Schedule metrics from job results, computed the way Batsim 4.2.1 computes out_schedule.csv.

Conventions taken from Batsim (and checked against its outputs):

* a job's slowdown is its stretch, turnaround / execution time;
* the means (waiting, turnaround, slowdown) sum over the jobs that ran (rejected ones add
  nothing) and divide by **all** jobs, rejected ones included; with no rejection this is the plain
  mean over jobs;
* the makespan is the latest finish time (time 0 is the start of the simulation, not the first
  submission);
* ``time_computing`` is the sum over jobs of allocated cores x execution time, and ``time_idle``
  the idle time of each core from 0 to the end of the last job it ran (an unused core and the idle
  tail after a core's last job count nothing, as Batsim only books time at state changes).

hdrm adds the bounded slowdown ``max(1, (wait + run) / max(run, threshold))`` (threshold 10 s by
default, averaged with the same convention), the utilisation
``sum(res x execution) / (nb_resources x makespan)`` and the mean power ``energy / makespan``.
"""

from __future__ import annotations

import logging
import math
from array import array
from typing import Any, Iterable, Sequence

import numpy as np

from hdrm import __version__
from hdrm.errors import ConfigError
from hdrm.registry import suggest
from hdrm.results.csvio import BATSIM_SCHEDULE_COLUMNS
from hdrm.results.records import (
    BSLD_THRESHOLD_S,
    COMPLETED_SUCCESSFULLY,
    REJECTED,
    JobResult,
    bounded_slowdown,
)

logger = logging.getLogger(__name__)

#: Batsim's out_schedule.csv columns before the ``time_*`` ones, in Batsim's order.
_BATSIM_ORDER = tuple(c for c in BATSIM_SCHEDULE_COLUMNS if not c.startswith("time_"))
#: What an hdrm engine writes in the batsim_version column.
HDRM_VERSION_TAG = f"hdrm-{__version__}"


def _ran(results: Sequence[JobResult]) -> list[JobResult]:
    """The jobs that ran (every state but REJECTED)."""
    return [r for r in results if r.final_state != REJECTED]


def batsim_mean(values: list[float], nb_jobs: int) -> float:
    """Sum of ``values`` (one per job that ran) over ``nb_jobs``, rejected jobs included
    (Batsim's mean); 0 when there are no jobs."""
    return math.fsum(values) / nb_jobs if nb_jobs else 0.0


_batsim_mean = batsim_mean


def makespan(results: Sequence[JobResult]) -> float:
    """Latest finish time of the jobs that ran, in seconds (0 when none ran)."""
    return max((float(r.finish_time) for r in _ran(results)), default=0.0)


def avg_waiting_time(results: Sequence[JobResult]) -> float:
    """Mean waiting time in seconds (Batsim's mean_waiting_time)."""
    return _batsim_mean([r.waiting_time for r in _ran(results)], len(results))


def avg_job_completion(results: Sequence[JobResult]) -> float:
    """Mean turnaround (completion minus submission) time in seconds (mean_turnaround_time)."""
    return _batsim_mean([r.turnaround_time for r in _ran(results)], len(results))


def avg_job_slowdown(results: Sequence[JobResult]) -> float:
    """Mean slowdown, turnaround / execution time (Batsim's mean_slowdown)."""
    return _batsim_mean([r.stretch for r in _ran(results)], len(results))


def avg_bounded_slowdown(
    results: Sequence[JobResult], threshold_s: float = BSLD_THRESHOLD_S
) -> float:
    """Mean bounded slowdown ``max(1, (wait + run) / max(run, threshold_s))``."""
    values = [r.bounded_slowdown(threshold_s) for r in _ran(results)]
    return _batsim_mean(values, len(results))


def max_bounded_slowdown(
    results: Sequence[JobResult], threshold_s: float = BSLD_THRESHOLD_S
) -> float:
    """Largest bounded slowdown over the jobs that ran (0 when none ran)."""
    return max((r.bounded_slowdown(threshold_s) for r in _ran(results)), default=0.0)


def core_seconds(results: Sequence[JobResult]) -> float:
    """Sum over the jobs that ran of requested cores x execution time, in core-seconds."""
    return math.fsum(r.requested_number_of_resources * r.execution_time for r in _ran(results))


def avg_utilization(results: Sequence[JobResult], nb_resources: int) -> float:
    """Fraction of the ``nb_resources`` cores busy over ``[0, makespan]``, in [0, 1]."""
    span_s = makespan(results)
    if span_s <= 0 or nb_resources <= 0:
        return 0.0
    return core_seconds(results) / (nb_resources * span_s)


def energy_consumption(results: Sequence[JobResult], energy_j: float | None = None) -> float:
    """Energy in joules: ``energy_j`` when given, else the sum of the jobs' consumed_energy.

    Returns nan when neither is known (Batsim without energy writes -1 per job).
    """
    if energy_j is not None:
        return float(energy_j)
    known = [r.consumed_energy for r in _ran(results) if r.consumed_energy is not None]
    if not known or any(e < 0 for e in known):
        return math.nan
    return math.fsum(known)


def edp(results: Sequence[JobResult], energy_j: float | None = None) -> float:
    """Energy-delay product: energy (J, see :func:`energy_consumption`) x makespan (s)."""
    return energy_consumption(results, energy_j) * makespan(results)


def machine_times(results: Sequence[JobResult]) -> tuple[float, float]:
    """Batsim's ``(time_computing, time_idle)`` in machine-seconds, from the allocations.

    Each core computes during the jobs it runs and is idle from 0 to the end of its last job
    otherwise; Batsim books nothing after a core's last job. See :func:`machine_times_of`, which
    this calls with the id ranges of each job that ran, in order.
    """
    return machine_times_of(
        (float(r.execution_time), float(r.finish_time),
         [(lo, hi + 1) for lo, hi in r.core_ranges()])
        for r in results if r.final_state != REJECTED)


def machine_times_of(
    spans: Iterable[tuple[float, float, Iterable[tuple[int, int]]]],
) -> tuple[float, float]:
    """:func:`machine_times` from ``(execution_time, finish_time, runs)`` of the jobs that ran,
    in job order, each job's cores as sorted, merged runs ``(first, last + 1)`` (see
    :class:`MachineTimes`)."""
    times = MachineTimes()
    add = times.add
    for run_s, end_s, runs in spans:
        add(run_s, end_s, runs)
    return times.totals()


class MachineTimes:
    """:func:`machine_times` made job by job: :meth:`add` each job that ran, in job order, then
    read :meth:`totals` (what the engine's outputs do as they make the job rows).

    The cost grows with the number of runs (and once with the number of cores), not with the
    cores of each job. Every core's busy time is the sum of its jobs' execution times, added in
    job order (one numpy slice per long run, item by item for short ones: the same additions);
    its last end is a maximum, exact in any order, so it is taken for :data:`_RUNS_AT_ONCE`
    runs at a time (:func:`_raise_to_covering_max`).
    """

    def __init__(self) -> None:
        self._busy = array("d")
        self._view = np.zeros(0)  # numpy view of _busy's memory (dropped while it grows)
        self._last_end = np.zeros(0)
        self._los, self._his, self._ends = array("q"), array("q"), array("d")
        self._computing = array("d")  # run_s * cores of each run, summed by fsum at the end
        self._size = 0

    def add(self, run_s: float, end_s: float, runs: Iterable[tuple[int, int]]) -> None:
        """Book a job that ran ``run_s`` seconds, ended at ``end_s``, on the cores of ``runs``
        (sorted, merged ``(first, last + 1)``)."""
        busy, view = self._busy, self._view
        los, his, ends, computing = self._los, self._his, self._ends, self._computing
        for lo, hi in runs:
            if hi > self._size:
                self._size = hi
                if hi > len(busy):
                    view = None  # the old view holds the memory: let it go first
                    view = self._grow(hi)
            if hi - lo <= _SHORT_RUN:
                for c in range(lo, hi):
                    busy[c] += run_s
            else:
                view[lo:hi] += run_s
            los.append(lo)
            his.append(hi)
            ends.append(end_s)
            computing.append(run_s * (hi - lo))
            if len(los) == _RUNS_AT_ONCE:
                _raise_to_covering_max(self._last_end, los, his, ends)
                del los[:], his[:], ends[:]

    def totals(self) -> tuple[float, float]:
        """``(time_computing, time_idle)`` of the jobs added so far."""
        if not self._computing:
            return 0.0, 0.0
        _raise_to_covering_max(self._last_end, self._los, self._his, self._ends)
        del self._los[:], self._his[:], self._ends[:]
        size = self._size
        return (math.fsum(self._computing),
                float(np.sum(self._last_end[:size] - self._view[:size])))

    def _grow(self, size: int) -> np.ndarray:
        """Grow the per-core totals to at least ``size`` cores (doubling, zeros at the end);
        returns the new numpy view of the busy times."""
        busy = self._busy
        self._view = None
        busy.frombytes(bytes(8 * (max(size, 2 * len(busy)) - len(busy))))
        self._view = np.frombuffer(busy)
        last_end = self._last_end
        self._last_end = np.concatenate((last_end, np.zeros(len(busy) - last_end.size)))
        return self._view


#: Runs of at most this many cores add their time item by item (numpy's call costs more).
_SHORT_RUN = 16
#: Runs whose ends are kept before they raise the cores' last ends, all at once.
_RUNS_AT_ONCE = 8192


def _raise_to_covering_max(target: np.ndarray, los: array, his: array, values: array) -> None:
    """Raise each core's ``target`` to the largest ``values[k]`` over the runs
    ``los[k]..his[k] - 1`` that hold it (as ``np.maximum(target[lo:hi], value)`` run by run:
    nan spreads, ties keep ``target``); ``target`` is >= 0 or nan where no run holds a core.

    The runs' ends cut the cores into segments that every run covers whole or not at all; a
    segment tree over them takes each run as O(log) nodes, all runs at once per level (numpy),
    then each node passes its maximum down to its segments.
    """
    if not los:
        return
    lo = np.frombuffer(los, dtype=np.int64)
    hi = np.frombuffer(his, dtype=np.int64)
    value = np.frombuffer(values)
    cuts, index = np.unique(np.concatenate((lo, hi)), return_inverse=True)
    nb_segments = cuts.size - 1
    width = 1 << max(nb_segments - 1, 0).bit_length()
    tree = np.zeros(2 * width)
    left, right = index[:lo.size] + width, index[lo.size:] + width
    while True:  # bottom-up: a run's node at each end of its span, level by level
        active = left < right
        if not active.any():
            break
        take = active & (left & 1 == 1)
        np.maximum.at(tree, left[take], value[take])
        left += take
        take = active & (right & 1 == 1) & (left < right)
        right -= take
        np.maximum.at(tree, right[take], value[take])
        left >>= 1
        right >>= 1
    level = 1
    while level < width:  # each node's maximum down to its two children
        children = tree[2 * level:4 * level].reshape(-1, 2)
        np.maximum(children, tree[level:2 * level, None], out=children)
        level *= 2
    span = target[cuts[0]:cuts[-1]]  # a view: written in place
    np.maximum(span, np.repeat(tree[width:width + nb_segments], np.diff(cuts)), out=span)


def summarize(
    results: Sequence[JobResult],
    nb_resources: int,
    energy_j: float | None = None,
    *,
    bsld_threshold_s: float = BSLD_THRESHOLD_S,
    scheduling_time_s: float = 0.0,
    simulation_time_s: float = 0.0,
    nb_machine_switches: int = 0,
    nb_grouped_switches: int = 0,
    machine_state_times_s: dict[str, float] | None = None,
    batsim_version: str = HDRM_VERSION_TAG,
) -> dict[str, Any]:
    """Every out_schedule.csv column (Batsim's and hdrm's) from job results.

    Args:
        results: one result per job, rejected jobs included.
        nb_resources: cores of the platform (Batsim's nb_computing_machines).
        energy_j: energy the platform consumed (consumed_joules); 0 when None, as Batsim writes
            without energy.
        bsld_threshold_s: threshold of the bounded slowdown.
        scheduling_time_s: wall-clock seconds spent deciding (Batsim's scheduling_time).
        simulation_time_s: wall-clock seconds of the whole run (Batsim's simulation_time).
        nb_machine_switches: P-state changes, counted per machine.
        nb_grouped_switches: P-state change requests.
        machine_state_times_s: overrides of the ``time_*`` columns (``{"time_sleeping": 3.0}``);
            ``time_computing`` and ``time_idle`` default to :func:`machine_times`.
        batsim_version: the version tag (``hdrm-<version>`` for our engines).

    Returns:
        ``{column: value}`` with the columns of
        :data:`hdrm.results.csvio.SCHEDULE_COLUMNS`, ready for ``write_schedule_csv``.
    """
    energy = 0.0 if energy_j is None else float(energy_j)
    summary: dict[str, Any] = {"batsim_version": batsim_version, "consumed_joules": energy}
    summary.update(_job_figures(results, nb_resources, bsld_threshold_s))
    span_s = summary["makespan"]
    summary.update(
        {
            "nb_computing_machines": int(nb_resources),
            "nb_grouped_switches": int(nb_grouped_switches),
            "nb_machine_switches": int(nb_machine_switches),
            "scheduling_time": float(scheduling_time_s),
            "simulation_time": float(simulation_time_s),
        }
    )
    ordered = {column: summary[column] for column in _BATSIM_ORDER}
    ordered.update(_state_times(results, machine_state_times_s or {}))
    ordered.update({column: summary[column] for column in _HDRM_JOB_COLUMNS})
    ordered["mean_power_w"] = energy / span_s if span_s > 0 else 0.0
    return ordered


#: hdrm's own columns made from the jobs, in the order written (before ``mean_power_w``).
_HDRM_JOB_COLUMNS = ("mean_bounded_slowdown", "max_bounded_slowdown", "utilization")


def _job_figures(
    results: Sequence[JobResult], nb_resources: int, threshold_s: float
) -> dict[str, Any]:
    """Every summary column made from the jobs alone, each per-job list made once: Batsim's
    means, maxima and counts, and the values of :func:`avg_bounded_slowdown`,
    :func:`max_bounded_slowdown` and :func:`avg_utilization` (the same lists, summed and
    compared in the same order)."""
    ran = _ran(results)
    nb_jobs = len(results)
    span_s = max([float(r.finish_time) for r in ran], default=0.0)
    stretches = [r.stretch for r in ran]
    turnarounds = [r.turnaround_time for r in ran]
    waits = [r.waiting_time for r in ran]
    bslds = [bounded_slowdown(float(r.waiting_time), float(r.execution_time), threshold_s)
             for r in ran]
    nb_success = sum(1 for r in ran if r.final_state == COMPLETED_SUCCESSFULLY)
    utilization = 0.0
    if not (span_s <= 0 or nb_resources <= 0):  # as avg_utilization
        core_s = math.fsum([r.requested_number_of_resources * r.execution_time for r in ran])
        utilization = core_s / (nb_resources * span_s)
    return {
        "makespan": span_s,
        "max_slowdown": max(stretches, default=0.0),
        "max_turnaround_time": max(turnarounds, default=0.0),
        "max_waiting_time": max(waits, default=0.0),
        "mean_slowdown": batsim_mean(stretches, nb_jobs),
        "mean_turnaround_time": batsim_mean(turnarounds, nb_jobs),
        "mean_waiting_time": batsim_mean(waits, nb_jobs),
        "nb_jobs": nb_jobs,
        "nb_jobs_finished": len(ran),
        "nb_jobs_killed": len(ran) - nb_success,
        "nb_jobs_rejected": nb_jobs - len(ran),
        "nb_jobs_success": nb_success,
        "success_rate": nb_success / nb_jobs if nb_jobs else 0.0,
        "mean_bounded_slowdown": batsim_mean(bslds, nb_jobs),
        "max_bounded_slowdown": max(bslds, default=0.0),
        "utilization": utilization,
    }


_STATE_COLUMNS = (
    "time_computing",
    "time_idle",
    "time_sleeping",
    "time_switching_off",
    "time_switching_on",
    "time_unavailable",
)


def _state_times(results: Sequence[JobResult], overrides: dict[str, float]) -> dict[str, float]:
    """The ``time_*`` columns: computing and idle from the jobs, the others 0, then overrides."""
    unknown = sorted(set(overrides) - set(_STATE_COLUMNS))
    if unknown:
        raise ConfigError(
            f"machine_state_times_s: unknown column {unknown[0]!r}; "
            f"{suggest(unknown[0], _STATE_COLUMNS)}choose among: {', '.join(_STATE_COLUMNS)}"
        )
    times = dict.fromkeys(_STATE_COLUMNS, 0.0)
    if "time_computing" not in overrides or "time_idle" not in overrides:
        computing_s, idle_s = machine_times(results)
        times.update(time_computing=computing_s, time_idle=idle_s)
    times.update({k: float(v) for k, v in overrides.items()})
    return times
