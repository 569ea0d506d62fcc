"""Batsim cannot express GPUs: engine 'batsim' refuses a GPU platform in one line, before any
Batsim or decision process starts; the SimGrid export of the CPU part is unchanged."""

from __future__ import annotations

import json

import pytest
from batsim_helpers import REPO

from hdrm.batsim.engine import BatsimSession
from hdrm.batsim.process import run_batsim
from hdrm.cli.main import main
from hdrm.errors import ConfigError
from hdrm.platform.loader import load_platform
from hdrm.platform.simgrid import write_simgrid_xml
from hdrm.workload.job import Workload

SWF = REPO / "workloads" / "SDSC-SP2-1998-4.2-cln_first500.swf"
CPU_NODE = {"processors": [{"type": "xeon_gold_6148", "count": 2}], "memory_gb": 192}
GPU_NODE = {**CPU_NODE, "accelerators": [{"type": "V100M32", "count": 3}, {"type": "T4", "count": 1}]}


def _write(tmp_path, name, node_type):
    doc = {"name": "g", "node_types": {"n": node_type},
           "clusters": [{"name": "c", "network": "ethernet_25g",
                         "nodes": [{"type": "n", "count": 2}]}]}
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_replay_with_engine_batsim_refuses_a_gpu_platform_in_one_line(tmp_path, capsys):
    gpu = _write(tmp_path, "gpu.json", GPU_NODE)
    status = main(["replay", "--platform", str(gpu), "--workload", str(SWF), "--nb-jobs", "5",
                   "--outdir", str(tmp_path / "o"), "--engine", "batsim",
                   "--batsim", "/no/batsim"])  # refused before Batsim is even looked for
    out, err = capsys.readouterr()
    assert (status, out) == (2, "")
    assert err == (f"hdrm replay: error: {gpu}: 8 GPUs (6 V100M32, 2 T4); Batsim cannot express "
                   "GPUs (its platforms have compute hosts only), so engine 'batsim' cannot run "
                   "this platform: use engine 'builtin', or 'hdrm fragmentation' to place GPU "
                   "tasks\n")
    assert not (tmp_path / "o").exists()


def test_every_batsim_entry_point_refuses_before_starting_anything(tmp_path):
    platform = load_platform(_write(tmp_path, "gpu.json", GPU_NODE))
    with pytest.raises(ConfigError, match="Batsim cannot express GPUs"):
        BatsimSession(platform, Workload([]), tmp_path / "s", scheduler=None, binary="/no/batsim")
    with pytest.raises(ConfigError, match="Batsim cannot express GPUs"):
        run_batsim(platform, Workload([]), tmp_path / "r", scheduler=None, binary="/no/batsim")
    assert not (tmp_path / "s").exists() and not (tmp_path / "r").exists()


def test_the_simgrid_export_of_a_gpu_platform_is_its_cpu_part(tmp_path):
    gpu = load_platform(_write(tmp_path, "gpu.json", GPU_NODE))
    cpu = load_platform(_write(tmp_path, "cpu.json", CPU_NODE))
    assert len(gpu.accelerators) == 8 and not cpu.accelerators
    assert (write_simgrid_xml(gpu, tmp_path / "gpu.xml").read_text()
            == write_simgrid_xml(cpu, tmp_path / "cpu.xml").read_text())
