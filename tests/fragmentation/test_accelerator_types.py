"""``hdrm fragmentation --accelerator-types``: price_aware prices a node list's models from a
user file and the type library (a Q100 node list stopped price_aware: 'not in the type
library')."""

from __future__ import annotations

import csv
import json

import pytest

from hdrm.cli.main import main

# 13 nodes of each model, 8 GPUs each: 208 GPUs, so a one-GPU task is under 1% of them
NODES = "sn,cpu_milli,memory_mib,gpu,model\n" + "".join(
    f"{model}-{i},64000,262144,8,{model}\n" for model in ("A100", "Q100") for i in range(13))
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "p0,1000,1024,1,1000,,LS,Running,0,10,0\n")


def _nodes_used(folder, price: float, tmp_path) -> set[int]:
    types = tmp_path / "t.json"
    types.write_text(json.dumps({"accelerator_types": {"Q100": {
        "memory_gb": 180, "idle_w": 100, "busy_w": 1000, "price_usd_per_hour": price}}}))
    out = tmp_path / f"out{price:g}"
    assert main(["fragmentation", "--nodes", str(folder / "nodes.csv"), "--pods",
                 str(folder / "pods.csv"), "--policy", "price_aware", "--seeds", "42",
                 "--outdir", str(out), "--accelerator-types", str(types)]) == 0
    with open(out / "curve_42.csv", newline="") as handle:
        return {int(row["node"]) for row in csv.DictReader(handle) if int(row["node"]) >= 0}


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "nodes.csv").write_text(NODES)
    (tmp_path / "pods.csv").write_text(PODS)
    return tmp_path


def test_price_aware_fills_the_cheaper_model_first(folder, tmp_path):
    # 1.3 x 208 GPUs of one-GPU tasks: the cheaper model's 104 GPUs fill first, then the other's
    cheap_q100 = _nodes_used(folder, 1.0, tmp_path)  # Q100 at 1.0 < A100 at 2.934 USD/h
    dear_q100 = _nodes_used(folder, 6.0, tmp_path)
    assert cheap_q100 == dear_q100 == set(range(26))  # every node ends up used ...
    first = {}
    for price in (1.0, 6.0):
        with open(tmp_path / f"out{price:g}" / "curve_42.csv", newline="") as handle:
            nodes = [int(row["node"]) for row in csv.DictReader(handle)]
        first[price] = set(nodes[:104])  # ... but the first 104 tasks go to one model
    assert first[1.0] == set(range(13, 26)) and first[6.0] == set(range(13))


def test_without_the_file_price_aware_names_the_model(folder, capsys):
    assert main(["fragmentation", "--nodes", str(folder / "nodes.csv"), "--pods",
                 str(folder / "pods.csv"), "--policy", "price_aware", "--seeds", "42",
                 "--outdir", str(folder / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "GPU model(s) Q100 not in the type library" in err
