"""hdeeprm-launch on a GPU platform with options.json, end to end: a classic (order x placement)
pair and a learning agent picking tasks; the GPU outputs agree with the objective."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from hdrm.launcher import main
from hdrm.results.learning import read_episodes_csv

ROOT = Path(__file__).resolve().parents[2]


def options(tmp_path: Path, env: dict, agent: dict, nb_jobs: int | None = None) -> Path:
    """An options.json on the shipped openb slice (41 nodes, 400 tasks)."""
    data = {
        "seed": 7,
        "workload_file_path": str(ROOT / "workloads" / "openb_pods_400.csv"),
        "platform_file_path": str(ROOT / "workloads" / "openb_nodes_41.csv"),
        "simulation": {"backfilling": "none"},
        "pybatsim": {"log_level": "WARNING", "env": env, "agent": agent},
    }
    if nb_jobs is not None:
        data["nb_jobs"] = nb_jobs
    path = tmp_path / "options.json"
    path.write_text(json.dumps(data))
    return path


def test_a_classic_pair_writes_the_gpu_outputs_and_its_cost_is_the_objective(tmp_path, capsys):
    path = options(tmp_path, {"objective": "gpu_cost", "observation": "gpu",
                              "actions": {"mode": "policy_pair"}},
                   {"type": "classic", "run": "test", "policy": "fifo-price_aware",
                    "episodes": 1})
    out = tmp_path / "out"
    assert main([str(ROOT / "agents" / "classic.py"), str(path), "--outdir", str(out)]) == 0
    assert "policy_pair with 1 actions, objective gpu_cost" in capsys.readouterr().out
    summary = json.loads((out / "out_gpu_summary.json").read_text())
    episodes = read_episodes_csv(out / "episodes.csv")
    assert summary["policy"] == "fifo-price_aware" and len(episodes) == 1
    assert episodes.returns[0] == pytest.approx(-summary["cost_usd"], rel=1e-9)
    assert summary["nb_finished"] + summary["nb_rejected"] == 400
    rows = list(csv.DictReader((out / "out_jobs.csv").open()))
    assert len(rows) == 400 and {"gpu_model", "cost_usd", "jct"} <= set(rows[0])
    # the GPU timeline was recorded for the outputs: allocation over time is not empty
    assert summary["gpu_allocation_rate_all"] > 0
    assert len((out / "out_gpu_timeline.csv").read_text().splitlines()) > 100


def test_a_learning_agent_picks_tasks_on_the_gpu_platform(tmp_path, capsys):
    path = options(tmp_path, {"objective": "avg_jct", "observation": "gpu_job_window",
                              "actions": {"mode": "job_pick", "window": 16}},
                   {"type": "learning", "run": "train", "episodes": 2, "hidden": 16,
                    "params": {"torch_threads": 1}}, nb_jobs=60)
    out = tmp_path / "out"
    assert main([str(ROOT / "agents" / "reinforce.py"), str(path), "--outdir", str(out)]) == 0
    episodes = read_episodes_csv(out / "episodes.csv")
    assert len(episodes) == 2 and (episodes.returns < 0).all()  # minus the mean JCT in hours
    summary = json.loads((out / "out_gpu_summary.json").read_text())
    # the last episode's return is minus its mean JCT over its 60 tasks (rejected ones at 0)
    jcts = [float(r["jct"] or 0) for r in csv.DictReader((out / "out_jobs.csv").open())]
    assert len(jcts) == 60 and summary["nb_jobs"] == 60
    assert episodes.returns[-1] == pytest.approx(-sum(jcts) / 60 / 3600, rel=1e-6)


def test_a_cpu_pair_on_gpu_inputs_is_refused_in_one_line(tmp_path, capsys):
    path = options(tmp_path, {"actions": {"mode": "policy_pair"}},
                   {"type": "classic", "run": "test", "policy": "fcfs-high_gflops"})
    assert main([str(ROOT / "agents" / "classic.py"), str(path), "--outdir",
                 str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pybatsim.agent.policy: unknown policy" in err


def test_a_gavel_trace_with_its_throughputs_from_options_json(tmp_path):
    """1,000 steps at 2 steps/s on a K80 (500 s) or 8 on a V100 (125 s): price_aware gives the
    first job the K80 (0.25 of the speed for 0.45 USD/h beats 1 for 2.48), the second the V100."""
    (tmp_path / "nodes.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nk,4000,16384,1,K80\n"
                                        "v,4000,16384,1,V100M16\n")
    job = "ResNet-18 (batch size 64)"
    (tmp_path / "t.trace").write_text(f"{job}\tcmd\t\t-s\t1\t1000\t0\t1\n" * 2)
    (tmp_path / "tp.json").write_text(json.dumps({"k80": {f"('{job}', 1)": {"null": 2.0}},
                                                  "v100": {f"('{job}', 1)": {"null": 8.0}}}))
    (tmp_path / "options.json").write_text(json.dumps({
        "workload_file_path": "t.trace", "platform_file_path": "nodes.csv",
        "workload": {"throughputs": "tp.json"},
        "pybatsim": {"env": {"objective": "gpu_cost"},
                     "agent": {"type": "classic", "run": "test", "policy": "fifo-price_aware",
                               "episodes": 1}}}))
    out = tmp_path / "out"
    assert main([str(ROOT / "agents" / "classic.py"), str(tmp_path / "options.json"),
                 "--outdir", str(out)]) == 0
    rows = list(csv.DictReader((out / "out_jobs.csv").open()))
    assert [(r["execution_time"], r["gpu_model"]) for r in rows] == [
        ("500.000000", "K80"), ("125.000000", "V100M16")]
    cost = 500 / 3600 * 0.45 + 125 / 3600 * 2.48
    assert read_episodes_csv(out / "episodes.csv").returns[0] == pytest.approx(-cost, rel=1e-6)
