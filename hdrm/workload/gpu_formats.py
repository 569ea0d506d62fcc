"""Which GPU trace a file holds, from its first bytes, and its reader.

* ``"philly"``: a JSON array (Philly's ``cluster_job_log``, :mod:`hdrm.workload.philly`);
* ``"helios"``: a CSV header with ``job_id``, ``gpu_num`` and ``submit_time``
  (:mod:`hdrm.workload.helios`);
* ``"pai"``: PAI's task table, header-less (10 cells, numbers where the times and plans are) or
  with its ``.header`` line (:mod:`hdrm.workload.pai`);
* ``"openb"``: anything else (:mod:`hdrm.workload.openb`, which names the columns it misses).

Gzip, bzip2 and xz files are looked at decompressed. A PAI job table given as the workload is
refused in one line naming the task table to give instead.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import lzma
from pathlib import Path

from hdrm.errors import WorkloadError
from hdrm.workload.job import Workload
from hdrm.workload.text import is_number

#: Bytes looked at.
HEAD_BYTES = 65536
#: Compressed file suffixes a trace may carry after its own.
COMPRESSED = (".gz", ".bz2", ".xz")
_OPENERS = {b"\x1f\x8b": gzip.open, b"BZh": bz2.open, b"\xfd7zXZ\x00": lzma.open}


def _head(path: str | Path) -> str:
    """The first bytes of the (decompressed) file as text; '' when unreadable (or no path)."""
    if not path or not Path(path).is_file():
        return ""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(HEAD_BYTES)
        for magic, opener in _OPENERS.items():
            if raw.startswith(magic):
                with opener(path, "rb") as handle:
                    raw = handle.read(HEAD_BYTES)
                break
    except (OSError, EOFError, lzma.LZMAError):
        return ""
    return raw.decode("utf-8-sig", errors="replace")


def trace_kind(path: str | Path) -> str | None:
    """``"philly"``, ``"helios"``, ``"pai"``, ``"pai_job"`` or ``"openb"`` for a readable file
    (see the module docstring); None when it cannot be read."""
    from hdrm.workload.pai import JOB_COLUMNS, TASK_COLUMNS  # small modules, GPU inputs only

    head = _head(path)
    if not head:
        return None
    if head.lstrip().startswith("["):
        return "philly"
    first = next(csv.reader([head.splitlines()[0] if head.splitlines() else ""]), [])
    cells = tuple(c.strip() for c in first)
    if {"job_id", "gpu_num", "submit_time"} <= set(cells):
        return "helios"
    if cells == TASK_COLUMNS or (len(cells) == 10 and is_number(cells[2]) and all(
            not c or is_number(c) for c in cells[4:9])):
        return "pai"
    if cells == JOB_COLUMNS or (len(cells) == 6 and all(not c or is_number(c)
                                                        for c in cells[4:6])):
        return "pai_job"
    return "openb"


def is_gpu_trace_name(path: str | Path) -> bool:
    """True for a ``.csv`` name, compressed or not (``x.csv.gz``)."""
    name = str(path).lower()
    for suffix in COMPRESSED:
        name = name.removesuffix(suffix)
    return name.endswith(".csv")


def read_gpu_trace(path: str | Path, strict: bool = True) -> Workload:
    """Read an openb pod list or a Philly, Helios or PAI trace, recognised by its content.

    Raises:
        WorkloadError: a PAI job table (the task table is the workload), or the reader's errors.
    """
    kind = trace_kind(path)
    if kind == "philly":
        from hdrm.workload.philly import read_philly
        return read_philly(path, strict)
    if kind == "helios":
        from hdrm.workload.helios import read_helios
        return read_helios(path, strict)
    if kind == "pai":
        from hdrm.workload.pai import read_pai
        return read_pai(path, strict)
    if kind == "pai_job":
        raise WorkloadError(f"{path}: a PAI job table (job_name, inst_id, user, status, "
                            "start_time, end_time); give the task table, pai_task_table.csv "
                            "(the job table beside it gives the submission times)")
    from hdrm.workload.openb import read_openb_pods
    return read_openb_pods(path, strict)
