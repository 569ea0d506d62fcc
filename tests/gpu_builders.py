"""Helpers for GPU tests: tiny GPU platforms (as openb node rows) and GPU tasks built in code.

Nodes are ``(cores, memory MiB, GPUs, model)``; they go through ``platform_json_from_openb`` and
the platform loader, so each core has the openb assumptions' 4 W full power (idle 30%: 1.2 W,
busy adds 2.8 W) and GPUs the library's figures (V100M16: idle 40 W, busy 300 W, 2.48 USD/h;
T4: 10 W, 70 W, 0.35 USD/h).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

from hdrm.platform.loader import platform_from_dict
from hdrm.platform.model import Platform
from hdrm.platform.openb import platform_json_from_openb
from hdrm.sim.engine import Simulation, SimulationConfig, SimulationResult
from hdrm.workload.job import AcceleratorDemand, Job, Workload
from hdrm.workload.openb import OpenbNode


def gpu_platform(nodes: Sequence[tuple[int, int, int, str]], name: str = "tiny") -> Platform:
    """A platform of ``(cores, memory MiB, GPUs, model)`` nodes named ``openb-n0``, ... (the
    node rows' names, kept by the platform)."""
    rows = [OpenbNode(f"openb-n{i}", cores * 1000, mem, gpus, model if gpus else "")
            for i, (cores, mem, gpus, model) in enumerate(nodes)]
    return platform_from_dict(platform_json_from_openb(rows, name), source=f"<{name}>")


def task(idx: int, submit_s: float, run_s: float, gpus: int = 0, milli: int = 1000,
         models: tuple[str, ...] = (), cpu_milli: int = 1000, mem_mib: int = 0,
         tenant: str = "") -> Job:
    """A GPU task (a CPU-only task with ``gpus`` 0)."""
    res = max(1, math.ceil(cpu_milli / 1000))
    extra = {"tenant": tenant} if tenant else {}
    return Job(idx=idx, id=idx, submit_s=submit_s, res=res, walltime_s=math.inf,
               run_time_s=run_s, mem_mb=mem_mib / res, profile="gpu", extra=extra,
               cpu_milli=cpu_milli,
               accel=AcceleratorDemand(gpus, milli, models) if gpus else None)


def replay(platform: Platform, jobs: list[Job], policy: str = "fifo-first_fit",
           backfilling: str = "none", seed: int = 0, ties: str = "name") -> SimulationResult:
    """Run the jobs to the end with a GPU policy (name order ties: hand-checkable)."""
    sim = Simulation(platform, Workload(jobs, name="w"), SimulationConfig(backfilling=backfilling,
                                                                          seed=seed), ties=ties)
    return sim.run(policy)


def check_capacities(nodes: Sequence[tuple[int, int, int, str]], placed: dict) -> None:
    """At every start, the tasks running on each node of ``nodes`` (cores, memory MiB, GPUs,
    model) fit its CPU, its memory and each GPU's 1,000 milli-GPU (``placed``: the placements of
    a GPU replay by task index)."""
    for t in sorted({p.start_s for p in placed.values()}):
        live = [p for p in placed.values() if p.start_s <= t < p.start_s + p.run_s]
        for n, (cores, mem, gpus, _) in enumerate(nodes):
            here = [p for p in live if p.node == n]
            assert sum(p.shape.cpu_milli for p in here) <= cores * 1000
            assert sum(p.shape.memory_mib for p in here) <= mem
            for g in range(gpus):
                assert sum(p.shape.milli for p in here if g in p.gpus) <= 1000


ROOT = Path(__file__).resolve().parents[1]
#: The 41-node openb sample and 400 of its pods (workloads/): a real slice for env tests.
SLICE = dict(platform_file=str(ROOT / "workloads" / "openb_nodes_41.csv"),
             workload_file=str(ROOT / "workloads" / "openb_pods_400.csv"))
#: a: 8 cores, 2 T4 (0.35 USD/h); b: 8 cores, 1 V100M32 (3.90 USD/h)
TINY_NODES = "sn,cpu_milli,memory_mib,gpu,model\na,8000,16384,2,T4\nb,8000,16384,1,V100M32\n"
#: t1: 1 GPU for 1 h, t2: half a GPU for 2 h, both at 0; t3: 1 core, no GPU, 30 min from 100 s
TINY_PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
             "deletion_time,scheduled_time\n"
             "t1,2000,1024,1,1000,,LS,Succeeded,0,3600,0\n"
             "t2,4000,2048,1,500,,LS,Succeeded,0,7200,0\n"
             "t3,1000,1024,0,0,,BE,Succeeded,100,1900,100\n")


def write_tiny(folder: Path, nodes: str = TINY_NODES, pods: str = TINY_PODS) -> dict:
    """Write an openb node list and pod list into ``folder``; the env settings naming them."""
    (folder / "nodes.csv").write_text(nodes)
    (folder / "pods.csv").write_text(pods)
    return dict(platform_file=str(folder / "nodes.csv"), workload_file=str(folder / "pods.csv"))
