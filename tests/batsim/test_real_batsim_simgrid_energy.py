"""The built-in engine's energy on SimGrid XML platforms against the REAL Batsim 4.2.1 with -E.

``hdrm replay`` (built-in, FCFS) runs a workload of delay and parallel_homogeneous jobs (idle
gaps, walltime kills) on a SimGrid file; the real binary replays exactly that schedule (each job
started at its built-in start on its built-in hosts) with ``-E``. The jobs' times and states, each
job's consumed_energy (out_jobs.csv) and the total consumed_joules (out_schedule.csv, from the
first submission to the last job end) are equal (relative 1e-9: the binary prints 6 decimals).

Skipped, with the reason, when no real Batsim can run (``real_batsim.py``); ``-m slow`` runs them.
"""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest
from batsim_helpers import RawScheduler
from builders import SIMGRID_HEAD as HEAD
from builders import simgrid_zone as zone
from builders import wattage as watts
from real_batsim import real_batsim

from hdrm.platform.simgrid import platform_from_simgrid
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.sim.inputs import read_workload_any

BATSIM, WHY_NOT = real_batsim()
pytestmark = [pytest.mark.skipif(BATSIM is None, reason=WHY_NOT), pytest.mark.slow]



PLATFORMS = {
    "power states": zone(
        f'<host id="h0" speed="10Gf, 5Gf, 1Gf">{watts("100:200, 80:150, 50:60")}</host>'
        f'<host id="h1" speed="10Gf, 5Gf, 1Gf" pstate="1">{watts("100:200, 80:150, 50:60")}'
        '</host>'),
    "four cores": zone(
        f'<host id="h0" speed="10Gf" core="4">{watts("100:200")}</host>'
        f'<host id="h1" speed="10Gf" core="4">{watts("100:120:200")}</host>'
        f'<host id="h2" speed="5Gf">{watts("40:60:90")}</host>'),
    "mixed speeds": zone(
        f'<host id="a" speed="20Gf">{watts("95:110:200")}</host>'
        f'<host id="b" speed="5Gf">{watts("30:50")}</host>'
        f'<host id="c" speed="20Gf, 2Gf">{watts("90:200, 20:40")}</host>'),
    "cluster": (
        f'{HEAD}<platform version="4.1"><zone id="w" routing="Full">\n'
        '<cluster id="c" prefix="n" suffix="" radical="0-3" speed="2Gf, 1Gf" bw="1GBps" '
        f'lat="0">{watts("95:200, 50:90")}</cluster>\n'
        '<cluster id="m" prefix="master_host" suffix="" radical="0-0" speed="1Gf" bw="1GBps" '
        'lat="0"><prop id="role" value="master"/></cluster>\n'
        '<link id="bb" bandwidth="1GBps" latency="0"/>\n'
        '<zoneRoute src="c" dst="m" gw_src="nc_router" gw_dst="master_hostm_router">'
        '<link_ctn id="bb"/></zoneRoute>\n</zone></platform>\n'),
}
PROFILES = {"d10": {"type": "delay", "delay": 10}, "d5": {"type": "delay", "delay": 5},
            "p20": {"type": "parallel_homogeneous", "cpu": 2e10, "com": 0},
            "p5": {"type": "parallel_homogeneous", "cpu": 5e9, "com": 0}}


def job(i: int, sub: float, res: int, profile: str, walltime: float = -1) -> dict:
    return {"id": str(i), "subtime": sub, "res": res, "walltime": walltime, "profile": profile}


#: first submission at 5 s (Batsim's consumed_joules begins there, not at 0), idle gaps,
#: delay and computing jobs on one and several hosts, two walltime kills, and a job both reject
#: after the last end (consumed_joules ends at the last job end)
JOBS = [job(0, 5, 1, "p20"), job(1, 5, 1, "d10"), job(2, 7, 2, "p5", 100),
        job(3, 45, 2, "d5", 2), job(4, 65, 1, "p5"), job(5, 66, 1, "p20", 0.5),
        job(6, 90, 2, "d5"), job(7, 200, 5, "d5")]  # the last: more hosts than any platform


def builtin(platform_path: Path, workload_path: Path, backfilling: str = "none"):
    platform, _ = platform_from_simgrid(platform_path)
    workload = read_workload_any(workload_path, reference_gflops=platform.reference_gflops)
    return Simulation(platform, workload, SimulationConfig(backfilling=backfilling)).run("fcfs")


