"""``hdrm sweep SWEEP.json --outdir D [--address ADDR] [--max-parallel K]``: run a grid of replays.

Runs every point of a sweep file's grid (policies, backfilling, decision semantics, platforms,
traces, load factors, seeds; or a seeded random sample of it; GPU policies such as drf-fgd on GPU
platforms and openb lists) as Ray tasks on a Ray started in
this process (loopback only, dashboard off), or on a Ray cluster with ``--address``. Writes each
run's usual outputs under D/runs/, and the ``hdrm compare`` table of all runs to D/results.csv
and D/results.md. Running it again resumes: finished runs are skipped. Without Ray the sweep
runs in this process (or in K local processes with ``--max-parallel K``), with the same results.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

logger = logging.getLogger(__name__)

EPILOG = """examples:
  hdrm sweep examples/sweep/sweep.json --outdir runs/sweep
  hdrm sweep sweep.json --outdir runs/sweep --address auto        # on a running Ray cluster
  hdrm sweep sweep.json --outdir runs/sweep --backend processes --max-parallel 2   # no Ray
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``sweep`` sub-command."""
    from hdrm.distributed.sweep import BACKENDS

    parser = subparsers.add_parser(
        "sweep",
        help="run a grid of replays (CPU or GPU policies; on Ray when installed) and "
        "tabulate them",
        description=__doc__.split("\n\n", 1)[1],
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("sweep_file", metavar="SWEEP.json", help="the sweep file")
    parser.add_argument("--outdir", required=True, metavar="D",
                        help="output folder (reused to resume an interrupted sweep)")
    parser.add_argument("--address", metavar="ADDR",
                        help="join this Ray cluster ('auto' or HOST:PORT) instead of starting one")
    parser.add_argument("--max-parallel", type=int, metavar="K",
                        help="runs at a time (default: every CPU of the machine or cluster)")
    parser.add_argument("--backend", default="auto", choices=BACKENDS,
                        help="ray, local processes, or serial in this process (default auto: ray "
                        "when installed, else serial, or processes with --max-parallel > 1)")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Run the sweep and print where its table is."""
    from hdrm.distributed.sweep import run_sweep

    report = run_sweep(args.sweep_file, args.outdir, backend=args.backend, address=args.address,
                       max_parallel=args.max_parallel, progress=not args.quiet)
    how = (f"on {report.backend}, {report.parallel} at a time" if report.nb_run
           else "nothing left to run")
    print(f"hdrm sweep: {report.nb_runs} runs ({report.nb_skipped} already done, "
          f"{report.nb_run} run now {how}) in {report.wall_s:.1f} s")
    print(f"  table: {report.outdir / 'results.md'} and {report.outdir / 'results.csv'}")
    print(f"  runs:  {report.outdir / 'runs'} (settings in {report.outdir / 'index.csv'})")
    sys.stdout.flush()
    return 0
