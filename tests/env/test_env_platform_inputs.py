"""The Gymnasium environment on platform files users write (session 24, runs/s24f).

* A platform JSON with accelerators and a CPU workload (SWF, Batsim JSON): the environment is
  chosen by the workload's file name, so it was the CPU one over the GPU simulator the platform
  makes, and ``SchedulingEnv(...)`` (and hdeeprm-launch) died with ``AttributeError:
  'GpuDecisionCore' object has no attribute 'state'``. Now one ConfigError line.
* A SimGrid XML platform: the environment's cores run at the speed of their hosts' starting
  power state, as Batsim runs them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hdrm.env import SchedulingEnv
from hdrm.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
GPU_PLATFORM = {
    "processor_types": {"cpu": {"cores": 4, "clock_ghz": 2.0, "flops_per_cycle": 16,
                                "mem_bw_gbps": 50, "tdp_w": 100}},
    "node_types": {"gpu_node": {"processors": [{"type": "cpu", "count": 1}], "memory_gb": 128,
                                "accelerators": [{"type": "V100M32", "count": 4}]}},
    "clusters": [{"name": "g", "network": "ethernet_100g",
                  "nodes": [{"type": "gpu_node", "count": 2}]}],
}


@pytest.mark.parametrize("workload", ["sdsc_sp2_100_hetero.json", "lublin_256_first500.swf"])
def test_cpu_workload_on_a_gpu_platform_is_one_line(tmp_path, workload):
    platform = tmp_path / "gpus.json"
    platform.write_text(json.dumps(GPU_PLATFORM))
    with pytest.raises(ConfigError) as info:
        SchedulingEnv(platform_file=str(platform), workload_file=str(REPO / "workloads" / workload))
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"{platform}: a platform with 8 accelerators and a CPU workload")
    assert "an openb pod list (.csv) or a Gavel trace" in text


def test_simgrid_platform_cores_run_at_the_starting_power_state(tmp_path):
    platform = tmp_path / "p.xml"
    platform.write_text(
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        "<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">\n"
        '<host id="master_host" speed="1Gf"/>\n<host id="a" speed="10Gf, 5Gf"/>\n'
        '<host id="b" speed="10Gf, 5Gf" pstate="1"/>\n</zone></platform>\n')
    env = SchedulingEnv(platform_file=str(platform),
                        workload_file=str(REPO / "workloads" / "sdsc_sp2_100_hetero.json"))
    assert env.platform.core_gflops == (10.0, 5.0)
