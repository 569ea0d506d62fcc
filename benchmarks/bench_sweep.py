"""Wall time of a 36-pair x 10-seed sweep: serial in-process against ``hdrm sweep`` on Ray.

The sweep: HDeepRM's 36 job-core policy pairs x ``--seeds`` seeds on the heterogeneous platform
(platforms/hetero.json, 384 cores), EASY backfilling, ``--jobs`` jobs of ``--trace`` (default: the
shipped 500-job SDSC-SP2 slice). The same sweep file runs, one after the other, with:

* ``serial``: every run in this process, one at a time (what a plain loop does);
* ``ray``: ``hdrm sweep``'s default, Ray tasks on a local Ray started in this process (loopback
  only, ``--cpus`` CPUs), Ray's start and stop included;
* ``ray-warm`` (with ``--warm``): the same on a Ray started before the clock runs (the runs
  alone, without Ray's start and stop, which are then timed and printed apart);
* ``processes`` (with ``--processes``): local worker processes, no Ray.

For each: wall seconds, CPU seconds (this process; the runs' own CPU as they measured it in
their workers; the processes under this one: those reaped, and, with psutil, those still alive,
such as a warm Ray's raylet, GCS and workers), ``other_cpu_s`` (all that CPU but the runs' own:
what running them costs besides the replays, the figure to compare on a shared machine; n/a for
the ``ray`` row, whose workers end with the Ray it stops, unseen by this process), and
the machine's load average before and after (the machine may be shared). Then the speed-up over
serial and whether every backend produced identical outputs (every run's out_jobs.csv,
out_timeline.csv and overutilizations.json, and the results table).

Usage::

    python benchmarks/bench_sweep.py [--seeds 10] [--jobs 0] [--trace SWF] [--cpus 2]
                                     [--warm] [--processes] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from hdrm.distributed.sweep import run_sweep  # noqa: E402
from hdrm.cli import script as cli  # noqa: E402

DEFAULT_TRACE = ROOT / "workloads" / "SDSC-SP2-1998-4.2-cln_first500.swf"
PLATFORM = ROOT / "platforms" / "hetero.json"


def write_sweep(folder: Path, trace: Path, seeds: int, jobs: int) -> Path:
    """The benchmark's sweep file in ``folder``."""
    data = {"policies": ["all-pairs"], "backfill": ["easy"], "platforms": [str(PLATFORM)],
            "traces": [str(trace)], "seeds": list(range(seeds)), "nb_jobs": jobs}
    path = folder / "sweep.json"
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def deterministic_outputs(outdir: Path) -> dict[str, bytes]:
    """The outputs that must not depend on the backend (out_schedule.csv has wall-clock columns)."""
    found = {p.relative_to(outdir).as_posix(): p.read_bytes()
             for p in sorted((outdir / "runs").rglob("*"))
             if p.name in ("out_jobs.csv", "out_timeline.csv", "overutilizations.json")}
    found["results.csv"] = (outdir / "results.csv").read_bytes()
    return found


def runs_cpu_s(outdir: Path) -> float:
    """The CPU seconds the runs measured themselves (done.json), summed."""
    return sum(json.loads(p.read_text(encoding="utf-8"))["cpu_s"]
               for p in (outdir / "runs").glob("*/done.json"))


def live_descendants_cpu() -> dict[int, float]:
    """CPU seconds of every process under this one that is alive now (a warm Ray's raylet, GCS
    and workers), with what their own reaped children used; empty without psutil."""
    try:
        import psutil
    except ModuleNotFoundError:
        return {}
    found = {}
    for process in psutil.Process().children(recursive=True):
        try:
            t = process.cpu_times()
        except psutil.Error:
            continue
        found[process.pid] = t.user + t.system + t.children_user + t.children_system
    return found


