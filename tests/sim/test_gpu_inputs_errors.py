"""A bad openb node row is an error that names file, line and value and offers no skip: a
platform's nodes are never skipped, whichever command reads them (issue 19)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hdrm import launcher
from hdrm.cli.main import main
from hdrm.errors import WorkloadError
from hdrm.sim.gpu_inputs import load_gpu_platform
from hdrm.workload.swf import SkippableLineError

ROOT = Path(__file__).resolve().parents[2]
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\na,1000,1024,1,1000,,LS,Running,0,100,0\n")


def _inputs(folder: Path) -> tuple[Path, Path]:
    nodes, pods = folder / "nodes.csv", folder / "pods.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\ngood,4000,16384,1,T4\n"
                     "bad,lots,16384,1,T4\n")
    pods.write_text(PODS)
    return nodes, pods


def _says_fix_the_row_only(message: str, nodes: Path) -> None:
    assert f"{nodes}:3: column 'cpu_milli'" in message and "'lots'" in message
    assert message.rstrip().endswith("fix the row")
    assert "strict" not in message and "skip" not in message


def test_load_gpu_platform_refuses_a_bad_node_row_without_a_skip(tmp_path):
    nodes, _ = _inputs(tmp_path)
    with pytest.raises(WorkloadError) as info:
        load_gpu_platform(nodes)
    assert not isinstance(info.value, SkippableLineError)  # no caller may relax it
    _says_fix_the_row_only(str(info.value), nodes)


def test_hdrm_sweep_says_fix_the_row(tmp_path, capsys):
    _inputs(tmp_path)
    sweep = tmp_path / "sweep.json"
    sweep.write_text(json.dumps({"policies": ["fifo-first_fit"], "platforms": ["nodes.csv"],
                                 "traces": ["pods.csv"], "seeds": [0]}))
    assert main(["sweep", str(sweep), "--outdir", str(tmp_path / "out"), "--backend",
                 "serial", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    _says_fix_the_row_only(err, tmp_path / "nodes.csv")


def test_hdeeprm_launch_says_fix_the_row(tmp_path, capsys):
    _inputs(tmp_path)
    options = tmp_path / "options.json"
    options.write_text(json.dumps({
        "workload_file_path": "pods.csv", "platform_file_path": "nodes.csv",
        "pybatsim": {"env": {"objective": "gpu_cost"},
                     "agent": {"type": "classic", "run": "test", "policy": "fifo-best_fit",
                               "episodes": 1}}}))
    assert launcher.main([str(ROOT / "agents" / "classic.py"), str(options), "--outdir",
                          str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    _says_fix_the_row_only(err, tmp_path / "nodes.csv")
