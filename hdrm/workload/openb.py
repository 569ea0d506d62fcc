"""Alibaba's openb GPU cluster trace (cluster-trace-gpu-v2023): node lists and pod (task) lists.

Node list columns: ``sn, cpu_milli, memory_mib, gpu, model`` (``model`` empty on CPU-only
nodes). Pod list columns: ``name, cpu_milli, memory_mib, num_gpu, gpu_milli`` (required) and
``gpu_spec, qos, pod_phase, creation_time, deletion_time, scheduled_time`` (optional: the
resampled ``multigpu*`` lists have only the first five). ``gpu_milli`` is the share of one GPU
(1..1000) when ``num_gpu`` is 1 and 1000 otherwise; ``gpu_spec`` lists the allowed GPU models
as ``A|B`` (empty: any); ``qos`` is one of LS, BE, Burstable, Guaranteed; times are seconds.

Each task becomes one :class:`~hdrm.workload.job.Job` with ``cpu_milli``, an
:class:`~hdrm.workload.job.AcceleratorDemand` (``None`` without GPUs), ``res`` = the cores
rounded up, ``mem_mb`` = its memory (MiB, the platform's MB) per core, ``submit_s`` = creation
time from the first creation, ``run_time_s`` = deletion - scheduled for a task that ran, and every
column of its row under ``extra["openb"]``. A task that never ran (no scheduled time, or no
times at all) is kept, for placement-only studies, with ``run_time_s`` 0 and
``extra["ran"] = False``; ``Workload.header["never_ran"]`` counts them.

A malformed row is a one-line :class:`~hdrm.errors.WorkloadError` naming the file, the line and
the column (``strict``), or is skipped and counted in ``Workload.skipped`` by reason. A row with
fewer cells than the header, or a non-empty cell beyond it, is malformed (its cells would land
in the wrong columns or be lost); a task name already used by an earlier row is too (task names
are the job ids of the outputs), and without ``strict`` the first row with the name is kept.
Files are UTF-8 (a byte order mark, as spreadsheet programs write, is dropped), plain or gzip,
bzip2 or xz data (``openb_pod_list_default.csv.gz``); blanks after the commas are ignored.
"""

from __future__ import annotations

import csv
import io
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from hdrm.errors import WorkloadError
from hdrm.workload.gpu_trace_files import trace_text
from hdrm.workload.job import MILLI_PER_GPU, AcceleratorDemand, Job, Workload
from hdrm.workload.swf import SkippableLineError
from hdrm.workload.text import is_number

logger = logging.getLogger(__name__)

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_REQUIRED = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
POD_OPTIONAL = ("gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time",
                "scheduled_time")
QOS_CLASSES = ("LS", "BE", "Burstable", "Guaranteed")
POD_PHASES = ("Running", "Succeeded", "Failed", "Pending")
#: Names of YAML files (refused: :func:`refuse_yaml`).
YAML_SUFFIXES = (".yaml", ".yml")


class _RowError(Exception):
    """A bad cell: its column and what is wrong (turned into a WorkloadError or a skip).

    ``column`` is None for a row whose cells do not match the header; ``key`` is the skip
    reason (default: the column and the reason's first clause).
    """

    def __init__(self, column: str | None, reason: str, key: str | None = None) -> None:
        super().__init__(reason)
        self.column, self.reason = column, reason
        self.key = key or f"{column}: {reason.split(',')[0]}"


@dataclass(frozen=True)
class OpenbNode:
    """One node of an openb node list."""

    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


#: What a fractional value of a GPU count column means to write instead.
_WHOLE_GPUS = {
    "num_gpu": "a share of one GPU is num_gpu 1 with gpu_milli 1..999 (500: half a GPU)",
    "gpu": "a node has whole GPUs (tasks share them through gpu_milli)",
}


def _int(row: dict[str, str], column: str, low: int = 0, high: float = math.inf,
         empty: int | None = None) -> int:
    text = (row.get(column) or "").strip()
    if not text and empty is not None:
        return empty
    try:
        value = int(text)
    except ValueError:
        hint = f": {_WHOLE_GPUS[column]}" if column in _WHOLE_GPUS and is_number(text) else ""
        raise _RowError(column, f"expected an integer, got {text!r}{hint}") from None
    if not low <= value <= high:
        bound = f"{low}..{high:g}" if math.isfinite(high) else f">= {low}"
        raise _RowError(column, f"expected an integer {bound}, got {value}")
    return value


def _text(path: Path) -> str:
    """The file's text, plain or gzip, bzip2 or xz data (as the other GPU traces): UTF-8, its
    byte order mark dropped; errors name the file and line."""
    return trace_text(path, "openb file")


