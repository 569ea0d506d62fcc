"""A sweep file's ``accelerator_types``: extra GPU models for the openb node lists it replays on."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from hdrm.distributed.spec import expand, load_sweep
from hdrm.distributed.sweep import run_sweep
from hdrm.errors import ConfigError, PlatformError

NODES = "sn,cpu_milli,memory_mib,gpu,model\nb0,4000,16384,1,Q100\n"
# one Q100: a holds it 0..100, b waits until 100 and runs 50 s: 150 GPU-s at 36 USD/h = 1.5 USD
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "a,1000,1024,1,1000,,LS,Running,0,100,0\n"
        "b,1000,1024,1,1000,,LS,Running,1,51,1\n")
Q100 = {"memory_gb": 180, "idle_w": 100, "busy_w": 1000, "price_usd_per_hour": 36.0}


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "nodes.csv").write_text(NODES)
    (tmp_path / "pods.csv").write_text(PODS)
    (tmp_path / "types.json").write_text(json.dumps({"accelerator_types": {"Q100": Q100}}))
    return tmp_path


def _sweep(folder, **extra):
    sweep = folder / "sweep.json"
    sweep.write_text(json.dumps({"policies": ["fifo-first_fit"], "platforms": ["nodes.csv"],
                                 "traces": ["pods.csv"], "seeds": [0], **extra}))
    return sweep


def test_a_sweep_replays_a_node_list_of_a_user_model(folder):
    report = run_sweep(_sweep(folder, accelerator_types="types.json"), folder / "out",
                       backend="serial", progress=False)
    assert (report.nb_runs, report.nb_run) == (1, 1)
    with open(folder / "out" / "results.csv", newline="") as handle:
        row = next(csv.DictReader(handle))
    assert float(row["mean_jct_s"]) == pytest.approx((100 + 149) / 2)
    assert float(row["gpu_cost_usd"]) == pytest.approx(150 * 36.0 / 3600)


def test_without_the_file_the_run_fails_in_one_line(folder):
    with pytest.raises(PlatformError, match=r"unknown GPU model 'Q100' .*--accelerator-types"):
        run_sweep(_sweep(folder), folder / "out", backend="serial", progress=False)


def test_only_node_list_runs_carry_the_file_in_their_digest(folder):
    plain = expand(load_sweep(_sweep(folder)))[0]
    typed = expand(load_sweep(_sweep(folder, accelerator_types="types.json")))[0]
    assert "accelerator_types" not in plain.to_json()  # older runs keep their names
    assert typed.accelerator_types == str(folder / "types.json")
    assert typed.digest() != plain.digest()


def test_a_bad_file_fails_when_the_sweep_is_read(folder):
    (folder / "types.json").write_text(json.dumps({"accelerator_types": {"Q100": {
        **Q100, "price_usd_per_hour": -1}}}))
    with pytest.raises(PlatformError, match=r"types\.json: accelerator_types\.Q100\."
                       r"price_usd_per_hour: expected a number >= 0, got -1"):
        load_sweep(_sweep(folder, accelerator_types="types.json"))


def test_the_file_needs_a_node_list(folder):
    sweep = folder / "sweep.json"
    sweep.write_text(json.dumps({
        "policies": ["fcfs"], "platforms": [str(Path("platforms/tiny4.json").resolve())],
        "traces": [str(Path("workloads/SDSC-SP2-1998-4.2-cln_first500.swf").resolve())],
        "accelerator_types": "types.json"}))
    with pytest.raises(ConfigError, match=r"accelerator_types: no platform is an openb node list"):
        load_sweep(sweep)
