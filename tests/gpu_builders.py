"""Helpers for GPU tests: tiny GPU platforms (as openb node rows) and GPU tasks built in code.

Nodes are ``(cores, memory MiB, GPUs, model)``; they go through ``platform_json_from_openb`` and
the platform loader, so each core has the openb assumptions' 4 W full power (idle 30%: 1.2 W,
busy adds 2.8 W) and GPUs the library's figures (V100M16: idle 40 W, busy 300 W, 2.48 USD/h;
T4: 10 W, 70 W, 0.35 USD/h).
"""

from __future__ import annotations

import math
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
