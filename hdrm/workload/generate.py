"""A small seeded synthetic workload generator, and an SWF writer.

:func:`generate_workload` draws job sizes and run times log-uniformly, user estimates at least the
run time, and Poisson arrivals scaled so that the offered load
``sum(res * run_time_s) / (nb_cores * span_s)`` (``span_s`` = last minus first submission) hits the
target. Times are whole seconds, as in SWF. It is meant for tests and scale benchmarks, not as a
workload model (use a real trace or the Lublin-Feitelson model for studies).

:func:`write_swf` writes any workload as valid SWF, so a generated or sliced workload can be saved
and read back with :func:`hdrm.workload.swf.read_swf`.
"""

from __future__ import annotations

import gzip
import logging
import math
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from hdrm.errors import ConfigError, WorkloadError
from hdrm.workload.conventions import KB_PER_MB
from hdrm.workload.job import PROFILE_DELAY, Job, Workload
from hdrm.workload.swf import SwfHeader

logger = logging.getLogger(__name__)


def generate_workload(
    nb_jobs: int,
    nb_cores: int,
    rng: np.random.Generator,
    *,
    load: float = 0.8,
    max_res: int | None = None,
    run_time_range_s: tuple[float, float] = (10.0, 86_400.0),
    max_estimate_factor: float = 5.0,
    nb_users: int = 32,
    name: str = "synthetic",
) -> Workload:
    """Generate a synthetic workload for ``nb_cores`` cores at a target offered ``load``.

    Args:
        nb_jobs: number of jobs (>= 1).
        nb_cores: cores of the target system; also the workload's ``nb_res``.
        rng: the seeded generator; the same seed gives the same workload.
        load: target offered load (> 0; > 1 means overloaded).
        max_res: the widest job, in cores (default ``nb_cores``); sizes are log-uniform in
            ``[1, max_res]``.
        run_time_range_s: (min, max) run time in seconds, drawn log-uniformly, rounded up.
        max_estimate_factor: user estimates are ``run time * f``, ``f`` log-uniform in
            ``[1, max_estimate_factor]``, rounded up (so never below the run time).
        nb_users: user ids are uniform in ``1..nb_users``.
        name: the workload's name.

    Raises:
        ConfigError: a parameter out of range (the message names it and the valid range).
    """
    max_res = nb_cores if max_res is None else max_res
    _check_params(nb_jobs, nb_cores, load, max_res, run_time_range_s, max_estimate_factor,
                  nb_users)
    res = np.minimum(np.floor(np.exp(rng.uniform(0.0, math.log(max_res + 1), nb_jobs))), max_res)
    low_s, high_s = run_time_range_s
    run = np.ceil(np.exp(rng.uniform(math.log(low_s), math.log(high_s), nb_jobs)))
    factor = np.exp(rng.uniform(0.0, math.log(max_estimate_factor), nb_jobs))
    walltime = np.maximum(np.ceil(run * factor), run)
    submit = _arrivals(rng, nb_jobs, float(np.sum(res * run)) / (load * nb_cores))
    users = rng.integers(1, nb_users + 1, nb_jobs)
    columns = (submit.tolist(), res.astype(np.int64).tolist(), walltime.tolist(), run.tolist(),
               users.tolist())
    jobs = [
        Job(i, i + 1, s, r, w, t, 0.0, 0.0, 0.0, 0.0, s, f"p{i + 1}", PROFILE_DELAY, u)
        for i, (s, r, w, t, u) in enumerate(zip(*columns))
    ]
    return Workload(jobs, name, "", None, {}, nb_cores)


def _arrivals(rng: np.random.Generator, nb_jobs: int, span_s: float) -> np.ndarray:
    """Poisson arrival times from 0, scaled so the last one is at ``span_s``, in whole seconds."""
    if nb_jobs == 1:
        return np.zeros(1)
    gaps = rng.exponential(1.0, nb_jobs - 1)
    times = np.concatenate(([0.0], np.cumsum(gaps)))
    return np.round(times * (span_s / times[-1]))


