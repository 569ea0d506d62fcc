"""hdeeprm-launch with tenants (options.json ``workload.tenants`` and ``workload.sla``): a classic
EDF agent's return is minus the deadline miss rate that ``hdrm replay`` measures for the same run."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from hdrm.cli.main import main as hdrm_main
from hdrm.launcher import main
from hdrm.results.learning import read_episodes_csv

ROOT = Path(__file__).resolve().parents[2]
KTH = ROOT / "workloads" / "KTH-SP2-1996-2.1-cln_27200-27399.swf"
TENANTS = {"by": "user", "sla": "relative:1.5",
           "classes": {"gold": "latency:20000", "bronze": "relative:4"}}


@pytest.mark.parametrize("policy", ["edf", "fair_share"])
def test_launch_return_is_minus_the_replayed_miss_rate(tmp_path, capsys, policy):
    (tmp_path / "tenants.json").write_text(json.dumps(TENANTS))
    options = {"seed": 3, "workload_file_path": str(KTH), "nb_resources": 100, "nb_jobs": 120,
               "workload": {"tenants": "tenants.json"},  # relative to the options file
               "simulation": {"backfilling": "easy", "contention": "none"},
               "pybatsim": {"env": {"objective": "sla_satisfaction",
                                    "actions": {"mode": "policy_pair"}},
                            "agent": {"type": "classic", "run": "test", "episodes": 1,
                                      "policy": f"{policy}-high_gflops"}}}
    path = tmp_path / "options.json"
    path.write_text(json.dumps(options))
    assert main([str(ROOT / "agents" / "classic.py"), str(path), "--outdir",
                 str(tmp_path / "launch")]) == 0
    returns = read_episodes_csv(tmp_path / "launch" / "episodes.csv").returns
    assert hdrm_main(["replay", "--workload", str(KTH), "--homogeneous-procs", "100",
                      "--nb-jobs", "120", "--policy", policy, "--backfill", "easy",
                      "--contention", "none", "--tenants", str(tmp_path / "tenants.json"),
                      "--outdir", str(tmp_path / "replay")]) == 0
    capsys.readouterr()
    rows = {r["tenant"]: r for r in csv.DictReader((tmp_path / "replay" / "out_sla.csv").open())}
    miss = float(rows["overall"]["deadline_miss_rate"])
    assert miss > 0 and returns[0] == pytest.approx(-miss, rel=1e-9)
    # the launch writes the same out_sla.csv as the replay
    assert (tmp_path / "launch" / "out_sla.csv").read_text() == \
        (tmp_path / "replay" / "out_sla.csv").read_text()
