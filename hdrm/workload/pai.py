"""Alibaba PAI's task table (cluster-trace-gpu-v2020, NSDI'22 trace, alibaba/clusterdata).

The format, from its publisher (repository ``alibaba/clusterdata``, folder
``cluster-trace-gpu-v2020``):

* ``data/pai_task_table.header``: the columns ``job_name, task_name, inst_num, status,
  start_time, end_time, plan_cpu, plan_mem, plan_gpu, gpu_type``; ``data/pai_job_table.header``:
  ``job_name, inst_id, user, status, start_time, end_time``. The ``.csv`` files themselves have
  no header line (``analysis/utils.py::get_df`` reads them with ``header=None`` and takes the
  columns from the ``.header`` file); they ship as ``.tar.gz`` archives (extract them first).
* ``README.md``: a job has one or more tasks (roles: ``worker``, ``ps``, ...), a task
  ``inst_num`` instances, each asking the task's ``plan_cpu`` (percent of a core: 600 is 6
  cores), ``plan_mem`` (GB) and ``plan_gpu`` (percent of a GPU: 50 is half a GPU); ``gpu_type``
  is the type of the GPUs the task was given (``MISC``: older models), not a requirement: a
  requirement is ``gpu_type_spec`` of ``pai_group_tag_table`` (``data/pai_group_tag_table.header``:
  ``inst_id, user, gpu_type_spec, group, workload``; empty: none; one ``inst_id`` per job, the
  job table's); times are seconds;
  a task's ``start_time`` is its launch, a job's ``start_time`` its submission; statuses include
  ``Running``, ``Terminated`` (successful), ``Failed`` and ``Waiting``.
* ``analysis/utils.py`` (``get_dfa``, ``get_dfiw``): a start time of 0 means "not recorded", as
  does an empty cell.

Each instance of a task with a run time becomes a :class:`~hdrm.workload.job.Job` (id
``job_name/task_name/i``, i = 0..inst_num-1): ``plan_gpu`` up to 100 is a share of one GPU
(milli-GPU = 10 x plan_gpu), a multiple of 100 that many whole GPUs, any other value above 100
is rounded up to whole GPUs (flagged ``extra["pai"]["gpu_rounded_up"]``, counted in
``Workload.header["gpu_rounded_up"]``); ``plan_gpu`` 0 or empty is a CPU-only task. The GPU model
is constrained to the job's ``gpu_type_spec`` when ``pai_group_tag_table.csv`` is given (or lies
beside the task table, with the job table to join through), under PAI's own name (its README
shows ``MISC``, ``T4``, ``V100M32``): give a platform whose accelerator types carry these names
(the library has ``T4`` and ``V100M32``, not ``MISC``; a job whose model no node has is refused by
the replay with its reason). Cores =
``plan_cpu`` / 100 rounded up (at least one; ``cpu_milli`` = 10 x plan_cpu), ``mem_mb`` =
``plan_mem`` GB x 1024 per core; an empty ``plan_cpu``/``plan_mem`` is 0 (unknown).
``run_time_s`` = the task's ``end_time - start_time`` whatever its status (a
failed task held its resources for that time); ``submit_s`` = its job's submission time from
``pai_job_table.csv`` when that file is given (or lies beside the task table), else the task's
launch (``Workload.header["submit_from"]`` says which); from the first kept job's, 0.

Left out and counted in ``Workload.skipped``: a task without a start time (``"never started"``)
and one without an end time (``"no end_time"``, e.g. still running). A bad row (not 10 cells, a
bad value, a repeated job_name/task_name, a task whose job is not in the job table, times out of
order: an end before the start or a launch before its job's submission) is a one-line
:class:`~hdrm.errors.SkippableLineError` naming the file, the line, the column and the value
(``strict``), or skipped and counted by reason. Files may be gzip, bzip2 or xz data and are UTF-8.
"""

from __future__ import annotations

import csv
import io
import logging
import math
from pathlib import Path
from typing import Any

from hdrm.errors import WorkloadError
from hdrm.workload.gpu_trace_files import RecordError, Records, number, renumbered, trace_text
from hdrm.workload.job import MILLI_PER_GPU, AcceleratorDemand, Job, Workload

logger = logging.getLogger(__name__)

TASK_COLUMNS = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time",
                "plan_cpu", "plan_mem", "plan_gpu", "gpu_type")
JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
GROUP_COLUMNS = ("inst_id", "user", "gpu_type_spec", "group", "workload")
#: The job table and group tag table the reader looks for beside a task table.
JOB_TABLE, GROUP_TABLE = "pai_job_table.csv", "pai_group_tag_table.csv"


