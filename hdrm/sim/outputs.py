"""Outputs of a built-in run, in the files a Batsim user already knows.

* ``out_jobs.csv`` and ``out_schedule.csv`` with Batsim 4.2.1's columns (the schedule file adds
  bounded slowdown, utilisation and mean power at the end);
* ``out_timeline.csv``: queue, running jobs, busy and contended cores, power and energy after each
  decision instant;
* ``overutilizations.json``: core and memory shortages and bandwidth-oversubscription spans.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Any

from hdrm.durable import Staging, staged
from hdrm.errors import ConfigError
from hdrm.results.csvio import write_jobs_csv, write_schedule_csv
from hdrm.results.machine_times import MachineTimes
from hdrm.results.metrics import batsim_mean, machine_times, summarize
from hdrm.results.overutil import write_overutilizations
from hdrm.results.records import (
    BSLD_THRESHOLD_S,
    JobResult,
    bounded_slowdown,
    format_runs,
    sorted_runs,
)
from hdrm.results.timeline import write_timeline_csv
from hdrm.sim.collector import collector_paused
from hdrm.sim.engine import REJECTED, Outcome, SimulationResult
from hdrm.sim.machine import COMPLETED_SUCCESSFULLY
from hdrm.workload.job import Job


def job_result(outcome: Outcome, workload_name: str = "w0",
               times: MachineTimes | None = None) -> JobResult:
    """The out_jobs.csv row of one job (a job suspended by block preemption: its first start,
    final end and, as execution time, the run time its segments used); a job that ran is also
    added to ``times`` when given (its cores' runs made once for both)."""
    job = outcome.job
    walltime_s = job.walltime_s
    requested = walltime_s if 0.0 < walltime_s < math.inf else -1.0  # job.has_walltime
    profile = job.profile or f"p{job.id}"
    metadata = f"user={job.user_id}" if job.user_id >= 0 else ""  # job_metadata(job)
    state = outcome.state
    if state == REJECTED:
        return JobResult(str(job.id), workload_name, profile, job.submit_s, job.res, requested,
                         0, REJECTED, consumed_energy=None, metadata=metadata)
    start, finish = outcome.start_s, outcome.finish_s
    run_s = finish - start if type(outcome) is Outcome else _run_s(outcome)
    runs = sorted_runs(outcome.cores)
    if times is not None:
        times.add(float(run_s), float(finish), runs)
    return JobResult(str(job.id), workload_name, profile, job.submit_s, job.res, requested,
                     1 if state == COMPLETED_SUCCESSFULLY else 0, state, start, run_s, finish,
                     None, None, None, format_runs(runs), outcome.energy_j, metadata)


def _run_s(outcome: Outcome) -> float:
    """The run time of a job's outcome: the segments' run time of a job suspended by block
    preemption (a :class:`~hdrm.sim.preemptive.PreemptedOutcome`; that module is loaded
    whenever one exists, and only then), else finish - start."""
    preemptive = sys.modules.get("hdrm.sim.preemptive")
    if preemptive is not None and isinstance(outcome, preemptive.PreemptedOutcome):
        return outcome.run_s
    return outcome.finish_s - outcome.start_s


def job_metadata(job: Job) -> str:
    """The metadata column of a job's row: ``user=ID`` when the workload names its user (SWF
    field 12, a Batsim JSON ``user_id``), which ``hdrm plot gantt --color user`` reads; else
    empty, as Batsim writes it."""
    return f"user={job.user_id}" if job.user_id >= 0 else ""


def job_results(result: SimulationResult) -> list[JobResult]:
    """Every job's row, in workload order.

    Made once per result (``result.reports``): writing the files and printing the summary
    share the same rows, so do not modify them.
    """
    rows = result.reports.get("jobs")
    if rows is None or len(rows) != len(result.outcomes):
        times = MachineTimes()  # the summary's machine times, made from the same runs
        rows = result.reports["jobs"] = [job_result(o, times=times) for o in result.outcomes]
        result.reports["machine_times"] = times.totals()
        result.reports.pop("schedule", None)
    return rows


def mean_bounded_slowdown(result: SimulationResult, threshold_s: float = BSLD_THRESHOLD_S) -> float:
    """The run's mean bounded slowdown, as
    :func:`~hdrm.results.metrics.avg_bounded_slowdown` of :func:`job_results` gives it (the same
    float), computed from the outcomes without making the rows (what a protocol that only
    needs this mean, run by run, should call)."""
    values = []
    for outcome in result.outcomes:
        if outcome.state == REJECTED:
            continue
        start = outcome.start_s
        run_s = outcome.finish_s - start if type(outcome) is Outcome else _run_s(outcome)
        wait_s = float(start - outcome.job.submit_s)
        values.append(bounded_slowdown(wait_s, float(run_s), threshold_s))
    return batsim_mean(values, len(result.outcomes))


def schedule_summary(result: SimulationResult, results: list[JobResult] | None = None) -> dict[str, Any]:
    """The out_schedule.csv row of a run.

    Computed once per result when ``results`` is None or the rows of :func:`job_results`
    (a copy is returned); other ``results`` are summarised as given.
    """
    shared = results is None or results is result.reports.get("jobs")
    if shared and "schedule" in result.reports:
        return dict(result.reports["schedule"])
    rows = job_results(result) if results is None else results
    times = result.reports.get("machine_times") if shared else None  # made with the rows
    computing_s, idle_s = machine_times(rows) if times is None else times
    summary = summarize(
        rows,
        result.platform.nb_cores,
        result.energy_j,
        simulation_time_s=result.wall_s,
        scheduling_time_s=result.decision_s,
        machine_state_times_s={"time_computing": computing_s, "time_idle": idle_s},
    )
    if shared:
        result.reports["schedule"] = dict(summary)
    return summary


def make_outdir(outdir: str | Path, label: str = "--outdir") -> Path:
    """Create the output folder ``outdir`` (and its parents) if needed; returns it.

    Raises:
        ConfigError: it cannot be created (a file of that name, no permission ...); the message
            starts with ``label``, the option or key that gave it.
    """
    path = Path(outdir)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{label}: cannot create the folder {path}: {exc.strerror or exc}; "
                          "give a folder you can write to") from None
    return path


