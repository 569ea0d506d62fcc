"""Batsim JSON workloads: read and write, with the fields the heterogeneity layer needs.

A Batsim workload is ``{"nb_res": N, "jobs": [...], "profiles": {...}}``. Each job has ``id`` (an
int or a string, kept as is), ``subtime`` (s), ``res`` (cores), ``walltime`` (s, optional; absent or
<= 0 means none) and ``profile`` (a profile name). hdrm simulates two profile types:

* ``{"type": "delay", "delay": s}``: the job lasts ``s`` seconds whatever the cores;
* ``{"type": "parallel_homogeneous", "cpu": flop, "com": 0}``: each allocated core computes
  ``cpu`` FLOP (Batsim counts FLOP; hdrm keeps ``ops_gflop = cpu / 1e9``).

Other types (``parallel`` with a communication matrix, ``composed``, ...) are read and kept, with
their profile in ``job.extra["profile_data"]``, so that engines can refuse them by name
(:func:`unsupported_profiles`, :func:`check_supported`).

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
from pathlib import Path
from typing import Any, Callable

from hdrm.errors import WorkloadError
from hdrm.registry import suggest
from hdrm.jsonfile import read_json
from hdrm.workload.dependencies import add_json_fields, from_json_fields
from hdrm.workload.job import PROFILE_DELAY, PROFILE_PARALLEL_HOMOGENEOUS, Job, Workload

logger = logging.getLogger(__name__)

#: FLOP in one GFLOP.
FLOP_PER_GFLOP = 1e9

#: Profile types hdrm's engines simulate.
SUPPORTED_PROFILE_TYPES = (PROFILE_DELAY, PROFILE_PARALLEL_HOMOGENEOUS)

_BATSIM_KEYS = ("id", "subtime", "res", "walltime", "profile")
_FLOAT_FIELDS = ("mem_mb", "mem_bw_gbps", "trace_submit_s", "run_time_s", "ops_gflop",
                 "req_ops_gflop")
#: Keys a job may have that :func:`_read_job` reads; only ``trace_submit_s`` of the float
#: fields among the plain keys (the others and unknown keys take the general path).
_KNOWN_KEYS = frozenset(_BATSIM_KEYS + _FLOAT_FIELDS + ("user_id",))
_PLAIN_KEYS = frozenset(_BATSIM_KEYS + ("user_id", "trace_submit_s"))
_CANONICAL_KEYS = {PROFILE_DELAY: {"type", "delay"},
                   PROFILE_PARALLEL_HOMOGENEOUS: {"type", "cpu", "com"}}


def unsupported_profiles(workload: Workload) -> dict[str, int]:
    """Number of jobs per profile type that hdrm cannot simulate (empty when all are fine)."""
    counts = Counter(j.profile_type for j in workload.jobs
                     if j.profile_type not in SUPPORTED_PROFILE_TYPES)
    return dict(counts)


def check_supported(workload: Workload) -> None:
    """Raise when a job has a profile type hdrm cannot simulate.

    Raises:
        WorkloadError: names each unsupported profile type with a few of its jobs.
    """
    unsupported = unsupported_profiles(workload)
    if not unsupported:
        return
    parts = []
    for kind, count in unsupported.items():
        ids = [repr(j.id) for j in workload.jobs if j.profile_type == kind][:3]
        parts.append(f"{kind!r} ({count} jobs: {', '.join(ids)}{', ...' if count > 3 else ''})")
    raise WorkloadError(
        f"{workload.source or workload.name}: unsupported profile type {'; '.join(parts)}; hdrm "
        f"simulates only {' and '.join(map(repr, SUPPORTED_PROFILE_TYPES))} profiles "
        "(use the batsim engine for network profiles, or convert the workload)"
    )


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
        raise WorkloadError(f"{source}: the top level must be a JSON object, got {_kind(data)}")
    if "nb_res" not in data and isinstance(data.get("workflow"), dict):
        raise WorkloadError(
            f"{source}: a WfCommons workflow (wfformat), not a Batsim workload; run it with "
            f"'hdrm dag replay {source} --platform P.json' or 'hdrm dag schedule {source} ...'")
    nb_res = _require(data, "nb_res", source, "")
    if isinstance(nb_res, bool) or not isinstance(nb_res, int) or nb_res < 1:
        raise WorkloadError(f"{source}: nb_res must be an integer >= 1, got {nb_res!r}")
    jobs_data = _require(data, "jobs", source, "")
    profiles = _require(data, "profiles", source, "")
    if not isinstance(jobs_data, list):
        raise WorkloadError(f"{source}: jobs must be a list of jobs, got {_kind(jobs_data)}")
    if not isinstance(profiles, dict):
        raise WorkloadError(f"{source}: profiles must be an object name -> profile, "
                            f"got {_kind(profiles)}")
    facts: dict[str, tuple[str, float, bool]] = {}
    jobs = [_read_job(entry, i, profiles, source, reference_gflops, facts)
            for i, entry in enumerate(jobs_data)]
    _check_unique_ids(jobs, source)
    jobs.sort(key=lambda job: job.submit_s)
    for i, job in enumerate(jobs):
        job.idx = i
    others = {k: v for k, v in data.items() if k not in ("nb_res", "jobs", "profiles")}
    name = Path(source).name.removesuffix(".json")
    return Workload(jobs, name, source, others or None, {}, nb_res,
                    from_json_fields(jobs, source))


def _read_job(entry: Any, i: int, profiles: dict, source: str, ref: float | None,
              facts: dict[str, tuple[str, float, bool]]) -> Job:
    """The job of ``jobs[i]``. A plain value (an int or a finite float in range, an int or str
    id) passes one type test; any other goes through the checks that name the field, so the
    messages are the same either way."""
    if not isinstance(entry, dict):
        raise WorkloadError(f"{source}: jobs[{i}] must be an object, got {_kind(entry)}")
    job_id = entry.get("id")
    if type(job_id) is not int and type(job_id) is not str:
        job_id = _other(entry, "id", source, i, _is_id, "an integer or a string")
    submit_s = entry.get("subtime")
    if (type(submit_s) is int or type(submit_s) is float) and 0.0 <= submit_s < math.inf:
        submit_s = float(submit_s)
    else:
        submit_s = _number(entry, "subtime", source, f"jobs[{i}]", minimum=0.0)
    res = entry.get("res")
    if type(res) is not int or res < 1:
        res = _other(entry, "res", source, i, _is_res, "an integer >= 1")
    walltime_s = entry.get("walltime", -1.0)
    if (type(walltime_s) is int or type(walltime_s) is float) and abs(walltime_s) < math.inf:
        walltime_s = float(walltime_s)
    else:
        walltime_s = _number(entry, "walltime", source, f"jobs[{i}]", default=-1.0)
    walltime_s = walltime_s if walltime_s > 0 else math.inf
    name = entry.get("profile")
    if type(name) is not str or name not in profiles:
        name = _checked_profile_name(entry, profiles, source, f"jobs[{i}]")
    fields, extra = _fields_and_extra(entry, source, i)
    kind, run_time_s, ops_gflop = _read_profile(profiles[name], name, fields, source, ref, extra,
                                                i, facts)
    req = fields.get("req_ops_gflop", _default_req_ops(walltime_s, ref, kind))
    user_id = entry.get("user_id", -1)
    if type(user_id) is not int:
        user_id = _other(entry, "user_id", source, i, _is_int, "an integer")
    return Job(i, job_id, submit_s, res, walltime_s, run_time_s, fields.get("mem_mb", 0.0),
               fields.get("mem_bw_gbps", 0.0), ops_gflop, req,
               fields.get("trace_submit_s", submit_s), name, kind, user_id, extra)


def _fields_and_extra(entry: dict, source: str, i: int) -> tuple[dict[str, float], dict]:
    """The float fields a job gives (checked) and its other fields (``job.extra``)."""
    if entry.keys() <= _PLAIN_KEYS:  # the usual job: no field beyond these
        value = entry.get("trace_submit_s")
        if value is None:
            return {}, {}
        if (type(value) is not int and type(value) is not float) or not abs(value) < math.inf:
            value = _number(entry, "trace_submit_s", source, f"jobs[{i}]")
        return {"trace_submit_s": float(value)}, {}
    fields = {k: _number(entry, k, source, f"jobs[{i}]") for k in _FLOAT_FIELDS if k in entry}
    extra = {k: v for k, v in entry.items() if k not in _KNOWN_KEYS}
    if "swf" in extra and isinstance(extra["swf"], list):
        extra["swf"] = tuple(extra["swf"])
    return fields, extra


def _is_id(value: Any) -> bool:
    return isinstance(value, (int, str))


def _is_res(value: Any) -> bool:
    return isinstance(value, int) and value >= 1


def _is_int(value: Any) -> bool:
    return isinstance(value, int)


def _other(entry: dict, key: str, source: str, i: int, valid: Callable[[Any], bool],
           wanted: str) -> Any:
    """A job field the plain test did not take (an int or str subclass, say): the value when
    ``valid`` (never a bool), else the error naming the field, the value and what it must be."""
    where = f"jobs[{i}]"
    value = _require(entry, key, source, where)
    if isinstance(value, bool) or not valid(value):
        raise WorkloadError(f"{source}: {where}.{key} must be {wanted}, got {value!r}")
    return value


def _checked_profile_name(entry: dict, profiles: dict, source: str, where: str) -> str:
    """A job's profile name that the plain test did not take: the name (a str subclass in
    ``profiles``), else the error with the defined profiles."""
    name = _require(entry, "profile", source, where)
    if not isinstance(name, str) or name not in profiles:
        raise WorkloadError(
            f"{source}: {where}.profile {name!r} is not in profiles; "
            f"{suggest(str(name), list(profiles))}defined profiles: {', '.join(map(str, profiles))}"
        )
    return name


def _default_req_ops(walltime_s: float, ref: float | None, kind: str) -> float:
    if ref is not None:
        return walltime_s * ref
    return math.inf if kind == PROFILE_PARALLEL_HOMOGENEOUS and math.isinf(walltime_s) else 0.0


def _read_profile(
    profile: Any, name: str, fields: dict, source: str, ref: float | None, extra: dict,
    i: int, facts: dict[str, tuple[str, float, bool]],
) -> tuple[str, float, float]:
    """Return (profile type, run_time_s, ops_gflop); keep non-canonical profiles in ``extra``.

    The profile's own checks run once per profile name (``facts`` keeps what they found)."""
    found = facts.get(name)
    if found is None:
        found = facts[name] = _profile_facts(profile, name, source)
    kind, amount, canonical = found
    if not canonical:
        extra["profile_data"] = dict(profile)
    ops_gflop = fields.get("ops_gflop", 0.0)
    run_time_s = fields.get("run_time_s", math.nan)
    if kind == PROFILE_DELAY:
        run_time_s = amount
    elif kind == PROFILE_PARALLEL_HOMOGENEOUS:
        ops_gflop = _checked_ops(amount, fields, source, f"profiles.{name}", f"jobs[{i}]")
        if "run_time_s" not in fields and ref is not None:
            run_time_s = ops_gflop / ref
    return kind, run_time_s, ops_gflop


