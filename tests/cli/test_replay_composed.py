"""``hdrm replay`` (the built-in engine) on a Batsim workload of ``composed`` and
``parallel_homogeneous_total`` jobs, on identical hosts of 1 GFLOP/s, times checked by hand."""

from __future__ import annotations

import csv
import json

from hdrm.cli.main import main

PROFILES = {"d1": {"type": "delay", "delay": 1.125},
            "c2": {"type": "parallel_homogeneous", "cpu": 2.07e9, "com": 0},
            "t4": {"type": "parallel_homogeneous_total", "cpu": 4.32e9, "com": 0},
            "mix": {"type": "composed", "repeat": 2, "seq": ["d1", "c2"]}}


def test_sequences_and_total_amounts_replayed_as_batsim_runs_them(tmp_path, capsys):
    jobs = [{"id": i, "subtime": i, "res": 2, "walltime": 4 if i in (0, 3) else 100,
             "profile": p} for i, p in enumerate(["mix", "t4", "d1", "mix", "t4", "c2"])]
    jobs[3]["walltime"] = 6.5
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": PROFILES}))
    assert main(["replay", "--workload", str(workload), "--homogeneous-procs", "4",
                 "--contention", "none", "--policy", "fcfs", "--quiet",
                 "--outdir", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    (path,) = (tmp_path / "out").glob("*jobs.csv")
    rows = {r["job_id"]: r for r in csv.DictReader(path.open())}
    got = {k: (r["final_state"], float(r["starting_time"]), float(r["finish_time"]))
           for k, r in rows.items()}
    assert got == {
        # 1.125 s asleep, 2.07 s of work: 0.805 s left, below the next 1.125 s sleep
        "0": ("COMPLETED_WALLTIME_REACHED", 0.0, 4.0),
        "1": ("COMPLETED_SUCCESSFULLY", 1.0, 1.0 + 4.32 / 2),  # 4.32 GFLOP over 2 hosts
        "2": ("COMPLETED_SUCCESSFULLY", 3.16, 3.16 + 1.125),
        # 2 x (1.125 + 2.07) = 6.39 s < 6.5 s
        "3": ("COMPLETED_SUCCESSFULLY", 4.0, 4.0 + 6.39),
        "4": ("COMPLETED_SUCCESSFULLY", 4.285, 4.285 + 2.16),
        "5": ("COMPLETED_SUCCESSFULLY", 6.445, 6.445 + 2.07),
    }