def check_outdir(outdir: str | Path, label: str = "--outdir") -> None:
    """Check, without creating anything, that :func:`make_outdir` could make ``outdir``: it is a
    folder one can write to, or its nearest existing parent is.

    Raises:
        ConfigError: as :func:`make_outdir` would.
    """
    path = Path(outdir)
    probe = path
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():
        reason = "File exists" if probe == path else "Not a directory"
    elif not os.access(probe, os.W_OK | os.X_OK):
        reason = "Permission denied"
    else:
        return
    raise ConfigError(f"{label}: cannot create the folder {path}: {reason}; "
                      "give a folder you can write to")


def write_outputs(result: SimulationResult, outdir: str | Path, prefix: str = "out",
                  stage: Staging | None = None) -> dict[str, Path]:
    """Write every output file of a run into ``outdir`` (created if needed).

    The files are written under temporary names and renamed into place together
    (:func:`hdrm.durable.staged`): a run stopped while writing them (Ctrl-C, SIGTERM, an error)
    leaves the folder's previous outputs as they were, never a mix of two runs' files or a file
    cut short. With ``stage``, they join the caller's staging instead, published with the run's
    other files (out_sla.csv, out_preemptions.csv ...) when the caller's block ends.

    Returns:
        ``{"jobs": path, "schedule": path, "timeline": path, "overutilizations": path}``.

    Raises:
        ConfigError: the folder or a file in it cannot be written.
    """
    out = make_outdir(outdir)
    paths = {"jobs": out / f"{prefix}_jobs.csv", "schedule": out / f"{prefix}_schedule.csv",
             "overutilizations": out / "overutilizations.json"}
    if result.timeline:
        paths["timeline"] = out / f"{prefix}_timeline.csv"
    with collector_paused(), staged(stage) as stage:  # rows hold no cycles: hdrm.sim.collector
        rows = job_results(result)
        write_jobs_csv(rows, stage.path(paths["jobs"]))
        write_schedule_csv(schedule_summary(result, rows), stage.path(paths["schedule"]))
        write_overutilizations(result.overutilizations, stage.path(paths["overutilizations"]))
        if result.timeline:
            write_timeline_csv(result.timeline, stage.path(paths["timeline"]))
    return paths
