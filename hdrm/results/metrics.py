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
import operator
from itertools import repeat
from typing import Any, Sequence

from hdrm import __version__
from hdrm.errors import ConfigError
from hdrm.registry import suggest
from hdrm.results.csvio import BATSIM_SCHEDULE_COLUMNS
from hdrm.results.machine_times import MachineTimes, machine_times_of  # noqa: F401  (re-exported)
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


_FINISH, _STRETCH, _TURNAROUND, _WAIT, _RUN, _STATE, _CORES = map(operator.attrgetter, (
    "finish_time", "stretch", "turnaround_time", "waiting_time", "execution_time", "final_state",
    "requested_number_of_resources"))


def _job_figures(
    results: Sequence[JobResult], nb_resources: int, threshold_s: float
) -> dict[str, Any]:
    """Every summary column made from the jobs alone, each per-job list made once: Batsim's
    means, maxima and counts, and the values of :func:`avg_bounded_slowdown`,
    :func:`max_bounded_slowdown` and :func:`avg_utilization` (the same lists, summed and
    compared in the same order)."""
    ran = _ran(results)
    nb_jobs = len(results)
    # each column read by one C-level pass (attrgetter), the values as the metrics take them
    span_s = max(map(float, map(_FINISH, ran)), default=0.0)
    stretches = list(map(_STRETCH, ran))
    turnarounds = list(map(_TURNAROUND, ran))
    waits = list(map(_WAIT, ran))
    runs = list(map(_RUN, ran))
    bslds = list(map(bounded_slowdown, map(float, waits), map(float, runs), repeat(threshold_s)))
    nb_success = list(map(_STATE, ran)).count(COMPLETED_SUCCESSFULLY)
    utilization = 0.0
    if not (span_s <= 0 or nb_resources <= 0):  # as avg_utilization
        core_s = math.fsum(list(map(operator.mul, map(_CORES, ran), runs)))
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
