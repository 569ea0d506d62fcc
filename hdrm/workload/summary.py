"""Workload summary: what was kept, what was skipped and why, and how heavy the workload is.

The offered load is ``sum(res * run_time_s) / (nb_cores * span_s)``, where ``span_s`` is the time
from the first to the last submission: above 1, jobs arrive faster than the machine can run them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from hdrm.workload.batsim_json import unsupported_profiles
from hdrm.workload.job import Workload


@dataclass(frozen=True)
class WorkloadSummary:
    """Figures describing a workload.

    Attributes:
        name: the workload's name.
        nb_jobs: jobs kept.
        skipped: source jobs left out, per reason.
        first_submit_s, last_submit_s: first and last submission times.
        span_s: ``last_submit_s - first_submit_s``.
        max_res: the widest job, in cores.
        total_core_s: ``sum(res * run_time_s)`` over jobs with a known run time.
        nb_unknown_run_time: jobs without a run time (NaN, e.g. Batsim profiles without one).
        nb_over_walltime: jobs whose run time exceeds their walltime (an engine enforcing
            walltimes would kill them).
        nb_cores: the cores the load refers to (None: unknown).
        offered_load: ``total_core_s / (nb_cores * span_s)``, None without cores or span.
        nb_too_wide: jobs asking for more than ``nb_cores`` cores.
        unsupported_profiles: jobs per profile type hdrm cannot simulate.
    """

    name: str
    nb_jobs: int
    skipped: dict[str, int]
    first_submit_s: float
    last_submit_s: float
    span_s: float
    max_res: int
    total_core_s: float
    nb_unknown_run_time: int
    nb_over_walltime: int
    nb_cores: int | None
    offered_load: float | None
    nb_too_wide: int
    unsupported_profiles: dict[str, int] = field(default_factory=dict)

    @property
    def nb_skipped(self) -> int:
        """Total number of source jobs left out."""
        return sum(self.skipped.values())


def summarize_workload(workload: Workload, nb_cores: int | None = None) -> WorkloadSummary:
    """Summarize ``workload``; the load refers to ``nb_cores`` (default: ``workload.nb_res``)."""
    nb_cores = workload.nb_res if nb_cores is None else nb_cores
    jobs = workload.jobs
    submit = np.fromiter((j.submit_s for j in jobs), float, len(jobs))
    res = np.fromiter((j.res for j in jobs), float, len(jobs))
    run = np.fromiter((j.run_time_s for j in jobs), float, len(jobs))
    wall = np.fromiter((j.walltime_s for j in jobs), float, len(jobs))
    known = np.isfinite(run)
    total_core_s = float(np.sum(res[known] * run[known]))
    first_s = float(submit.min()) if jobs else 0.0
    last_s = float(submit.max()) if jobs else 0.0
    span_s = last_s - first_s
    load = total_core_s / (nb_cores * span_s) if nb_cores and span_s > 0 else None
    return WorkloadSummary(
        name=workload.name,
        nb_jobs=len(jobs),
        skipped=dict(workload.skipped),
        first_submit_s=first_s,
        last_submit_s=last_s,
        span_s=span_s,
        max_res=int(res.max()) if jobs else 0,
        total_core_s=total_core_s,
        nb_unknown_run_time=int(np.count_nonzero(~known)),
        nb_over_walltime=int(np.count_nonzero(run[known] > wall[known])),
        nb_cores=nb_cores,
        offered_load=load,
        nb_too_wide=int(np.count_nonzero(res > nb_cores)) if nb_cores else 0,
        unsupported_profiles=unsupported_profiles(workload),
    )


def format_summary(summary: WorkloadSummary) -> str:
    """A human-readable, multi-line rendering of ``summary`` (what ``hdrm workload`` prints)."""
    lines = [f"workload        {summary.name}",
             f"jobs kept       {summary.nb_jobs}",
             f"jobs skipped    {summary.nb_skipped}"]
    lines += [f"  {reason:<28s}{count}" for reason, count in summary.skipped.items()]
    lines += [
        f"submissions     {summary.first_submit_s:.10g} s .. {summary.last_submit_s:.10g} s "
        f"(span {summary.span_s:.10g} s = {summary.span_s / 86400:.1f} days)",
        f"max processors  {summary.max_res}",
        f"core-seconds    {summary.total_core_s:.6g}",
        f"cores           {summary.nb_cores if summary.nb_cores else 'unknown'}",
        f"offered load    {_load(summary.offered_load)}",
    ]
    optional = (
        (summary.nb_over_walltime, "jobs run longer than their walltime"),
        (summary.nb_too_wide, "jobs wider than the cores"),
        (summary.nb_unknown_run_time, "jobs without a run time"),
    )
    lines += [f"note            {count} {text}" for count, text in optional if count]
    for kind, count in summary.unsupported_profiles.items():
        lines.append(f"warning         {count} jobs with unsupported profile type {kind!r}")
    return "\n".join(lines)


def _load(load: float | None) -> str:
    if load is None or not math.isfinite(load):
        return "unknown (no core count or no span)"
    return f"{load:.3f}"
