"""EXECUTE_JOB with a ``mapping`` in ``hdrm serve``, as Batsim 4.2.1 runs it.

A mapping places the job's executors (0..res-1) on the allocated resources by their index in the
alloc; several executors may share a resource, so the alloc may be smaller than the request. A
``delay`` job runs the same whatever the mapping and holds exactly its alloc. A
``parallel_homogeneous`` job with one executor per allocated resource is the computation without
a mapping; several executors on one resource are refused (not modelled), with what to send.
Invalid mappings are refused as the binary aborts on them. Checked with the binary (``slow``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batsim_helpers import at_first_submission, raw_session
from real_batsim import real_batsim
from test_serve_workloads import write_json, write_platform

from hdrm.batsim import protocol as p
from hdrm.batsim.hosts import load_hosts
from hdrm.batsim.jobs import read_job_table
from hdrm.batsim.simulator import BatsimSimulation
from hdrm.errors import ProtocolError

PROFILES = {"d2": {"type": "delay", "delay": 2}, "d3": {"type": "delay", "delay": 3},
            "ph": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0}}


def _job(i: int, profile: str, res: int) -> dict:
    return {"id": str(i), "subtime": 0, "res": res, "walltime": -1, "profile": profile}


def _execute(job: int, alloc: str, mapping: dict | None) -> dict:
    data = {"job_id": f"w0!{job}", "alloc": alloc}
    if mapping is not None:
        data["mapping"] = mapping
    return {"type": "EXECUTE_JOB", "data": data}


CASES = {  # jobs, decisions at t=0
    "delay-shared": ([_job(0, "d2", 2), _job(1, "d3", 1)],
                     [_execute(0, "0", {"0": "0", "1": "0"}), _execute(1, "1", None)]),
    "delay-reversed": ([_job(0, "d2", 2)], [_execute(0, "2-3", {"0": 1, "1": 0})]),
    "ph-one-per-host": ([_job(0, "ph", 2)], [_execute(0, "1 4", {"0": "1", "1": "0"})]),
}


def _simulate(tmp_path: Path, jobs: list[dict], decisions: list[dict]):
    platform = write_platform(tmp_path / "platform.xml", 6)
    workload = write_json(tmp_path / "w.json", {"nb_res": 6, "jobs": jobs, "profiles": PROFILES})
    sim = BatsimSimulation(load_hosts(platform), read_job_table(workload))
    sent, message, first = [], sim.begin(), True
    while message is not None:
        sent.append(message)
        events = []
        if first and "JOB_SUBMITTED" in message.types:
            events, first = [p.Event(message.now, d["type"], d["data"]) for d in decisions], False
        sim.react(p.Message(message.now, events))
        message = sim.next_message()
    return sim, sent


def test_a_delay_job_holds_its_alloc_whatever_the_mapping(tmp_path):
    """Two executors on resource 0: the job (res 2) holds resource 0 only, job 1 runs on 1."""
    sim, sent = _simulate(tmp_path, *CASES["delay-shared"])
    ends = [(m.now, e.data["job_id"], e.data["alloc"]) for m in sent for e in m.events
            if e.type == "JOB_COMPLETED"]
    assert ends == [(2.0, "w0!0", "0"), (3.0, "w0!1", "1")]
    rows = {r.job_id: r for r in sim.results()}
    assert (rows["0"].requested_number_of_resources, rows["0"].allocated_resources) == (2, "0")
    assert rows["0"].execution_time == 2.0


def test_a_parallel_job_with_one_executor_per_resource_computes_as_without(tmp_path):
    sim, _ = _simulate(tmp_path, *CASES["ph-one-per-host"])
    [row] = sim.results()
    assert (row.allocated_resources, row.finish_time) == ("1 4", 1.0)  # 1e9 flops at 1 Gflop/s


@pytest.mark.parametrize(("alloc", "mapping", "profile", "message"), [
    ("0-1", {"0": "0"}, "d2", r"mapping has 1 executors, the job requests 2, which Batsim 4 "
                              r"refuses; map exactly 2"),
    ("0", {"0": "0", "1": "1"}, "d2", r"puts executor 1 on the alloc's resource #1, but the alloc "
                                      r"has 1 \(indexes 0\.\.0\), which Batsim 4 refuses"),
    ("0", {"0": "0", "2": "0"}, "d2", r"mapping has no resource for executor 1; map executors "
                                      r"0\.\.1"),
    ("0", {}, "d2", r"mapping \{\} must be a non-empty object"),
    ("0", {"0": "x", "1": "0"}, "d2", r"mapping entry '0': 'x' is not a pair of integers"),
    ("0", {"0": "0", "1": "0"}, "ph", r"does not run exactly one executor on each of the 1 "
                                      r"allocated resources.*map one per resource, or run the "
                                      r"real"),
    ("0-2", {"0": "0", "1": "1"}, "ph", r"one executor on each of the 3 allocated resources"),
])
def test_bad_or_unmodelled_mappings_are_refused(tmp_path, alloc, mapping, profile, message):
    with pytest.raises(ProtocolError, match=r"EXECUTE_JOB .*job 'w0!0': .*" + message):
        _simulate(tmp_path, [_job(0, profile, 2)], [_execute(0, alloc, mapping)])


def test_an_alloc_of_another_size_without_mapping_says_what_to_send(tmp_path):
    with pytest.raises(ProtocolError, match=r"alloc '0-2' has 3 resources, the job requests 2, "
                                            r"which Batsim 4 refuses; allocate 2, or map its 2 "
                                            r"executors onto the allocation with a 'mapping'"):
        _simulate(tmp_path, [_job(0, "d2", 2)], [_execute(0, "0-2", None)])


def test_storage_mapping_is_refused_with_what_to_do(tmp_path):
    decision = _execute(0, "0-1", None)
    decision["data"]["storage_mapping"] = {"pfs": 0}
    with pytest.raises(ProtocolError, match=r"'storage_mapping' is not supported by hdrm serve "
                                            r"\(it needs Batsim's storage and I/O models\); leave "
                                            r"it out, or run the real batsim"):
        _simulate(tmp_path, [_job(0, "d2", 2)], [decision])


# ---------------------------------------------------------------- against the real binary
BATSIM, WHY_NOT = real_batsim()


def _session(tmp_path: Path, name: str, real: bool) -> tuple[list[dict], str]:
    jobs, decisions = CASES[name]
    platform = write_platform(tmp_path / "platform.xml", 6)
    workload = write_json(tmp_path / "w.json", {"nb_res": 6, "jobs": jobs, "profiles": PROFILES})
    prefix = tmp_path / ("real" if real else "ours")
    scheduler = raw_session(at_first_submission(decisions), platform, workload, prefix,
                            binary=BATSIM if real else None)
    lines = Path(f"{prefix}_jobs.csv").read_text().splitlines()
    return [json.loads(t) for t in scheduler.received], "\n".join(lines)


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("name", sorted(CASES))
def test_mappings_as_the_real_batsim(name, tmp_path):
    """The same messages (from the first submission on) and the same out_jobs.csv text."""
    theirs, real_rows = _session(tmp_path, name, real=True)
    ours, our_rows = _session(tmp_path, name, real=False)
    assert ours[1:] == theirs[1:]
    assert our_rows == real_rows
