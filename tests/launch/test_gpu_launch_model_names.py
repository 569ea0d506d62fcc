"""options.json and the GPU environment: a platform JSON file and a pod list that spell GPU
models as cluster tools print them (an nvidia-smi name, a Kubernetes label written whole) run
on the library's model, at its price."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hdrm.env import SchedulingEnv
from hdrm.errors import PlatformError
from hdrm.launcher import main
from hdrm.results.learning import read_episodes_csv

ROOT = Path(__file__).resolve().parents[2]
# a: one GPU for 1 h; b: half a GPU for 2 h, both at 0: 2 GPU-hours of MI210 at 1.0 USD/h
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "a,1000,1024,1,1000,AMD Instinct MI210,LS,Running,0,3600,0\n"
        "b,1000,1024,1,500,amd.com/gpu.product-name=AMD_Instinct_MI210,LS,Running,0,7200,0\n")


def _platform(model: str) -> dict:
    return {"name": "mi", "node_types": {"box": {
                "processors": [{"type": "xeon_gold_6148", "count": 1}], "memory_gb": 64,
                "accelerators": [{"type": model, "count": 2}]}},
            "clusters": [{"name": "c", "network": "ethernet_25g",
                          "nodes": [{"type": "box", "count": 1}]}]}


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "p.json").write_text(json.dumps(_platform("AMD Instinct MI210")))
    (tmp_path / "pods.csv").write_text(PODS)
    return tmp_path


def test_options_json_runs_the_spelled_platform_at_the_models_price(folder):
    (folder / "options.json").write_text(json.dumps({
        "workload_file_path": "pods.csv", "platform_file_path": "p.json",
        "pybatsim": {"log_level": "WARNING", "env": {"objective": "gpu_cost"},
                     "agent": {"type": "classic", "run": "test", "policy": "fifo-first_fit",
                               "episodes": 1}}}))
    out = folder / "out"
    assert main([str(ROOT / "agents" / "classic.py"), str(folder / "options.json"),
                 "--outdir", str(out)]) == 0
    assert read_episodes_csv(out / "episodes.csv").returns[0] == pytest.approx(-2.0, rel=1e-6)


def test_the_env_names_devices_and_task_models_by_the_library_key(folder):
    env = SchedulingEnv(platform_file=str(folder / "p.json"),
                        workload_file=str(folder / "pods.csv"))
    assert {a.type.name for a in env.platform.accelerators} == {"MI210"}
    assert [job.accel.models for job in env.trace.jobs] == [("MI210",), ("MI210",)]


def test_a_misspelled_model_stops_the_env_in_one_line(folder):
    (folder / "p.json").write_text(json.dumps(_platform("AMD Instinct MI21")))
    with pytest.raises(PlatformError) as err:
        SchedulingEnv(platform_file=str(folder / "p.json"),
                      workload_file=str(folder / "pods.csv"))
    assert "\n" not in str(err.value)
    assert str(err.value).startswith(
        f"{folder / 'p.json'}: node_types.box.accelerators[0].type: unknown accelerator type "
        "'AMD Instinct MI21'; did you mean 'MI210' (amd-instinct-mi210)")
