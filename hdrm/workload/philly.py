"""Microsoft Philly's job log (``cluster_job_log``, ATC'19 trace, msr-fiddle/philly-traces).

The format, from its publisher (repository ``msr-fiddle/philly-traces``):

* ``README.md`` (section ``cluster_job_log``): one JSON document; each job has ``status`` (one of
  ``Pass``, ``Killed``, ``Failed``), ``vc``, ``jobid``, ``attempts``, ``submitted_time`` and
  ``user``; each attempt has ``start_time``, ``end_time`` and ``detail``, a list of ``{"ip":
  server, "gpus": [GPU ids]}``. A job may have no attempt; an attempt may lack its start and/or
  end time (a logging error); a last attempt without ``end_time`` was still running when the log
  was taken.
* ``analysis/Philly Trace Analysis.ipynb`` (its parser, class ``Job``): the document is a JSON
  array of jobs (``json.load``); times are ``%Y-%m-%d %H:%M:%S`` and a missing one is ``null``,
  ``""`` or ``"None"``; a job's GPU count is the number of GPU ids over its first attempt's
  ``detail``; its run time runs from its first attempt's start to its last attempt's end.

Each job with a run time becomes a :class:`~hdrm.workload.job.Job` (id ``jobid``) asking that
many whole GPUs of any model (Philly names no model: its machine list gives only the GPU memory)
and one core (no CPU demand in the trace), ``submit_s`` = ``submitted_time`` (from the first
kept job's), ``run_time_s`` = last attempt's end - first attempt's start, the publisher's
definition, whatever the status: a failed or killed job held its GPUs for that time. A first
attempt without GPU ids gives a job without GPUs. Its status, virtual cluster, user, attempt count
and GPU count per attempt are under ``extra["philly"]``; ``Workload.header["status"]`` counts the
kept jobs per status and ``["multi_attempt"]`` those with several attempts.

Left out and counted in ``Workload.skipped`` (no run time recorded): a job without attempts
(``"no attempt"``), one whose first attempt has no start time (``"first attempt without
start_time"``) and one whose last attempt has no end time (``"still running: last attempt without
end_time"``). A malformed job (a missing key, a bad value, a repeated ``jobid``, times out of
order: an attempt ending before it starts, a first start before the submission) is a one-line
:class:`~hdrm.errors.SkippableLineError` naming the file, the line where the job starts, the key
and the value (``strict``), or skipped and counted by reason. Times have no time zone in the file
and are read as wall-clock times. Files may be gzip, bzip2 or xz data and are UTF-8.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any, Iterator, NoReturn

from hdrm.errors import WorkloadError
from hdrm.workload.gpu_trace_files import RecordError, Records, date, renumbered, trace_text
from hdrm.workload.job import AcceleratorDemand, Job, Workload

logger = logging.getLogger(__name__)

STATUSES = ("Pass", "Killed", "Failed")
_MISSING = (None, "", "None")
_WHAT = "Philly job log (cluster_job_log)"


def _jobs_in(path: str | Path, text: str) -> Iterator[tuple[int, Any]]:
    """(line where it starts, value) of each element of the top-level JSON array."""
    decoder = json.JSONDecoder()
    i = _skip(text, 0)
    if not text.startswith("[", i):
        raise WorkloadError(f"{path}:1: expected a JSON array of jobs ([{{\"jobid\": ...}}, ...])"
                            f"; give Philly's cluster_job_log")
    i = _skip(text, i + 1)
    first, line, counted = True, 1, 0  # lines counted up to ``counted`` (linear, not quadratic)
    while not text.startswith("]", i):
        if not first:
            if not text.startswith(",", i):
                _bad_json(path, text, i, "expected ',' or ']' after a job")
            i = _skip(text, i + 1)
        try:
            value, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            _bad_json(path, text, exc.pos, exc.msg)
        line, counted = line + text.count("\n", counted, i), i
        yield line, value
        i, first = _skip(text, end), False
        if i >= len(text):
            _bad_json(path, text, i, "the array is not closed (expected ']')")
    if _skip(text, i + 1) < len(text):
        _bad_json(path, text, _skip(text, i + 1), "text after the array")


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _bad_json(path: str | Path, text: str, pos: int, msg: str) -> NoReturn:
    line = text.count("\n", 0, pos) + 1
    column = pos - text.rfind("\n", 0, pos)
    raise WorkloadError(f"{path}:{line}:{column}: not valid JSON ({msg}); fix the file or "
                        "re-download cluster_job_log")


def _time(value: Any, key: str) -> float | None:
    return None if value in _MISSING else date(value, key)


def _attempts(job: dict) -> list[tuple[float | None, float | None, int]]:
    """(start s, end s, GPU ids) of each attempt; checks keys, types and order."""
    attempts = job.get("attempts")
    if not isinstance(attempts, list):
        raise RecordError("attempts", "expected a list of attempts", attempts)
    out = []
    for n, attempt in enumerate(attempts):
        key = f"attempts[{n}]"
        if not isinstance(attempt, dict):
            raise RecordError(key, "expected an object with start_time, end_time, detail",
                              attempt)
        start = _time(attempt.get("start_time"), f"{key}.start_time")
        end = _time(attempt.get("end_time"), f"{key}.end_time")
        if start is not None and end is not None and end < start:
            raise RecordError(f"{key}.end_time", "the attempt ends before it starts "
                              f"({attempt.get('start_time')})", attempt.get("end_time"),
                              "times out of order")
        out.append((start, end, _gpus(attempt.get("detail", []), f"{key}.detail")))
    return out


def _gpus(detail: Any, key: str) -> int:
    if not isinstance(detail, list):
        raise RecordError(key, "expected a list of {\"ip\": ..., \"gpus\": [...]}", detail)
    total = 0
    for n, server in enumerate(detail):
        gpus = server.get("gpus") if isinstance(server, dict) else None
        if not isinstance(gpus, list):
            raise RecordError(f"{key}[{n}].gpus", "expected a list of GPU ids", gpus)
        total += len(gpus)
    return total


def _job(job: Any, records: Records) -> Job | None:
    """The job of one array element, or None when it has no run time (counted)."""
    if not isinstance(job, dict):
        raise RecordError(None, f"expected a job object, got {type(job).__name__}")
    jobid = job.get("jobid")
    if not isinstance(jobid, str) or not jobid.strip():
        raise RecordError("jobid", "a job needs a jobid (text)", jobid)
    status = job.get("status")
    if status not in STATUSES:
        raise RecordError("status", f"expected one of {', '.join(STATUSES)}", status)
    submit = date(job.get("submitted_time"), "submitted_time")
    attempts = _attempts(job)
    reason = _no_run_time(attempts)
    if reason is not None:
        records.count(reason)
        return None
    start, end = attempts[0][0], attempts[-1][1]
    assert start is not None and end is not None
    if start < submit:
        raise RecordError("attempts[0].start_time", "the first attempt starts before the job's "
                          f"submitted_time ({job.get('submitted_time')})",
                          job["attempts"][0].get("start_time"), "times out of order")
    if end < start:
        raise RecordError(f"attempts[{len(attempts) - 1}].end_time", "the last attempt ends "
                          "before the first one starts", job["attempts"][-1].get("end_time"),
                          "times out of order")
    gpus = attempts[0][2]
    extra = {"philly": {"status": status, "vc": job.get("vc"), "user": job.get("user"),
                        "attempts": len(attempts), "gpus_per_attempt": [a[2] for a in attempts]}}
    return Job(idx=0, id=jobid.strip(), submit_s=submit, res=1, walltime_s=math.inf,
               run_time_s=end - start, trace_submit_s=submit, profile="philly", extra=extra,
               accel=AcceleratorDemand(gpus) if gpus else None)


def _no_run_time(attempts: list) -> str | None:
    if not attempts:
        return "no attempt"
    if attempts[0][0] is None:
        return "first attempt without start_time"
    if attempts[-1][1] is None:
        return "still running: last attempt without end_time"
    return None


def read_philly(path: str | Path, strict: bool = True) -> Workload:
    """Read Philly's ``cluster_job_log`` into a Workload (see the module docstring).

    Jobs are sorted by submission (ties keep the file order) and ``submit_s`` starts at 0.

    Raises:
        WorkloadError: the file is unreadable or not a JSON array, or (``strict``) a job is bad.
    """
    records = Records(path, strict, "fix the job", "bad jobs")
    jobs: list[Job] = []
    first: dict[str, int] = {}
    for line, value in _jobs_in(path, trace_text(path, _WHAT)):
        try:
            job = _job(value, records)
            if job is not None:
                if job.id in first:
                    raise RecordError("jobid", f"already the jobid of the job at line "
                                      f"{first[str(job.id)]}", job.id, "jobid: repeated")
                first[str(job.id)] = line
                jobs.append(job)
        except RecordError as exc:
            records.bad(line, exc)
    if not jobs:
        raise WorkloadError(f"{path}: no job with a run time in the Philly job log (left out: "
                            f"{records.skipped or 'none'}); give cluster_job_log")
    return _workload(path, jobs, records.skipped)


def _workload(path: str | Path, jobs: list[Job], skipped: dict[str, int]) -> Workload:
    status = renumbered(jobs, lambda job: job.extra["philly"]["status"])
    if skipped:
        logger.warning("%s: left out %d jobs: %s", path, sum(skipped.values()), skipped)
    header = {"format": "philly", "status": status,
              "multi_attempt": sum(1 for j in jobs if j.extra["philly"]["attempts"] > 1),
              "gpu_jobs": sum(1 for j in jobs if j.accel is not None)}
    return Workload(jobs, name=Path(path).stem, source=str(path), header=header,
                    skipped=skipped)
