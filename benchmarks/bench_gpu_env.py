"""Speed of the Gymnasium environment on a GPU platform: the openb default trace, one episode.

Builds the environment on ``openb_node_list_gpu_node.csv`` (1,213 nodes, 6,212 GPUs) and
``openb_pod_list_default.csv`` (8,152 tasks), plays whole episodes and prints the environment
steps per second (CPU time, ``time.process_time``; best of ``--repeat``), with, as a baseline in
the same process, the bare engine replaying the same trace with the case's policy
(``fifo-best_fit``, or ``fifo-fgd`` for ``pick``) and no timeline (``ratio`` = episode CPU time, reset included, / baseline CPU time). Steps per second
count the steps only (the reset, which selects and shapes the 8,152 tasks, is printed apart).

Cases:

* ``pair-fixed``: ``policy_pair`` mode with one action, ``fifo-best_fit``, ``gpu`` observation;
* ``pair-random``: ``policy_pair`` mode over every (queue order x placement) pair, random
  actions (seeded), ``gpu`` observation;
* ``pick``: ``job_pick`` mode (window 128, ``fgd`` placement), the first task that fits
  (the first valid action), ``gpu_job_window`` observation.

Target (issue 19): at least 5,000 environment steps per second on 2 cores.

Usage::

    python benchmarks/bench_gpu_env.py [--traces DIR] [--cases pair-fixed,pick] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's hdrm, installed or not

from hdrm.env import SchedulingEnv  # noqa: E402
from hdrm.sim.engine import Simulation, SimulationConfig  # noqa: E402
from hdrm.cli import script as cli  # noqa: E402

DEFAULT_TRACES = ROOT.parent / "shared" / "traces" / "gpu"
TARGET = 5000.0
#: case -> (environment settings, the bare engine's policy for the baseline)
CASES = {
    "pair-fixed": (dict(selection=("fifo-best_fit",)), "fifo-best_fit"),
    "pair-random": (dict(), "fifo-best_fit"),
    "pick": (dict(mode="job_pick", placement="fgd"), "fifo-fgd"),
}


def episode(env, rng: np.random.Generator, random_actions: bool) -> tuple[int, float, float]:
    """Play one episode; returns (steps, CPU seconds of the steps, CPU seconds of the reset)."""
    start = time.process_time()
    env.reset(seed=1)
    reset_s = time.process_time() - start
    start = time.process_time()
    steps, done = 0, False
    while not done:
        if random_actions:
            action = int(rng.integers(env.action_space.n))
        else:
            action = int(np.argmax(env.action_masks()))
        done = env.step(action)[2]
        steps += 1
    return steps, time.process_time() - start, reset_s


def baseline(env, policy: str) -> float:
    """CPU seconds of the bare engine on the same inputs with ``policy``, no timeline."""
    sim = Simulation(env.platform, env.sim.workload, SimulationConfig(record_timeline=False))
    start = time.process_time()
    sim.run(policy)
    return time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    """Run the cases; exit status 1 when one is under the target."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--repeat", type=cli.count(1), default=3)
    args = parser.parse_args(argv)
    inputs = dict(platform_file=str(args.traces / "openb_node_list_gpu_node.csv"),
                  workload_file=str(args.traces / "openb_pod_list_default.csv"))
    status = 0
    for name in args.cases.split(","):
        settings, policy = CASES[name]
        env = SchedulingEnv(**inputs, **settings)
        base = min(baseline(env, policy) for _ in range(args.repeat))
        rng = np.random.default_rng(0)
        runs = [episode(env, rng, name == "pair-random") for _ in range(args.repeat)]
        steps, cpu_s, reset_s = min(runs, key=lambda r: r[1])
        rate = steps / cpu_s
        status |= rate < TARGET
        print(f"{name:<12} {steps} steps in {cpu_s:.2f} CPU s = {rate:,.0f} steps/s "
              f"({'ok' if rate >= TARGET else 'UNDER'} >= {TARGET:,.0f}; reset {reset_s:.2f} "
              f"s); bare engine ({policy}) {base:.2f} CPU s, ratio {(cpu_s + reset_s) / base:.2f}")
    return status


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
