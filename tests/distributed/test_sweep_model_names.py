"""A sweep over a platform JSON file whose node type spells its GPU model as nvidia-smi prints
it, and a pod list that spells it as the Kubernetes label: the runs use the library's model."""

from __future__ import annotations

import csv
import json

import pytest

from hdrm.distributed.spec import load_sweep
from hdrm.distributed.sweep import run_sweep
from hdrm.errors import PlatformError

# one H200: a holds it 0..100, b waits until 100 and runs 50 s: 150 GPU-s at 3.5 USD/h
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "a,1000,1024,1,1000,nvidia.com/gpu.product=NVIDIA-H200,LS,Running,0,100,0\n"
        "b,1000,1024,1,1000,H200,LS,Running,1,51,1\n")


def _platform(model: str) -> dict:
    return {"name": "h", "node_types": {"box": {
                "processors": [{"type": "xeon_gold_6148", "count": 1}], "memory_gb": 64,
                "accelerators": [{"type": model, "count": 1}]}},
            "clusters": [{"name": "c", "network": "ethernet_25g",
                          "nodes": [{"type": "box", "count": 1}]}]}


def _sweep(folder, model: str):
    (folder / "p.json").write_text(json.dumps(_platform(model)))
    (folder / "pods.csv").write_text(PODS)
    sweep = folder / "sweep.json"
    sweep.write_text(json.dumps({"policies": ["fifo-first_fit"], "platforms": ["p.json"],
                                 "traces": ["pods.csv"], "seeds": [0]}))
    return sweep


def test_a_sweep_runs_the_spelled_platform_at_the_models_price(tmp_path):
    report = run_sweep(_sweep(tmp_path, "NVIDIA H200"), tmp_path / "out", backend="serial",
                       progress=False)
    assert (report.nb_runs, report.nb_run) == (1, 1)
    with open(tmp_path / "out" / "results.csv", newline="") as handle:
        row = next(csv.DictReader(handle))
    assert float(row["mean_jct_s"]) == pytest.approx((100 + 149) / 2)
    assert float(row["gpu_cost_usd"]) == pytest.approx(150 * 3.5 / 3600, abs=1e-6)  # 6 digits


def test_a_misspelled_model_fails_when_the_sweep_is_read(tmp_path):
    with pytest.raises(PlatformError, match=r"p\.json: node_types\.box\.accelerators\[0\]\.type: "
                       r"unknown accelerator type 'NVIDIA H20'; did you mean 'H200'"):
        load_sweep(_sweep(tmp_path, "NVIDIA H20"))