def refuse_yaml(path: str | Path, first_line: str = "") -> None:
    """Refuse a YAML file (by its name, or a first line such as ``apiVersion: v1``): the openb
    release ships its nodes as Kubernetes YAML too (``node_yaml/``), which hdrm does not read.

    Raises:
        WorkloadError: naming the file and the CSV lists to give instead.
    """
    name = str(path).lower()
    for suffix in (".gz", ".bz2", ".xz"):
        name = name.removesuffix(suffix)
    line = first_line.strip()
    if name.endswith(YAML_SUFFIXES) or line.startswith(("apiVersion:", "kind:", "---")):
        raise WorkloadError(f"{path}: a YAML file (Kubernetes objects, as openb's node_yaml/); "
                            "hdrm reads openb lists as CSV: give the release's "
                            "csv/openb_node_list_*.csv or csv/openb_pod_list_*.csv (or, for "
                            "the nodes, a platform JSON file)")


def _rows(path: Path, required: tuple[str, ...]
          ) -> Iterator[tuple[int, dict[str, str], list[str]]]:
    """(line number, row, header columns) of a CSV file whose header holds ``required``."""
    text = _text(path)
    refuse_yaml(path, text[:text.find("\n")] if "\n" in text else text)
    reader = csv.DictReader(io.StringIO(text, newline=""), skipinitialspace=True)
    if reader.fieldnames is None:
        raise WorkloadError(f"{path}: empty file; an openb file starts with the header line "
                            f"{','.join(required)}")
    missing = [c for c in required if c not in reader.fieldnames]
    if missing:
        raise WorkloadError(
            f"{path}:1: missing column(s) {', '.join(missing)} in the header "
            f"{','.join(reader.fieldnames)!r}; an openb file starts with "
            f"{','.join(required)}")
    for row in reader:
        yield reader.line_num, row, reader.fieldnames


def _check_cells(row: dict, columns: list[str]) -> None:
    """Refuse a row with fewer cells than the header, or a non-empty cell beyond it."""
    beyond = row.get(None) or ()  # csv.DictReader's cells past the header
    extra = [cell for cell in beyond if cell.strip()]
    if extra:
        raise _RowError(None, f"{len(columns) + len(beyond)} cells, the header has "
                        f"{len(columns)}: unexpected cell {extra[0]!r}", "cells beyond the header")
    missing = [c for c in columns if row.get(c) is None]
    if missing:
        raise _RowError(None, f"{len(columns) - len(missing)} cells, the header has "
                        f"{len(columns)}: the row ends before column {missing[0]!r}",
                        "cells missing")


def _read(path: str | Path, required: tuple[str, ...], parse: Callable, strict: bool,
          skipped: dict[str, int], unique: str | None = None) -> list:
    """Parse every row with ``parse(row)``; a _RowError fails (strict) or is counted.

    ``unique``: a column whose value must not repeat an earlier kept row's (the first is kept).
    """
    path = Path(path)
    out = []
    first: dict[str, int] = {}
    for line, row, columns in _rows(path, required):
        try:
            _check_cells(row, columns)
            item = parse(row)
            if unique is not None:
                _check_unique(row, unique, line, first)
            out.append(item)
        except _RowError as exc:
            if strict:
                where = f"column {exc.column!r}: " if exc.column is not None else ""
                value = f" (value {row.get(exc.column)!r})" if exc.column is not None else ""
                raise SkippableLineError(f"{path}:{line}: {where}{exc.reason}{value}",
                                         "fix the row", "bad rows") from None
            skipped[exc.key] = skipped.get(exc.key, 0) + 1
    return out


def _check_unique(row: dict[str, str], column: str, line: int, first: dict[str, int]) -> None:
    value = (row.get(column) or "").strip()
    if value in first:
        raise _RowError(column, f"already the {column} of line {first[value]}",
                        f"{column}: repeated")
    first[value] = line


def _node(row: dict[str, str]) -> OpenbNode:
    if not (row.get("sn") or "").strip():
        raise _RowError("sn", "a node needs a name")
    gpus = _int(row, "gpu", 0, 64)
    model = (row.get("model") or "").strip()
    if gpus and not model:
        raise _RowError("model", f"a node with {gpus} GPUs needs a GPU model")
    return OpenbNode((row.get("sn") or "").strip(), _int(row, "cpu_milli", 1),
                     _int(row, "memory_mib", 1), gpus, model if gpus else "")


def read_openb_nodes(path: str | Path, strict: bool = True) -> tuple[list[OpenbNode], dict]:
    """Read an openb node list. Node names (``sn``) are unique: every output names the nodes
    (without ``strict``, a repeated name's row is skipped and counted).

    Returns:
        The nodes in file order, and the rows skipped per reason (empty when ``strict``).

    Raises:
        WorkloadError: the file is unreadable or lacks a column, or (``strict``) a row is bad.
    """
    skipped: dict[str, int] = {}
    nodes = _read(path, NODE_COLUMNS, _node, strict, skipped, unique="sn")
    if not nodes:
        raise WorkloadError(f"{path}: no node in the openb node list; give a non-empty list")
    return nodes, skipped


