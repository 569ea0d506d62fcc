"""benchmarks/gpu_analysis.py: why a task waits under a work-conserving pair, checked by hand on
a two-node cluster, and the pooled cluster of the counterfactual."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from benchmarks.gpu_analysis import Nodes, cause, demand_class, pooled_platform, wait_causes
from hdrm.core.gpu_scheduler import GpuPlacement
from hdrm.policies.gpu_state import TaskShape

#: a: 2 T4; b: 1 T4; c: no GPU
NODES = ("sn,cpu_milli,memory_mib,gpu,model\n"
         "a,8000,16384,2,T4\nb,8000,16384,1,T4\nc,4000,8192,0,\n")


@pytest.fixture
def nodes(tmp_path: Path) -> Nodes:
    path = tmp_path / "nodes.csv"
    path.write_text(NODES)
    return Nodes(str(path))


def placed(node: int, gpus: tuple[int, ...], start: float, run: float, count: int,
           milli: int = 1000) -> GpuPlacement:
    shape = TaskShape(cpu_milli=1000, memory_mib=1024, gpus=count, milli=milli)
    return GpuPlacement(node, gpus, gpus, shape, "T4", start, run)


def test_a_task_waits_for_capacity_then_for_fragmentation(nodes):
    """A holds a's GPU 0 for 100 s, B b's GPU for 50 s; D (2 GPUs, submitted at 0) starts on
    a at 100. From 0 to 50 one GPU is free in all (capacity); from 50 to 100 two are, one on
    each node (fragmented)."""
    placements = {0: placed(0, (0,), 0, 100, 1), 1: placed(1, (0,), 0, 50, 1),
                  2: placed(0, (0, 1), 100, 10, 2)}
    by_cause, by_class = wait_causes(nodes, placements, {0: 0.0, 1: 0.0, 2: 0.0})
    assert by_cause == {"capacity": 50.0, "fragmented": 50.0}
    assert by_class == {"2+ gpus": {"capacity": 50.0, "fragmented": 50.0, "total": 100.0}}


def test_cause_counts_only_gpus_with_a_large_enough_share(nodes):
    free = (nodes.cpu.copy(), nodes.mem.copy(), nodes.gpu_cap.astype(int).copy())
    free[2][0] = [400, 400]  # a: two GPUs with 0.4 free each
    free[2][1] = [0, 0]
    half = placed(0, (0,), 0, 1, 1, milli=500)
    assert cause(nodes, free, half) == "capacity"  # 0.8 GPU free in all, but no 0.5 share
    assert cause(nodes, free, placed(0, (0,), 0, 1, 1, milli=300)) == "fits"
    assert demand_class(half) == "shared"
    pinned = GpuPlacement(0, (0,), (0,), TaskShape(1000, 0, 1, 1000, ("V100",)), "V100", 0, 1)
    free[2][1] = [1000, 0]
    assert cause(nodes, free, pinned) == "capacity"  # no V100 node at all
    assert demand_class(pinned) == "1 gpu, pinned"


def test_pooled_platform_merges_the_nodes_of_each_model(nodes, tmp_path):
    path = pooled_platform(str(tmp_path / "nodes.csv"), str(tmp_path))
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["sn"], r["cpu_milli"], r["memory_mib"], r["gpu"], r["model"]) for r in rows] == [
        ("pooled-T4", "16000", "32768", "3", "T4"), ("pooled-cpu", "4000", "8192", "0", "")]
