"""A hand-checked periodic pipeline on CPU cores and a GPU, shared by the DAG and env tests.

Graph ``p`` (period 10 s, relative deadline 8 s, one instance before the horizon 10 s)::

    a (cpu 2, CPU only) -> b (cpu 6, gpu 1)   transfer 0
    a                   -> c (cpu 3, gpu 2)   transfer 0
    b                   -> d (cpu 1, CPU only) transfer 0
    c                   -> d                   transfer 1

Platform: one node with 2 cores and, in the GPU variant, one T4.

With the GPU, costs are a 2, b 1, c 2, d 1: ``rank_u`` d 1, b 2, c 4, a 6; ``rank_d`` a 0, b 2,
c 2, d 5; ``rank_oct`` (types a cpu, b gpu, c gpu, d cpu) d 0, b 0+1+0 = 1, c 0+1+1 = 2,
a max(1+1, 2+2) = 4. heft_edf: a on a core 0-2; at 2, b and c are ready and both need the GPU:
c (rank 4) first, 2-4, then b 4-5; d is released at max(5 + 0, 4 + 1) = 5 and runs 5-6:
response 6 s, deadline met.

Without the GPU every task runs on a core for its CPU time: a 0-2, b 2-8 and c 2-5 on the two
cores, d released at max(8, 5 + 1) = 8, runs 8-9: response 9 s > 8 s, deadline missed.
"""

from __future__ import annotations

import json
from pathlib import Path

TASKSET = {
    "name": "hand", "horizon_s": 10.0,
    "graphs": [{"name": "p", "period_s": 10.0, "deadline_s": 8.0, "tasks": [
        {"name": "a", "cpu_s": 2.0, "gpu_s": None}, {"name": "b", "cpu_s": 6.0, "gpu_s": 1.0},
        {"name": "c", "cpu_s": 3.0, "gpu_s": 2.0}, {"name": "d", "cpu_s": 1.0, "gpu_s": None}],
        "edges": [["a", "b", 0.0], ["a", "c", 0.0], ["b", "d", 0.0], ["c", "d", 1.0]]}]}

#: (start, finish) per task, with and without the GPU.
GPU_SCHEDULE = {"a": (0.0, 2.0), "b": (4.0, 5.0), "c": (2.0, 4.0), "d": (5.0, 6.0)}
CPU_SCHEDULE = {"a": (0.0, 2.0), "b": (2.0, 8.0), "c": (2.0, 5.0), "d": (8.0, 9.0)}


def platform_doc(gpus: int, cores: int = 2) -> dict:
    """One node of ``cores`` cores and ``gpus`` T4 GPUs."""
    node = {"processors": [{"type": "cpu", "count": 1}], "memory_gb": 4}
    if gpus:
        node["accelerators"] = [{"type": "T4", "count": gpus}]
    return {"name": f"c{cores}g{gpus}", "processor_types": {"cpu": {
        "vendor": "hdrm", "model": "test", "year": 2024, "cores": cores, "clock_ghz": 2.0,
        "flops_per_cycle": 4, "mem_bw_gbps": 10, "tdp_w": 40}},
        "node_types": {"node": node},
        "clusters": [{"name": "c0", "network": "ethernet_10g",
                      "nodes": [{"type": "node", "count": 1}]}]}


def write_case(folder: Path, gpus: int = 1, cores: int = 2) -> tuple[Path, Path]:
    """Write the task set and a platform in ``folder``; returns their paths."""
    taskset = folder / "hand.json"
    taskset.write_text(json.dumps(TASKSET), encoding="utf-8")
    platform = folder / f"c{cores}g{gpus}.json"
    platform.write_text(json.dumps(platform_doc(gpus, cores)), encoding="utf-8")
    return taskset, platform
