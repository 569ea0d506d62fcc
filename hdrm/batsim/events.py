"""Builders of every protocol event, both ways, with the keys in the order Batsim (or pybatsim)
writes them, and the typed payloads of the main event types.

Example: ``execute_job(0.0, "w0!1", format_resources([0, 1]))`` is the event pybatsim sends for
``bs.execute_jobs`` of job ``w0!1`` on resources 0 and 1.
"""

from __future__ import annotations

from typing import Any, Mapping, TypedDict

from hdrm.batsim.protocol import NO_MORE_STATIC_JOBS, Event

# --------------------------------------------------------------------------- typed payloads


class ExecuteJobData(TypedDict, total=False):
    """EXECUTE_JOB: run ``job_id`` on the resources ``alloc`` (an interval set)."""

    job_id: str
    alloc: str
    mapping: dict[str, int]


class JobCompletedData(TypedDict):
    """JOB_COMPLETED: ``job_id`` ended in ``job_state`` on ``alloc``."""

    job_id: str
    job_state: str
    return_code: int
    alloc: str


class JobSubmittedData(TypedDict, total=False):
    """JOB_SUBMITTED: the job's JSON from the workload (``id`` prefixed) and maybe its profile."""

    job_id: str
    job: dict[str, Any]
    profile: dict[str, Any]


class JobKilledData(TypedDict):
    """JOB_KILLED: ids of the jobs killed, with ``{id: {profile_name, progress}}``."""

    job_ids: list[str]
    job_progress: dict[str, dict[str, Any]]


class ResourceStateData(TypedDict):
    """SET_RESOURCE_STATE and RESOURCE_STATE_CHANGED: ``resources`` go to P-state ``state``."""

    resources: str
    state: str


# --------------------------------------------------------------------------- builders: Batsim side


def job_submitted(ts: float, job_id: str, job: dict[str, Any], profile: dict | None = None) -> Event:
    """JOB_SUBMITTED of ``job`` (its workload JSON with the prefixed id); ``profile`` if forwarded."""
    data: dict[str, Any] = {"job_id": job_id, "job": job}
    if profile is not None:
        data["profile"] = profile
    return Event(ts, "JOB_SUBMITTED", data)


def job_completed(ts: float, job_id: str, job_state: str, alloc: str) -> Event:
    """JOB_COMPLETED; the return code is 0 for a success and -1 otherwise, as in Batsim."""
    code = 0 if job_state == "COMPLETED_SUCCESSFULLY" else -1
    return Event(ts, "JOB_COMPLETED",
                 {"job_id": job_id, "job_state": job_state, "return_code": code, "alloc": alloc})


def job_killed(ts: float, progress: Mapping[str, tuple[str, float]]) -> Event:
    """JOB_KILLED for ``{job_id: (profile_name, progress in [0, 1])}``."""
    return Event(ts, "JOB_KILLED", {
        "job_ids": list(progress),
        "job_progress": {j: {"profile_name": p, "progress": float(f)} for j, (p, f) in progress.items()},
    })


def requested_call(ts: float) -> Event:
    """REQUESTED_CALL: the answer to a CALL_ME_LATER."""
    return Event(ts, "REQUESTED_CALL", {})


def resource_state_changed(ts: float, resources: str, state: str) -> Event:
    """RESOURCE_STATE_CHANGED: ``resources`` are now in P-state ``state``."""
    return Event(ts, "RESOURCE_STATE_CHANGED", {"resources": resources, "state": state})


def notify(ts: float, kind: str = NO_MORE_STATIC_JOBS) -> Event:
    """NOTIFY of ``kind`` (by default, every static job has been submitted)."""
    return Event(ts, "NOTIFY", {"type": kind})


def answer_energy(ts: float, energy_j: float) -> Event:
    """ANSWER to a consumed_energy QUERY, in joules."""
    return Event(ts, "ANSWER", {"consumed_energy": float(energy_j)})


def simulation_ends(ts: float) -> Event:
    """SIMULATION_ENDS."""
    return Event(ts, "SIMULATION_ENDS", {})


# --------------------------------------------------------------------------- builders: scheduler side


def execute_job(ts: float, job_id: str, alloc: str) -> Event:
    """EXECUTE_JOB of ``job_id`` on ``alloc``."""
    return Event(ts, "EXECUTE_JOB", {"job_id": job_id, "alloc": alloc})


def reject_job(ts: float, job_id: str) -> Event:
    """REJECT_JOB of ``job_id``."""
    return Event(ts, "REJECT_JOB", {"job_id": job_id})


def kill_job(ts: float, job_ids: list[str]) -> Event:
    """KILL_JOB of ``job_ids``."""
    return Event(ts, "KILL_JOB", {"job_ids": list(job_ids)})


def set_resource_state(ts: float, resources: str, state: int | str) -> Event:
    """SET_RESOURCE_STATE of ``resources`` to P-state ``state`` (sent as a string)."""
    return Event(ts, "SET_RESOURCE_STATE", {"resources": resources, "state": str(state)})


def set_job_metadata(ts: float, job_id: str, metadata: str) -> Event:
    """SET_JOB_METADATA of ``job_id``."""
    return Event(ts, "SET_JOB_METADATA", {"job_id": job_id, "metadata": metadata})


def query_energy(ts: float) -> Event:
    """QUERY of the energy consumed so far."""
    return Event(ts, "QUERY", {"requests": {"consumed_energy": {}}})
