"""Outputs and metrics of a replay on a GPU platform.

Files (beside the usual ``out_schedule.csv`` and ``out_timeline.csv``):

* ``out_jobs.csv``: Batsim's columns, then ``node, gpu_indices, gpu_milli, gpu_model, cpu_milli,
  jct, cost_usd``; ``allocated_resources`` holds the global ids of the task's GPUs (a GPU
  platform allocates GPU shares and CPU milli-cores, not whole cores; empty for a CPU-only task),
  ``gpu_indices`` the GPUs' indices within the node (space separated), ``gpu_milli`` the share
  of each, ``jct`` the job completion time (finish - submission) and ``cost_usd`` its GPU cost;
* ``out_gpu_timeline.csv``: after each decision instant, the queue, running tasks, allocated
  milli-GPU of each model (``alloc_<MODEL>``), the cluster's fragmentation and power;
* ``out_gpu_summary.json``: :func:`gpu_summary`.

Cost: GPU-hours times the model's price per GPU-hour, a shared GPU charged for its share:
``count * milli / 1000 * run time / 3600 * price``. The GPU allocation rate of a model is the
time average over ``[0, makespan]`` of its allocated milli-GPU over its capacity (piecewise
constant between instants); the mean fragmentation is the same time average. Both come from the
running integrals of the report (:class:`~hdrm.sim.gpu_engine.GpuReport`), so they hold with or
without a timeline; :func:`timeline_averages` computes them from the timeline, as a check.
Definitions live in :mod:`hdrm.results.gpu_metrics`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from hdrm.durable import Staging, staged
from hdrm.results.csvio import format_float, write_jobs_csv, write_schedule_csv
from hdrm.results.gpu_metrics import gpu_cost_usd, time_average
from hdrm.results.metrics import makespan
from hdrm.results.timeline import write_timeline_csv
from hdrm.sim.engine import REJECTED, SimulationResult
from hdrm.sim.gpu_engine import GpuReport
from hdrm.sim.outputs import job_results, make_outdir, schedule_summary

#: Columns out_jobs.csv adds on a GPU platform.
GPU_JOB_COLUMNS = ("node", "gpu_indices", "gpu_milli", "gpu_model", "cpu_milli", "jct",
                   "cost_usd")


def job_cost_usd(report: GpuReport, idx: int) -> float:
    """The GPU cost of task ``idx`` (0 when it did not run or used no GPU)."""
    placed = report.placements.get(idx)
    if placed is None or not placed.gpus:
        return 0.0
    return gpu_cost_usd(placed.shape.gpus, placed.shape.milli, placed.run_s,
                        report.price_usd_per_hour[placed.model])


def _time_average(report: GpuReport, span_s: float, value) -> float:
    """Time average over [0, span] of ``value(row)`` of the GPU timeline."""
    rows = report.timeline
    return time_average([r.time for r in rows], [value(r) for r in rows], span_s)


def timeline_averages(report: GpuReport, span_s: float) -> tuple[list[float], float]:
    """Allocation rate per model and mean fragmentation over ``[0, span_s]``, from the
    timeline (what :func:`gpu_summary` gets from the running integrals)."""
    rates = [_time_average(report, span_s, lambda r, k=k: r.allocated_milli[k] / milli)
             for k, milli in enumerate(report.model_milli)]
    return rates, _time_average(report, span_s, lambda r: r.frag_milli)


def _rate(integral_milli_s: float, milli: float, span_s: float) -> float:
    """A time average from its integral (0 over an empty span or capacity)."""
    return integral_milli_s / milli / span_s if span_s > 0 and milli > 0 else 0.0


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values) if values else 0.0


def gpu_summary(result: SimulationResult) -> dict[str, Any]:
    """The run's metrics: jobs, mean waiting and JCT (over the tasks that ran), makespan,
    GPUs and allocation rate per model, mean fragmentation, energy and cost (total and per
    model), rejected tasks per reason."""
    report: GpuReport = result.gpu
    rows = job_results(result)
    ran = [r for r in rows if r.final_state != REJECTED]
    span = makespan(rows)
    cost_by_model: dict[str, float] = {m: 0.0 for m in report.model_names}
    for idx, placed in report.placements.items():
        if placed.gpus:
            cost_by_model[placed.model] += job_cost_usd(report, idx)
    rejected: dict[str, int] = {}
    for outcome in result.outcomes:
        if outcome.state == REJECTED:
            rejected[outcome.reason] = rejected.get(outcome.reason, 0) + 1
    integrals = report.allocated_milli_s or [0.0] * len(report.model_names)
    allocation = {m: _rate(integrals[k], report.model_milli[k], span)
                  for k, m in enumerate(report.model_names)}
    total_milli = sum(report.model_milli)
    return {
        "policy": report.policy,
        "nb_jobs": len(rows),
        "nb_finished": len(ran),
        "nb_rejected": sum(rejected.values()),
        "rejected": rejected,
        "makespan_s": span,
        "mean_waiting_time_s": _mean([r.waiting_time for r in ran]),
        "mean_jct_s": _mean([r.turnaround_time for r in ran]),
        "gpus_by_model": {m: report.model_milli[k] // 1000
                          for k, m in enumerate(report.model_names)},
        "gpu_allocation_rate": allocation,
        "gpu_allocation_rate_all": _rate(math.fsum(integrals), total_milli, span),
        "mean_frag_milli": _rate(report.frag_milli_s, 1, span),
        "energy_j": result.energy_j,
        "cost_usd": math.fsum(cost_by_model.values()),
        "cost_usd_by_model": cost_by_model,
    }


def _job_lines(result: SimulationResult, path: Path) -> None:
    """out_jobs.csv: Batsim's columns (written by the results module) plus the GPU ones."""
    report: GpuReport = result.gpu
    rows = job_results(result)
    write_jobs_csv(rows, path)
    lines = path.read_text(encoding="utf-8").splitlines()
    out = [lines[0] + "," + ",".join(GPU_JOB_COLUMNS)]
    names = [n.name for n in result.platform.nodes]
    for line, outcome, row in zip(lines[1:], result.outcomes, rows):
        placed = report.placements.get(outcome.job.idx)
        if placed is None:
            extra = ["", "", "", "", str(outcome.job.cpu_milli), "", ""]
        else:
            extra = [names[placed.node], " ".join(map(str, placed.gpus)),
                     str(placed.shape.milli if placed.gpus else 0), placed.model,
                     str(placed.shape.cpu_milli), format_float(row.turnaround_time),
                     format_float(job_cost_usd(report, outcome.job.idx))]
        out.append(line + "," + ",".join(extra))
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def _gpu_timeline(report: GpuReport, path: Path) -> None:
    header = (["time", "queue_size", "running_jobs"]
              + [f"alloc_{m}" for m in report.model_names] + ["frag_milli", "power_w"])
    lines = [",".join(header)]
    for r in report.timeline:
        lines.append(",".join([format_float(r.time), str(r.queue_size), str(r.running_jobs)]
                              + [str(a) for a in r.allocated_milli]
                              + [format_float(r.frag_milli), format_float(r.power_w)]))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_gpu_outputs(result: SimulationResult, outdir: str | Path, prefix: str = "out",
                      stage: Staging | None = None) -> dict[str, Path]:
    """Write every output of a GPU run into ``outdir`` (created if needed); returns the paths
    by kind (``jobs``, ``schedule``, ``timeline``, ``gpu_timeline``, ``gpu_summary``). Renamed
    into place together, or with ``stage`` published with the caller's other files
    (:func:`hdrm.sim.outputs.write_outputs`)."""
    out = make_outdir(outdir)
    paths = {"jobs": out / f"{prefix}_jobs.csv", "schedule": out / f"{prefix}_schedule.csv",
             "gpu_timeline": out / f"{prefix}_gpu_timeline.csv",
             "gpu_summary": out / f"{prefix}_gpu_summary.json"}
    if result.timeline:
        paths["timeline"] = out / f"{prefix}_timeline.csv"
    with staged(stage) as stage:  # the folder holds the previous outputs or these, not a mix
        _job_lines(result, stage.path(paths["jobs"]))
        write_schedule_csv(schedule_summary(result), stage.path(paths["schedule"]))
        if result.timeline:
            write_timeline_csv(result.timeline, stage.path(paths["timeline"]))
        _gpu_timeline(result.gpu, stage.path(paths["gpu_timeline"]))
        stage.path(paths["gpu_summary"]).write_text(
            json.dumps(gpu_summary(result), indent=2) + "\n", encoding="utf-8")
    return paths
