"""Speed and memory of the built-in engine.

Cases (each in its own subprocess, so peak memory is the case's own):

* ``sdsc-easy``: the full SDSC-SP2 trace (59,715 jobs; 59,705 kept by the rlscheduler conventions) on 128 identical processors, FCFS + EASY,
  no contention (target: < 5 s, < 500 MB);
* ``sdsc-hetero``: the same trace on platforms/large.json (2,000+ cores, 3+ processor types) with
  the hdeeprm contention model and the pair shortest-high_mem_bw (target: < 20 s);
* ``scale-10k``, ``scale-60k``, ``scale-200k``: synthetic workloads (offered load 0.9 on 128 cores),
  FCFS + EASY: time should grow about linearly with the number of jobs.

Every case also times a *baseline* in the same process: a bare discrete-event loop over the same
jobs (a heap of submissions and completions, FCFS on a free-core counter, no hierarchy, no power),
so figures can be compared across machines as ratios.

Usage::

    python benchmarks/bench_sim.py [--traces DIR] [--cases sdsc-easy,scale-60k] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import heapq
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACES = ROOT.parent / "shared" / "traces"
CASES = ("sdsc-easy", "sdsc-hetero", "scale-10k", "scale-60k", "scale-200k")


def bare_loop(jobs) -> float:
    """Baseline: FCFS on a free-core counter with a heap of events; returns the wall time."""
    t0 = time.perf_counter()
    nb = max(j.res for j in jobs)
    free, queue, heap, seq, i = nb, [], [], 0, 0
    n = len(jobs)
    while i < n or heap:
        t = min(jobs[i].submit_s if i < n else float("inf"), heap[0][0] if heap else float("inf"))
        while heap and heap[0][0] <= t:
            free += heapq.heappop(heap)[2]
        while i < n and jobs[i].submit_s <= t:
            queue.append(jobs[i])
            i += 1
        while queue and queue[0].res <= free:
            job = queue.pop(0)
            free -= job.res
            seq += 1
            heapq.heappush(heap, (t + job.run_time_s, seq, job.res))
    return time.perf_counter() - t0


def run_case(case: str, traces: Path) -> dict:
    """Run one case in this process and return its figures."""
    import numpy as np

    from hdrm.platform.loader import load_platform
    from hdrm.platform.model import Platform
    from hdrm.sim.engine import Simulation, SimulationConfig
    from hdrm.workload.generate import generate_workload
    from hdrm.workload.requirements import attach_requirements
    from hdrm.workload.swf import read_swf

    t0 = time.perf_counter()
    if case.startswith("sdsc"):
        workload = read_swf(traces / "SDSC-SP2-1998-4.2-cln.swf.gz", "rlscheduler", keep_fields=False)
    else:
        n = {"scale-10k": 10_000, "scale-60k": 60_000, "scale-200k": 200_000}[case]
        workload = generate_workload(n, 128, np.random.default_rng(1), load=0.9)
    load_s = time.perf_counter() - t0
    if case == "sdsc-hetero":
        platform = load_platform(ROOT / "platforms" / "large.json")
        workload = attach_requirements(workload, platform.reference_gflops, np.random.default_rng(0))
        config = SimulationConfig(contention="hdeeprm", backfilling="easy", record_timeline=True)
        policy = "shortest-high_mem_bw"
    else:
        platform = Platform.homogeneous(128)
        config = SimulationConfig(contention="none", backfilling="easy", record_timeline=True)
        policy = "fcfs"
    t1 = time.perf_counter()
    result = Simulation(platform, workload, config).run(policy)
    sim_s = time.perf_counter() - t1
    base_s = bare_loop(workload.jobs if case != "sdsc-hetero" else [j for j in workload.jobs if j.res <= 128])
    return {
        "case": case, "jobs": len(workload), "cores": platform.nb_cores, "load_s": round(load_s, 3),
        "sim_s": round(sim_s, 3), "total_s": round(load_s + sim_s, 3),
        "jobs_per_s": round(len(workload) / sim_s), "baseline_s": round(base_s, 3),
        "ratio_to_baseline": round(sim_s / base_s, 2), "decisions": result.decisions,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_sim.py",
                                     description="Speed and memory of the built-in engine.")
    parser.add_argument("--traces", default=str(DEFAULT_TRACES), help="folder of the SWF traces")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one case, print JSON
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_case(args.one, Path(args.traces))))
        return 0
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in CASES]
    if unknown or not cases:
        parser.error(f"--cases {args.cases!r}: unknown case {(unknown or [''])[0]!r}; choose "
                     f"among: {', '.join(CASES)}")
    sdsc = Path(args.traces) / "SDSC-SP2-1998-4.2-cln.swf.gz"
    if any(c.startswith("sdsc") for c in cases) and not sdsc.is_file():
        parser.error(f"--traces {args.traces}: no {sdsc.name} there; give the folder of the SWF "
                     "traces (../shared/traces)")
    rows = []
    for case in cases:  # each in a fresh process, for its peak memory
        out = subprocess.run([sys.executable, __file__, "--one", case, "--traces", args.traces],
                             capture_output=True, text=True)
        if out.returncode:
            lines = (out.stderr or out.stdout).strip().splitlines() or ["no output"]
            print(f"bench_sim.py: error: case {case}: {lines[-1]}", file=sys.stderr)
            return 2
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    cols = ("case", "jobs", "cores", "load_s", "sim_s", "total_s", "jobs_per_s", "baseline_s",
            "ratio_to_baseline", "peak_rss_mb")
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for row in rows:
        print("| " + " | ".join(str(row[c]) for c in cols) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    from hdrm.cli.script import guarded

    sys.exit(guarded(main))