def _check_params(nb_jobs: int, nb_cores: int, load: float, max_res: int,
                  run_time_range_s: tuple[float, float], factor: float, nb_users: int) -> None:
    problems = [
        (nb_jobs >= 1, f"nb_jobs must be >= 1, got {nb_jobs!r}"),
        (nb_cores >= 1, f"nb_cores must be >= 1, got {nb_cores!r}"),
        (load > 0 and math.isfinite(load), f"load must be a finite number > 0, got {load!r}"),
        (1 <= max_res <= nb_cores, f"max_res must be in 1..nb_cores={nb_cores}, got {max_res!r}"),
        (1 <= run_time_range_s[0] <= run_time_range_s[1],
         f"run_time_range_s must be (min, max) with 1 <= min <= max, got {run_time_range_s!r}"),
        (factor >= 1, f"max_estimate_factor must be >= 1, got {factor!r}"),
        (nb_users >= 1, f"nb_users must be >= 1, got {nb_users!r}"),
    ]
    for ok, message in problems:
        if not ok:
            raise ConfigError(f"generate_workload: {message}")


def swf_fields(job: Job) -> tuple:
    """The 18 SWF fields of ``job``: its raw fields when it has them, else rebuilt from the job.

    Rebuilt fields: job number (the id, or ``idx + 1`` for a string id), ``trace_submit_s``, run
    time, processors (allocated and requested), requested time (-1 without a walltime), requested
    memory in KB per processor (-1 when 0), status 1, user id; the others -1.
    """
    raw = job.extra.get("swf")
    if raw is not None:
        return tuple(raw)
    number = job.id if isinstance(job.id, int) else job.idx + 1
    walltime = job.walltime_s if math.isfinite(job.walltime_s) and job.walltime_s > 0 else -1
    memory_kb = job.mem_mb * KB_PER_MB if job.mem_mb > 0 else -1
    return (number, job.trace_submit_s, -1, job.run_time_s, job.res, -1, -1, job.res, walltime,
            memory_kb, 1, job.user_id, -1, -1, -1, -1, -1, -1)


def header_lines(workload: Workload, notes: Iterable[str] = ()) -> list[str]:
    """SWF header lines for ``workload``: its own header (job counts updated) or a minimal one."""
    count = len(workload)
    header = workload.header
    if isinstance(header, SwfHeader) and header.lines:
        lines = [_recount(line, count) for line in header.lines]
    else:
        lines = ["; Version: 2.2", f"; Computer: {workload.name or 'hdrm workload'}",
                 f"; MaxJobs: {count}", f"; MaxRecords: {count}"]
        if workload.nb_res:
            lines.append(f"; MaxProcs: {workload.nb_res}")
    return lines + [f"; Note: {note}" for note in notes]


def _recount(line: str, count: int) -> str:
    key = line.lstrip().lstrip(";").strip().partition(":")[0]
    return f"; {key}: {count}" if key in ("MaxJobs", "MaxRecords") else line


def write_swf(workload: Workload, path: str | Path, notes: Sequence[str] = ()) -> None:
    """Write ``workload`` as an SWF file (gzip when ``path`` ends with ``.gz``).

    The submit field is ``trace_submit_s`` (SWF files carry the trace's clock); jobs with raw
    fields (``extra["swf"]``) are written verbatim, others are rebuilt by :func:`swf_fields`.

    Args:
        workload: the jobs to write, in order.
        path: the output file.
        notes: extra ``; Note:`` lines appended to the header (attribution, how it was made).

    Raises:
        WorkloadError: the file cannot be written.
    """
    lines = header_lines(workload, notes)
    lines.extend(" ".join(map(_field_text, swf_fields(job))) for job in workload.jobs)
    text = "\n".join(lines) + "\n"
    try:
        if str(path).endswith(".gz"):
            with open(path, "wb") as handle:
                handle.write(gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0))
        else:
            Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise WorkloadError(f"{path}: cannot write ({exc.strerror}); check the folder") from None
    logger.debug("wrote %d jobs to %s", len(workload), path)


def _field_text(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))