def _rows(path: str | Path, columns: tuple[str, ...], what: str):
    """(line, cells) of a header-less PAI table; a first line equal to the header is skipped."""
    reader = csv.reader(io.StringIO(trace_text(path, what), newline=""))
    for cells in reader:
        cells = [c.strip() for c in cells]
        if reader.line_num == 1 and tuple(cells) == columns:
            continue
        if cells:
            yield reader.line_num, cells


def _cells(cells: list[str], columns: tuple[str, ...]) -> dict[str, str]:
    if len(cells) != len(columns):
        raise RecordError(None, f"{len(cells)} cells, expected {len(columns)}: "
                          f"{','.join(columns)} (the PAI table's .header)", key="not "
                          f"{len(columns)} cells")
    return dict(zip(columns, cells))


def _time(row: dict[str, str], column: str) -> float | None:
    """Seconds of a time cell; None when empty or 0 (not recorded)."""
    text = row[column]
    if not text:
        return None
    value = number(text, column)
    return value if value > 0 else None


def read_pai_jobs(path: str | Path, strict: bool = True
                  ) -> tuple[dict[str, tuple[float, str]], dict]:
    """(submission time, inst_id) per job_name from a ``pai_job_table.csv``, and the rows
    skipped.

    Raises:
        WorkloadError: the file is unreadable, or (``strict``) a row is bad.
    """
    records = Records(path, strict)
    submit: dict[str, tuple[float, str]] = {}
    for line, cells in _rows(path, JOB_COLUMNS, "PAI job table (pai_job_table.csv)"):
        try:
            row = _cells(cells, JOB_COLUMNS)
            if not row["job_name"]:
                raise RecordError("job_name", "a job needs a job_name", "")
            if row["job_name"] in submit:
                raise RecordError("job_name", "repeated", row["job_name"], "job_name: repeated")
            start = _time(row, "start_time")
            if start is None:
                raise RecordError("start_time", "a job needs its submission time", "")
            submit[row["job_name"]] = (start, row["inst_id"])
        except RecordError as exc:
            records.bad(line, exc)
    return submit, records.skipped


def read_pai_specs(path: str | Path, strict: bool = True) -> tuple[dict[str, str], dict]:
    """The GPU model required per inst_id (``gpu_type_spec``, where not empty) from a
    ``pai_group_tag_table.csv``, and the rows skipped.

    Raises:
        WorkloadError: the file is unreadable, or (``strict``) a row is bad: not 5 cells, or an
            inst_id given two different requirements.
    """
    records = Records(path, strict)
    specs: dict[str, str] = {}
    for line, cells in _rows(path, GROUP_COLUMNS, "PAI group tag table "
                             "(pai_group_tag_table.csv)"):
        try:
            row = _cells(cells, GROUP_COLUMNS)
            spec, known = row["gpu_type_spec"], specs.get(row["inst_id"])
            if spec and known is not None and known != spec:
                raise RecordError("gpu_type_spec", f"the inst_id already requires {known}",
                                  spec, "gpu_type_spec: two for one inst_id")
            if spec:
                specs[row["inst_id"]] = spec
        except RecordError as exc:
            records.bad(line, exc)
    return specs, records.skipped


def _demand(row: dict[str, str], spec: str) -> tuple[AcceleratorDemand | None, bool]:
    """The GPU demand of one instance (of model ``spec`` when not empty), and whether it was
    rounded up to whole GPUs."""
    models = (spec,) if spec else ()
    plan = number(row["plan_gpu"], "plan_gpu") if row["plan_gpu"] else 0.0
    if plan == 0:
        return None, False
    if plan <= 100:
        milli = round(plan * MILLI_PER_GPU / 100)
        if milli < 1:
            raise RecordError("plan_gpu", "below 0.1 (a milli-GPU)", row["plan_gpu"])
        return AcceleratorDemand(1, milli, models), False
    count = math.ceil(plan / 100 - 1e-9)
    return AcceleratorDemand(count, MILLI_PER_GPU, models), abs(count * 100 - plan) > 1e-6


