"""A job never starts before its submission in ``hdrm serve``'s latency model
(:class:`hdrm.batsim.delayed.DelayedSimulation`).

A workload's submitter sleeps from the end of its last send for the gap between its next job's
time and its last wake-up. Summed as ``now + (next - last)`` that wake-up can round one ulp below
the job's time (3.664 + (7.79 - 3.664) is 7.789999999999999): with no latency on the master host
the batch then arrived, and the job started, a hair before its submission time, and
``out_jobs.csv`` printed its waiting time as ``-0.000000`` where Batsim 4.2.1 prints
``0.000000`` (its sends' 1-byte term keeps its clock just after the job's time). The fast tests
check the model alone; the ``slow`` ones the same workloads against the binary.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from real_batsim import real_batsim
from test_serve_composed import NB, scheduler, seeded_workload
from test_serve_energy_order import messages
from test_serve_workloads import write_platform

from hdrm.batsim import protocol as p
from hdrm.batsim.delayed import DelayedSimulation
from hdrm.batsim.hosts import load_hosts
from hdrm.batsim.jobs import read_job_table
from hdrm.batsim.latency import route_latencies
from hdrm.results.csvio import read_jobs_csv

BATSIM, WHY_NOT = real_batsim()
#: job times whose gap, added to the first, rounds below the second
TRAP_S = (3.664, 7.79)


def _workload(path: Path, times: list[float], delay_s: float = 1.5) -> Path:
    jobs = [{"id": str(i), "subtime": t, "res": 1, "profile": "d"} for i, t in enumerate(times)]
    path.write_text(json.dumps({"nb_res": NB, "jobs": jobs,
                                "profiles": {"d": {"type": "delay", "delay": delay_s}}}))
    return path


def _fcfs_run(platform: Path, workload: Path) -> DelayedSimulation:
    """Run the model with a FCFS decision process on the lowest free hosts."""
    hosts = load_hosts(platform)
    sim = DelayedSimulation(hosts, read_job_table(workload), None,
                            route_latencies(platform, hosts))
    free, queue = set(range(NB)), []
    message = sim.begin()
    while message is not None:
        for e in message.events:
            if e.type == "JOB_SUBMITTED":
                queue.append(e.data["job_id"])
            elif e.type == "JOB_COMPLETED":
                free.update(int(h) for h in e.data["alloc"].split())
        decisions = []
        while queue and free:
            host = min(free)
            free.discard(host)
            decisions.append(p.Event(message.now, "EXECUTE_JOB",
                                     {"job_id": queue.pop(0), "alloc": str(host)}))
        sim.react(p.Message(message.now, decisions))
        message = sim.next_message()
    return sim


def test_the_trap_is_real():
    """The premise: this sum rounds below the job's time, the other order does not."""
    first, second = TRAP_S
    assert first + (second - first) < second
    assert second + (first - first) == second


def test_a_job_due_after_a_gap_starts_at_its_submission(tmp_path):
    """100 us host links, none on the master host: batches arrive at the jobs' times exactly,
    and a job started at once starts at its submission time (was 7.789999999999999)."""
    platform = write_platform(tmp_path / "p.xml", NB, latency="100us")
    assert route_latencies(platform, load_hosts(platform)).master_s == 0.0
    sim = _fcfs_run(platform, _workload(tmp_path / "w.json", list(TRAP_S)))
    rows = {r.job_id: r for r in sim.results()}
    assert [rows[j].starting_time for j in "01"] == list(TRAP_S)
    assert [rows[j].waiting_time for j in "01"] == [0.0, 0.0]
    assert [rows[j].finish_time for j in "01"] == [3.664 + 1.5, 7.79 + 1.5]


@pytest.mark.parametrize("seed", range(1, 31))
def test_no_job_starts_before_its_submission(seed, tmp_path):
    """Seeded workloads on host links of 100 us: every start, exactly. Each job's time (3
    decimals) is over twice the previous one, so ``next - last`` is not exact (Sterbenz) and
    ``last + (next - last)`` rounds below ``next`` on 8 of these 30 seeds."""
    rng = random.Random(seed)
    times = [round(rng.uniform(0.5, 5), 3)]
    for _ in range(7):
        times.append(round(times[-1] * rng.uniform(2.1, 3), 3))
    platform = write_platform(tmp_path / "p.xml", NB, latency="100us")
    sim = _fcfs_run(platform, _workload(tmp_path / "w.json", times))
    rows = sim.results()
    assert len(rows) == len(times)
    for row in rows:
        assert row.starting_time >= row.submission_time, (row.job_id, row.starting_time)
        assert row.waiting_time >= 0.0


def test_serve_writes_no_negative_waiting_time(tmp_path):
    """engineer I's case: test_serve_composed's seed 4 (kills, sequences) with 100 us links;
    job 9 (a plain delay, due at 7.79 after a batch at 3.664) waits 0.000000."""
    platform = write_platform(tmp_path / "p.xml", NB, latency="100us")
    workload = seeded_workload(tmp_path / "w.json", 4)
    messages(platform, [workload], tmp_path / "ours", False, scheduler(True))
    lines = (tmp_path / "ours_jobs.csv").read_text().splitlines()
    header = lines[0].split(",")
    waiting = header.index("waiting_time")
    row9 = next(line.split(",") for line in lines[1:] if line.startswith("9,"))
    assert row9[header.index("starting_time")] == "7.790000"
    assert row9[waiting] == "0.000000"
    assert not [line for line in lines[1:] if line.split(",")[waiting].startswith("-")]


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("seed", [4, 7])
def test_same_out_jobs_as_the_binary(seed, tmp_path):
    """The binary and serve on test_serve_composed's seeded workloads (kills, sequences) with
    100 us links: the same messages and a byte-identical out_jobs.csv (seed 4 printed
    ``-0.000000``)."""
    platform = write_platform(tmp_path / "p.xml", NB, latency="100us")
    workload = seeded_workload(tmp_path / "w.json", seed)
    theirs = messages(platform, [workload], tmp_path / "real", False, scheduler(True), real=True)
    ours = messages(platform, [workload], tmp_path / "ours", False, scheduler(True))
    assert len(ours) == len(theirs)
    for mine, ref in zip(ours[1:], theirs[1:]):
        assert mine["now"] == pytest.approx(ref["now"], abs=1e-6)
        assert [(e["type"], e["data"]) for e in mine["events"]] == \
            [(e["type"], e["data"]) for e in ref["events"]]
    assert (tmp_path / "ours_jobs.csv").read_text() == (tmp_path / "real_jobs.csv").read_text()


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
def test_trap_workload_as_the_binary(tmp_path):
    """The two-job trap, then jobs each over twice the previous one's time, against the
    binary: byte-identical out_jobs.csv, no negative waiting time."""
    rng = random.Random(11)
    times = list(TRAP_S)
    for _ in range(8):
        times.append(round(times[-1] * rng.uniform(2.1, 3), 3))
    platform = write_platform(tmp_path / "p.xml", NB, latency="100us")
    workload = _workload(tmp_path / "w.json", times)
    messages(platform, [workload], tmp_path / "real", False, scheduler(), real=True)
    messages(platform, [workload], tmp_path / "ours", False, scheduler())
    ours = (tmp_path / "ours_jobs.csv").read_text()
    assert ours == (tmp_path / "real_jobs.csv").read_text()
    assert all(r.waiting_time >= 0 for r in read_jobs_csv(tmp_path / "ours_jobs.csv"))
    assert "-0.000000" not in ours
