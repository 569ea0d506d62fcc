"""``hdrm dag schedule``: a workflow and a platform in, makespan and SLR out, a schedule CSV
written."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from hdrm.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
PLATFORM = str(ROOT / "platforms" / "tiny_hetero.json")

CHAIN = {"name": "chain", "workflow": {"tasks": [
    {"name": "x", "runtimeInSeconds": 30, "parents": [], "files": []},
    {"name": "y", "runtimeInSeconds": 15, "parents": ["x"], "files": []},
]}}


def test_schedule_prints_metrics_and_writes_the_csv(tmp_path, capsys):
    wf = tmp_path / "chain.json"
    wf.write_text(json.dumps(CHAIN), encoding="utf-8")
    out = tmp_path / "s.csv"
    assert main(["dag", "schedule", str(wf), "--platform", PLATFORM, "--policy", "heft",
                 "-o", str(out)]) == 0
    line = capsys.readouterr().out
    # both on a fast core (speed 1.5): 20 s then 10 s; the least-cost path is the same
    assert line.startswith("heft on chain: 2 tasks, 1 edges on 8 processors: makespan 30.000 s, "
                           "SLR 1.000, speedup 1.000")
    with out.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["task"], r["processor"], float(r["start_s"]), float(r["finish_s"])) for r in rows] \
        == [("x", "c0-n0/c0", 0.0, 20.0), ("y", "c0-n0/c0", 20.0, 30.0)]


def test_bad_input_is_one_line_and_status_2(tmp_path, capsys):
    wf = tmp_path / "bad.json"
    wf.write_text(json.dumps({"name": "bad", "workflow": {"tasks": [
        {"name": "x", "parents": ["nope"], "runtime": 1}]}}), encoding="utf-8")
    assert main(["dag", "schedule", str(wf), "--platform", PLATFORM]) == 2
    err = capsys.readouterr().err
    assert err == ("hdrm dag: error: bad.json: task 'x' names 'nope' as a parent or child, but no "
                   "task has that id; fix the reference\n")


def test_unknown_policy_is_refused(capsys):
    with pytest.raises(SystemExit) as info:
        main(["dag", "schedule", "wf.json", "--platform", PLATFORM, "--policy", "nope"])
    assert info.value.code == 2
    assert "invalid choice: 'nope' (choose from 'cpop', 'heft', 'peft')" in capsys.readouterr().err
