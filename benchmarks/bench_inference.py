"""Time the multi-tenant DNN inference scenario: N requests through the built-in engine.

Generates ``--requests`` requests (default 1,000,000) from a tenant spec (default the shipped
``hdrm/data/inference_tenants.json``, seed 1) in memory, then replays them on the shipped
inference platform (16 accelerator cores, 4 accelerators sharing HBM bandwidth, ``hdeeprm``
contention) with each policy of ``--policies``, with the spec's tenants and SLA classes bound
to the SLA orders. Prints, per policy, the CPU seconds (``time.process_time``) of the simulation
alone (generation and the tenant table are timed apart; the timeline of every decision
instant recorded, as ``hdrm replay`` does, unless ``--no-timeline``), requests per CPU second,
the SLA satisfaction and the energy per request (the run's energy, idle power included, over
its requests). Target (issue 21): 1M requests simulate in <= 20 s.

Usage::

    python benchmarks/bench_inference.py [--requests 1000000] [--policies fcfs,edf]
        [--spec SPEC.json] [--seed S] [--no-timeline] [--json OUT.json] [--target 20]

Exit status 1 when a simulation takes more than ``--target`` CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's hdrm, installed or not

from hdrm.platform.loader import load_platform  # noqa: E402
from hdrm.policies.pairs import resolve_policy  # noqa: E402
from hdrm.policies.sla_orders import bind_tenants  # noqa: E402
from hdrm.results.sla import report_from_outcomes  # noqa: E402
from hdrm.sim.engine import Simulation, SimulationConfig  # noqa: E402
from hdrm.workload.inference import generate_inference, load_spec, tenant_spec  # noqa: E402
from hdrm.workload.tenants import build_tenants  # noqa: E402

DATA = ROOT / "hdrm" / "data"


def run_policy(platform, workload, table, policy: str, contention: str,
               timeline: bool = True) -> dict:
    """Simulate ``workload`` under ``policy``; the figures of one row."""
    config = SimulationConfig(contention=contention, record_timeline=timeline)
    sim = Simulation(platform, workload, config)
    pair = bind_tenants(resolve_policy(policy, "--policies"), table, sim.core)
    start = time.process_time()
    result = sim.run(pair)
    cpu_s = time.process_time() - start
    overall = report_from_outcomes(table, workload.jobs, result.outcomes).overall
    n = len(workload)
    return {"policy": pair.name, "timeline": timeline, "requests": n, "cpu_s": round(cpu_s, 3),
            "requests_per_cpu_s": round(n / cpu_s), "sla_satisfaction": overall.sla_satisfaction,
            "energy_per_request_j": result.energy_j / n}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns 1 when a simulation misses ``--target``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--policies", default="fcfs,edf")
    parser.add_argument("--spec", default=str(DATA / "inference_tenants.json"))
    parser.add_argument("--platform", default=str(DATA / "inference_platform.json"))
    parser.add_argument("--contention", default="hdeeprm")
    parser.add_argument("--no-timeline", dest="timeline", action="store_false",
                        help="do not record the per-instant timeline (hdrm replay records it)")
    parser.add_argument("--seed", type=int, default=None, help="default: the spec's seed")
    parser.add_argument("--target", type=float, default=20.0, help="CPU seconds per simulation")
    parser.add_argument("--json", metavar="OUT.json")
    args = parser.parse_args(argv)
    spec = load_spec(args.spec)
    start = time.process_time()
    workload = generate_inference(spec, args.seed, args.requests)
    table = build_tenants(workload.jobs, tenant_spec(spec))
    print(f"generated {len(workload):,} requests of {len(spec.tenants)} tenants "
          f"({workload.jobs[-1].submit_s:.1f} s of arrivals) in "
          f"{time.process_time() - start:.2f} CPU s")
    platform = load_platform(args.platform)
    rows = [run_policy(platform, workload, table, p.strip(), args.contention, args.timeline)
            for p in args.policies.split(",")]
    print(f"{'policy':<20} {'CPU s':>7} {'requests/CPU s':>15} {'SLA met':>8} {'J/request':>10}")
    for row in rows:
        print(f"{row['policy']:<20} {row['cpu_s']:>7.2f} {row['requests_per_cpu_s']:>15,} "
              f"{100 * row['sla_satisfaction']:>7.2f}% {row['energy_per_request_j']:>10.4f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"command": " ".join(sys.argv), "rows": rows},
                                              indent=1) + "\n", encoding="utf-8")
    return 1 if any(row["cpu_s"] > args.target for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
