"""Ctrl-C during a launch on the batsim engine, with the REAL binary: a terminal sends SIGINT to
the whole process group, so Batsim dies of it while the launcher stops after the decision under
way. The launch exits with 130 and leaves the outputs of what was done (the jobs that ended, the
decisions made), as on the built-in engine; before, a first episode left an empty folder.

Skipped, with the reason, when no real Batsim can run (``real_batsim.py``); ``-m slow`` runs it.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from real_batsim import real_batsim

BATSIM, WHY_NOT = real_batsim()
pytestmark = [pytest.mark.skipif(BATSIM is None, reason=WHY_NOT), pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
JOBS = 120
CTRL_C_AT = 30

AGENT = f'''
import os
import signal

from hdrm.agents.base import ClassicAgent


class CtrlC(ClassicAgent):
    """The configured pair; a Ctrl-C to the process group at decision {CTRL_C_AT}."""

    def decide(self, observation, mask):
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls == {CTRL_C_AT}:
            os.killpg(os.getpgrp(), signal.SIGINT)
        return super().decide(observation, mask)
'''


def test_ctrl_c_leaves_the_jobs_that_ended(tmp_path):
    jobs = [{"id": i, "subtime": i, "res": 1, "profile": "d"} for i in range(JOBS)]
    (tmp_path / "w.json").write_text(json.dumps(
        {"nb_res": 4, "jobs": jobs, "profiles": {"d": {"type": "delay", "delay": 10}}}))
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "options.json").write_text(json.dumps({
        "workload_file_path": "w.json", "platform_file_path": str(REPO / "platforms/tiny4.json"),
        "engine": "batsim", "batsim": {"binary": BATSIM},
        "pybatsim": {"agent": {"type": "classic", "run": "test", "policy": "first-high_gflops",
                               "episodes": 3}}}))
    done = subprocess.run([sys.executable, "-m", "hdrm.launcher", "agent.py", "options.json",
                           "--outdir", "out", "--quiet"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, start_new_session=True)
    assert done.returncode == 130, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().endswith("stopped by SIGINT after 0 episodes of this launch")
    with open(tmp_path / "out" / "out_jobs.csv", newline="") as stream:
        rows = list(csv.DictReader(stream))
    ids = [int(row["job_id"]) for row in rows]
    # every job started before the Ctrl-C had 10 s to run; those that ended are there, once each
    assert 0 < len(ids) < JOBS and len(set(ids)) == len(ids)
    assert {row["final_state"] for row in rows} == {"COMPLETED_SUCCESSFULLY"}
    for row in rows:
        assert float(row["finish_time"]) == pytest.approx(float(row["starting_time"]) + 10.0)
    with open(tmp_path / "out" / "actions.csv", newline="") as stream:
        assert len(list(csv.DictReader(stream))) == CTRL_C_AT
    schedule = next(csv.DictReader(open(tmp_path / "out" / "out_schedule.csv", newline="")))
    assert int(schedule["nb_jobs"]) == len(ids)
