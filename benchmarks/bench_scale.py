"""Cost against the size of the machine and the number of jobs (issue 27).

Cells (each in a fresh subprocess, so its peak memory and CPU time are its own):

* ``JOBS@CORES`` (for example ``100k@4096``): a homogeneous synthetic trace from the project's
  generator (:func:`hdrm.workload.generate.generate_workload`, seed 1, offered load 0.9, sizes
  log-uniform up to the whole machine, run times 10 s to 1 day) replayed on ``CORES`` identical
  one-core resources (``hdrm replay --homogeneous-procs``), FCFS + EASY, no contention, then the
  outputs written and the summary computed as ``hdrm replay`` does;
* ``nodes50@CORES``: a platform file of identical 40-core nodes (``dell_r640_gold6148``) with 50
  generated jobs, loaded and replayed by ``hdrm replay`` (FCFS + EASY, hdeeprm contention);
* ``sdsc-easy``: the full SDSC-SP2 trace on 128 processors, FCFS + EASY, through ``hdrm replay``.

Each cell reports the wall time and CPU time (``resource.getrusage`` of the child: user + system)
of the replay (simulation + outputs + summary; generation or loading is reported apart), jobs per
CPU second, CPU microseconds per job and the child's peak RSS. Compare cells by CPU time: the
machine may be shared, and wall time then measures the neighbours too.

``--check`` adds the SHA-256 of ``out_jobs.csv``, ``out_timeline.csv`` and ``out_schedule.csv``
(the last without its two wall-clock columns, ``scheduling_time`` and ``simulation_time``), so that
two trees can be shown to give byte-identical outputs: run it before and after a change and compare
the ``hash`` column (``--json`` keeps every figure).

Usage::

    python benchmarks/bench_scale.py --quick --check
    python benchmarks/bench_scale.py --cells 10k@128,10k@100000,1M@4096 --json out.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from hdrm.cli import script as cli

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this tree's hdrm, in the cells' child processes too
TRACES = ROOT.parent / "shared" / "traces"
JOBS = {"10k": 10_000, "100k": 100_000, "1M": 1_000_000}
CORES = (128, 4_096, 100_000)
GRID = tuple(f"{j}@{c}" for j in JOBS for c in CORES)
QUICK = ("10k@128", "10k@4096", "10k@100000", "100k@4096", "nodes50@100000", "sdsc-easy")
TIME_COLUMNS = ("scheduling_time", "simulation_time")


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _hash_outputs(outdir: Path) -> str:
    """SHA-256 over the output files, the schedule's wall-clock columns blanked."""
    digest = hashlib.sha256()
    for name in ("out_jobs.csv", "out_timeline.csv"):
        path = outdir / name
        if path.exists():
            digest.update(path.read_bytes())
    header, row = (outdir / "out_schedule.csv").read_text().splitlines()[:2]
    names, values = header.split(","), row.split(",")
    for column in TIME_COLUMNS:
        values[names.index(column)] = ""
    digest.update((header + "\n" + ",".join(values)).encode())
    return digest.hexdigest()[:16]


def _replay_cli(argv: list[str]) -> None:
    """Run ``hdrm replay`` in this process, its printed summary discarded."""
    import contextlib
    import io

    from hdrm.cli.main import main

    with contextlib.redirect_stdout(io.StringIO()):
        status = main(["replay", "--quiet", *argv])
    if status:
        raise SystemExit(f"hdrm replay {' '.join(argv)} failed with status {status}")


def _grid_cell(nb_jobs: int, nb_cores: int, outdir: Path) -> dict:
    """Generate, replay, write the outputs and the summary as ``hdrm replay`` does."""
    import numpy as np

    from hdrm.platform.model import Platform
    from hdrm.sim.engine import Simulation, SimulationConfig
    from hdrm.sim.outputs import write_outputs
    from hdrm.workload.generate import generate_workload

    t0, c0 = time.perf_counter(), _cpu_s()
    workload = generate_workload(nb_jobs, nb_cores, np.random.default_rng(1), load=0.9)
    platform = Platform.homogeneous(nb_cores)
    setup = (time.perf_counter() - t0, _cpu_s() - c0)
    t1, c1 = time.perf_counter(), _cpu_s()
    config = SimulationConfig(contention="none", backfilling="easy")
    result = Simulation(platform, workload, config).run("fcfs")
    sim_cpu = _cpu_s() - c1
    paths = write_outputs(result, outdir)
    _print_summary(result, paths)
    return {"setup_s": setup[0], "setup_cpu_s": setup[1], "wall_s": time.perf_counter() - t1,
            "cpu_s": _cpu_s() - c1, "sim_cpu_s": sim_cpu, "jobs": nb_jobs, "cores": nb_cores}


