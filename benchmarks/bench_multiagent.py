"""Speed of the multi-agent GPU environment: the openb default trace, one episode per run.

Builds :class:`~hdrm.env.gpu_multiagent.GpuMultiAgentEnv` on ``openb_node_list_gpu_node.csv``
(1,213 nodes) and ``openb_pod_list_default.csv`` (8,152 tasks), drives both agents with a
heuristic pair (``fifo`` x ``fgd`` by default: :mod:`hdrm.env.gpu_multiagent_heuristics`) and
prints the environment steps per second (CPU time, ``time.process_time``; best of
``--repeat``). A step is one ``env.step`` (an order phase or a place phase; a placed task takes
two), observations of both agents built every step, as a learner would see them. As a baseline
in the same process, the bare engine replays the same tasks with ``ORDER-PLACEMENT`` and no
timeline (``ratio`` = episode CPU time, reset included, / baseline CPU time). ``--check``
asserts that the episode started every task where and when the engine did.

Usage::

    python benchmarks/bench_multiagent.py [--traces DIR] [--order fifo] [--placement fgd]
        [--nb-jobs 0] [--repeat 3] [--check] [--fgd-features]
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's hdrm, installed or not

from hdrm.env.gpu_multiagent import GpuMultiAgentEnv  # noqa: E402
from hdrm.env.gpu_multiagent_heuristics import (  # noqa: E402
    heuristic_order_action,
    heuristic_place_action,
)
from hdrm.sim.engine import Simulation, SimulationConfig  # noqa: E402
from hdrm.cli import script as cli  # noqa: E402

DEFAULT_TRACES = ROOT.parent / "shared" / "traces" / "gpu"


def episode(env: GpuMultiAgentEnv, order: str, placement: str) -> tuple[int, float, float]:
    """Play one episode; returns (steps, CPU seconds of the steps, CPU seconds of the reset)."""
    start = time.process_time()
    env.reset(seed=1)
    reset_s = time.process_time() - start
    start = time.process_time()
    steps = 0
    while env.agents:
        env.step({"order": heuristic_order_action(env, order),
                  "place": heuristic_place_action(env, placement)})
        steps += 1
    return steps, time.process_time() - start, reset_s


def baseline(env: GpuMultiAgentEnv, policy: str, rng_state: dict) -> tuple[float, object]:
    """CPU seconds of the bare engine on the episode's tasks (same tie order), and its result."""
    sim = Simulation(env.core.platform, env.core.sim.workload,
                     SimulationConfig(backfilling=env.core.config.backfilling,
                                      record_timeline=False))
    sim.rng = sim.core.rng = np.random.default_rng()
    sim.rng.bit_generator.state = copy.deepcopy(rng_state)
    start = time.process_time()
    result = sim.run(policy)
    return time.process_time() - start, result


def same_schedule(env: GpuMultiAgentEnv, result) -> bool:
    """Whether the episode started every task at the engine's time on the engine's node."""
    sim = env.core.sim
    mine = {i: (o.start_s, sim.core.placements[i].node) for i, o in sim.outcomes.items()
            if o.start_s >= 0}
    theirs = {o.job.idx: (o.start_s, result.gpu.placements[o.job.idx].node)
              for o in result.outcomes if o.start_s >= 0}
    return mine == theirs


def main(argv: list[str] | None = None) -> int:
    """Run the episodes and print the figures; exit status 1 when ``--check`` fails."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--order", default="fifo")
    parser.add_argument("--placement", default="fgd")
    parser.add_argument("--nb-jobs", type=cli.count(0), default=0,
                        help="tasks per episode (0: all)")
    parser.add_argument("--repeat", type=cli.count(1), default=3)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--fgd-features", action="store_true",
                        help="with the node column fgd_score")
    args = parser.parse_args(argv)
    env = GpuMultiAgentEnv(platform_file=str(args.traces / "openb_node_list_gpu_node.csv"),
                           workload_file=str(args.traces / "openb_pod_list_default.csv"),
                           placement=args.placement, nb_jobs=args.nb_jobs,
                           fgd_features=args.fgd_features)
    policy = f"{args.order}-{args.placement}"
    runs = []
    for _ in range(args.repeat):
        env.reset(seed=1)
        rng_state = copy.deepcopy(env.core.sim.rng.bit_generator.state)
        runs.append(episode(env, args.order, args.placement))
    steps, cpu_s, reset_s = min(runs, key=lambda r: r[1])
    base_s, result = min((baseline(env, policy, rng_state) for _ in range(args.repeat)),
                         key=lambda r: r[0])
    placed = len(env.core.sim.core.placements)
    case = policy + (" + fgd_score" if args.fgd_features else "")
    print(f"multi-agent {case}: {steps} steps ({placed} tasks placed) in {cpu_s:.2f} CPU s = "
          f"{steps / cpu_s:,.0f} steps/s, {placed / cpu_s:,.0f} placed tasks/s (reset "
          f"{reset_s:.2f} s); bare engine {base_s:.2f} CPU s, ratio "
          f"{(cpu_s + reset_s) / base_s:.2f}")
    if args.check:
        ok = same_schedule(env, result)
        print(f"same schedule as the engine: {'yes' if ok else 'NO'}")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
