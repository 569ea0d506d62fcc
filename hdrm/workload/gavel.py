"""Gavel traces (Narayanan et al., OSDI'20) with their measured throughput matrix.

A trace line is tab separated: job type, command, [working directory,] num-steps argument,
needs-data-dir flag, total steps, arrival time (s), scale factor (workers, one GPU each) -- 7
fields, or 8 with the working directory. The throughput file maps a GPU type (``k80``, ``p100``,
``v100``; the ``*_unconsolidated`` entries are ignored) to ``"('<job type>', <scale factor>)"`` ->
``{"null": steps per second alone, ...}``.

A job's run time on a GPU model is its total steps divided by the measured throughput of its job
type and scale factor on that model. Each line becomes a :class:`~hdrm.workload.job.Job` asking
``scale factor`` whole GPUs of the models with a measured throughput (library names: K80, P100,
V100M16, the 16 GB V100 of Gavel's measurements), ``run_time_s`` on the fastest of them and
every model's run time under ``extra["gavel"]["run_time_s"]``; the CPU demand is not in the trace
(one core). Some multi-worker jobs have no measurement at their scale factor (e.g.
Recommendation at 4 workers): their throughput is assumed to be the one-worker throughput times the
scale factor (ideal scaling), flagged ``extra["gavel"]["scaling_assumed"]`` and counted in
``Workload.header["scaling_assumed"]``. A malformed line (the wrong number of fields, a number that
is not finite: a ``nan`` arrival never arrives) is a one-line :class:`~hdrm.errors.WorkloadError`
naming the file, the line and the field (``strict``) or a counted skip. Files are UTF-8 (a byte
order mark is dropped).
"""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path
from typing import Any

from hdrm.errors import WorkloadError
from hdrm.workload.gpu_trace_files import trace_text
from hdrm.workload.job import AcceleratorDemand, Job, Workload
from hdrm.workload.swf import SkippableLineError

#: Gavel's GPU types and the library's accelerator models they are.
GAVEL_MODELS = {"k80": "K80", "p100": "P100", "v100": "V100M16"}

_FIELDS = ("job type", "command", "num-steps argument", "needs-data-dir flag", "total steps",
           "arrival time", "scale factor")