def binary(folder: Path, plan: list[tuple[float, str, str]], platform: Path | None = None,
           workload: Path | None = None):
    """Run the binary with -E, starting each job at its planned time on its planned hosts (once
    they are free: the binary's times may run up to 1e-4 s later than the plan's)."""
    submitted: set[str] = set()
    busy: set[int] = set()
    hosts_of: dict[str, set[int]] = {}
    pending = [(t, job_id, alloc, {int(h) for h in alloc.split()}) for t, job_id, alloc in plan]

    def reply(doc: dict) -> str:
        now, out = doc["now"], []
        for event in doc["events"]:
            if event["type"] == "JOB_SUBMITTED":
                submitted.add(event["data"]["job_id"])
            elif event["type"] == "JOB_COMPLETED":
                busy.difference_update(hosts_of.pop(event["data"]["job_id"], ()))
        for item in list(pending):
            t, job_id, alloc, hosts = item
            if t > now + 1e-4:
                break
            if job_id in submitted and busy.isdisjoint(hosts):
                pending.remove(item)
                busy.update(hosts)
                hosts_of[job_id] = hosts
                out.append({"timestamp": now, "type": "EXECUTE_JOB",
                            "data": {"job_id": job_id, "alloc": alloc}})
        return json.dumps({"now": now, "events": out})

    scheduler = RawScheduler(reply)
    scheduler.start()
    try:
        done = subprocess.run([BATSIM, "-p", str(platform or folder / "p.xml"), "-w",
                               str(workload or folder / "w.json"), "-e", str(folder / "out"),
                               "-s", scheduler.endpoint, "-q", "-E"],
                              capture_output=True, text=True, timeout=60)
    finally:
        scheduler.stop()
    assert done.returncode == 0, done.stderr[-2000:]
    with open(folder / "out_jobs.csv", newline="") as file:
        jobs = {row["job_id"]: row for row in csv.DictReader(file)}
    with open(folder / "out_schedule.csv", newline="") as file:
        schedule = next(csv.DictReader(file))
    return jobs, float(schedule["consumed_joules"])


@pytest.mark.parametrize("case", sorted(PLATFORMS))
def test_builtin_energy_is_the_binary_energy(case, tmp_path):
    (tmp_path / "p.xml").write_text(PLATFORMS[case])
    (tmp_path / "w.json").write_text(json.dumps({"nb_res": 2, "jobs": JOBS,
                                                 "profiles": PROFILES}))
    result = builtin(tmp_path / "p.xml", tmp_path / "w.json")
    ran = [o for o in result.outcomes if o.cores]
    assert len(ran) == len(JOBS) - 1
    plan = sorted((o.start_s, f"w0!{o.job.id}", " ".join(map(str, o.cores)))
                  for o in ran)
    jobs, total_j = binary(tmp_path, plan)
    for o in ran:
        row = jobs[str(o.job.id)]
        assert float(row["starting_time"]) == pytest.approx(o.start_s, abs=1e-6)
        assert float(row["finish_time"]) == pytest.approx(o.finish_s, abs=1e-6)
        assert row["final_state"] == o.state
        assert o.energy_j == pytest.approx(float(row["consumed_energy"]), rel=1e-9, abs=1e-6)
    assert result.energy_j == pytest.approx(total_j, rel=1e-9)


GOLDEN = Path(__file__).resolve().parents[3] / "shared" / "batsim" / "golden" / "sdsc1024_1k"


@pytest.mark.skipif(not GOLDEN.is_dir(), reason="../shared goldens absent")
def test_builtin_energy_is_the_binary_energy_on_1024_hosts(tmp_path):
    """1,000 SDSC jobs (delay profiles, 60 walltime kills) on 1,024 hosts of 95:190 W, FCFS +
    EASY: each job's energy and the total as the binary's (about 1.5 s)."""
    result = builtin(GOLDEN / "platform.xml", GOLDEN / "workload.json", "easy")
    plan = sorted((o.start_s, f"w0!{o.job.id}", " ".join(map(str, o.cores)))
                  for o in result.outcomes)
    jobs, total_j = binary(tmp_path, plan, GOLDEN / "platform.xml", GOLDEN / "workload.json")
    assert len(jobs) == len(result.outcomes) == 1000
    for o in result.outcomes:
        row = jobs[str(o.job.id)]
        assert float(row["starting_time"]) == pytest.approx(o.start_s, abs=1e-3)
        assert row["final_state"] == o.state
        assert o.energy_j == pytest.approx(float(row["consumed_energy"]), rel=1e-9)
    assert result.energy_j == pytest.approx(total_j, rel=1e-9)