def measure(name: str, sweep: Path, outdir: Path, **kwargs) -> dict:
    """Run the sweep once with ``kwargs`` (``backend``, ``max_parallel``) and time it."""
    load_before = os.getloadavg()[0]
    own0, kids0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    live0 = live_descendants_cpu()
    wall0 = time.perf_counter()
    report = run_sweep(sweep, outdir, progress=False, **kwargs)
    wall_s = time.perf_counter() - wall0
    own1, kids1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    live1 = live_descendants_cpu()
    own_s = own1.ru_utime + own1.ru_stime - own0.ru_utime - own0.ru_stime
    kids_s = kids1.ru_utime + kids1.ru_stime - kids0.ru_utime - kids0.ru_stime
    kids_s += sum(cpu - live0.get(pid, 0.0) for pid, cpu in live1.items())
    runs_s = runs_cpu_s(outdir)
    other = own_s + kids_s - runs_s
    return {"backend": name, "runs": report.nb_run, "parallel": report.parallel,
            "wall_s": wall_s, "driver_cpu_s": own_s, "children_cpu_s": kids_s,
            "runs_cpu_s": runs_s, "other_cpu_s": other if other >= 0 else None,
            "load_before": load_before, "load_after": os.getloadavg()[0]}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table (and write JSON with ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=cli.count(1), default=10,
                        help="seeds per pair (default 10)")
    parser.add_argument("--jobs", type=cli.count(0), default=0, help="jobs of the trace (0: all)")
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE, help="SWF trace")
    parser.add_argument("--cpus", type=cli.count(1), default=2,
                        help="CPUs of the local Ray (default 2)")
    parser.add_argument("--processes", action="store_true", help="also time local processes")
    parser.add_argument("--warm", action="store_true",
                        help="also time the sweep on a Ray started before the clock runs")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench_sweep_") as tmp:
        folder = Path(tmp)
        sweep = write_sweep(folder, args.trace.resolve(), args.seeds, args.jobs)
        rows = [measure("serial", sweep, folder / "serial", backend="serial"),
                measure("ray", sweep, folder / "ray", backend="ray", max_parallel=args.cpus)]
        start_stop = None
        if args.warm:
            from hdrm.distributed.ray_backend import connect

            t0 = time.perf_counter()
            with connect(None, num_cpus=args.cpus):  # started before the clock runs
                t1 = time.perf_counter()
                rows.append(measure("ray-warm", sweep, folder / "ray-warm", backend="ray",
                                    max_parallel=args.cpus))
                t2 = time.perf_counter()
            start_stop = (t1 - t0, time.perf_counter() - t2)
        if args.processes:
            rows.append(measure("processes", sweep, folder / "processes", backend="processes",
                                max_parallel=args.cpus))
        reference = deterministic_outputs(folder / "serial")
        for row in rows:
            row["identical_to_serial"] = deterministic_outputs(folder / row["backend"]) == reference
            row["speedup"] = rows[0]["wall_s"] / row["wall_s"]
    print(f"sweep: 36 pairs x {args.seeds} seeds, easy backfilling, {args.trace.name} "
          f"({args.jobs or 'all'} jobs) on {PLATFORM.name}; {os.cpu_count()} CPUs on this machine")
    header = ("backend", "runs", "par", "wall_s", "speedup", "driver_cpu_s", "runs_cpu_s",
              "children_cpu_s", "other_cpu_s", "load_1min", "identical")
    print(" ".join(f"{h:>14}" for h in header))
    for r in rows:
        cells = (r["backend"], r["runs"], r["parallel"], f"{r['wall_s']:.1f}", f"{r['speedup']:.2f}x",
                 f"{r['driver_cpu_s']:.1f}", f"{r['runs_cpu_s']:.1f}",
                 f"{r['children_cpu_s']:.1f}",
                 "n/a" if r["other_cpu_s"] is None else f"{r['other_cpu_s']:.1f}",
                 f"{r['load_before']:.1f}->{r['load_after']:.1f}", r["identical_to_serial"])
        print(" ".join(f"{c!s:>14}" for c in cells))
    if start_stop is not None:
        print(f"local Ray ({args.cpus} CPUs): start {start_stop[0]:.1f} s, shutdown "
              f"{start_stop[1]:.1f} s (the ray row includes both, ray-warm neither)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0 if all(r["identical_to_serial"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