def _instances(row: dict[str, str], submit: dict[str, tuple[float, str]] | None,
               specs: dict[str, str], records: Records) -> list[Job]:
    """The jobs of one task row (one per instance); [] when it has no run time (counted)."""
    if not row["job_name"] or not row["task_name"]:
        raise RecordError("job_name" if not row["job_name"] else "task_name",
                          "a task needs a job_name and a task_name", "")
    count = int(number(row["inst_num"], "inst_num", low=1, whole=True))
    cpu = number(row["plan_cpu"], "plan_cpu") if row["plan_cpu"] else 0.0
    mem_gb = number(row["plan_mem"], "plan_mem") if row["plan_mem"] else 0.0
    accel, rounded = _demand(row, specs.get(row["job_name"], ""))
    start, end = _time(row, "start_time"), _time(row, "end_time")
    arrival = start
    if submit is not None:
        if row["job_name"] not in submit:
            raise RecordError("job_name", "no such job in the job table", row["job_name"],
                              "job_name: not in the job table")
        arrival = submit[row["job_name"]][0]
    if start is None or end is None:
        records.count("never started" if start is None else "no end_time")
        return []
    if end < start:
        raise RecordError("end_time", f"ends before its start_time ({row['start_time']})",
                          row["end_time"], "times out of order")
    assert arrival is not None
    if start < arrival:
        raise RecordError("start_time", f"launched before its job's submission ({arrival:g} "
                          "in the job table)", row["start_time"], "times out of order")
    res = max(1, math.ceil(cpu / 100 - 1e-9))
    extra: dict[str, Any] = {"pai": dict(row, gpu_rounded_up=rounded), "status": row["status"]}
    return [Job(idx=0, id=f"{row['job_name']}/{row['task_name']}/{i}", submit_s=arrival,
                res=res, walltime_s=math.inf, run_time_s=end - start,
                mem_mb=mem_gb * 1024 / res, trace_submit_s=arrival, profile="pai",
                extra=extra, cpu_milli=round(cpu * 10), accel=accel) for i in range(count)]


def read_pai(path: str | Path, strict: bool = True, job_table: str | Path | None = None,
             group_table: str | Path | None = None) -> Workload:
    """Read a PAI ``pai_task_table.csv`` into a Workload (see the module docstring).

    Args:
        path: the task table.
        strict: refuse a bad row (else skip and count it).
        job_table: ``pai_job_table.csv`` for submission times; None: the one beside ``path``
            if there is one, else the tasks' launch times.
        group_table: ``pai_group_tag_table.csv`` for GPU model requirements (joined through the
            job table's inst_id); None: the one beside ``path`` if there is one, else none.

    Raises:
        WorkloadError: a file is unreadable, a group table without a job table, or
            (``strict``) a row is bad.
    """
    job_table = _beside(path, JOB_TABLE) if job_table is None else job_table
    group_table = _beside(path, GROUP_TABLE) if group_table is None else group_table
    submit, skipped = read_pai_jobs(job_table, strict) if job_table is not None else (None, {})
    specs = _job_specs(group_table, submit, strict, skipped)
    records = Records(path, strict)
    jobs: list[Job] = []
    first: dict[tuple[str, str], int] = {}
    for line, cells in _rows(path, TASK_COLUMNS, "PAI task table (pai_task_table.csv)"):
        try:
            row = _cells(cells, TASK_COLUMNS)
            key = (row["job_name"], row["task_name"])
            if key in first:
                raise RecordError("task_name", f"job_name/task_name already at line "
                                  f"{first[key]}", row["task_name"], "task: repeated")
            jobs.extend(_instances(row, submit, specs, records))
            first[key] = line
        except RecordError as exc:
            records.bad(line, exc)
    if not jobs:
        raise WorkloadError(f"{path}: no task with a run time in the PAI task table (left out: "
                            f"{records.skipped or 'none'}); give pai_task_table.csv")
    skipped = {**records.skipped, **skipped}
    tables = {"submit_from": str(job_table) if job_table is not None else "task launch",
              "models_from": str(group_table) if group_table is not None else None}
    return _workload(path, jobs, skipped, tables)


def _beside(path: str | Path, name: str) -> Path | None:
    other = Path(path).parent / name
    return other if other.is_file() else None


def _job_specs(group_table: str | Path | None, submit: dict[str, tuple[float, str]] | None,
               strict: bool, skipped: dict[str, int]) -> dict[str, str]:
    """The GPU model required per job_name; skipped job/group table rows go into ``skipped``."""
    for reason in list(skipped):
        skipped[f"job table: {reason}"] = skipped.pop(reason)
    if group_table is None:
        return {}
    if submit is None:
        raise WorkloadError(f"{group_table}: the group tag table is joined to the tasks through "
                            f"the job table's inst_id; put {JOB_TABLE} beside it or give it")
    specs, bad = read_pai_specs(group_table, strict)
    skipped.update({f"group table: {reason}": n for reason, n in bad.items()})
    return {job: specs[inst] for job, (_, inst) in submit.items() if inst in specs}


def _workload(path: str | Path, jobs: list[Job], skipped: dict[str, int],
              tables: dict[str, str | None]) -> Workload:
    status = renumbered(jobs, lambda job: job.extra["status"])
    if skipped:
        logger.warning("%s: left out %d tasks: %s", path, sum(skipped.values()), skipped)
    header = {"format": "pai", **tables, "status": status,
              "gpu_jobs": sum(1 for j in jobs if j.accel is not None),
              "gpu_model_required": sum(1 for j in jobs if j.accel and j.accel.models),
              "gpu_rounded_up": sum(1 for j in jobs if j.extra["pai"]["gpu_rounded_up"])}
    return Workload(jobs, name=Path(path).stem, source=str(path), header=header,
                    skipped=skipped)
