"""The machine model's walltime rule against the REAL Batsim 4.2.1 binary.

One workload of jobs that each take the whole 4-host platform (so pybatsim's ``fillerSched`` runs
them one at a time) around their walltimes: delay jobs whose delay equals or is below the walltime,
parallel jobs whose work ends exactly at, just before or just after it. Every job's final state
and run time in Batsim's ``out_jobs.csv`` must be what :class:`~hdrm.sim.machine.Machine` gives
the same job. Skipped, with the reason, when no real Batsim can run (see ``real_batsim.py``).
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest
from batsim_helpers import PybatsimProcess
from real_batsim import real_batsim

from hdrm.results.csvio import read_jobs_csv
from hdrm.sim.machine import Machine

BATSIM, WHY_NOT = real_batsim()
pytestmark = pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)

SPEED_GFLOPS = 10.0
HOST = '  <host id="h{i}" speed="10Gf"/>\n'
ROUTE = '  <route src="master_host" dst="h{i}"><link_ctn id="l"/></route>\n'
PLATFORM = (
    "<?xml version='1.0'?>\n"
    '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
    '<platform version="4.1">\n<zone id="z" routing="Full">\n'
    '  <host id="master_host" speed="1Gf"/>\n'
    + "".join(HOST.format(i=i) for i in range(4))
    + '  <link id="l" bandwidth="10GBps" latency="0us"/>\n'
    + "".join(ROUTE.format(i=i) for i in range(4))
    + "</zone>\n</platform>\n"
)
# id: (profile, walltime in s or None)
JOBS = {
    "delay_tie": ("d10", 10),  # delay == walltime: killed (Batsim: success iff delay < walltime)
    "delay_below": ("d9.5", 10),
    "work_tie": ("w100", 10),  # the work ends exactly at the walltime: done
    "work_tie_small": ("w3", 0.3),
    "work_1e-12_late": ("w100", 9.999999999999),  # 1e-13 of the work left: killed
    "work_1e-14_late": ("w100", 9.99999999999999),  # 1e-15 left: SimGrid counts it done
    "work_cut": ("w100", 4),
    "work_no_walltime": ("w100", None),
}
PROFILES = {
    "d10": {"type": "delay", "delay": 10},
    "d9.5": {"type": "delay", "delay": 9.5},
    "w100": {"type": "parallel_homogeneous", "cpu": 1e11, "com": 0},
    "w3": {"type": "parallel_homogeneous", "cpu": 3e9, "com": 0},
}


def workload() -> dict:
    jobs = []
    for i, (name, (profile, walltime)) in enumerate(JOBS.items()):
        entry = {"id": name, "subtime": i, "res": 4, "profile": profile}
        if walltime is not None:
            entry["walltime"] = walltime
        jobs.append(entry)
    return {"nb_res": 4, "jobs": jobs, "profiles": PROFILES}


def machine_outcome(profile: str, walltime: float | None) -> tuple[str, float]:
    """(final state, run time) of the job alone on the machine."""
    m = Machine([(SPEED_GFLOPS,)] * 4, [(0.0,)] * 4)
    spec = PROFILES[profile]
    wall = math.inf if walltime is None else float(walltime)
    if spec["type"] == "delay":
        m.start(0, range(4), delay_s=float(spec["delay"]), walltime_s=wall)
    else:
        m.start(0, range(4), ops_gflop=spec["cpu"] / 1e9, walltime_s=wall)
    (end,) = m.advance(m.next_time())
    return end.state, end.finish_s - end.start_s


def test_walltime_outcomes_equal_the_real_batsim(tmp_path: Path):
    (tmp_path / "platform.xml").write_text(PLATFORM)
    (tmp_path / "workload.json").write_text(json.dumps(workload()))
    (tmp_path / "out").mkdir()
    sched = PybatsimProcess("fillerSched", tmp_path / "sched.log")
    try:
        done = subprocess.run(
            [BATSIM, "-p", str(tmp_path / "platform.xml"), "-w", str(tmp_path / "workload.json"),
             "-e", str(tmp_path / "out" / "out"), "-s", sched.endpoint, "-q"],
            capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        assert sched.finish() == 0, (tmp_path / "sched.log").read_text()[-2000:]
    finally:
        sched.close()
    rows = {r.job_id: r for r in read_jobs_csv(tmp_path / "out" / "out_jobs.csv")}
    assert sorted(rows) == sorted(JOBS)
    for name, (profile, walltime) in JOBS.items():
        state, run_s = machine_outcome(profile, walltime)
        row = rows[name]
        success = int(state == "COMPLETED_SUCCESSFULLY")
        assert (row.final_state, row.success) == (state, success), name
        assert row.execution_time == pytest.approx(run_s, abs=1e-6), name