def _print_summary(result, paths) -> None:
    """What ``hdrm replay`` computes for its printed summary (printed to nowhere)."""
    import argparse as _argparse
    import contextlib
    import io

    from hdrm.cli import replay_cmd

    args = _argparse.Namespace(backfill="easy", contention="none", conventions="default",
                               decision=None, walltime_kill=None, engine="builtin", outdir="x",
                               dependencies=True)
    with contextlib.redirect_stdout(io.StringIO()):
        replay_cmd._print_summary(result, paths, "fcfs", args)


def _nodes_cell(nb_cores: int, outdir: Path) -> dict:
    """A platform file of identical 40-core nodes and 50 jobs: load and replay."""
    import numpy as np

    from hdrm.workload.generate import generate_workload, write_swf

    if nb_cores % 40:
        raise SystemExit(f"nodes50@{nb_cores}: the core count must be a multiple of 40")
    platform = outdir / "platform.json"
    platform.write_text(json.dumps({"name": f"identical_{nb_cores}", "clusters": [
        {"name": "c", "network": "infiniband_edr",
         "nodes": [{"type": "dell_r640_gold6148", "count": nb_cores // 40}]}]}))
    swf = outdir / "w.swf"
    write_swf(generate_workload(50, nb_cores, np.random.default_rng(1), load=0.9), swf)
    t0, c0 = time.perf_counter(), _cpu_s()
    _replay_cli(["--platform", str(platform), "--workload", str(swf), "--policy", "fcfs",
                 "--backfill", "easy", "--outdir", str(outdir)])
    return {"setup_s": 0.0, "setup_cpu_s": 0.0, "wall_s": time.perf_counter() - t0,
            "cpu_s": _cpu_s() - c0, "sim_cpu_s": None, "jobs": 50, "cores": nb_cores}


def _sdsc_cell(outdir: Path) -> dict:
    """The full SDSC-SP2 trace on 128 processors, FCFS + EASY, through ``hdrm replay``."""
    trace = TRACES / "SDSC-SP2-1998-4.2-cln.swf.gz"
    t0, c0 = time.perf_counter(), _cpu_s()
    _replay_cli(["--homogeneous-procs", "128", "--workload", str(trace), "--policy", "fcfs",
                 "--backfill", "easy", "--contention", "none", "--outdir", str(outdir)])
    jobs = sum(1 for _ in (outdir / "out_jobs.csv").open()) - 1
    return {"setup_s": 0.0, "setup_cpu_s": 0.0, "wall_s": time.perf_counter() - t0,
            "cpu_s": _cpu_s() - c0, "sim_cpu_s": None, "jobs": jobs, "cores": 128}


def run_cell(cell: str, check: bool) -> dict:
    """Run one cell in this process and return its figures."""
    with tempfile.TemporaryDirectory(prefix="bench_scale_") as tmp:
        outdir = Path(tmp)
        if cell == "sdsc-easy":
            row = _sdsc_cell(outdir)
        else:
            what, _, cores = cell.partition("@")
            if what == "nodes50":
                row = _nodes_cell(int(cores), outdir)
            elif what in JOBS and cores.isdigit():
                row = _grid_cell(JOBS[what], int(cores), outdir)
            else:
                raise SystemExit(f"unknown cell {cell!r}; expected JOBS@CORES with JOBS one of "
                                 f"{', '.join(JOBS)}, nodes50@CORES or sdsc-easy")
        row["hash"] = _hash_outputs(outdir) if check else ""
    row["cell"] = cell
    row["peak_rss_mb"] = _peak_rss_mb()
    row["jobs_per_cpu_s"] = row["jobs"] / max(row["cpu_s"], 1e-9)
    row["cpu_us_per_job"] = 1e6 * row["cpu_s"] / row["jobs"]
    return row


COLUMNS = ("cell", "jobs", "cores", "setup_s", "wall_s", "cpu_s", "sim_cpu_s", "jobs_per_cpu_s",
           "cpu_us_per_job", "peak_rss_mb", "hash")


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"
    return str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Cost against machine size and number of jobs.")
    parser.add_argument("--cells", help=f"comma-separated cells (default: the grid {','.join(GRID)})")
    parser.add_argument("--quick", action="store_true", help=f"the cells {','.join(QUICK)}")
    parser.add_argument("--check", action="store_true", help="hash the outputs (byte identity)")
    parser.add_argument("--timeout", type=cli.positive, default=3600.0, help="seconds per cell")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one cell, print JSON
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_cell(args.one, args.check)))
        return 0
    cells = args.cells.split(",") if args.cells else list(QUICK if args.quick else GRID)
    rows = []
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS), flush=True)
    for cell in cells:
        command = [sys.executable, __file__, "--one", cell] + (["--check"] if args.check else [])
        try:
            out = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            row = {"cell": cell, "wall_s": f"> {args.timeout:g} s (stopped)"}
        else:
            if out.returncode:
                raise SystemExit(f"cell {cell} failed:\n{out.stderr}")
            row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print("| " + " | ".join(_fmt(row.get(c, "")) for c in COLUMNS) + " |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
