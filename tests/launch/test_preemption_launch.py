"""hdeeprm-launch on the generated inference scenario with ``pybatsim.env.preemption``
``block:0.002`` runs end to end (a classic EDF agent, one short episode): every request ends
once, and requests are suspended (their execution time, the run time used, is shorter than
their span) where the run without preemption suspends none."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from hdrm.cli.main import main as hdrm_main
from hdrm.launcher import main
from hdrm.results.learning import read_episodes_csv

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "hdrm" / "data" / "inference_tenants.json"
PLATFORM = ROOT / "hdrm" / "data" / "inference_platform.json"


def _launch(tmp_path: Path, inf: Path, preemption: str) -> Path:
    options = {"seed": 1, "workload_file_path": str(inf / "workload.json"),
               "platform_file_path": str(PLATFORM),
               "workload": {"tenants": str(inf / "tenants.json")},
               "pybatsim": {"env": {"objective": "sla_satisfaction", "preemption": preemption,
                                    "preemption_overhead_s": 0.0005,
                                    "actions": {"mode": "policy_pair",
                                                "selection": [{"edf": ["high_gflops"]}]}},
                            "agent": {"type": "classic", "run": "test", "episodes": 1}}}
    path = tmp_path / f"options_{preemption.replace(':', '_')}.json"
    path.write_text(json.dumps(options))
    outdir = tmp_path / f"launch_{preemption.replace(':', '_')}"
    assert main([str(ROOT / "agents" / "classic.py"), str(path), "--outdir", str(outdir)]) == 0
    assert len(read_episodes_csv(outdir / "episodes.csv").returns) == 1
    return outdir


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.open()))


def test_launch_with_block_preemption_on_the_inference_scenario(tmp_path, capsys):
    inf = tmp_path / "inf"
    assert hdrm_main(["workload", "inference", "--tenants", str(SPEC), "--requests", "300",
                      "-o", str(inf)]) == 0
    capsys.readouterr()
    block, none = _launch(tmp_path, inf, "block:0.002"), _launch(tmp_path, inf, "none")
    jobs = _rows(block / "out_jobs.csv")
    assert sorted(r["job_id"] for r in jobs) == sorted({r["job_id"] for r in jobs})
    assert len(jobs) == 300 and all(r["final_state"] == "COMPLETED_SUCCESSFULLY" for r in jobs)
    assert not (none / "out_preemptions.csv").exists()
    rows = _rows(block / "out_preemptions.csv")  # one row per request, as hdrm replay writes
    assert len(rows) == 300
    suspended = [r for r in rows if int(r["preemptions"]) > 0]
    assert suspended  # the option reached the engine: EDF suspended some requests
    for r in suspended:  # first start, final end: the span holds the run time used
        assert float(r["finish_time"]) - float(r["starting_time"]) >= float(r["run_time_used"])
    # every request reaches the reward tracker once: the SLA table counts 300 requests
    sla = {r["tenant"]: r for r in _rows(block / "out_sla.csv")}
    assert int(float(sla["overall"]["jobs"])) == 300