def read_throughputs(path: str | Path) -> dict[str, dict[tuple[str, int], float]]:
    """Steps per second alone, per library model, per (job type, scale factor).

    Raises:
        WorkloadError: the file is missing, not JSON, or a key is not ``"('type', n)"``.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except (OSError, ValueError) as exc:
        raise WorkloadError(f"{path}: cannot read the Gavel throughput file: {exc}") from None
    if not isinstance(data, dict):
        raise WorkloadError(f"{path}: expected a JSON object of GPU types (k80, p100, v100), "
                            f"got a {type(data).__name__}; give Gavel's "
                            "simulation_throughputs.json")
    table: dict[str, dict[tuple[str, int], float]] = {}
    for gavel_type, model in GAVEL_MODELS.items():
        section = data.get(gavel_type, {})
        if not isinstance(section, dict):
            raise WorkloadError(f"{path}: {gavel_type}: expected an object of \"('job type', "
                                f"scale)\" keys, got a {type(section).__name__}")
        for key, entry in section.items():
            try:
                job_type, scale = ast.literal_eval(key)
                speed = float(entry["null"])
            except (ValueError, SyntaxError, TypeError, KeyError):
                raise WorkloadError(f"{path}: {gavel_type}.{key}: expected a key "
                                    "\"('job type', scale)\" with a \"null\" throughput") from None
            table.setdefault(model, {})[(str(job_type), int(scale))] = speed
    if not table:
        raise WorkloadError(f"{path}: no k80, p100 or v100 section; give Gavel's "
                            "simulation_throughputs.json")
    return table


def _parse(fields: list[str]) -> tuple[str, float, float, int]:
    """(job type, total steps, arrival s, scale factor) of a line; ValueError names the field."""
    if len(fields) == 8:
        fields = fields[:2] + fields[3:]  # drop the working directory
    if len(fields) != 7:
        raise ValueError(f"found {len(fields)} tab-separated fields, expected 7 (or 8)")
    values = []
    for index in (4, 5, 6):
        try:
            value = float(fields[index])
        except ValueError:
            raise ValueError(f"field {index + 1} ({_FIELDS[index]}): expected a number, got "
                             f"{fields[index]!r}") from None
        if not math.isfinite(value):  # nan never arrives (the replay hung); inf was lost
            raise ValueError(f"field {index + 1} ({_FIELDS[index]}): expected a finite number, "
                             f"got {fields[index]!r}")
        values.append(value)
    steps, arrival, scale = values
    if scale != math.floor(scale):  # workers of one GPU each: never rounded
        raise ValueError(f"field 7 (scale factor): expected a whole number of workers (one GPU "
                         f"each), got {fields[6]!r}")
    if steps <= 0 or arrival < 0 or scale < 1:
        raise ValueError(f"out of range: total steps > 0, arrival >= 0 and scale factor >= 1 "
                         f"expected, got {steps:g}, {arrival:g}, {scale:g}")
    return fields[0], steps, arrival, int(scale)


def _run_times(table: dict, job_type: str, scale: int,
               steps: float) -> tuple[dict[str, float], bool]:
    """Run time per model, and whether the scale factor's throughput had to be assumed."""
    measured = {m: steps / speeds[(job_type, scale)] for m, speeds in table.items()
                if speeds.get((job_type, scale), 0) > 0}
    if measured:
        return measured, False
    assumed = {m: steps / (speeds[(job_type, 1)] * scale) for m, speeds in table.items()
               if speeds.get((job_type, 1), 0) > 0}
    if not assumed:
        raise ValueError(f"no throughput measured for job type {job_type!r}")
    return assumed, True


def _trace_lines(trace: Path) -> list[str]:
    """The trace's lines (UTF-8, a byte order mark dropped; plain or gzip, bzip2 or xz data);
    errors name the file and the fix."""
    return trace_text(trace, "Gavel trace").splitlines()


def read_gavel(trace: str | Path, throughputs: str | Path, strict: bool = True) -> Workload:
    """Read a Gavel trace and its throughput matrix into a Workload (see the module docs)."""
    table = read_throughputs(throughputs)
    jobs: list[Job] = []
    skipped: dict[str, int] = {}
    lines = _trace_lines(Path(trace))
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            job_type, steps, arrival, scale = _parse(line.split("\t"))
            times, assumed = _run_times(table, job_type, scale, steps)
        except ValueError as exc:
            if strict:
                raise SkippableLineError(f"{trace}:{number}: {exc}", "fix the line",
                                         "bad lines") from None
            reason = str(exc).split(":")[0]
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        extra: dict[str, Any] = {"gavel": {"job_type": job_type, "total_steps": steps,
                                           "scale_factor": scale, "run_time_s": times,
                                           "scaling_assumed": assumed}}
        jobs.append(Job(idx=len(jobs), id=len(jobs), submit_s=arrival, res=1,
                        walltime_s=math.inf, run_time_s=min(times.values()),
                        trace_submit_s=arrival, profile="gavel", extra=extra,
                        accel=AcceleratorDemand(scale, 1000, tuple(sorted(times)))))
    if not jobs:
        raise WorkloadError(f"{trace}: no job in the Gavel trace")
    jobs.sort(key=lambda j: j.submit_s)
    for i, job in enumerate(jobs):
        job.idx = i
    return Workload(jobs, name=Path(trace).stem, source=str(trace),
                    header={"format": "gavel", "models": sorted(table), "scaling_assumed":
                            sum(j.extra["gavel"]["scaling_assumed"] for j in jobs)},
                    skipped=skipped)
