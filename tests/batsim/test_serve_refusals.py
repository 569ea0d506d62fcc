"""What ``hdrm serve`` refuses, tried with the Batsim 4.2.1 binary.

Refused as the binary refuses (it aborts; ``slow`` tests below): an alloc of another size than
the request without a mapping, KILL_JOB of a job not started, CHANGE_JOB_STATE, a QUERY other
than ``consumed_energy``, REJECT_JOB of a running job, a job executed twice, a busy resource.
Refused although the binary runs them, each naming what is refused and what to do: network
profiles (also as a part of a ``composed`` one), and a ``parallel_homogeneous`` job with several
executors on one resource (``test_serve_mapping.py``); ``storage_mapping`` is refused as needing
Batsim's storage model (not tried with the binary). ``composed`` and
``parallel_homogeneous_total`` profiles run since session 24 (``test_serve_composed.py``).
Several workloads on a platform with latencies are no longer refused
(``test_serve_workloads_latency.py``), nor mappings the physics does not see.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from batsim_helpers import RawScheduler, at_first_submission
from real_batsim import real_batsim
from test_serve_workloads import write_json, write_platform

from hdrm.batsim.jobs import read_job_table
from hdrm.batsim.server import ServeOptions, serve
from hdrm.errors import ProtocolError, WorkloadError

PROFILES = {"d2": {"type": "delay", "delay": 2}, "d3": {"type": "delay", "delay": 3},
            "seq": {"type": "composed", "repeat": 2, "seq": ["d2", "d3"]},
            "pht": {"type": "parallel_homogeneous_total", "cpu": 2e9, "com": 0},
            "net": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 1e6},
            "seqnet": {"type": "composed", "seq": ["d2", "net"]}}


def _workload(path: Path, *profiles: str) -> Path:
    jobs = [{"id": str(i), "subtime": 0, "res": 2, "walltime": -1, "profile": name}
            for i, name in enumerate(profiles)]
    return write_json(path, {"nb_res": 6, "jobs": jobs, "profiles": PROFILES})


def test_a_sequence_with_a_network_part_is_read_and_refused_off_the_actor_model(tmp_path):
    """The actor model runs it (tests/batsim/test_serve_network.py); without SimGrid routes
    (an hdrm JSON platform) it is refused, naming the job, the type and the real batsim."""
    from hdrm.batsim.bandwidth import message_bandwidths

    table = read_job_table(_workload(tmp_path / "w.json", "d2", "seqnet"))
    with pytest.raises(WorkloadError, match=(
            r"w\.json: 1 job \('1'\) has a 'composed' profile that communicates \(com > 0, a "
            r"'parallel' profile or a sequence with one\), which needs SimGrid's network model; "
            r".*p\.json is not a SimGrid XML platform: run this workload with the real batsim")):
        message_bandwidths(tmp_path / "p.json", [], table)


# ---------------------------------------------------------------- against the real binary
BATSIM, WHY_NOT = real_batsim()


def _run(tmp_path: Path, workload: Path, decisions: list[dict], real: bool) -> str:
    """Run the binary or hdrm serve with ``decisions`` sent at the first submissions; returns
    "ok", or the error (the binary's exit status, hdrm serve's exception text)."""
    platform = write_platform(tmp_path / "platform.xml", 6)
    scheduler = RawScheduler(at_first_submission(decisions))
    scheduler.start()
    try:
        if real:
            done = subprocess.run([BATSIM, "-p", str(platform), "-w", str(workload), "-q",
                                   "-e", str(tmp_path / "real"), "-s",
                                   scheduler.endpoint.replace("localhost", "127.0.0.1")],
                                  capture_output=True, text=True, timeout=60)
            return "ok" if done.returncode == 0 else f"exit {done.returncode}"
        try:
            serve(platform, workload, ServeOptions(scheduler.endpoint, str(tmp_path / "o"), 5.0))
        except ProtocolError as exc:
            return str(exc)
        return "ok"
    finally:
        scheduler.stop()


def _execute(job: str, alloc: str) -> dict:
    return {"type": "EXECUTE_JOB", "data": {"job_id": job, "alloc": alloc}}


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize(("decisions", "ours"), [
    ([_execute("w0!0", "0-2")], "alloc '0-2' has 3 resources, the job requests 2"),
    ([_execute("w0!0", "0-1"), {"type": "KILL_JOB", "data": {"job_ids": ["w0!1"]}}],
     "job 'w0!1' has not started; reject it instead"),
    ([{"type": "CHANGE_JOB_STATE", "data": {"job_id": "w0!0", "job_state": "COMPLETED_KILLED"}}],
     "hdrm serve does not support CHANGE_JOB_STATE"),
    ([_execute("w0!0", "0-1"),
      {"type": "QUERY", "data": {"requests": {"estimate_waiting_time": {"job_id": "w0!1"}}}}],
     "unsupported request\\(s\\) 'estimate_waiting_time'"),
    ([_execute("w0!0", "0-1"), {"type": "REJECT_JOB", "data": {"job_id": "w0!0"}}],
     "job 'w0!0' cannot be rejected: it is running"),
    ([_execute("w0!0", "0-1"), _execute("w0!0", "2-3")],
     "job 'w0!0': the job was already started at .* s; a job runs at most once"),
    ([_execute("w0!0", "0-1"), _execute("w0!1", "1-2")], "resource 1 is busy with job 'w0!0'"),
], ids=["alloc-size", "kill-unstarted", "change-job-state", "query-waiting-time",
        "reject-running", "execute-twice", "busy-resource"])
def test_refusals_the_binary_shares(tmp_path, decisions, ours):
    workload = _workload(tmp_path / "w.json", "d2", "d3")
    assert _run(tmp_path, workload, decisions, real=True).startswith("exit ")  # it aborts
    message = _run(tmp_path, workload, decisions, real=False)
    assert re.search(ours, message), message


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("profile", ["seq", "pht"])
def test_profiles_the_binary_runs(tmp_path, profile):
    """composed and parallel_homogeneous_total, which serve refused before session 24, run
    under both; a parallel_homogeneous_total job on 3 resources although it asks for 2 (its
    alloc's size is free), the same out_jobs.csv text."""
    workload = _workload(tmp_path / "w.json", "d2", profile)
    alloc = "2-4" if profile == "pht" else "2-3"
    for real in (True, False):
        assert _run(tmp_path, workload, [_execute("w0!0", "0-1"), _execute("w0!1", alloc)],
                    real=real) == "ok"
    assert (tmp_path / "o_jobs.csv").read_text() == (tmp_path / "real_jobs.csv").read_text()
