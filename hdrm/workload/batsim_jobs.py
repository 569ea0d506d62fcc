"""The jobs of a Batsim JSON workload: read and checked, the usual file column by column.

:func:`read_jobs` is what :func:`hdrm.workload.batsim_json.workload_from_dict` calls. When every
job is a plain object (the keys ``id subtime res walltime profile user_id trace_submit_s``,
plain JSON numbers and strings), each field is checked once for all jobs, by C-level passes
over its column (types, finiteness, ranges, known profiles), and the jobs are built without a
check each. Any other file, or a column that fails, is read job by job (:func:`read_job`),
where each field's check names the job, the field and the value: the same jobs, and the same
first error, either way.
"""

from __future__ import annotations

import logging
import math
from itertools import chain, repeat
from typing import Any, Callable

from hdrm.errors import WorkloadError
from hdrm.registry import suggest
from hdrm.workload.job import (
    PROFILE_COMPOSED,
    PROFILE_DELAY,
    PROFILE_PARALLEL_HOMOGENEOUS,
    PROFILE_PARALLEL_HOMOGENEOUS_TOTAL,
    Job,
)

logger = logging.getLogger(__name__)

#: FLOP in one GFLOP.
FLOP_PER_GFLOP = 1e9

_BATSIM_KEYS = ("id", "subtime", "res", "walltime", "profile")
_FLOAT_FIELDS = ("mem_mb", "mem_bw_gbps", "trace_submit_s", "run_time_s", "ops_gflop",
                 "req_ops_gflop")
#: Keys a job may have that :func:`read_job` reads; only ``trace_submit_s`` of the float
#: fields among the plain keys (the others and unknown keys take the general path).
_KNOWN_KEYS = frozenset(_BATSIM_KEYS + _FLOAT_FIELDS + ("user_id",))
_PLAIN_KEYS = frozenset(_BATSIM_KEYS + ("user_id", "trace_submit_s"))
_CANONICAL_KEYS = {PROFILE_DELAY: {"type", "delay"},
                   PROFILE_PARALLEL_HOMOGENEOUS: {"type", "cpu", "com"}}
#: Profile types whose jobs the column path leaves to :func:`read_job` (their work depends on
#: the job's ``res`` or on other profiles).
_JOB_BY_JOB = (PROFILE_COMPOSED, PROFILE_PARALLEL_HOMOGENEOUS_TOTAL)


def read_jobs(jobs_data: list, profiles: dict, source: str, ref: float | None) -> list[Job]:
    """The jobs of ``jobs_data`` (the ``jobs`` list), in file order, each field checked.

    Raises:
        WorkloadError: the first bad job (in file order) and field, as :func:`read_job` names it.
    """
    facts: dict[str, tuple[str, float, bool]] = {}
    jobs = _plain_jobs(jobs_data, profiles, source, ref, facts)
    if jobs is None:
        jobs = [read_job(entry, i, profiles, source, ref, facts)
                for i, entry in enumerate(jobs_data)]
        _warn_near_misses(jobs, source)
    return jobs


#: Keys hdrm itself puts in ``job.extra`` (never a user's typo).
_OWN_EXTRA_KEYS = frozenset(("profile_data", "profile_deps", "swf"))


def _warn_near_misses(jobs: list[Job], source: str) -> None:
    """Warn once per extra key that is nearly a field hdrm reads (``walltme``, ``wall_time``).

    Batsim passes any other field through, so such a key is kept (in ``job.extra``), but the
    field it was meant to be is then absent: a walltime typo means no walltime at all.
    """
    import difflib  # only for files with extra fields

    extra = set().union(*(job.extra.keys() for job in jobs)) - _OWN_EXTRA_KEYS
    for key in sorted(map(str, extra)):
        close = difflib.get_close_matches(key, sorted(_KNOWN_KEYS), n=1, cutoff=0.8)
        if close:
            logger.warning("%s: jobs have a field %r, which hdrm does not read (kept as an extra "
                           "field); did you mean %r?", source, key, close[0])


