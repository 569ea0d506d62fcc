"""The batsim engine on a CEA-Curie-sized platform: peak memory and wall time.

Builds an hdrm platform JSON shaped like CEA's Curie (the machine of the Parallel Workloads
Archive's CEA-Curie-2011 trace, whose header gives MaxProcs 93,312): 5,040 thin nodes of two
8-core Sandy Bridge processors at 2.7 GHz, 360 fat nodes of four 8-core Nehalem-EX at 2.26 GHz
and 144 hybrid nodes of two 4-core Westmere at 2.67 GHz (their GPUs left out: Batsim platforms
have none), on InfiniBand QDR (``--scale`` multiplies every node count). Then writes a seeded
Batsim JSON workload of ``--jobs`` jobs (``parallel_homogeneous``, ``com`` 0: sizes log-uniform
from 1 core to ``--max-procs``, by default the whole machine, work of 60 s to 2 h at the thin
cores' speed, Poisson arrivals every 60 s on average), and replays it in this process with
``hdrm replay --engine batsim`` (FCFS, EASY backfilling). Prints the platform's cores, the XML's
size, the wall time, and the peak resident memory and CPU time of Batsim and of this Python
process (the decision process), from ``getrusage``. Batsim must be on the PATH, or ``--batsim``.

Usage::

    python benchmarks/batsim_large_platform.py --outdir OUT [--scale 1.0] [--jobs 300]
                                               [--seed 1] [--max-procs N] [--batsim PATH]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import sys
import time
from pathlib import Path

from hdrm.cli import script as cli
from hdrm.errors import ConfigError

#: Curie's partitions: (name, node count, processors, cores each, GHz, flops/cycle, TDP W,
#: memory GB, memory GB/s per processor).
PARTITIONS = (
    ("thin", 5040, 2, 8, 2.7, 8, 130, 64, 51.2),
    ("fat", 360, 4, 8, 2.26, 4, 130, 128, 34.1),
    ("hybrid", 144, 2, 4, 2.67, 4, 80, 24, 25.6),
)


def curie_platform(scale: float = 1.0) -> dict:
    """The platform JSON document (93,312 cores at scale 1)."""
    doc: dict = {"name": f"curie_x{scale:g}", "processor_types": {}, "node_types": {},
                 "network_types": {"infiniband_qdr": {"bandwidth_gbps": 40, "latency_us": 1.3}},
                 "clusters": []}
    for name, nodes, procs, cores, ghz, fpc, tdp, mem, bw in PARTITIONS:
        doc["processor_types"][f"{name}_cpu"] = {
            "cores": cores, "clock_ghz": ghz, "flops_per_cycle": fpc, "mem_bw_gbps": bw,
            "tdp_w": tdp}
        doc["node_types"][f"{name}_node"] = {
            "processors": [{"type": f"{name}_cpu", "count": procs}], "memory_gb": mem}
        count = max(1, round(nodes * scale))
        doc["clusters"].append({"name": name, "network": "infiniband_qdr",
                                "nodes": [{"type": f"{name}_node", "count": count}]})
    return doc


def workload(nb_cores: int, nb_jobs: int, seed: int, ref_gflops: float,
             max_procs: int | None = None) -> dict:
    """A seeded Batsim JSON workload of compute-only parallel jobs."""
    rng = random.Random(seed)
    jobs, profiles, t = [], {}, 0.0
    widest = min(nb_cores, max_procs or nb_cores)
    for i in range(nb_jobs):
        t += rng.expovariate(1 / 60.0)
        res = min(widest, max(1, round(math.exp(rng.uniform(0, math.log(widest))))))
        seconds = rng.uniform(60, 7200)
        name = f"p{i}"
        profiles[name] = {"type": "parallel_homogeneous", "cpu": seconds * ref_gflops * 1e9,
                          "com": 0}
        jobs.append({"id": i, "subtime": round(t, 3), "res": res, "profile": name,
                     "walltime": round(2 * seconds)})
    return {"nb_res": nb_cores, "jobs": jobs, "profiles": profiles}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outdir", required=True, type=Path)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-procs", type=int, default=None)
    parser.add_argument("--batsim", default=None)
    args = parser.parse_args(argv)
    if not args.scale > 0 or args.jobs < 1 or (args.max_procs is not None and args.max_procs < 1):
        raise ConfigError(f"--scale must be > 0, --jobs and --max-procs >= 1; got --scale "
                          f"{args.scale:g}, --jobs {args.jobs}, --max-procs {args.max_procs}")
    from hdrm.cli.main import main as hdrm_main
    from hdrm.platform.loader import load_platform

    args.outdir.mkdir(parents=True, exist_ok=True)
    plat_path = args.outdir / "curie.json"
    plat_path.write_text(json.dumps(curie_platform(args.scale), indent=1))
    platform = load_platform(plat_path)
    wl_path = args.outdir / "workload.json"
    wl_path.write_text(json.dumps(workload(platform.nb_cores, args.jobs, args.seed, 21.6,
                                          args.max_procs)))
    cmd = ["replay", "--platform", str(plat_path), "--workload", str(wl_path), "--policy",
           "fcfs", "--backfill", "easy", "--engine", "batsim", "--outdir",
           str(args.outdir / "out"), "--overwrite", "--quiet"]
    if args.batsim:
        cmd += ["--batsim", args.batsim]
    start = time.perf_counter()
    code = hdrm_main(cmd)
    wall = time.perf_counter() - start
    own, child = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                     resource.RUSAGE_CHILDREN))
    xml = args.outdir / "out" / "platform.xml"
    size = xml.stat().st_size / 1e6 if xml.exists() else float("nan")
    print(f"cores {platform.nb_cores}  jobs {args.jobs}  exit {code}  wall {wall:.1f} s  "
          f"platform.xml {size:.1f} MB  batsim: peak RSS {child.ru_maxrss / 1e6:.2f} GB, CPU "
          f"{child.ru_utime + child.ru_stime:.1f} s  python (decisions): peak RSS "
          f"{own.ru_maxrss / 1e6:.2f} GB, CPU {own.ru_utime + own.ru_stime:.1f} s", flush=True)
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
