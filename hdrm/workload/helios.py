"""SenseTime Helios job logs (``cluster_log.csv``, SC'21 trace, S-Lab-System-Group/HeliosData).

The format, from its publisher (repository ``S-Lab-System-Group/HeliosData``, ``README.md``,
section ``cluster_log.csv``): a CSV file with a header, one job a row, columns ``job_id, user, vc,
gpu_num, cpu_num, node_num, state, submit_time, start_time, end_time, duration, queue``; times
are ``YYYY-MM-DD HH:MM:SS``; ``duration`` (seconds) is ``end_time - start_time`` and ``queue``
(seconds) ``start_time - submit_time``; ``state`` is one of ``COMPLETED``, ``CANCELLED``,
``FAILED``, ``TIMEOUT``, ``NODE_FAIL`` (and ``SUSPENDED`` once in cluster Uranus); ``job_id`` is
Slurm's and follows the submission order; ``gpu_num`` 0 is a CPU job.

Each row with a run time becomes a :class:`~hdrm.workload.job.Job` (id ``job_id``) asking
``gpu_num`` whole GPUs of any model (the trace names none) and ``cpu_num`` cores (at least one;
``cpu_milli`` = 1000 per core), ``submit_s`` = ``submit_time`` (from the first kept job's) and
``run_time_s`` = ``duration``, the run time the trace records, whatever the state: a cancelled or
failed job held its resources for that time. ``node_num`` is kept under ``extra["helios"]`` with
the row; the replay places a job on one node, so a job of more GPUs than a node has is refused
there. ``Workload.header["state"]`` counts the kept jobs per state.

Left out and counted in ``Workload.skipped``: a row without ``start_time`` (``"never
started"``) and one without ``end_time`` or ``duration`` (``"no end_time"``). A bad row (a
missing column, a bad value, a repeated ``job_id``, times out of order: a start before the
submission or an end before the start, a ``duration`` that is not ``end_time - start_time``) is
a one-line :class:`~hdrm.errors.SkippableLineError` naming the file, the line, the column and the
value (``strict``), or skipped and counted by reason. Files may be gzip, bzip2 or xz data and are
UTF-8.
"""

from __future__ import annotations

import csv
import io
import logging
import math
from pathlib import Path

from hdrm.errors import WorkloadError
from hdrm.workload.gpu_trace_files import (
    RecordError,
    Records,
    date,
    number,
    renumbered,
    trace_text,
)
from hdrm.workload.job import AcceleratorDemand, Job, Workload

logger = logging.getLogger(__name__)

COLUMNS = ("job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state", "submit_time",
           "start_time", "end_time", "duration", "queue")
REQUIRED = ("job_id", "gpu_num", "cpu_num", "node_num", "state", "submit_time", "start_time",
            "end_time", "duration")
STATES = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "SUSPENDED")
#: Seconds ``duration`` may differ from ``end_time - start_time`` (both are whole seconds).
_TOLERANCE_S = 1.0
_WHAT = "Helios job log (cluster_log.csv)"


def _cell(row: dict, column: str) -> str:
    return (row.get(column) or "").strip()


def _times(row: dict) -> tuple[float, float | None, float | None]:
    """(submit, start, run time) of a row; start/run None when not recorded."""
    submit = date(_cell(row, "submit_time"), "submit_time")
    if not _cell(row, "start_time"):
        return submit, None, None
    start = date(_cell(row, "start_time"), "start_time")
    if start < submit:
        raise RecordError("start_time", "starts before its submit_time "
                          f"({_cell(row, 'submit_time')})", _cell(row, "start_time"),
                          "times out of order")
    if not _cell(row, "end_time") or not _cell(row, "duration"):
        return submit, start, None
    end = date(_cell(row, "end_time"), "end_time")
    if end < start:
        raise RecordError("end_time", f"ends before its start_time ({_cell(row, 'start_time')})",
                          _cell(row, "end_time"), "times out of order")
    duration = number(_cell(row, "duration"), "duration")
    if abs(duration - (end - start)) > _TOLERANCE_S:
        raise RecordError("duration", f"expected end_time - start_time = {end - start:g} s",
                          _cell(row, "duration"), "duration: not end_time - start_time")
    return submit, start, duration


def _job(row: dict, records: Records) -> Job | None:
    """The job of a row, or None when it has no run time (counted)."""
    if None in row or any(row.get(c) is None for c in REQUIRED):
        raise RecordError(None, "the row's cells do not match the header's columns",
                          key="cells do not match the header")
    job_id = _cell(row, "job_id")
    if not job_id:
        raise RecordError("job_id", "a job needs a job_id", "")
    gpus = int(number(_cell(row, "gpu_num"), "gpu_num", whole=True))
    cpus = int(number(_cell(row, "cpu_num"), "cpu_num", whole=True))
    nodes = int(number(_cell(row, "node_num"), "node_num", whole=True))
    state = _cell(row, "state")
    if state not in STATES:
        raise RecordError("state", f"expected one of {', '.join(STATES)}", state)
    submit, start, run = _times(row)
    if start is None or run is None:
        records.count("never started" if start is None else "no end_time")
        return None
    res = max(1, cpus)
    extra = {"helios": dict(row), "node_num": nodes, "state": state}
    return Job(idx=0, id=job_id, submit_s=submit, res=res, walltime_s=math.inf,
               run_time_s=run, trace_submit_s=submit, profile="helios", extra=extra,
               cpu_milli=res * 1000, accel=AcceleratorDemand(gpus) if gpus else None)


def read_helios(path: str | Path, strict: bool = True) -> Workload:
    """Read a Helios ``cluster_log.csv`` into a Workload (see the module docstring).

    Jobs are sorted by submission (ties keep the file order) and ``submit_s`` starts at 0.

    Raises:
        WorkloadError: the file is unreadable or lacks a column, or (``strict``) a row is bad.
    """
    reader = csv.DictReader(io.StringIO(trace_text(path, _WHAT), newline=""),
                            skipinitialspace=True)
    header = reader.fieldnames
    missing = [c for c in REQUIRED if c not in (header or ())]
    if header is None or missing:
        raise WorkloadError(f"{path}:1: missing column(s) {', '.join(missing)} in the header "
                            f"{','.join(header or [])!r}; a Helios cluster_log.csv starts with "
                            f"{','.join(COLUMNS)}")
    records = Records(path, strict)
    jobs: list[Job] = []
    first: dict[str, int] = {}
    for row in reader:
        line = reader.line_num
        try:
            job = _job(row, records)
            if job is not None:
                if job.id in first:
                    raise RecordError("job_id", f"already the job_id of line {first[job.id]}",
                                      job.id, "job_id: repeated")
                first[str(job.id)] = line
                jobs.append(job)
        except RecordError as exc:
            records.bad(line, exc)
    if not jobs:
        raise WorkloadError(f"{path}: no job with a run time in the Helios log (left out: "
                            f"{records.skipped or 'none'}); give a cluster_log.csv")
    return _workload(path, jobs, records.skipped)


def _workload(path: str | Path, jobs: list[Job], skipped: dict[str, int]) -> Workload:
    states = renumbered(jobs, lambda job: job.extra["state"])
    if skipped:
        logger.warning("%s: left out %d jobs: %s", path, sum(skipped.values()), skipped)
    header = {"format": "helios", "state": states,
              "gpu_jobs": sum(1 for j in jobs if j.accel is not None),
              "multi_node": sum(1 for j in jobs if j.extra["node_num"] > 1)}
    return Workload(jobs, name=Path(path).stem, source=str(path), header=header,
                    skipped=skipped)