def _plain_jobs(jobs_data: list, profiles: dict, source: str, ref: float | None,
                facts: dict[str, tuple[str, float, bool]]) -> list[Job] | None:
    """The jobs built column by column when every job and field is plain, else None (the
    job-by-job path then reads them, raising where a field is bad)."""
    if not jobs_data or _types(jobs_data) != {dict} or not _PLAIN_KEYS.issuperset(
            chain.from_iterable(jobs_data)):
        return None
    ids = _column(jobs_data, "id")
    submits = _column(jobs_data, "subtime")
    res = _column(jobs_data, "res")
    walltimes = _column(jobs_data, "walltime", -1.0)
    names = _column(jobs_data, "profile")
    traces = _column(jobs_data, "trace_submit_s", _ABSENT)
    users = _column(jobs_data, "user_id", -1)
    given_traces = [t for t in traces if t is not _ABSENT] if _ABSENT in traces else traces
    if not (_types(ids) <= _ID_TYPES and _types(res) == {int} and _types(users) == {int}
            and _types(names) == {str} and _numbers(submits) and _numbers(walltimes)
            and _numbers(given_traces)):
        return None
    if min(res) < 1 or min(submits) < 0 or not profiles.keys() >= set(names):
        return None
    _profile_column_facts(names, profiles, source, facts)
    if any(fact[0] in _JOB_BY_JOB for fact in facts.values()):
        return None
    jobs = []
    for i, (job_id, submit_s, cores, walltime_s, name, trace_s, user_id) in enumerate(zip(
            ids, submits, res, walltimes, names, traces, users)):
        kind, amount, canonical = facts[name]
        walltime_s = float(walltime_s) if walltime_s > 0 else math.inf
        submit_s = float(submit_s)
        trace_s = submit_s if trace_s is _ABSENT else float(trace_s)
        extra = {} if canonical else {"profile_data": dict(profiles[name])}
        if kind == PROFILE_DELAY:
            jobs.append(Job(i, job_id, submit_s, cores, walltime_s, amount, 0.0, 0.0, 0.0,
                            0.0 if ref is None else walltime_s * ref, trace_s, name, kind,
                            user_id, extra))
            continue
        run_time_s, ops_gflop = math.nan, 0.0
        if kind == PROFILE_PARALLEL_HOMOGENEOUS:
            ops_gflop = amount / FLOP_PER_GFLOP
            if ref is not None:
                run_time_s = ops_gflop / ref
        jobs.append(Job(i, job_id, submit_s, cores, walltime_s, run_time_s, 0.0, 0.0, ops_gflop,
                        _default_req_ops(walltime_s, ref, kind), trace_s, name, kind, user_id,
                        extra))
    return jobs


def _profile_column_facts(names: list[str], profiles: dict, source: str,
                          facts: dict[str, tuple[str, float, bool]]) -> None:
    """Fill ``facts`` for the profiles of ``names``: the usual ones, ``{"type": "delay",
    "delay": s}``, checked as one column; else each at its first job (file order), raising
    for the first bad one as the job-by-job path does."""
    used = list(dict.fromkeys(names))  # distinct, in order of first use
    bodies = [profiles[name] for name in used]
    if _types(bodies) == {dict} and set(map(len, bodies)) == {2} and set(
            map(dict.get, bodies, repeat("type"))) == {PROFILE_DELAY}:
        delays = _column(bodies, "delay")
        if _numbers(delays) and min(delays) >= 0:
            facts.update(zip(used, zip(repeat(PROFILE_DELAY), map(float, delays), repeat(True))))
            return
    for name, body in zip(used, bodies):
        facts[name] = _profile_facts(body, name, source)


def _column(entries: list[dict], key: str, default: Any = None) -> list:
    return list(map(dict.get, entries, repeat(key), repeat(default)))


def _types(values: list) -> set[type]:
    return set(map(type, values))


def _numbers(values: list) -> bool:
    """True when every value is a plain int or float, finite as a float (an int too large for
    a float is left to the job-by-job path, which raises where the old reader raised)."""
    try:
        return _types(values) <= _NUMBER_TYPES and all(map(math.isfinite, values))
    except OverflowError:
        return False


_ID_TYPES = {int, str}
_NUMBER_TYPES = {int, float}
#: The value of an absent field in a column (None is a value: JSON's null).
_ABSENT = object()


def read_job(entry: Any, i: int, profiles: dict, source: str, ref: float | None,
              facts: dict[str, tuple[str, float, bool]]) -> Job:
    """The job of ``jobs[i]``. A plain value (an int or a finite float in range, an int or str
    id) passes one type test; any other goes through the checks that name the field, so the
    messages are the same either way."""
    if not isinstance(entry, dict):
        raise WorkloadError(f"{source}: jobs[{i}] must be an object, got {kind_of(entry)}")
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
    parts: tuple = ()
    if kind in _JOB_BY_JOB:
        run_time_s, ops_gflop, parts = _spread_or_sequence(kind, name, profiles, res, ref, fields,
                                                           source, extra, run_time_s, ops_gflop)
    req = fields.get("req_ops_gflop", _default_req_ops(walltime_s, ref, kind))
    user_id = entry.get("user_id", -1)
    if type(user_id) is not int:
        user_id = _other(entry, "user_id", source, i, _is_int, "an integer")
    job = Job(i, job_id, submit_s, res, walltime_s, run_time_s, fields.get("mem_mb", 0.0),
              fields.get("mem_bw_gbps", 0.0), ops_gflop, req,
              fields.get("trace_submit_s", submit_s), name, kind, user_id, extra)
    if parts:
        job.parts = parts
    return job


