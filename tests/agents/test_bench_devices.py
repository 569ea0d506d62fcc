"""benchmarks/bench_devices.py runs on the CPU alone (GPU cells marked absent) and writes its figures."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import bench_devices  # noqa: E402


def test_bench_devices_on_the_cpu(tmp_path, capsys):
    out = tmp_path / "devices.json"
    code = bench_devices.main(["--networks", "kernel", "--ppo-networks", "kernel",
                               "--seconds", "0", "--ppo-steps", "64", "--rollout-steps", "32",
                               "--num-envs", "2", "--json", str(out)])
    printed = capsys.readouterr().out
    assert code == 0
    figures = json.loads(out.read_text())
    assert figures["devices"]["cpu"] in printed and "torch threads" in figures["devices"]["cpu"]
    nets, ppo = figures["networks"], figures["ppo"]
    assert [n["network"] for n in nets] == ["kernel (32,16,8), K=128, batch 2048"]
    for row in nets:
        assert all(row[c] > 0 for c in ("update_cpu", "update_bf16_cpu", "decisions_cpu",
                                        "decisions_batched_cpu"))
    gpu = "cuda:0" if torch.cuda.is_available() else "absent"
    assert [(r["envs"], r["rollout"], r["update"]) for r in ppo] == [
        (envs, rollout, update) for envs in (1, 2)
        for rollout, update in (("cpu", "cpu"), ("cpu", gpu), (gpu, gpu))]
    cpu_runs = [r for r in ppo if r["rollout"] == "cpu" and r["update"] == "cpu"]
    assert [r["updates"] for r in cpu_runs] == [2, 2] and all(r["vs_cpu"] == "1.00x" for r in cpu_runs)
    if not torch.cuda.is_available():
        assert "GPU absent" in printed
        assert all(n[c] == "absent" for n in nets for c in bench_devices.NET_COLUMNS if "gpu" in c)
        assert sum(r["env_steps_per_s"] == "absent" for r in ppo) == 4
