"""hdrm serve's actor model on ``parallel_homogeneous`` jobs, against Batsim 4.2.1 (slow).

Engineer B's seeded tie-heavy workloads (30 jobs at whole seconds 0-15 on 16 hosts of 10 GFLOP/s:
parallel jobs of 1-3 s, most with a walltime equal to their work, others, delay jobs, and four
requested calls) on a platform of one Full zone with a 10 GBps route from each host to the master
host: every message (events, order, split, times) and every out_jobs.csv row as the binary's.
Under the instant model (runs/s24l/exp.py old) 0 of 10 seeds had identical messages with or
without -E; under the actor model 10 of 10 (and the rows of 10/10, 9/10 with -E: energies)."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path
from typing import Callable

import pytest
from batsim_helpers import fcfs, raw_session
from real_batsim import real_batsim
from test_real_batsim_scenarios import tie_workload

from hdrm.batsim.actors import ActorSimulation
from hdrm.batsim.bandwidth import message_bandwidths
from hdrm.batsim.hosts import load_hosts
from hdrm.batsim.jobs import read_job_table
from hdrm.batsim.server import BatsimServer

BATSIM, WHY_NOT = real_batsim()


def routed_platform(path: Path, nb_hosts: int = 16, speed: str = "10Gf",
                    watts: Callable[[int], str] | None = None, master: str = "") -> Path:
    """``nb_hosts`` hosts of ``speed`` (state 0 first), each with ``wattage_per_state``
    ``watts(i)`` (default 100:200) and a 10 GBps route to the master host (whose own properties
    are ``master``)."""
    prop = '<prop id="wattage_per_state" value="{}"/>'
    hosts = "".join(f'<host id="h{i:02d}" speed="{speed}"'
                    + (' pstate="0"' if "," in speed else "")
                    + f'>{prop.format(watts(i) if watts else "100:200")}</host>'
                    for i in range(nb_hosts))
    links = "".join(f'<link id="l{i:02d}" bandwidth="10GBps" latency="0us"/>'
                    for i in range(nb_hosts))
    routes = "".join(f'<route src="master_host" dst="h{i:02d}"><link_ctn id="l{i:02d}"/></route>'
                     for i in range(nb_hosts))
    path.write_text("<?xml version='1.0'?>\n"
                    '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
                    '<platform version="4.1"><zone id="z" routing="Full">'
                    + (f'<host id="master_host" speed="1Gf">{master}</host>' if master
                       else '<host id="master_host" speed="1Gf"/>') +
                    f'{hosts}{links}{routes}</zone></platform>')
    return path


def caller(calls: list[int]):
    """FCFS on 16 hosts that asks for ``calls`` in its reply to the first submission."""
    inner, asked = fcfs(16), [False]

    def reply(doc: dict) -> str:
        out = json.loads(inner(doc))
        if not asked[0] and any(e["type"] == "JOB_SUBMITTED" for e in doc["events"]):
            asked[0] = True
            out["events"] += [{"timestamp": doc["now"], "type": "CALL_ME_LATER",
                               "data": {"timestamp": c}} for c in calls]
        return json.dumps(out)
    return reply


def summary(scheduler) -> list:
    """Each message the scheduler received after the first: its time and (type, job id)s."""
    return [(m["now"], [(e["type"], e["data"].get("job_id", "")) for e in m["events"]])
            for m in (json.loads(text) for text in scheduler.received[1:])]


def session(tmp_path: Path, seed: int, energy: bool, real: bool) -> tuple[list, list]:
    doc, calls = tie_workload(seed)
    platform = routed_platform(tmp_path / "p.xml")
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps(doc))
    prefix = tmp_path / ("real" if real else "serve")
    messages = summary(raw_session(caller(calls), platform, workload, prefix, energy,
                                   BATSIM if real else None))
    with open(f"{prefix}_jobs.csv") as f:
        rows = sorted(tuple(r.values()) for r in csv.DictReader(f))
    return messages, rows


def test_a_computing_workload_on_routed_hosts_runs_in_the_actor_model(tmp_path):
    doc, _ = tie_workload(0)
    platform = routed_platform(tmp_path / "p.xml")
    (tmp_path / "w.json").write_text(json.dumps(doc))
    table = read_job_table(tmp_path / "w.json")
    bandwidths = message_bandwidths(platform, load_hosts(platform), table)
    assert bandwidths is not None and bandwidths.host_bps == (1e10,) * 16
    assert {table.profile_of(j)["type"] for j in table.jobs} == {"delay", "parallel_homogeneous"}
    assert type(BatsimServer(platform, tmp_path / "w.json").simulation) is ActorSimulation


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("energy", [False, True])
@pytest.mark.parametrize("seed", [0, 3, 8])
def test_seeded_ties_as_the_real_batsim(seed, energy, tmp_path):
    real_messages, real_rows = session(tmp_path, seed, energy, real=True)
    messages, rows = session(tmp_path, seed, energy, real=False)
    assert messages == real_messages
    if not energy:
        assert rows == real_rows
    else:  # energies to 1e-9 relative
        for a, b in zip(rows, real_rows):
            assert a[:15] == b[:15]
            assert float(a[15]) == pytest.approx(float(b[15]), rel=1e-9)


def pstate_platform(path: Path, nb_hosts: int = 6) -> Path:
    """Hosts of two computing states (1 and 0.5 GFLOP/s), a 10 GBps route each to the master."""
    return routed_platform(path, nb_hosts, "1Gf, 0.5Gf",
                           lambda i: f"{95 + i}:{200 + 7 * i}, 90:150",
                           '<prop id="wattage_per_state" value="10:10"/>')


def mixed_workload(path: Path, seed: int, nb_jobs: int = 20) -> Path:
    """Delay and parallel_homogeneous jobs of 2-6 s at 1 GFLOP/s on 1-3 of 6 hosts, submitted at
    even seconds 2-38; 40 % of the parallel jobs (15 % of the delay jobs) tie their walltime."""
    rng = random.Random(seed)
    jobs, profiles = [], {}
    for i in range(nb_jobs):
        k = rng.choice([2, 3, 4, 6])
        if rng.random() < 0.6:
            profiles[f"p{i}"] = {"type": "parallel_homogeneous", "cpu": k * 1e9, "com": 0}
            wall = k if rng.random() < 0.4 else rng.choice([k + 1, 100])
        else:
            profiles[f"p{i}"] = {"type": "delay", "delay": k}
            wall = k if rng.random() < 0.15 else 100
        jobs.append({"id": str(i), "subtime": rng.choice(range(2, 40, 2)),
                     "res": rng.choice([1, 1, 2, 3]), "walltime": wall, "profile": f"p{i}"})
    jobs.sort(key=lambda j: j["subtime"])
    path.write_text(json.dumps({"nb_res": 6, "jobs": jobs, "profiles": profiles}))
    return path


def killing_switching(nb_hosts: int = 6):
    """FCFS; calls at 7, 11, 15, 23 s; every 3rd reply kills the oldest running job, every 4th
    puts hosts 0-1 in the other computing state (slowing or speeding their parallel jobs)."""
    base, running, count = fcfs(nb_hosts), [], [0]

    def reply(doc: dict) -> str:
        out = json.loads(base(doc))
        count[0] += 1
        for e in doc["events"]:
            if e["type"] == "JOB_COMPLETED" and e["data"]["job_id"] in running:
                running.remove(e["data"]["job_id"])
        running.extend(e["data"]["job_id"] for e in out["events"] if e["type"] == "EXECUTE_JOB")
        if any(e["type"] == "SIMULATION_BEGINS" for e in doc["events"]):
            out["events"] += [{"timestamp": doc["now"], "type": "CALL_ME_LATER",
                               "data": {"timestamp": x}} for x in (7.0, 11.0, 15.0, 23.0)]
        if count[0] % 3 == 0 and running:
            out["events"].append({"timestamp": doc["now"], "type": "KILL_JOB",
                                  "data": {"job_ids": [running.pop(0)]}})
        if count[0] % 4 == 0:
            out["events"].append({"timestamp": doc["now"], "type": "SET_RESOURCE_STATE",
                                  "data": {"resources": "0-1", "state": str(count[0] // 4 % 2)}})
        return json.dumps(out)
    return reply


def run_session(platform: Path, workload: Path, prefix: Path, real: bool) -> tuple[list, list]:
    messages = summary(raw_session(killing_switching(), platform, workload, prefix, True,
                                   BATSIM if real else None))
    return messages, sorted(Path(f"{prefix}_jobs.csv").read_text().splitlines())


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("seed", [0, 5])
def test_kills_and_pstate_changes_during_parallel_jobs_as_the_real_batsim(seed, tmp_path):
    """Measured (runs/s24l/exp_kill.py 3 4 E, seeds 0-7): identical messages and out_jobs.csv
    on 8 of 8 seeds (instant model: 0 of 8; rows 1 of 8)."""
    platform = pstate_platform(tmp_path / "p.xml")
    workload = mixed_workload(tmp_path / "w.json", seed)
    assert run_session(platform, workload, tmp_path / "serve", real=False) == run_session(
        platform, workload, tmp_path / "real", real=True)
