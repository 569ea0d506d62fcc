"""A parallel task timed out at its job's walltime runs on (hdrm serve -E without an lmm system).

SimGrid 3.32's ``Exec::wait_for`` times out alone: Batsim 4.2.1's executor reports the job
ended at its walltime, but the task's hosts stay as loaded as before until the executor's actor
ends (after its JOB_COMPLETED message is received, which cancels the task) or the work is done.
Batsim's energy readings see that load; the job's own energy ends at the walltime. Also
checked here: consumed_joules starts at the energy read by the first submitter once its greeting
is sent, not at the first submission time.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from batsim_helpers import raw_session
from test_serve_energy_order import BATSIM, WHY_NOT
from test_serve_network import mixed_workload
from test_serve_network_energy import sleeper, sleepy_hosts, sleepy_platform

from hdrm.batsim.hosts import HostBoard
from hdrm.platform.simgrid import HostSpec

SLOW_A = HostSpec("a", (1.0, 0.5), 0, ((100.0, 200.0), (80.0, 140.0)))
FAST_B = HostSpec("b", (2.0, 1.0), 0, ((100.0, 200.0), (90.0, 150.0)))


def test_a_lingering_task_keeps_its_hosts_load_after_the_job_ends():
    """A job of 3 GFLOP per host on a (1 Gflop/s) and b (2 Gflop/s), killed at 1 s, its task
    run on until 3 s. By hand: a fully loaded (200 W), b at half load (100 + 0.5 x 100 = 150 W)
    from 0 to 2 s; at 2 s a goes to P-state 1 (0.5 Gflop/s, 140 W), b's load is 0.25 (125 W)
    until 3 s; then both idle (80 + 100 W) until 4 s: 350 + 350 + 265 + 180 = 1145 J; the
    job's own energy is its first second, 350 J."""
    board = HostBoard([SLOW_A, FAST_B])
    board.start(0, [0, 1], ops_gflop=3.0)
    board.advance(1.0)
    end = board.kill(0)
    assert end.energy_j == pytest.approx(350.0)
    board.linger(0, end.cores)
    board.advance(2.0)
    board.request([0], 1, "test")
    board.advance(3.0)
    board.stop_lingering(0)
    board.stop_lingering(0)  # nothing left: no change
    board.advance(4.0)
    assert board.energy_j() == pytest.approx(1145.0)
    assert board.machine.job_on[0] == board.machine.job_on[1] == -1


def test_without_lingering_the_hosts_idle_at_the_kill():
    """The same job killed at 1 s, nothing run on: 350 J, then 200 W idle for 3 s."""
    board = HostBoard([SLOW_A, FAST_B])
    board.start(0, [0, 1], ops_gflop=3.0)
    board.advance(1.0)
    board.kill(0)
    board.advance(4.0)
    assert board.energy_j() == pytest.approx(950.0)


def timed_out_workload(path: Path) -> Path:
    """Job 1 needs 2.06 s on Bourassa (48.5 Mflop/s) and Fafard (76.3 Mflop/s, loaded 0.64),
    its walltime is 1.5 s; job 2 (a delay) comes later."""
    path.write_text(json.dumps({"nb_res": 4, "jobs": [
        {"id": "1", "subtime": 0, "res": 2, "profile": "p", "walltime": 1.5},
        {"id": "2", "subtime": 2, "res": 1, "profile": "d", "walltime": -1}], "profiles": {
        "p": {"type": "parallel_homogeneous", "cpu": 1e8, "com": 0},
        "d": {"type": "delay", "delay": 1}}}))
    return path


def querying_fcfs(doc: dict) -> str:
    """FCFS on the first free hosts; a QUERY of the energy after each message with events."""
    events = []
    for event in doc["events"]:
        if event["type"] == "JOB_SUBMITTED":
            res = event["data"]["job"]["res"]
            events.append({"timestamp": doc["now"], "type": "EXECUTE_JOB",
                           "data": {"job_id": event["data"]["job_id"],
                                    "alloc": " ".join(map(str, range(res)))}})
    if doc["events"] and doc["events"][0]["type"] not in ("SIMULATION_ENDS", "ANSWER"):
        events.append({"timestamp": doc["now"], "type": "QUERY",
                       "data": {"requests": {"consumed_energy": {}}}})
    return json.dumps({"now": doc["now"], "events": events})


def session(reply, platform: Path, workload: Path, prefix: Path, real: bool):
    scheduler = raw_session(reply, platform, [workload], prefix, True, BATSIM if real else None)
    with open(f"{prefix}_jobs.csv", newline="") as handle:
        table = [row[:16] for row in csv.reader(handle)]
    with open(f"{prefix}_schedule.csv", newline="") as handle:
        joules = dict(zip(*csv.reader(handle)))["consumed_joules"]
    return [json.loads(text) for text in scheduler.received], table, joules


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
def test_a_timed_out_task_against_the_binary(tmp_path):
    """The QUERY answered after job 1's JOB_COMPLETED (1.502 s) counts Bourassa at 200 W and
    Fafard at 110 + 0.636 x 90 W from 1.5 s until the executor ends; hdrm serve counted them
    idle from 1.5 s (0.35 J less), and consumed_joules from time 0 (0.006 J more)."""
    platform = sleepy_hosts(tmp_path / "p.xml")
    workload = timed_out_workload(tmp_path / "w.json")
    ours = session(querying_fcfs, platform, workload, tmp_path / "ours", False)
    real = session(querying_fcfs, platform, workload, tmp_path / "real", True)
    assert ours == real
    header, first = ours[1][0], ours[1][1]
    assert first[header.index("final_state")] == "COMPLETED_WALLTIME_REACHED"
    answers = [e["data"]["consumed_energy"] for m in ours[0] for e in m["events"]
               if e["type"] == "ANSWER"]
    assert len(answers) >= 3


def no_communication(path: Path, seed: int, nb: int) -> Path:
    """mixed_workload's jobs with com 0 (the actor model without an lmm system)."""
    mixed_workload(path, seed, nb)
    doc = json.loads(path.read_text())
    for profile in doc["profiles"].values():
        if profile.get("com"):
            profile["com"], profile["cpu"] = 0, profile["cpu"] or 1e8
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("kind", ["hosts", "SHARED"])
def test_sleep_states_without_communication_against_the_binary(tmp_path, kind):
    """Sleep states, wake-ups into P-state 1, timed-out tasks, queries, com 0 (checked,
    runs/s27Y/expS2.py: 3 platforms x seeds 1-3, 9 of 9; 0 of 6 before)."""
    platform, nb = sleepy_platform(tmp_path, kind)
    workload = no_communication(tmp_path / "w.json", 1, nb)
    ours = session(sleeper(nb, 1, "1"), platform, workload, tmp_path / "ours", False)
    assert ours == session(sleeper(nb, 1, "1"), platform, workload, tmp_path / "real", True)
