"""Reproduce the heuristic baselines of RLScheduler's protocol under both decision semantics.

Protocol (Zhang et al., SC20; see ../shared/traces/PROVENANCE.md): RLScheduler's loader conventions,
homogeneous processors (the trace's MaxProcs), 10 sequences of 1,024 jobs at fixed start indices
(SDSC-SP2 within its first 10,000 jobs), each started on an empty cluster, jobs run their trace run
time (no walltime kill), average bounded slowdown (threshold 10 s), then the mean over the sequences.

Usage::

    python benchmarks/reproduce_rlscheduler.py [--traces DIR] [--json OUT.json]

Prints a Markdown table with the published values (commit semantics, no backfilling) and the
event-driven reference values of PROVENANCE.md next to ours, with the relative differences. The
reference's EASY counts the extra cores at the first release after which the head fits
(``easy_first``); textbook ``easy`` (all cores free at the shadow time) is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from hdrm.platform.model import Platform
from hdrm.results.metrics import avg_bounded_slowdown
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.sim.outputs import job_results
from hdrm.workload.select import RLSCHEDULER_START_INDICES, sequences
from hdrm.workload.swf import read_swf

TRACES = {"Lublin-1": "lublin_256.swf.gz", "SDSC-SP2": "SDSC-SP2-1998-4.2-cln.swf.gz"}
POLICIES = ("fcfs", "sjf", "f1")
#: Published (commit, no backfilling) and PROVENANCE.md's event-driven values.
REFERENCE = {
    ("Lublin-1", "commit", "none"): (7273.77, 277.35, 258.37),
    ("Lublin-1", "event", "none"): (7273.77, 47.16, 34.53),
    ("Lublin-1", "event", "easy_first"): (271.40, 42.08, 35.26),
    ("SDSC-SP2", "commit", "none"): (1727.54, 2680.55, 1232.06),
    ("SDSC-SP2", "event", "none"): (1727.54, 1563.51, 994.99),
    ("SDSC-SP2", "event", "easy_first"): (933.08, 1903.12, 997.63),
}
ROWS = [(t, d, b) for t in TRACES for d, b in (("commit", "none"), ("commit", "easy"),
                                                ("event", "none"), ("event", "easy"),
                                                ("event", "easy_first"))]


def mean_bsld(workloads, nb_procs: int, policy: str, decision: str, backfilling: str) -> float:
    """Mean over sequences of the average bounded slowdown."""
    values = []
    for workload in workloads:
        config = SimulationConfig(contention="none", backfilling=backfilling, decision=decision,
                                  kill_on_walltime=False, record_timeline=False)
        result = Simulation(Platform.homogeneous(nb_procs), workload, config).run(policy)
        values.append(avg_bounded_slowdown(job_results(result)))
    return sum(values) / len(values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "traces"))
    parser.add_argument("--json", help="write the numbers as {row: {column: value}}")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    loaded = {}
    for name, file in TRACES.items():
        workload = read_swf(Path(args.traces) / file, conventions="rlscheduler")
        nb_procs = workload.nb_res
        if name == "SDSC-SP2":
            workload.jobs = workload.jobs[:10000]
        loaded[name] = (sequences(workload, RLSCHEDULER_START_INDICES, 1024), nb_procs)
    table: dict[str, dict[str, float]] = {}
    print("| trace | decision | backfilling | " + " | ".join(p.upper() for p in POLICIES) + " |")
    print("|---|---|---|" + "---:|" * len(POLICIES))
    worst = 0.0
    for trace, decision, backfilling in ROWS:
        seqs, nb_procs = loaded[trace]
        ours = [mean_bsld(seqs, nb_procs, p, decision, backfilling) for p in POLICIES]
        ref = REFERENCE.get((trace, decision, backfilling))
        cells = []
        for i, value in enumerate(ours):
            cell = f"{value:.2f}"
            if ref:
                diff = (value - ref[i]) / ref[i]
                worst = max(worst, abs(diff))
                cell += f" (ref {ref[i]:.2f}, {diff:+.2%})"
            cells.append(cell)
        row = f"{trace}, {decision}, {backfilling}"
        table[row] = {p.upper(): v for p, v in zip(POLICIES, ours)}
        print(f"| {trace} | {decision} | {backfilling} | " + " | ".join(cells) + " |")
    print(f"\nworst relative difference to a reference value: {worst:.2%}; "
          f"wall time {time.perf_counter() - t0:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    from hdrm.cli.script import guarded

    sys.exit(guarded(main))