def _profile_facts(profile: Any, name: str, source: str) -> tuple[str, float, bool]:
    """(type, delay or cpu FLOP (nan for other types), canonical) of a checked profile."""
    if type(profile) is dict and len(profile) == 2 and profile.get("type") == PROFILE_DELAY:
        delay = profile.get("delay")  # the usual profile, {"type": "delay", "delay": s}
        if (type(delay) is int or type(delay) is float) and 0.0 <= delay < math.inf:
            return PROFILE_DELAY, float(delay), True
    where = f"profiles.{name}"
    if not isinstance(profile, dict):
        raise WorkloadError(f"{source}: {where} must be an object, got {_kind(profile)}")
    kind = _require(profile, "type", source, where)
    if not isinstance(kind, str):
        raise WorkloadError(f"{source}: {where}.type must be a string, got {kind!r}")
    canonical = not (set(profile) - _CANONICAL_KEYS.get(kind, set()) or profile.get("com", 0) != 0)
    amount = math.nan
    if kind == PROFILE_DELAY:
        amount = _number(profile, "delay", source, where, minimum=0.0)
    elif kind == PROFILE_PARALLEL_HOMOGENEOUS:
        amount = _number(profile, "cpu", source, where, minimum=0.0)
    return kind, amount, canonical


def _checked_ops(cpu_flop: float, fields: dict, source: str, where: str, job_where: str) -> float:
    ops_gflop = cpu_flop / FLOP_PER_GFLOP
    given = fields.get("ops_gflop")
    if given is None:
        return ops_gflop
    if not math.isclose(given, ops_gflop, rel_tol=1e-9, abs_tol=1e-12):
        raise WorkloadError(
            f"{source}: {job_where}.ops_gflop {given!r} disagrees with {where}.cpu {cpu_flop!r} "
            f"FLOP (= {ops_gflop!r} GFLOP); fix one of them or remove {job_where}.ops_gflop"
        )
    return given