def _spread_or_sequence(kind: str, name: str, profiles: dict, res: int, ref: float | None,
                        fields: dict, source: str, extra: dict, run_time_s: float,
                        ops_gflop: float) -> tuple[float, float, tuple]:
    """(run_time_s, ops_gflop, parts) of a ``parallel_homogeneous_total`` job (its ``cpu``
    spread over its ``res`` hosts: what each computes when given what it asks for) or of a
    ``composed`` one (its leaf parts; its run time at ``ref``; the profiles it refers to kept
    in ``extra["profile_deps"]`` for writing). Fields the job gives win."""
    from hdrm.workload import batsim_composed as composed

    parts: tuple = ()
    if kind == PROFILE_PARALLEL_HOMOGENEOUS_TOTAL:
        from hdrm.workload.job import JobPart

        total = profiles[name]["cpu"] / FLOP_PER_GFLOP
        parts = (JobPart(kind, total if not profiles[name].get("com", 0) else math.nan, name),)
        per_host = total / res
        guess = per_host / ref if ref is not None else math.nan
    else:
        parts = composed.composed_parts(name, profiles, source)
        extra["profile_deps"] = composed.used_profiles(name, profiles)
        per_host = 0.0
        guess = composed.parts_run_time_s(parts, res, ref)
    return (fields.get("run_time_s", guess), fields.get("ops_gflop", per_host), parts)


def _fields_and_extra(entry: dict, source: str, i: int) -> tuple[dict[str, float], dict]:
    """The float fields a job gives (checked) and its other fields (``job.extra``)."""
    if entry.keys() <= _PLAIN_KEYS:  # the usual job: no field beyond these
        if "trace_submit_s" not in entry:
            return {}, {}
        value = entry["trace_submit_s"]
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
    value = require(entry, key, source, where)
    if isinstance(value, bool) or not valid(value):
        raise WorkloadError(f"{source}: {where}.{key} must be {wanted}, got {value!r}")
    return value


def _checked_profile_name(entry: dict, profiles: dict, source: str, where: str) -> str:
    """A job's profile name that the plain test did not take: the name (a str subclass in
    ``profiles``), else the error with the defined profiles."""
    name = require(entry, "profile", source, where)
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
        raise WorkloadError(f"{source}: {where} must be an object, got {kind_of(profile)}")
    kind = require(profile, "type", source, where)
    if not isinstance(kind, str):
        raise WorkloadError(f"{source}: {where}.type must be a string, got {kind!r}")
    canonical = not (set(profile) - _CANONICAL_KEYS.get(kind, set()) or profile.get("com", 0) != 0)
    amount = math.nan
    if kind == PROFILE_DELAY:
        amount = _number(profile, "delay", source, where, minimum=0.0)
    elif kind in (PROFILE_PARALLEL_HOMOGENEOUS, PROFILE_PARALLEL_HOMOGENEOUS_TOTAL):
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


def check_unique_ids(jobs: list[Job], source: str) -> None:
    """Refuse an id that an earlier job has, also as text (``1`` and ``"1"``: Batsim and
    out_jobs.csv write ids as text, so the two would be one job there)."""
    if len({str(job.id) for job in jobs}) == len(jobs):
        return
    seen: dict[str, Job] = {}
    for job in jobs:
        first = seen.get(str(job.id))
        if first is not None:
            same = "" if first.id == job.id else f" (as text, the id {first.id!r} is)"
            raise WorkloadError(
                f"{source}: jobs[{job.idx}].id {job.id!r} is already used by jobs[{first.idx}]"
                f"{same}; job ids must be unique"
            )
        seen[str(job.id)] = job


def require(obj: dict, key: str, source: str, where: str) -> Any:
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
    value = require(obj, key, source, where)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise WorkloadError(f"{source}: {where}.{key} must be a finite number, got {value!r}")
    if minimum is not None and value < minimum:
        raise WorkloadError(f"{source}: {where}.{key} must be >= {minimum:g}, got {value!r}")
    return float(value)


def kind_of(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string"}.get(type(value), repr(value))
