"""Time a time-based GPU replay: the openb default trace on the openb GPU nodes.

Reads ``openb_node_list_gpu_node.csv`` (1,213 nodes, 6,212 GPUs) as a platform and
``openb_pod_list_default.csv`` (8,152 tasks), replays them with each policy asked for (the
engine's event loop over the GPU decision core, timeline and fragmentation recorded at every
instant), and prints the CPU seconds (``time.process_time``) of reading the inputs and of each
replay, best of ``--repeat``. Target (issue 19): the replay in <= 3 s.

Usage::

    python benchmarks/bench_gpu.py [--traces DIR] [--policies fifo-fgd,drf-best_fit] [--repeat 3]

Exit status 1 when a replay takes more than ``--target`` CPU seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's hdrm, installed or not

from hdrm.sim.engine import Simulation, SimulationConfig  # noqa: E402
from hdrm.sim.gpu_inputs import load_gpu_inputs  # noqa: E402
from hdrm.sim.gpu_outputs import gpu_summary  # noqa: E402
from hdrm.cli import script as cli  # noqa: E402

DEFAULT_TRACES = ROOT.parent / "shared" / "traces" / "gpu"


def _cpu(fn):
    start = time.process_time()
    value = fn()
    return value, time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--policies", default="fifo-fgd,drf-best_fit,las-fgd")
    parser.add_argument("--repeat", type=cli.count(1), default=3)
    parser.add_argument("--target", type=float, default=3.0, help="CPU seconds per replay")
    args = parser.parse_args(argv)
    (platform, workload), load_s = _cpu(lambda: load_gpu_inputs(
        str(args.traces / "openb_node_list_gpu_node.csv"),
        str(args.traces / "openb_pod_list_default.csv")))
    print(f"inputs: {len(platform.nodes)} nodes, {len(platform.accelerators)} GPUs, "
          f"{len(workload)} tasks read in {load_s:.2f} CPU s")
    status = 0
    for policy in args.policies.split(","):
        best = float("inf")
        for _ in range(args.repeat):
            sim = Simulation(platform, workload, SimulationConfig())
            result, run_s = _cpu(lambda: sim.run(policy))
            best = min(best, run_s)
        s = gpu_summary(result)
        ok = best <= args.target
        status |= not ok
        print(f"{policy:<16} replay {best:.2f} CPU s ({'ok' if ok else 'OVER'} <= "
              f"{args.target:g}), {result.decisions} decisions, finished {s['nb_finished']}, "
              f"mean JCT {s['mean_jct_s']:.1f} s, cost {s['cost_usd']:.2f} USD")
    return status


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
