"""The jobs of a Batsim-protocol run: the workload as Batsim reads it, job states and results.

The workload is read twice: by :func:`hdrm.workload.batsim_json.read_batsim_json` (validation,
profile types, submission order: by ``subtime``, ties in file order) and as raw JSON, because Batsim
forwards each job's JSON object verbatim in JOB_SUBMITTED (extra fields and key order included, the
id prefixed with the workload id) and, in SIMULATION_BEGINS, every profile a job uses.

Only profiles the built-in physics can run are accepted: ``delay``, ``parallel_homogeneous`` and
``parallel_homogeneous_total`` without communication, and ``composed`` sequences of them; and
``parallel_homogeneous`` with communication, which the actor model runs with SimGrid's network
model (:mod:`hdrm.batsim.ptask`; :func:`hdrm.batsim.bandwidth.message_bandwidths` refuses it
where the actor model does not apply). The others are refused up front by
:func:`check_simulable`, the real binary's way named.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from hdrm.batsim.kept_profiles import kept_profiles, map_order
from hdrm.batsim.protocol import format_resources
from hdrm.errors import ProtocolError, WorkloadError
from hdrm.registry import suggest
from hdrm.results.records import COMPLETED_KILLED, COMPLETED_SUCCESSFULLY, REJECTED, JobResult
from hdrm.sim.machine import start_kwargs
from hdrm.workload.batsim_json import (
    SUPPORTED_PROFILE_TYPES,
    first_part_problem,
    read_batsim_json,
    unsupported_profiles,
)
from hdrm.workload.job import (
    PROFILE_COMPOSED,
    PROFILE_DELAY,
    PROFILE_PARALLEL_HOMOGENEOUS,
    PROFILE_PARALLEL_HOMOGENEOUS_TOTAL,
    Job,
    Workload,
)

#: Job life cycle in the server.
PENDING, SUBMITTED, RUNNING, DONE = "pending", "submitted", "running", "done"


#: profile types the actor model runs (:mod:`hdrm.batsim.actor_jobs`) in a session whose jobs
#: communicate
ACTOR_TYPES = ("delay", "parallel_homogeneous", "parallel_homogeneous_total", "parallel",
               "composed")


def network_need(profiles: dict[str, Any], name: str, depth: int = 0) -> str:
    """What profile ``name`` needs: ``"network"`` (communication, or a ``parallel`` profile:
    SimGrid's network model, which the actor model runs), ``""`` (nothing of it), or
    ``"other"`` (a type the actor model does not run, an unknown part)."""
    profile = profiles.get(name)
    kind = profile.get("type") if isinstance(profile, dict) else None
    if kind not in ACTOR_TYPES or depth > 50:
        return "other"
    if kind == "composed":
        needs = [network_need(profiles, part, depth + 1) for part in profile.get("seq", ())]
        return "other" if "other" in needs else "network" if "network" in needs else ""
    com = profile.get("com", 0)
    if kind == "parallel":
        return "network"
    return "network" if isinstance(com, (int, float)) and com > 0 else ""


def check_simulable(workload: Workload, profiles: dict[str, Any] | None = None) -> None:
    """Refuse the profiles hdrm serve cannot simulate (the real Batsim runs them), saying so.

    With the raw ``profiles``, the jobs that need SimGrid's network model and whose profiles
    the actor model runs pass (:func:`hdrm.batsim.bandwidth.message_bandwidths` refuses them
    where the platform does not allow it).

    Raises:
        WorkloadError: naming the profile type and its jobs (``parallel``, ``composed`` or
            ``parallel_homogeneous_total`` with ``com`` != 0, ...) and what to do.
    """
    if profiles is not None:
        workload = replace(workload, jobs=[j for j in workload.jobs
                                           if network_need(profiles, j.profile) != "network"])
    unsupported = {kind: count for kind, count in unsupported_profiles(workload).items()
                   if kind not in SUPPORTED_PROFILE_TYPES}
    problem = first_part_problem(workload)
    if problem and not unsupported:
        raise WorkloadError(
            f"{workload.source or workload.name}: {problem}, which hdrm serve does not simulate: "
            "run this workload with the real batsim, or give it a 'delay', "
            "'parallel_homogeneous' or 'parallel_homogeneous_total' profile with com 0")
    if unsupported:
        parts = []
        for kind, count in unsupported.items():
            ids = [repr(j.id) for j in workload.jobs if j.profile_type == kind][:3]
            parts.append(f"{kind!r} ({count} jobs: {', '.join(ids)}{', ...' if count > 3 else ''})")
        raise WorkloadError(
            f"{workload.source or workload.name}: unsupported profile type {'; '.join(parts)}; "
            "hdrm serve simulates 'delay', 'parallel', 'parallel_homogeneous', "
            "'parallel_homogeneous_total' and 'composed' profiles only (communication on a "
            "SimGrid XML platform): run this workload with the real batsim, or give those jobs "
            "such profiles"
        )
    # a parallel_homogeneous profile with com > 0 runs in the actor model, where the platform
    # allows it (hdrm.batsim.bandwidth.message_bandwidths refuses it elsewhere)


#: Batsim 4.2.1 reads an integer job id as a 32-bit int and refuses any other.
BATSIM_ID_RANGE = (-2**31, 2**31 - 1)


def check_batsim_ids(workload: Workload, fix: str) -> None:
    """Refuse the job ids and delays the real Batsim 4.2.1 refuses (it aborts reading the workload).

    Batsim reads an integer id as a 32-bit int ("on job id field is invalid, it should be a string
    or an integer" beyond it), refuses a text id containing ``!``, which separates the workload
    id from the job id (``w0!42``), and a ``delay`` profile whose delay is not > 0.

    Args:
        workload: the jobs.
        fix: what else the user can do, ending the message (``", or use engine 'builtin'"``;
            empty for none).

    Raises:
        WorkloadError: naming the first such id, the rule and the fix.
    """
    low, high = BATSIM_ID_RANGE
    for job in workload.jobs:
        job_id = job.id
        if type(job_id) is int and not low <= job_id <= high:
            raise WorkloadError(
                f"{workload.source or workload.name}: job id {job_id} is outside Batsim's "
                f"32-bit integer ids ({low}..{high}), which Batsim 4 refuses; write it as a "
                f"string (\"{job_id}\") or renumber the jobs{fix}"
            )
        if type(job_id) is str and "!" in job_id:
            raise WorkloadError(
                f"{workload.source or workload.name}: job id {job_id!r} contains '!', which "
                "Batsim 4 refuses (it separates the workload id from the job id, as in 'w0!42'); "
                f"rename the job{fix}"
            )
        if job.profile_type == PROFILE_DELAY and not job.run_time_s > 0:
            raise WorkloadError(
                f"{workload.source or workload.name}: job {job_id!r} has a delay of "
                f"{job.run_time_s:g} s (profile {job.profile!r}), which Batsim 4 refuses (a delay "
                f"must be > 0); give it a positive delay{fix}"
            )


def check_batsim_json(doc: dict[str, Any], source: str) -> None:
    """Refuse what the real Batsim 4.2.1 refuses in a workload file that hdrm's reader lets pass:
    a walltime other than -1 (none) or a number > 0, a ``parallel_homogeneous`` (or ``_total``)
    profile without ``com``, a ``delay`` profile whose delay is not > 0 (used or not).

    Raises:
        WorkloadError: naming the file, the job or profile, the value and the fix.
    """
    for i, job in enumerate(doc.get("jobs", ())):
        walltime = job.get("walltime", -1) if isinstance(job, dict) else -1
        if isinstance(walltime, (int, float)) and walltime != -1 and not walltime > 0:
            raise WorkloadError(
                f"{source}: jobs[{i}].walltime is {walltime!r}, which Batsim 4 refuses; write -1 "
                "(or leave it out) for no walltime, or a number > 0"
            )
    for name, profile in doc.get("profiles", {}).items():
        delay = profile.get("delay") if isinstance(profile, dict) else None
        if delay is not None and profile.get("type") == PROFILE_DELAY \
                and isinstance(delay, (int, float)) \
                and not delay > 0:  # (any profile: Batsim reads them all, a sequence's parts too)
            raise WorkloadError(f"{source}: profiles.{name}.delay is {delay!r}, which Batsim 4 "
                                "refuses (a delay must be > 0); give it a positive delay")
        if isinstance(profile, dict) and profile.get("type") in (
                PROFILE_PARALLEL_HOMOGENEOUS, PROFILE_PARALLEL_HOMOGENEOUS_TOTAL) \
                and "com" not in profile:
            raise WorkloadError(f"{source}: profiles.{name} has no 'com' field, which Batsim 4 "
                                "refuses; add \"com\": 0 (no communication)")


@dataclass(slots=True)
class ServerJob:
    """One job of the run and what happened to it."""

    job: Job
    batsim_id: str
    raw: dict[str, Any]
    workload_id: str = "w0"
    state: str = PENDING
    start_s: float = -1.0
    finish_s: float = -1.0
    final_state: str = ""
    hosts: tuple[int, ...] = ()
    energy_j: float = -1.0
    metadata: str = ""
    #: a KILL_JOB named it (Batsim ignores it in later ones)
    kill_requested: bool = False

    @property
    def profile_name(self) -> str:
        """The job's profile name."""
        return self.job.profile


@dataclass
class JobTable:
    """Every job of the run's workloads (``-w`` files: w0, w1, ...), by Batsim id.

    Attributes:
        workload: the parsed workload (the first one's, with several).
        path: absolute path of the (first) workload file (as Batsim reports it).
        profiles: the raw profiles of the (first) file, by name.
        jobs: the jobs, workload after workload, each in submission order; ``jobs[i].job.idx == i``.
        by_id: the same jobs by Batsim id (``"w0!42"``).
        finished: Batsim ids in the order jobs ended or were rejected (out_jobs.csv row order).
        paths: each workload's file by workload id (``{"w0": path}``), in ``-w`` order.
        profile_sets: each workload's raw profiles that its jobs use, by workload id (names may
            repeat across them).
    """

    workload: Workload
    path: str
    profiles: dict[str, Any]
    jobs: list[ServerJob]
    by_id: dict[str, ServerJob] = field(default_factory=dict)
    finished: list[str] = field(default_factory=list)
    paths: dict[str, str] = field(default_factory=dict)
    profile_sets: dict[str, dict[str, Any]] = field(default_factory=dict)

    def profile_of(self, job: ServerJob) -> Any:
        """The raw profile of ``job``, from its own workload."""
        return self.profile_sets[job.workload_id][job.profile_name]

    def by_workload(self) -> list[list[ServerJob]]:
        """The jobs of each workload, in ``-w`` order."""
        groups: dict[str, list[ServerJob]] = {w: [] for w in self.paths}
        for job in self.jobs:
            groups[job.workload_id].append(job)
        return list(groups.values())

    def get(self, batsim_id: str, where: str) -> ServerJob:
        """The job with this Batsim id.

        Raises:
            ProtocolError: no such job, or not submitted yet (``where`` names the event).
        """
        job = self.by_id.get(batsim_id)
        if job is None:
            raise ProtocolError(
                f"{where}: unknown job {batsim_id!r}; {suggest(batsim_id, list(self.by_id))}"
                "job ids are 'w0!<id in the workload file>'"
            )
        if job.state == PENDING:
            raise ProtocolError(f"{where}: job {batsim_id!r} has not been submitted yet "
                                f"(its subtime is {job.job.submit_s:g} s)")
        return job

    def unfinished(self) -> list[ServerJob]:
        """Submitted jobs that were neither rejected nor have ended."""
        return [j for j in self.jobs if j.state in (SUBMITTED, RUNNING)]


def read_job_table(path: str | Path, workload_id: str = "w0") -> JobTable:
    """Read a Batsim JSON workload for the server.

    Raises:
        WorkloadError: unreadable or invalid workload, or a profile needing the network model.
    """
    path = Path(path).resolve()
    workload = read_batsim_json(path)
    with open(path, encoding="utf-8") as handle:
        doc = json.load(handle)
    check_simulable(workload, doc.get("profiles") if isinstance(doc, dict) else None)
    check_batsim_ids(workload, "")  # as the real batsim does
    check_batsim_json(doc, str(path))
    raw_jobs = {_key(j["id"]): j for j in doc["jobs"]}
    jobs = []
    for job in workload.jobs:
        batsim_id = f"{workload_id}!{job.id}"
        raw = {k: (batsim_id if k == "id" else v) for k, v in raw_jobs[_key(job.id)].items()}
        jobs.append(ServerJob(job, batsim_id, raw, workload_id))
    if not jobs:
        raise WorkloadError(f"{path}: no job; a Batsim workload needs at least one job")
    # Batsim 4.2.1 drops the profiles no job uses when it loads a workload, so SIMULATION_BEGINS
    # lists only the others (checked with the binary)
    # (and those a live sequence names, in its hash map's order: hdrm.batsim.kept_profiles)
    names = list(doc["profiles"])
    kept = kept_profiles(doc["profiles"], Counter(job.profile_name for job in jobs))
    table = JobTable(workload, str(path), dict(doc["profiles"]), jobs,
                     paths={workload_id: str(path)},
                     profile_sets={workload_id: {name: doc["profiles"][name] for name
                                                 in map_order(names) if name in kept}})
    table.by_id = {j.batsim_id: j for j in jobs}
    return table


def read_job_tables(paths: Sequence[str | Path]) -> JobTable:
    """Read several Batsim JSON workloads as Batsim does with several ``-w``: workload ``i`` is
    ``w<i>``, its jobs ``w<i>!<id>``, its profiles its own (the same file twice is two workloads).

    The jobs are renumbered across workloads (``job.idx``, the simulator's key), file ids unchanged.
    No file gives :func:`empty_job_table` (Batsim runs without ``-w``).

    Raises:
        WorkloadError: as :func:`read_job_table`, for the first file that fails.
    """
    if not paths:  # (Batsim runs without -w: only jobs a decision process registers)
        return empty_job_table()
    tables = [read_job_table(path, f"w{i}") for i, path in enumerate(paths)]
    if len(tables) == 1:
        return tables[0]
    first, jobs = tables[0], [job for table in tables for job in table.jobs]
    for i, job in enumerate(jobs):  # Job objects are the table's own (read just above)
        job.job.idx = i
    table = JobTable(first.workload, first.path, first.profiles, jobs,
                     paths={f"w{i}": t.path for i, t in enumerate(tables)},
                     profile_sets={w: s for t in tables for w, s in t.profile_sets.items()})
    table.by_id = {j.batsim_id: j for j in jobs}
    return table


def empty_job_table() -> JobTable:
    """The jobs of a session without workload file (Batsim run without ``-w``): none, no
    workload; a decision process may register some (``--enable-dynamic-jobs``)."""
    return JobTable(Workload([], name="", source=""), "", {}, [])


def _key(job_id: Any) -> str:
    return f"{type(job_id).__name__}:{job_id}"


#: Batsim writes a job that ran in no time (a ``parallel_homogeneous`` job of ``cpu`` 0) as lasting
#: this long ("computed in null time. Putting epsilon instead"); the simulation itself is not moved.
NULL_RUN_TIME_S = 1e-5


def job_result(job: ServerJob, workload_name: str, energy: bool) -> JobResult:
    """The out_jobs.csv row of a job that ended or was rejected."""
    walltime = job.raw.get("walltime", -1)
    common = dict(
        job_id=str(job.job.id), workload_name=workload_name, profile=job.profile_name,
        submission_time=job.job.submit_s, requested_number_of_resources=job.job.res,
        requested_time=float(walltime) if walltime is not None else -1.0, metadata=job.metadata,
    )
    if job.final_state == REJECTED:
        return JobResult(**common, success=0, final_state=REJECTED, consumed_energy=None)
    run_s, finish_s = job.finish_s - job.start_s, job.finish_s
    if run_s == 0 and job.final_state != COMPLETED_KILLED:
        run_s, finish_s = NULL_RUN_TIME_S, job.start_s + NULL_RUN_TIME_S
    return JobResult(
        **common,
        success=int(job.final_state == COMPLETED_SUCCESSFULLY),
        final_state=job.final_state,
        starting_time=job.start_s,
        execution_time=run_s,
        finish_time=finish_s,
        allocated_resources=format_resources(job.hosts),
        consumed_energy=job.energy_j if energy else -1.0,
    )


def run_kwargs(job: Job, nb_hosts: int | None = None) -> dict[str, Any]:
    """Keyword arguments of :meth:`HostBoard.start` for ``job``'s profile on ``nb_hosts``
    hosts (its request when None). A job that communicates has work the board cannot size
    (NaN): it gets none there (the actor model ends it; the board's end is not used)."""
    kwargs: dict[str, Any] = start_kwargs(job, nb_hosts)
    ops = kwargs.get("ops_gflop")
    if ops is not None and ops != ops:
        kwargs["ops_gflop"] = 0.0
    if "parts" in kwargs:
        kwargs["parts"] = tuple((d, 0.0 if o is not None and o != o else o)
                                for d, o in kwargs["parts"])
    return kwargs


def spreads_work(job: Job) -> bool:
    """Whether ``job`` may run on another number of resources than it asks for: Batsim 4.2.1
    allows it for a ``parallel_homogeneous_total`` profile and for a ``composed`` one whose
    sequence names only such profiles (``src/server.cpp``; a nested sequence does not count)."""
    if job.profile_type == PROFILE_PARALLEL_HOMOGENEOUS_TOTAL:
        return True
    if job.profile_type != PROFILE_COMPOSED:
        return False
    data = job.extra.get("profile_data") or {}
    deps = job.extra.get("profile_deps") or {}
    return all(isinstance(deps.get(name), dict)
               and deps[name].get("type") == PROFILE_PARALLEL_HOMOGENEOUS_TOTAL
               for name in data.get("seq", ()))