def _check_unique_ids(jobs: list[Job], source: str) -> None:
    if len({job.id for job in jobs}) == len(jobs):
        return
    seen: dict[int | str, int] = {}
    for job in jobs:
        if job.id in seen:
            raise WorkloadError(
                f"{source}: jobs[{job.idx}].id {job.id!r} is already used by jobs[{seen[job.id]}]; "
                "job ids must be unique"
            )
        seen[job.id] = job.idx


def _require(obj: dict, key: str, source: str, where: str) -> Any:
    if key not in obj:
        place = f"{where} " if where else ""
        raise WorkloadError(
            f"{source}: {place}has no {key!r}; {suggest(key, list(map(str, obj)))}"
            f"add the field {key!r}"
        )
    return obj[key]


def _number(obj: dict, key: str, source: str, where: str, default: float | None = None,
            minimum: float | None = None) -> float:
    if key not in obj and default is not None:
        return default
    value = _require(obj, key, source, where)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise WorkloadError(f"{source}: {where}.{key} must be a finite number, got {value!r}")
    if minimum is not None and value < minimum:
        raise WorkloadError(f"{source}: {where}.{key} must be >= {minimum:g}, got {value!r}")
    return float(value)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string"}.get(type(value), repr(value))


def workload_to_dict(workload: Workload, swf_fields: bool = True) -> dict[str, Any]:
    """Return the Batsim JSON document of ``workload`` (see :func:`write_batsim_json`)."""
    profiles: dict[str, dict] = {}
    jobs = [_write_job(job, profiles, swf_fields) for job in workload.jobs]
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
        Path(path).write_text(text + "\n", encoding="utf-8")
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
        f"hdrm writes {' and '.join(SUPPORTED_PROFILE_TYPES)} profiles"
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


def _plain(value: Any) -> Any:
    """An integral float as an int (shorter JSON); other values unchanged."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value
