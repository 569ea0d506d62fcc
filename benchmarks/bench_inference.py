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

With ``--env MODES`` (``job_pick``, ``policy_pair`` or both), it also times the Gymnasium
environment on the same requests (written to a temporary Batsim JSON workload and tenants file,
as ``hdrm workload inference`` writes them) with the ``sla_satisfaction`` objective, the spec's
tenants and SLA classes: ``--env-episodes`` episodes of ``--env-jobs`` requests from seeded
random starts, random valid actions (``job_pick``: a window of 128 requests; ``policy_pair``:
the SLA orders and FCFS, each with ``high_gflops``), and prints environment steps per CPU
second, resets included. Target (issue 21): >= 5,000 steps per CPU second.

Usage::

    python benchmarks/bench_inference.py [--requests 1000000] [--policies fcfs,edf]
        [--spec SPEC.json] [--seed S] [--no-timeline] [--json OUT.json] [--target 20]
        [--env job_pick,policy_pair] [--env-jobs 1024] [--env-episodes 5]
        [--env-target 5000]

``--policies ''`` skips the replays. Exit status 1 when a simulation takes more than
``--target`` CPU seconds or an environment makes fewer than ``--env-target`` steps per CPU
second.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's hdrm, installed or not

from hdrm.env import SchedulingEnv  # noqa: E402
from hdrm.platform.loader import load_platform  # noqa: E402
from hdrm.policies.pairs import resolve_policy  # noqa: E402
from hdrm.policies.sla_orders import bind_tenants  # noqa: E402
from hdrm.results.sla import report_from_outcomes  # noqa: E402
from hdrm.sim.engine import Simulation, SimulationConfig  # noqa: E402
from hdrm.workload.batsim_json import write_batsim_json  # noqa: E402
from hdrm.workload.inference import (generate_inference, load_spec, tenant_spec,  # noqa: E402
                                     tenants_document)
from hdrm.workload.tenants import build_tenants  # noqa: E402
from hdrm.cli import script as cli  # noqa: E402

DATA = ROOT / "hdrm" / "data"
#: The actions of the ``policy_pair`` environment case: the SLA orders and FCFS.
SLA_PAIRS = ("edf-high_gflops", "least_laxity-high_gflops", "fair_share-high_gflops",
             "sla_class-high_gflops", "fcfs-high_gflops")


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


def env_case(mode: str, workload_file: Path, tenants_file: Path, platform: str, jobs: int,
             episodes: int) -> dict:
    """Random valid actions in ``mode`` for ``episodes`` episodes of ``jobs`` requests; the
    figures of one row (CPU seconds of the whole loop: resets, steps and the random draws)."""
    settings = {"selection": SLA_PAIRS} if mode == "policy_pair" else {"window": 128}
    env = SchedulingEnv(workload_file=str(workload_file), platform_file=platform,
                        tenants=str(tenants_file), objective="sla_satisfaction", mode=mode,
                        nb_jobs=jobs, start_index="random", seed=0, **settings)
    rng = np.random.default_rng(0)
    steps, met = 0, []
    start = time.process_time()
    for episode in range(episodes):
        _, info = env.reset(seed=episode)
        done = env.sim.done
        while not done:
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            _, _, done, _, info = env.step(action)
            steps += 1
        met.append(env.sla_report().overall.sla_satisfaction)
    cpu_s = time.process_time() - start
    return {"mode": mode, "actions": int(env.action_space.n), "episodes": episodes,
            "jobs": jobs, "steps": steps, "cpu_s": round(cpu_s, 3),
            "steps_per_cpu_s": round(steps / cpu_s), "sla_satisfaction": float(np.mean(met))}


def env_rows(modes: str, spec, workload, args: argparse.Namespace) -> list[dict]:
    """The ``--env`` cases on ``workload`` (written to a temporary folder)."""
    with tempfile.TemporaryDirectory(prefix="bench_inference_") as folder:
        workload_file, tenants_file = Path(folder) / "workload.json", Path(folder) / "tenants.json"
        write_batsim_json(workload, workload_file)
        tenants_file.write_text(json.dumps(tenants_document(spec)), encoding="utf-8")
        rows = [env_case(mode.strip(), workload_file, tenants_file, args.platform,
                         args.env_jobs, args.env_episodes) for mode in modes.split(",")]
    print(f"{'environment':<12} {'actions':>7} {'steps':>7} {'CPU s':>7} {'steps/CPU s':>12} "
          f"{'SLA met':>8}")
    for row in rows:
        print(f"{row['mode']:<12} {row['actions']:>7} {row['steps']:>7} {row['cpu_s']:>7.2f} "
              f"{row['steps_per_cpu_s']:>12,} {100 * row['sla_satisfaction']:>7.2f}%")
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns 1 when a simulation misses ``--target``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=cli.count(1), default=1_000_000)
    parser.add_argument("--policies", default="fcfs,edf")
    parser.add_argument("--spec", default=str(DATA / "inference_tenants.json"))
    parser.add_argument("--platform", default=str(DATA / "inference_platform.json"))
    parser.add_argument("--contention", default="hdeeprm")
    parser.add_argument("--no-timeline", dest="timeline", action="store_false",
                        help="do not record the per-instant timeline (hdrm replay records it)")
    parser.add_argument("--seed", type=cli.seed, default=None, help="default: the spec's seed")
    parser.add_argument("--target", type=float, default=20.0, help="CPU seconds per simulation")
    parser.add_argument("--json", metavar="OUT.json")
    parser.add_argument("--env", default="", metavar="MODES",
                        help="also time the environment in these modes (job_pick,policy_pair)")
    parser.add_argument("--env-jobs", type=cli.count(1), default=1024, help="requests per episode")
    parser.add_argument("--env-episodes", type=cli.count(1), default=5)
    parser.add_argument("--env-target", type=float, default=5000.0,
                        help="environment steps per CPU second")
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
            for p in args.policies.split(",") if p.strip()]
    if rows:
        print(f"{'policy':<20} {'CPU s':>7} {'requests/CPU s':>15} {'SLA met':>8} "
              f"{'J/request':>10}")
    for row in rows:
        print(f"{row['policy']:<20} {row['cpu_s']:>7.2f} {row['requests_per_cpu_s']:>15,} "
              f"{100 * row['sla_satisfaction']:>7.2f}% {row['energy_per_request_j']:>10.4f}")
    envs = env_rows(args.env, spec, workload, args) if args.env else []
    if args.json:
        Path(args.json).write_text(json.dumps({"command": " ".join(sys.argv), "rows": rows,
                                               "env": envs}, indent=1) + "\n", encoding="utf-8")
    slow = any(row["steps_per_cpu_s"] < args.env_target for row in envs)
    return 1 if slow or any(row["cpu_s"] > args.target for row in rows) else 0


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
