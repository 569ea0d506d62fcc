"""options.json ``accelerator_types_path``: the GPU environment reads a node list of a user
GPU model (it stopped with 'unknown GPU model')."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hdrm.env import SchedulingEnv
from hdrm.env.gpu_env import GpuSchedulingEnv
from hdrm.errors import ConfigError, PlatformError
from hdrm.launcher import main
from hdrm.results.learning import read_episodes_csv

ROOT = Path(__file__).resolve().parents[2]
NODES = "sn,cpu_milli,memory_mib,gpu,model\nb0,8000,16384,2,Q100\n"
# a: one GPU for 1 h; b: half a GPU for 2 h, both at 0: 2 GPU-hours at 36 USD/h = 72 USD
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "a,1000,1024,1,1000,,LS,Running,0,3600,0\n"
        "b,1000,1024,1,500,,LS,Running,0,7200,0\n")
TYPES = {"accelerator_types": {"Q100": {"memory_gb": 180, "idle_w": 100, "busy_w": 1000,
                                        "price_usd_per_hour": 36.0}}}


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "nodes.csv").write_text(NODES)
    (tmp_path / "pods.csv").write_text(PODS)
    (tmp_path / "types.json").write_text(json.dumps(TYPES))
    return tmp_path


def test_options_json_names_the_file_and_the_cost_is_the_files_price(folder):
    (folder / "options.json").write_text(json.dumps({
        "workload_file_path": "pods.csv", "platform_file_path": "nodes.csv",
        "accelerator_types_path": "types.json",
        "pybatsim": {"log_level": "WARNING", "env": {"objective": "gpu_cost"},
                     "agent": {"type": "classic", "run": "test", "policy": "fifo-first_fit",
                               "episodes": 1}}}))
    out = folder / "out"
    assert main([str(ROOT / "agents" / "classic.py"), str(folder / "options.json"),
                 "--outdir", str(out)]) == 0
    assert read_episodes_csv(out / "episodes.csv").returns[0] == pytest.approx(-72.0, rel=1e-6)


def test_the_env_setting_and_its_refusals(folder):
    files = dict(platform_file=str(folder / "nodes.csv"), workload_file=str(folder / "pods.csv"))
    env = SchedulingEnv(**files, accelerator_types=str(folder / "types.json"))
    assert isinstance(env, GpuSchedulingEnv)
    assert {a.type.name for a in env.platform.accelerators} == {"Q100"}
    with pytest.raises(PlatformError, match=r"unknown GPU model 'Q100' .*--accelerator-types"):
        SchedulingEnv(**files)
    with pytest.raises(ConfigError, match=r"^accelerator_types: .*types\.json adds GPU models, "
                       r"but the inputs are not GPU inputs"):
        SchedulingEnv(platform_file=str(ROOT / "platforms" / "tiny4.json"),
                      workload_file=str(ROOT / "workloads" / "SDSC-SP2-1998-4.2-cln_first500.swf"),
                      accelerator_types=str(folder / "types.json"))
