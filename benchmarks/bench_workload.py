"""Benchmark of the SWF reader: load time of a real trace and of a 202,871-job trace.

Targets (issue 2): the 59,715-job SDSC-SP2 trace in under 1 s, a 202,871-job trace in under 4 s.
The large trace is generated (:func:`hdrm.workload.generate.generate_workload`, seed 0) and
written as gzip SWF into a temporary folder. Each figure is the best of ``--repeat`` runs (the
first run included), so it measures the reader, not the disk cache.

Usage::

    python benchmarks/bench_workload.py [--traces ../shared/traces] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from hdrm.workload.generate import generate_workload, write_swf
from hdrm.workload.requirements import attach_requirements
from hdrm.workload.select import sequences
from hdrm.workload.swf import read_swf
from hdrm.cli import script as cli

SDSC = "SDSC-SP2-1998-4.2-cln.swf.gz"
LARGE_NB_JOBS = 202_871


def best_of(repeat: int, func: Callable[[], object]) -> tuple[float, object]:
    """Run ``func`` ``repeat`` times; return the best wall time in seconds and the last result."""
    best_s, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = func()
        best_s = min(best_s, time.perf_counter() - start)
    return best_s, result


def report(label: str, seconds: float, nb_jobs: int, target_s: float | None = None) -> None:
    """Print one result line."""
    verdict = "" if target_s is None else (" ok" if seconds < target_s else " TOO SLOW")
    target = "" if target_s is None else f" (target < {target_s:g} s){verdict}"
    print(f"{label:<48s} {seconds:7.3f} s  {nb_jobs:>8,d} jobs  "
          f"{nb_jobs / seconds:>11,.0f} jobs/s{target}")


def main() -> None:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", default=str(Path(__file__).resolve().parents[2] / "shared" / "traces"),
                        help="folder of SWF traces (default: ../shared/traces)")
    parser.add_argument("--repeat", type=cli.count(1), default=3,
                        help="runs per figure (best is kept)")
    args = parser.parse_args()
    sdsc = Path(args.traces) / SDSC
    if sdsc.exists():
        seconds, workload = best_of(args.repeat, lambda: read_swf(sdsc))
        report(f"read_swf {SDSC} (default)", seconds, len(workload), 1.0)
        seconds, workload = best_of(args.repeat, lambda: read_swf(sdsc, "rlscheduler"))
        report("read_swf SDSC-SP2 (rlscheduler)", seconds, len(workload), 1.0)
        seconds, full = best_of(args.repeat, lambda: read_swf(sdsc, keep_fields=True))
        report("read_swf SDSC-SP2 (keep_fields=True)", seconds, len(full))
        seconds, _ = best_of(args.repeat, lambda: sequences(workload))
        report("sequences: 10 x 1,024 jobs", seconds, 10 * 1024)
    else:
        print(f"{sdsc} not found: skipping the real-trace figures")
    with tempfile.TemporaryDirectory() as folder:
        large = Path(folder) / "synthetic_202871.swf.gz"
        start = time.perf_counter()
        generated = generate_workload(LARGE_NB_JOBS, 4096, np.random.default_rng(0), load=0.9)
        write_swf(generated, large)
        print(f"generated and wrote {large.name} in {time.perf_counter() - start:.2f} s "
              f"({large.stat().st_size / 1e6:.1f} MB gzip)")
        seconds, workload = best_of(args.repeat, lambda: read_swf(large))
        report(f"read_swf {LARGE_NB_JOBS:,}-job trace (gzip)", seconds, len(workload), 4.0)
    rng = np.random.default_rng(0)
    seconds, _ = best_of(args.repeat, lambda: attach_requirements(workload, 10.0, rng))
    report("attach_requirements on the large trace", seconds, len(workload))


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
