"""``hdrm workload inference``: the workload and tenants files the replay reads, one-line errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from hdrm.cli.main import main
from hdrm.workload.batsim_json import read_batsim_json

ROOT = Path(__file__).resolve().parents[2]
SPEC = str(ROOT / "hdrm" / "data" / "inference_tenants.json")
PLATFORM = str(ROOT / "hdrm" / "data" / "inference_platform.json")


def test_generate_then_replay_with_the_tenants_file(tmp_path, capsys):
    out = tmp_path / "inf"
    assert main(["workload", "inference", "--tenants", SPEC, "--requests", "500",
                 "-o", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("500 requests of 4 tenants over ")
    assert lines[2].split() == ["vision", "resnet50", "8", lines[2].split()[3],
                                lines[2].split()[4], "15", "2.598", "96.7"]
    workload = read_batsim_json(out / "workload.json")
    assert len(workload) == 500 and {j.res for j in workload.jobs} == {1}
    assert {j.profile for j in workload.jobs} <= {"resnet50_b8", "bert_b4", "dlrm_b256",
                                                  "rnnt_b8"}
    tenants = json.loads((out / "tenants.json").read_text())
    assert tenants["classes"] == {"resnet50_15ms": "latency:0.015", "dlrm_60ms": "latency:0.06",
                                  "bert_130ms": "latency:0.13", "rnnt_1000ms": "latency:1"}
    assert main(["replay", "--platform", PLATFORM, "--workload", str(out / "workload.json"),
                 "--tenants", str(out / "tenants.json"), "--policy", "edf",
                 "--outdir", str(tmp_path / "edf"), "--quiet"]) == 0
    rows = list(csv.DictReader(open(tmp_path / "edf" / "out_sla.csv")))
    assert [r["tenant"] for r in rows] == ["vision", "qa", "ads", "speech", "overall"]
    assert [r["sla"] for r in rows[:4]] == ["latency 0.015 s", "latency 0.13 s",
                                           "latency 0.06 s", "latency 1 s"]
    assert sum(int(r["jobs"]) for r in rows[:4]) == 500


def test_the_seed_option_changes_the_arrivals(tmp_path, capsys):
    for seed in ("1", "2"):
        assert main(["workload", "inference", "--tenants", SPEC, "--requests", "50",
                     "--seed", seed, "-o", str(tmp_path / seed)]) == 0
    one, two = (read_batsim_json(tmp_path / s / "workload.json") for s in ("1", "2"))
    assert [j.submit_s for j in one.jobs] != [j.submit_s for j in two.jobs]


def test_errors_are_one_line_with_status_2(tmp_path, capsys):
    assert main(["workload", "inference", "-o", str(tmp_path / "x")]) == 2
    assert "needs --tenants SPEC.json and -o DIR" in capsys.readouterr().err
    assert main(["workload", SPEC, "--tenants", SPEC]) == 2
    assert "give 'inference' as TRACE" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"requests": 10, "tenants": {"t": {"model": "gpt"}}}))
    assert main(["workload", "inference", "--tenants", str(bad), "-o", str(tmp_path / "y")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{bad}, key 'tenants.t.model': unknown model 'gpt'; choose one of" in err