def gpu_models(spec: str) -> tuple[str, ...]:
    """The models of a ``gpu_spec`` (``"V100M16|V100M32"``), without blanks or repeats."""
    return tuple(dict.fromkeys(m.strip() for m in spec.split("|") if m.strip()))


def _demand(row: dict[str, str]) -> AcceleratorDemand | None:
    count = _int(row, "num_gpu", 0, 64)
    milli = _int(row, "gpu_milli", 0, MILLI_PER_GPU)
    if count == 0:
        return None
    if milli == 0:
        raise _RowError("gpu_milli", f"a task asking {count} GPU(s) needs a share of 1..1000")
    if count > 1 and milli != MILLI_PER_GPU:
        raise _RowError("gpu_milli", f"a share below 1000 is for one GPU, not {count}")
    return AcceleratorDemand(count, milli, gpu_models(row.get("gpu_spec") or ""))


def _choice(row: dict[str, str], column: str, choices: tuple[str, ...]) -> str:
    value = (row.get(column) or "").strip()
    if value and value not in choices:
        raise _RowError(column, f"expected one of {', '.join(choices)} or nothing")
    return value


def _pod(row: dict[str, str]) -> Job:
    name = (row.get("name") or "").strip()
    if not name:
        raise _RowError("name", "a task needs a name")
    cpu_milli = _int(row, "cpu_milli", 0)
    memory_mib = _int(row, "memory_mib", 0)
    accel = _demand(row)
    _choice(row, "qos", QOS_CLASSES)
    _choice(row, "pod_phase", POD_PHASES)
    created = _int(row, "creation_time", 0, empty=0)
    deleted = _int(row, "deletion_time", 0, empty=-1)
    scheduled = _int(row, "scheduled_time", 0, empty=-1)
    ran = scheduled >= 0 and deleted >= 0
    if ran and deleted < scheduled:
        raise _RowError("deletion_time", f"deleted ({deleted}) before scheduled ({scheduled})")
    res = max(1, math.ceil(cpu_milli / 1000))
    extra = {"openb": dict(row), "ran": ran, "qos": (row.get("qos") or "").strip()}
    return Job(idx=0, id=name, submit_s=float(created), res=res, walltime_s=math.inf,
               run_time_s=float(deleted - scheduled) if ran else 0.0,
               mem_mb=memory_mib / res, trace_submit_s=float(created), profile="openb",
               extra=extra, cpu_milli=cpu_milli, accel=accel)


def read_openb_pods(path: str | Path, strict: bool = True) -> Workload:
    """Read an openb pod (task) list into a Workload (see the module docstring).

    Jobs keep the file order (``idx`` = position) and are not re-sorted: the placement-only
    protocol draws its own arrival order. ``submit_s`` is shifted so that the first creation is 0.

    Raises:
        WorkloadError: the file is unreadable or lacks a column, or (``strict``) a row is bad.
    """
    skipped: dict[str, int] = {}
    jobs: list[Job] = _read(path, POD_REQUIRED, _pod, strict, skipped, unique="name")
    if not jobs:
        raise WorkloadError(f"{path}: no task in the openb pod list; give a non-empty list")
    first = min(job.submit_s for job in jobs)
    for i, job in enumerate(jobs):
        job.idx, job.submit_s = i, job.submit_s - first
    never_ran = sum(1 for job in jobs if not job.extra["ran"])
    if skipped:
        logger.warning("%s: skipped %d bad rows: %s", path, sum(skipped.values()), skipped)
    header = {"format": "openb", "never_ran": never_ran,
              "gpu_tasks": sum(1 for job in jobs if job.accel is not None)}
    return Workload(jobs, name=Path(path).stem, source=str(path), header=header,
                    skipped=skipped)


def require_run_times(workload: Workload) -> None:
    """Refuse, for a time-based replay, an openb pod list none of whose tasks ran (the resampled
    ``multigpu*`` lists have no times at all): every task would be rejected.

    Raises:
        WorkloadError: naming the file, the missing or empty time columns and what to give.
    """
    if workload.header.get("format") != "openb" or workload.header.get("never_ran") != len(
            workload.jobs):
        return
    row = workload.jobs[0].extra.get("openb", {})
    absent = [c for c in ("scheduled_time", "deletion_time") if c not in row]
    why = (f"it has no column {' or '.join(absent)}" if absent else
           "none has both a scheduled_time and a deletion_time")
    raise WorkloadError(f"{workload.source}: no task of the pod list has a run time ({why}), so "
                        "a replay over time would reject all; replay a pod list with times "
                        "(openb_pod_list_default.csv), or place these tasks with hdrm "
                        "fragmentation (placement only: tasks never end)")
