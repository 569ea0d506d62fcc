"""Batsim JSON workloads: read and write, with the fields the heterogeneity layer needs.

A Batsim workload is ``{"nb_res": N, "jobs": [...], "profiles": {...}}``. Each job has ``id`` (an
int or a string, kept as is), ``subtime`` (s), ``res`` (cores), ``walltime`` (s, optional; absent or
<= 0 means none) and ``profile`` (a profile name). hdrm simulates four profile types:

* ``{"type": "delay", "delay": s}``: the job lasts ``s`` seconds whatever the cores;
* ``{"type": "parallel_homogeneous", "cpu": flop, "com": 0}``: each allocated core computes
  ``cpu`` FLOP (Batsim counts FLOP; hdrm keeps ``ops_gflop = cpu / 1e9``);
* ``{"type": "parallel_homogeneous_total", "cpu": flop, "com": 0}``: ``cpu`` FLOP spread evenly
  over the hosts the job is given (``job.parts``; ``ops_gflop`` the share of each of ``res``);
* ``{"type": "composed", "repeat": r, "seq": [names]}``: the named profiles one after another,
  ``r`` times (:mod:`hdrm.workload.batsim_composed`; ``job.parts``).

Other types (``parallel`` with a communication matrix, ...) and parts with ``com`` > 0 are read
and kept, with their profile in ``job.extra["profile_data"]``, so that engines can refuse them by
name (:func:`unsupported_profiles`, :func:`check_supported`).

Extra job fields (Batsim passes them through): ``mem_mb``, ``mem_bw_gbps``, ``trace_submit_s``,
``user_id``, ``run_time_s``, ``ops_gflop`` (exact GFLOP, since FLOP -> GFLOP is not exact in
floating point), ``req_ops_gflop``; any other field lands in ``job.extra`` (``"swf"``, the 18 SWF
fields, as a tuple). Fields equal to their default are not written. A written workload reads back
identical (same jobs, same order, same values).
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from operator import attrgetter
from pathlib import Path
from typing import Any

from hdrm.durable import write_text_atomically
from hdrm.errors import WorkloadError
from hdrm.jsonfile import read_json
from hdrm.workload.batsim_jobs import (  # noqa: F401  (FLOP_PER_GFLOP re-exported)
    FLOP_PER_GFLOP,
    check_unique_ids,
    kind_of,
    read_jobs,
    require,
)
from hdrm.workload.job import (
    PROFILE_COMPOSED,
    PROFILE_DELAY,
    PROFILE_PARALLEL_HOMOGENEOUS,
    PROFILE_PARALLEL_HOMOGENEOUS_TOTAL,
    Job,
    Workload,
)

logger = logging.getLogger(__name__)

#: Profile types hdrm's engines simulate.
SUPPORTED_PROFILE_TYPES = (PROFILE_DELAY, PROFILE_PARALLEL_HOMOGENEOUS, PROFILE_COMPOSED,
                           PROFILE_PARALLEL_HOMOGENEOUS_TOTAL)


def unsupported_profiles(workload: Workload) -> dict[str, int]:
    """Number of jobs per profile type that hdrm cannot simulate (empty when all are fine); a
    ``composed`` job counts when one of its parts cannot be simulated."""
    counts = Counter(j.profile_type for j in workload.jobs
                     if j.profile_type not in SUPPORTED_PROFILE_TYPES
                     or (j.parts and _part_problem(j)))
    return dict(counts)


def first_part_problem(workload: Workload) -> str:
    """The first ``composed`` job whose parts hdrm cannot run, as ``job 'x': profile 'p' has a
    part 'q' of type 't'`` ('' when none)."""
    for job in workload.jobs:
        if job.parts:
            problem = _part_problem(job)
            if problem:
                return problem
    return ""


def _part_problem(job: Job) -> str:
    from hdrm.workload.batsim_composed import part_problem

    return part_problem(job)


def check_supported(workload: Workload) -> None:
    """Raise when a job has a profile type the built-in engine cannot simulate.

    Jobs that need what no hdrm engine has (a network, storage, SMPI or usage traces) are
    refused first (:func:`check_export_runs`); the others (``parallel`` profiles without
    communication) run on the batsim engine, which the message names as the way out.

    Raises:
        WorkloadError: names each unsupported profile type with a few of its jobs.
    """
    check_export_runs(workload)
    unsupported = {kind: count for kind, count in unsupported_profiles(workload).items()
                   if kind not in SUPPORTED_PROFILE_TYPES}
    if not unsupported:
        return
    parts = []
    for kind, count in unsupported.items():
        ids = [j.id for j in workload.jobs if j.profile_type == kind]
        parts.append(f"{kind!r} ({count} jobs: {_some(ids)})")
    raise WorkloadError(
        f"{workload.source or workload.name}: unsupported profile type {'; '.join(parts)}; hdrm "
        f"simulates only {', '.join(map(repr, SUPPORTED_PROFILE_TYPES))} profiles "
        "(use the batsim engine, 'hdrm replay --engine batsim', or convert the workload)"
    )


#: Profile types the real Batsim runs on hdrm's export of a platform as on the platform itself
#: when they send nothing between hosts: they compute or sleep.
EXPORT_PROFILE_TYPES = SUPPORTED_PROFILE_TYPES + ("parallel",)


def export_problem(job: Job) -> str:
    """Why ``job`` cannot run on hdrm's export of a platform ('' when it can): its profile
    communicates (``com`` > 0, SimGrid's network model) or has a type that needs storage hosts,
    SMPI or trace files (``smpi``, ``usage_trace``, ``*_pfs``, ``data_staging`` ...)."""
    if job.profile_type not in EXPORT_PROFILE_TYPES:
        return f"profile type {job.profile_type!r}"
    if _communicates(job.extra.get("profile_data", {}).get("com", 0)):
        return f"profile type {job.profile_type!r} with com > 0"
    problem = _part_problem(job) if job.parts else ""
    return problem.split(": ", 1)[-1]  # "profile 'p' has a part 'q' ..." without the job


def _communicates(com: Any) -> bool:
    if isinstance(com, list):
        return any(_communicates(c) for c in com)
    return isinstance(com, (int, float)) and not isinstance(com, bool) and com != 0


def check_export_runs(workload: Workload) -> None:
    """Refuse the jobs no hdrm engine can run faithfully (:func:`export_problem`).

    The batsim engine gives Batsim hdrm's export of the platform: one host per core with
    speeds and power states, without the file's links, routes or storage hosts, so a message
    between hosts would take no time there. Refusing is better than a schedule that looks
    right and is not.

    Raises:
        WorkloadError: one line naming the file, the problems with a few jobs each, and the fix.
    """
    found: dict[str, list[Any]] = {}
    for job in workload.jobs:
        problem = export_problem(job)
        if problem:
            found.setdefault(problem, []).append(job.id)
    if not found:
        return
    listed = "; ".join(f"{problem} ({len(ids)} jobs: {_some(ids)})"
                       for problem, ids in found.items())
    raise WorkloadError(
        f"{workload.source or workload.name}: {listed}: hdrm's engines do not model the "
        "platform's network, storage or traces (the batsim engine gives Batsim hdrm's export of "
        "the platform, whose hosts have no links between them); give these jobs 'delay', "
        "'parallel_homogeneous' or 'parallel_homogeneous_total' profiles with com 0, or run the "
        "workload with Batsim on your own platform file and a PyBatsim scheduler ('hdrm serve' "
        "stands in for Batsim there and runs jobs that communicate)")


def _some(ids: list[Any]) -> str:
    """The first three ids (repr), then '...' when there are more."""
    return ", ".join(map(repr, ids[:3])) + (", ..." if len(ids) > 3 else "")


def read_batsim_json(path: str | Path, reference_gflops: float | None = None) -> Workload:
    """Read a Batsim JSON workload.

    Args:
        path: the ``workload.json`` file.
        reference_gflops: the reference speed used to derive ``run_time_s`` of
            ``parallel_homogeneous`` jobs that carry no ``run_time_s`` field (else NaN: unknown),
            and ``req_ops_gflop`` from the walltime when the job has no such field.

    Returns:
        Jobs sorted by ``subtime`` (ties keep file order), re-indexed from 0; ids as in the file;
        ``nb_res`` from the file; ``header`` holds the other top-level keys (a dict) or None.

    Raises:
        WorkloadError: a missing or unreadable file, invalid JSON (``file:line:column``), a missing or
            mistyped field (named by its JSON path), an unknown profile name (with suggestions).
    """
    path_s = str(path)
    data = read_json(path_s, "Batsim workload file", WorkloadError,
                     missing_hint="give the path of a Batsim workload .json")
    return workload_from_dict(data, path_s, reference_gflops)


def workload_from_dict(
    data: Any, source: str = "<workload>", reference_gflops: float | None = None
) -> Workload:
    """Build a workload from parsed Batsim JSON (see :func:`read_batsim_json`)."""
    if not isinstance(data, dict):
        raise WorkloadError(f"{source}: the top level must be a JSON object, got {kind_of(data)}")
    if "nb_res" not in data and isinstance(data.get("workflow"), dict):
        raise WorkloadError(
            f"{source}: a WfCommons workflow (wfformat), not a Batsim workload; run it with "
            f"'hdrm dag replay {source} --platform P.json' or 'hdrm dag schedule {source} ...'")
    nb_res = require(data, "nb_res", source, "")
    if isinstance(nb_res, bool) or not isinstance(nb_res, int) or nb_res < 1:
        raise WorkloadError(f"{source}: nb_res must be an integer >= 1, got {nb_res!r}")
    jobs_data = require(data, "jobs", source, "")
    profiles = require(data, "profiles", source, "")
    if not isinstance(jobs_data, list):
        raise WorkloadError(f"{source}: jobs must be a list of jobs, got {kind_of(jobs_data)}")
    if not isinstance(profiles, dict):
        raise WorkloadError(f"{source}: profiles must be an object name -> profile, "
                            f"got {kind_of(profiles)}")
    jobs = read_jobs(jobs_data, profiles, source, reference_gflops)
    check_unique_ids(jobs, source)
    jobs.sort(key=lambda job: job.submit_s)
    for i, job in enumerate(jobs):
        job.idx = i
    others = {k: v for k, v in data.items() if k not in ("nb_res", "jobs", "profiles")}
    name = Path(source).name.removesuffix(".json")
    return Workload(jobs, name, source, others or None, {}, nb_res, _dependencies(jobs, source))


def _dependencies(jobs: list[Job], source: str) -> Any:
    """The jobs' dependencies (:func:`hdrm.workload.dependencies.from_json_fields`), or None.

    Only a job with fields beyond Batsim's and hdrm's own (in ``job.extra``) can name preceding
    jobs: without one, the dependencies module is not even imported.
    """
    if not any(map(_EXTRA, jobs)):
        return None
    from hdrm.workload.dependencies import from_json_fields

    return from_json_fields(jobs, source)


_EXTRA = attrgetter("extra")


def workload_to_dict(workload: Workload, swf_fields: bool = True) -> dict[str, Any]:
    """Return the Batsim JSON document of ``workload`` (see :func:`write_batsim_json`)."""
    profiles: dict[str, dict] = {}
    jobs = [_write_job(job, profiles, swf_fields) for job in workload.jobs]
    if workload.dependencies is not None:
        from hdrm.workload.dependencies import add_json_fields

        add_json_fields(jobs, workload)
    nb_res = workload.nb_res
    if nb_res is None:
        nb_res = max((job.res for job in workload.jobs), default=1)
        logger.info("%s: no nb_res, writing the widest job's %d", workload.name, nb_res)
    document: dict[str, Any] = {"nb_res": nb_res, "jobs": jobs, "profiles": profiles}
    if isinstance(workload.header, dict):
        document.update({k: v for k, v in workload.header.items() if k not in document})
    return document


def write_batsim_json(
    workload: Workload, path: str | Path, swf_fields: bool = True, indent: int | None = None
) -> None:
    """Write ``workload`` as a Batsim JSON file that :func:`read_batsim_json` reads back identical.

    Args:
        workload: the jobs; ``delay`` jobs get a ``delay`` profile of ``run_time_s`` seconds,
            ``parallel_homogeneous`` jobs ``cpu = ops_gflop * 1e9`` FLOP and ``com = 0``.
        path: the output file.
        swf_fields: also write each job's raw SWF fields (``extra["swf"]``), when it has them.
        indent: JSON indentation; None (default) writes one job and one profile per line.

    Raises:
        WorkloadError: a job with a profile type hdrm cannot describe and no kept profile data,
            or a value JSON cannot hold; or the file cannot be written.
    """
    document = workload_to_dict(workload, swf_fields)
    try:
        text = json.dumps(document, indent=indent, allow_nan=False) if indent is not None \
            else _one_per_line(document)
    except (TypeError, ValueError) as exc:
        raise WorkloadError(f"{path}: cannot write workload {workload.name!r} as JSON ({exc})")
    try:
        write_text_atomically(path, text + "\n")  # whole or not at all
    except OSError as exc:
        raise WorkloadError(f"{path}: cannot write ({exc.strerror}); check the folder") from None


def _one_per_line(document: dict[str, Any]) -> str:
    """JSON text with one job and one profile per line (readable, diff-friendly, compact)."""
    def dump(value: Any) -> str:
        return json.dumps(value, allow_nan=False)

    parts = []
    for key, value in document.items():
        if key == "jobs":
            body = ",\n".join(f"  {dump(job)}" for job in value)
            parts.append(f'"jobs": [\n{body}\n ]')
        elif key == "profiles":
            body = ",\n".join(f"  {dump(name)}: {dump(p)}" for name, p in value.items())
            parts.append(f'"profiles": {{\n{body}\n }}')
        else:
            parts.append(f"{dump(key)}: {dump(value)}")
    return "{\n " + ",\n ".join(parts) + "\n}"


def _write_job(job: Job, profiles: dict[str, dict], swf_fields: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": job.id, "subtime": _plain(job.submit_s), "res": job.res}
    if math.isfinite(job.walltime_s) and job.walltime_s > 0:
        entry["walltime"] = _plain(job.walltime_s)
    entry["profile"] = _profile_name(job, _profile_of(job), profiles)
    phomo = job.profile_type == PROFILE_PARALLEL_HOMOGENEOUS
    values = {
        "mem_mb": (job.mem_mb, job.mem_mb != 0),
        "mem_bw_gbps": (job.mem_bw_gbps, job.mem_bw_gbps != 0),
        "trace_submit_s": (job.trace_submit_s, job.trace_submit_s != job.submit_s),
        "user_id": (job.user_id, job.user_id != -1),
        "run_time_s": (job.run_time_s, job.profile_type != PROFILE_DELAY
                       and math.isfinite(job.run_time_s)),
        "ops_gflop": (job.ops_gflop, phomo or job.ops_gflop != 0),
        "req_ops_gflop": (job.req_ops_gflop, math.isfinite(job.req_ops_gflop)
                          and job.req_ops_gflop != 0),
    }
    entry.update({k: _plain(v) for k, (v, write) in values.items() if write})
    for key, value in job.extra.items():
        if key == "swf":
            if swf_fields:
                entry[key] = list(value)
        elif key == "profile_deps":  # the profiles a composed one names, written beside it
            for name, sub in value.items():
                _keep_profile(name, sub, job, profiles)
        elif key != "profile_data":
            entry[key] = value
    return entry


def _profile_of(job: Job) -> dict[str, Any]:
    if "profile_data" in job.extra:
        return dict(job.extra["profile_data"])
    if job.profile_type == PROFILE_DELAY:
        return {"type": PROFILE_DELAY, "delay": _plain(job.run_time_s)}
    if job.profile_type == PROFILE_PARALLEL_HOMOGENEOUS:
        return {"type": PROFILE_PARALLEL_HOMOGENEOUS,
                "cpu": _plain(job.ops_gflop * FLOP_PER_GFLOP), "com": 0}
    raise WorkloadError(
        f"job {job.id!r}: profile type {job.profile_type!r} has no profile data to write; "
        f"hdrm writes {', '.join(SUPPORTED_PROFILE_TYPES)} profiles"
    )


def _profile_name(job: Job, profile: dict, profiles: dict[str, dict]) -> str:
    """The job's profile name, made unique when another job uses it for a different profile."""
    name = job.profile or f"p{job.id}"
    if profiles.get(name, profile) != profile:
        renamed = f"{name}.{job.id}"
        logger.warning("profile %r differs between jobs; job %r gets %r", name, job.id, renamed)
        name = renamed
    profiles[name] = profile
    return name


def _keep_profile(name: str, profile: Any, job: Job, profiles: dict[str, dict]) -> None:
    """Write profile ``name`` that ``job``'s composed profile names; refuse another under the
    same name (renaming it would change the sequence)."""
    if profiles.setdefault(name, profile) != profile:
        raise WorkloadError(
            f"job {job.id!r}: profile {job.profile!r} names profile {name!r}, which another job "
            "uses for a different profile; give them different names")


def _plain(value: Any) -> Any:
    """An integral float as an int (shorter JSON); other values unchanged."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value
