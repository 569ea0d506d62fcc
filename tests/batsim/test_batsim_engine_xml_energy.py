"""The batsim engine charges a SimGrid XML platform's energy as Batsim on the user's own file.

The engine hands Batsim hdrm's export of the platform, and hdrm's decision process puts idle
cores to sleep. Batsim on the user's file (and hdrm's built-in engine, checked against the binary
in test_real_batsim_simgrid_energy.py) charges a host with no job, or running a ``delay`` job, its
idle watts. Before the export wrote idle watts into every state, the batsim engine charged a delay
job full watts (1010 J where Batsim gives 500 J) and an idle core 5 % of its running watts.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from batsim_helpers import raw_session
from real_batsim import real_batsim

BATSIM, WHY_NOT = real_batsim()

PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="z" routing="Full">
    <host id="a" speed="1Gf" core="4">
      <prop id="wattage_per_state" value="50:100:200"/>
    </host>
    <host id="b" speed="2Gf">
      <prop id="wattage_per_state" value="20:120"/>
    </host>
    <host id="c" speed="1Gf">
      <prop id="wattage_per_state" value="10:30:70"/>
    </host>
    <host id="master_host" speed="1Gf"/>
    <link id="l" bandwidth="1GBps" latency="0"/>
    <route src="master_host" dst="a"><link_ctn id="l"/></route>
    <route src="master_host" dst="b"><link_ctn id="l"/></route>
    <route src="master_host" dst="c"><link_ctn id="l"/></route>
  </zone>
</platform>
"""

WORKLOAD = {
    "nb_res": 3,
    "profiles": {"d10": {"type": "delay", "delay": 10},
                 "c4": {"type": "parallel_homogeneous", "cpu": 4e9, "com": 0}},
    "jobs": [{"id": "0", "subtime": 0, "res": 1, "profile": "d10", "walltime": 100},
             {"id": "1", "subtime": 2, "res": 2, "profile": "c4", "walltime": 100},
             {"id": "2", "subtime": 7, "res": 1, "profile": "c4", "walltime": 100},
             {"id": "3", "subtime": 20, "res": 3, "profile": "d10", "walltime": 100}],
}


def _rows(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="") as f:
        return {row["job_id"].split("!")[-1]: row for row in csv.DictReader(f)}


def _on_the_users_file(tmp_path: Path, jobs: dict[str, dict[str, str]]) -> tuple[dict, float]:
    """The binary with -E on the user's own file, each job started on its allocation in
    ``jobs`` when submitted (the replay started every job at its submission)."""
    def reply(doc: dict) -> str:
        out = [{"timestamp": doc["now"], "type": "EXECUTE_JOB",
                "data": {"job_id": e["data"]["job_id"],
                         "alloc": jobs[e["data"]["job_id"].split("!")[-1]]["allocated_resources"]}}
               for e in doc["events"] if e["type"] == "JOB_SUBMITTED"]
        return json.dumps({"now": doc["now"], "events": out})

    (tmp_path / "user").mkdir()
    raw_session(reply, tmp_path / "p.xml", tmp_path / "w.json", tmp_path / "user" / "o",
                energy=True, binary=BATSIM)
    with open(tmp_path / "user" / "o_schedule.csv", newline="") as f:
        total = float(next(csv.DictReader(f))["consumed_joules"])
    return _rows(tmp_path / "user" / "o_jobs.csv"), total


def _replay(tmp_path: Path, engine: str) -> tuple[dict[str, dict[str, str]], float]:
    out = tmp_path / engine
    cmd = [sys.executable, "-m", "hdrm.cli.main", "replay", "--platform", str(tmp_path / "p.xml"),
           "--workload", str(tmp_path / "w.json"), "--policy", "first-high_gflops",
           "--engine", engine, "--outdir", str(out), "--quiet"]
    if engine == "batsim":
        cmd += ["--batsim", BATSIM]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    jobs = _rows(out / "out_jobs.csv")
    with open(out / "out_schedule.csv", newline="") as f:
        total = float(next(csv.DictReader(f))["consumed_joules"])
    return jobs, total


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
def test_both_engines_charge_the_files_idle_watts(tmp_path):
    (tmp_path / "p.xml").write_text(PLATFORM)
    (tmp_path / "w.json").write_text(json.dumps(WORKLOAD))
    batsim, batsim_total = _replay(tmp_path, "batsim")
    builtin, builtin_total = _replay(tmp_path, "builtin")
    assert sorted(batsim) == sorted(builtin) == ["0", "1", "2", "3"]
    for key, row in builtin.items():
        other = batsim[key]
        assert other["allocated_resources"] == row["allocated_resources"], key
        assert float(other["finish_time"]) == pytest.approx(float(row["finish_time"]), abs=1e-6)
        assert float(other["consumed_energy"]) == pytest.approx(
            float(row["consumed_energy"]), rel=1e-9), key
    assert batsim_total == pytest.approx(builtin_total, rel=1e-9)
    assert all(row["starting_time"] == row["submission_time"] for row in builtin.values())
    user, user_total = _on_the_users_file(tmp_path, builtin)  # the ground truth
    for key, row in user.items():
        assert float(batsim[key]["consumed_energy"]) == pytest.approx(
            float(row["consumed_energy"]), rel=1e-9), key
    assert batsim_total == pytest.approx(user_total, rel=1e-9)
    # by hand: job 0, a 10 s delay on the fastest host b (idle 20 W, full 120 W): 200 J (the
    # old export charged 1200 J); job 3, a 10 s delay on a, b, c: 10 s x (50 + 20 + 10) W
    assert builtin["0"]["allocated_resources"] == "1"
    assert float(builtin["0"]["consumed_energy"]) == pytest.approx(200.0)
    assert float(builtin["3"]["consumed_energy"]) == pytest.approx(800.0)
