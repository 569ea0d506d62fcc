"""Job dependencies on the real Batsim: the decision core holds dependent jobs until their
preceding jobs have ended plus the think time, and the schedule equals the built-in engine's."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from real_batsim import real_batsim

from hdrm.cli.main import main

BATSIM, WHY_NOT = real_batsim()

#: 9 jobs on 4 processors: chains 1 -> 3 -> 5 -> 7 (think 10, 0, 25) and 2 -> 6 (think 3), job 9
#: after job 4 (think 0) whose trace time is earlier than its release, and independent jobs.
TRACE = """; MaxProcs: 4
1 0 -1 100 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1
2 0 -1 40 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 -1 -1
3 20 -1 50 3 -1 -1 3 100 -1 1 1 1 -1 1 -1 1 10
4 30 -1 60 1 -1 -1 1 100 -1 1 1 1 -1 1 -1 -1 -1
5 40 -1 30 4 -1 -1 4 100 -1 1 1 1 -1 1 -1 3 0
6 50 -1 20 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 2 3
7 60 -1 10 1 -1 -1 1 100 -1 1 1 1 -1 1 -1 5 25
8 70 -1 80 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 -1 -1
9 35 -1 15 1 -1 -1 1 100 -1 1 1 1 -1 1 -1 4 0
"""


def _replay(tmp_path: Path, engine: str, policy: str) -> Path:
    trace = tmp_path / "deps.swf"
    trace.write_text(TRACE)
    out = tmp_path / f"{engine}_{policy}"
    assert main(["replay", "--engine", engine, "--batsim", BATSIM or "batsim",
                 "--homogeneous-procs", "4", "--workload", str(trace), "--policy", policy,
                 "--backfill", "easy", "--contention", "none", "--outdir", str(out)]) == 0
    return out


def _rows(out: Path) -> dict[str, dict[str, float]]:
    rows = csv.DictReader((out / "out_jobs.csv").open())
    return {r["job_id"]: {k: float(r[k]) for k in ("submission_time", "starting_time",
                                                   "finish_time")} for r in rows}


@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("policy", ["fcfs", "sjf"])
def test_batsim_holds_dependent_jobs_as_the_builtin_engine(tmp_path, capsys, policy):
    builtin = _rows(_replay(tmp_path, "builtin", policy))
    printed_builtin = capsys.readouterr().out
    batsim = _rows(_replay(tmp_path, "batsim", policy))
    printed_batsim = capsys.readouterr().out
    assert len(builtin) == 9
    starts = {j: (r["starting_time"], r["finish_time"]) for j, r in builtin.items()}
    assert starts == {j: (r["starting_time"], r["finish_time"]) for j, r in batsim.items()}
    for job, pred, think in (("3", "1", 10), ("5", "3", 0), ("7", "5", 25), ("6", "2", 3),
                             ("9", "4", 0)):
        released = builtin[pred]["finish_time"] + think
        assert builtin[job]["submission_time"] == released  # the built-in reports the release
        assert builtin[job]["starting_time"] >= released
        # Batsim's own out_jobs.csv: submitted at the chain head's time, held by the core
        assert batsim[job]["submission_time"] <= released
    # the summaries (waiting times from the release) agree
    waits = [line for line in (printed_builtin, printed_batsim)
             for line in line.splitlines() if "mean waiting time" in line]
    assert waits[0] == waits[1]
