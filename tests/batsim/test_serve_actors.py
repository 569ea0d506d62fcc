"""``hdrm serve`` with Batsim's actors: kills, power and sleep states as the binary sends them.

:class:`~hdrm.batsim.actors.ActorSimulation` runs Batsim 4.2.1's killer and switcher actors too. A
switch to or from a sleep state computes one flop at the speed of a virtual state, so it ends on
time, after the sleeps due at its instant (which SimGrid ends up to a nanosecond early): its
RESOURCE_STATE_CHANGED comes last, or alone in a message once the others have gone. The platform:
6 hosts of 1 GFLOPS whose state 1 is a sleep state entered through state 2 (0.5 flop/s, 2 s) and
left through state 3 (0.05 flop/s, 20 s), links of 10 GBps without latency; the workloads are the
seeded ones of test_serve_workloads (20 delay jobs, at most 3 hosts each), a raw FCFS on hosts
0-3 with requested calls at 7, 11, 15 and 23 s.
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest
from batsim_helpers import fcfs
from test_serve_energy_order import BATSIM, WHY_NOT, fcfs_with_calls_at_begin, messages, summary
from test_serve_energy_order import write_platform as write_energy_platform
from test_serve_workloads import CALLS_S, seeded_workload

from hdrm.batsim.maestro import Maestro

NB_HOSTS = 6
SLEEPY_HOST = ('  <host id="h{i:02d}" speed="1Gf, 1e-9Mf, 0.5f, 0.05f" pstate="0">'
               '<prop id="wattage_per_state" value="30:100, 9.75:9.75, 200:200, 425:425"/>'
               '<prop id="wattage_off" value="42"/><prop id="sleep_pstates" value="1:2:3"/>'
               '</host>')


def write_platform(path: Path) -> Path:
    lines = ["<?xml version='1.0'?>",
             '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
             '<platform version="4.1">', '<zone id="AS0" routing="Full">',
             '  <host id="master_host" speed="1Gf">'
             '<prop id="wattage_per_state" value="10:10"/></host>']
    lines += [SLEEPY_HOST.format(i=i) for i in range(NB_HOSTS)]
    lines += [f'  <link id="l{i:02d}" bandwidth="10GBps" latency="0us"/>' for i in range(NB_HOSTS)]
    lines += [f'  <route src="master_host" dst="h{i:02d}"><link_ctn id="l{i:02d}"/></route>'
              for i in range(NB_HOSTS)]
    path.write_text("\n".join([*lines, "</zone>", "</platform>", ""]))
    return path


def write_workload(path: Path, seed: int) -> Path:
    path = seeded_workload(path, seed)
    doc = json.loads(path.read_text())
    for job in doc["jobs"]:
        job["res"] = min(job["res"], 3)
    path.write_text(json.dumps(doc))
    return path


def scheduler(sleep_at: int = 0, wake_at: int = 0, kill_every: int = 0):
    """FCFS on hosts 0-3 with the calls; hosts 4-5 to sleep state 1 in its ``sleep_at``-th reply
    and back to state 0 in its ``wake_at``-th; every ``kill_every``-th reply kills the job it
    started longest ago (if it still runs)."""
    base, count, running = fcfs(4), [0], []

    def reply(doc: dict) -> str:
        out = json.loads(base(doc))
        count[0] += 1
        ended = {e["data"]["job_id"] for e in doc["events"] if e["type"] == "JOB_COMPLETED"}
        running[:] = [j for j in running if j not in ended]
        running.extend(e["data"]["job_id"] for e in out["events"] if e["type"] == "EXECUTE_JOB")
        events, now = out["events"], doc["now"]
        if any(e["type"] == "SIMULATION_BEGINS" for e in doc["events"]):
            events += [{"timestamp": now, "type": "CALL_ME_LATER", "data": {"timestamp": t}}
                       for t in CALLS_S]
        for n, state in ((sleep_at, "1"), (wake_at, "0")):
            if count[0] == n:
                events.append({"timestamp": now, "type": "SET_RESOURCE_STATE",
                               "data": {"resources": "4-5", "state": state}})
        if kill_every and count[0] % kill_every == 0 and running:
            events.append({"timestamp": now, "type": "KILL_JOB",
                           "data": {"job_ids": [running.pop(0)]}})
        return json.dumps(out)

    return reply


def run(tmp_path: Path, seed: int, real: bool, **decisions) -> tuple[list, list]:
    """(messages, out_jobs.csv rows) of one session with -E."""
    platform = write_platform(tmp_path / "p.xml")
    workload = write_workload(tmp_path / "w.json", seed)
    prefix = tmp_path / ("real" if real else "ours")
    got = summary(messages(platform, [workload], prefix, True, scheduler(**decisions), real))
    with open(f"{prefix}_jobs.csv", newline="") as handle:
        rows = [row[:16] for row in csv.reader(handle)]  # Batsim's columns
    return got, rows


def test_a_wake_up_is_acknowledged_on_time_after_the_sleeps_of_its_instant(tmp_path):
    """Recorded from the binary (seed 1, asleep from the 2nd reply, woken in the 6th, at 8 s):
    the 20 s wake-up ends at 28 s, with job 7's submission and job 2's end, and is acknowledged
    in a message of its own (the instant model sent it in theirs)."""
    got, _ = run(tmp_path, 1, False, sleep_at=2, wake_at=6)
    assert [events for now, events in got if now == 28.0] == [
        [("JOB_SUBMITTED", "w0!7"), ("JOB_COMPLETED", "w0!2")], [("RESOURCE_STATE_CHANGED", "")]]


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("seed, decisions", [
    (1, {"sleep_at": 2, "wake_at": 6}), (4, {"sleep_at": 1, "wake_at": 4}),
    (5, {"sleep_at": 4, "wake_at": 9}), (2, {"kill_every": 2}), (3, {"kill_every": 3}),
])
def test_against_the_binary(tmp_path, seed, decisions):
    """Same messages and out_jobs.csv rows (energies included) as Batsim 4.2.1 -E."""
    assert run(tmp_path, seed, False, **decisions) == run(tmp_path, seed, True, **decisions)


def long_workload(path: Path, nb_jobs: int, seed: int) -> Path:
    """``nb_jobs`` delay jobs (2-8 s, 1-3 of 6 hosts) submitted at even seconds over
    ``nb_jobs / 2`` s: a queue that never empties, job starting on job's end."""
    rng = random.Random(seed)
    jobs, profiles = [], {}
    for i in range(nb_jobs):
        delay = rng.choice([2, 3, 4, 6, 8])
        jobs.append({"id": str(i), "subtime": rng.randrange(0, nb_jobs // 2, 2),
                     "res": rng.choice([1, 1, 2, 3]), "walltime": 100, "profile": f"d{delay}"})
        profiles[f"d{delay}"] = {"type": "delay", "delay": delay}
    path.write_text(json.dumps({"nb_res": NB_HOSTS, "jobs": jobs, "profiles": profiles}))
    return path


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("energy", [False, True], ids=["no_E", "E"])
def test_a_long_session_against_the_binary(tmp_path, energy):
    """1,000 jobs on job chains: the sub-nanosecond offsets pile up (the instant model's
    messages differed from the 9th on, 872 messages for the binary's 976)."""
    platform = write_energy_platform(tmp_path / "p.xml", NB_HOSTS)
    workload = long_workload(tmp_path / "w.json", 1000, 1000)
    got = [summary(messages(platform, [workload], tmp_path / str(real), energy,
                            fcfs_with_calls_at_begin(NB_HOSTS), real)) for real in (True, False)]
    assert len(got[0]) == 976
    assert got[1] == got[0]


@pytest.mark.parametrize("seeds", [(13,), (4, 5)])
def test_answering_a_lone_actors_energy_queries_at_once_changes_nothing(tmp_path, seeds,
                                                                         monkeypatch):
    """The shortcut of :meth:`Maestro.alone` (several simcalls of an actor alone in its round
    answered in one) gives the messages of one round per simcall."""
    platform = write_energy_platform(tmp_path / "p.xml", NB_HOSTS)
    workloads = [seeded_workload(tmp_path / f"w{i}.json", s) for i, s in enumerate(seeds)]

    def session(prefix: str) -> list:
        return summary(messages(platform, workloads, tmp_path / prefix, True,
                                fcfs_with_calls_at_begin(NB_HOSTS)))

    quick = session("quick")
    monkeypatch.setattr(Maestro, "alone", lambda self: False)
    assert session("slow") == quick
