"""Cost of ``hdrm serve -E`` (energy): one seeded session with and without ``-E``, CPU seconds.

The session: ``--jobs`` jobs (seeded: submission in [0, 4000) s, 1, 2, 4 or 8 hosts, a delay of
2 to 20 s, or with ``--profile compute`` a ``parallel_homogeneous`` job of the same length, cpu
only) on ``--hosts`` 1 GFLOPS hosts with two power states each (95 + i : 200 + 7 i W) behind a
master host (a SimGrid XML platform: the actor model, where Batsim's energy files are written),
driven by a raw first-come-first-served decision process (lowest free hosts first) that runs in
this process; ``hdrm serve`` runs in a child process, ``--repeat`` times with and without ``-E``
in turn. For each case: the CPU seconds of ``serve()`` in the child (user + system, imports
excluded), and of the whole child (imports included); the median of the repeats and the ratio
-E / without. Target: -E costs at most 15% over the same session without it (CPU of ``serve()``).

Each case prints the SHA-256 of every output file (the first 12 hex digits; out_schedule.csv
without its two wall-clock columns; identical in every repeat, else a warning), so that two
versions of hdrm can be compared byte for byte: ``--source DIR`` runs the ``hdrm`` package found
in DIR (for example a ``git archive`` of another commit) instead of the checkout's.

Usage::

    python benchmarks/bench_serve_energy.py [--jobs 8000] [--hosts 64] [--repeat 5] [--seed 8000]
                                            [--profile delay|compute] [--source DIR]
                                            [--keep DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's hdrm, installed or not

from benchmarks.platform_corpus import RawScheduler  # noqa: E402
from hdrm.batsim.protocol import format_resources, parse_resource_ids  # noqa: E402
from hdrm.cli import script as cli  # noqa: E402
from hdrm.errors import ConfigError  # noqa: E402

CASES = ("without -E", "-E")
TARGET = 1.15  # -E CPU <= 1.15 x the same session's without -E
DELAYS_S = (2, 3, 4, 6, 8, 10, 15, 20)
WIDTHS = (1, 1, 2, 4, 8)

#: The child: one session in a fresh process (hdrm from its PYTHONPATH), timed around serve().
CHILD = """
import hashlib, json, sys, time
import hdrm
from hdrm.batsim.server import ServeOptions, serve
from hdrm.batsim.simulator import ServerConfig
platform, workload, endpoint, prefix, energy = sys.argv[1:6]
c0 = time.process_time()
r = serve(platform, workload, ServeOptions(endpoint, prefix, 120.0,
                                           config=ServerConfig(energy=energy == "1")))
cpu = time.process_time() - c0

def masked(path):  # out_schedule.csv: its two wall-clock columns vary from run to run
    text = path.read_text()
    if not path.name.endswith("_schedule.csv"):
        return text
    head, row = (line.split(",") for line in text.splitlines()[:2])
    for col in ("scheduling_time", "simulation_time"):
        row[head.index(col)] = "-"
    return "|".join([",".join(head), ",".join(row)])

hashes = {f.name: hashlib.sha256(masked(f).encode()).hexdigest()[:12] for f in sorted(r.files)}
print(json.dumps({"serve_cpu_s": cpu, "messages": r.messages, "hashes": hashes,
                  "hdrm": hdrm.__file__}))
"""


def write_platform(path: Path, nb_hosts: int) -> Path:
    """A master host and ``nb_hosts`` 1 GFLOPS hosts, each with two power states (the second at
    half speed) and its own 10 GBps link to the master."""
    lines = ["<?xml version='1.0'?>",
             '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
             '<platform version="4.1">', '<zone id="AS0" routing="Full">',
             '  <host id="master_host" speed="1Gf">'
             '<prop id="wattage_per_state" value="10:10"/></host>']
    for i in range(nb_hosts):
        watts = f"{95 + i}:{200 + 7 * i}, {60 + i}:{120 + 3 * i}"
        lines.append(f'  <host id="h{i:03d}" speed="1Gf, 0.5Gf" pstate="0">'
                     f'<prop id="wattage_per_state" value="{watts}"/>'
                     '<prop id="wattage_off" value="5"/></host>')
    lines += [f'  <link id="l{i:03d}" bandwidth="10GBps" latency="0us"/>' for i in range(nb_hosts)]
    lines += [f'  <route src="master_host" dst="h{i:03d}"><link_ctn id="l{i:03d}"/></route>'
              for i in range(nb_hosts)]
    path.write_text("\n".join([*lines, "</zone>", "</platform>", ""]), encoding="utf-8")
    return path


def write_workload(path: Path, nb_jobs: int, nb_hosts: int, seed: int, profile: str) -> Path:
    """``nb_jobs`` seeded jobs (see the module's docstring), ids 0, 1, ... in submission order."""
    rng = random.Random(seed)
    draws = sorted((rng.randrange(0, 4000), rng.choice(WIDTHS), rng.choice(DELAYS_S))
                   for _ in range(nb_jobs))
    jobs, profiles = [], {}
    for i, (sub, res, delay) in enumerate(draws):
        res = min(res, nb_hosts)
        name = f"d{delay}" if profile == "delay" else f"c{delay}"
        profiles[name] = ({"type": "delay", "delay": delay} if profile == "delay" else
                          {"type": "parallel_homogeneous", "cpu": delay * 1e9, "com": 0})
        jobs.append({"id": str(i), "subtime": sub, "res": res, "walltime": 100, "profile": name})
    doc = {"nb_res": nb_hosts, "jobs": jobs, "profiles": profiles}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def fcfs_reply(nb_hosts: int):
    """A raw FCFS decision process: starts the queue's head while it fits (lowest ids first)."""
    free = list(range(nb_hosts))
    queue: list[tuple[str, int]] = []

    def reply(doc: dict) -> str:
        now, decisions = doc["now"], []
        for event in doc["events"]:
            data = event["data"]
            if event["type"] == "JOB_SUBMITTED":
                queue.append((data["job_id"], data["job"]["res"]))
            elif event["type"] == "JOB_COMPLETED":
                free.extend(parse_resource_ids(data["alloc"], "JOB_COMPLETED alloc"))
        free.sort()
        while queue and queue[0][1] <= len(free):
            job_id, res = queue.pop(0)
            hosts, free[:] = free[:res], free[res:]
            decisions.append({"timestamp": now, "type": "EXECUTE_JOB",
                              "data": {"job_id": job_id, "alloc": format_resources(hosts)}})
        return json.dumps({"now": now, "events": decisions})

    return reply


def run_once(inputs: tuple[Path, Path], nb_hosts: int, energy: bool, prefix: Path,
             source: Path, timeout_s: float) -> dict:
    """One session in a child process; its figures (CPU of serve() and of the whole child)."""
    scheduler = RawScheduler(fcfs_reply(nb_hosts))
    scheduler.start()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(source), env.get("PYTHONPATH")) if p)
    command = [sys.executable, "-c", CHILD, str(inputs[0]), str(inputs[1]), scheduler.endpoint,
               str(prefix), "1" if energy else "0"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, env=env, cwd=prefix.parent.parent)  # (not the
        # checkout: ``python -c`` puts the working folder first on sys.path)
        try:
            out, err = child.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            raise ConfigError(f"the {'-E ' if energy else ''}session took over {timeout_s:g} s "
                              "(--timeout)") from None
    finally:
        scheduler.stop()
    if scheduler.error is not None:
        raise ConfigError(f"the benchmark's FCFS decision process failed: {scheduler.error!r}")
    if child.returncode != 0:
        tail = "\n".join(err.strip().splitlines()[-8:])
        raise ConfigError(f"hdrm serve{' -E' if energy else ''} exited with {child.returncode}:\n"
                          f"{tail}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # (the child is reaped)
    figures = json.loads(out.strip().splitlines()[-1])
    figures["process_cpu_s"] = (after.ru_utime + after.ru_stime
                                - before.ru_utime - before.ru_stime)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_serve_energy.py",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=cli.count(1), default=8000, help="jobs (default 8,000)")
    parser.add_argument("--hosts", type=cli.count(1), default=64, help="hosts (default 64)")
    parser.add_argument("--repeat", type=cli.count(1), default=5,
                        help="sessions per case; the median counts (default 5)")
    parser.add_argument("--seed", type=cli.seed, default=8000, help="workload seed")
    parser.add_argument("--profile", choices=("delay", "compute"), default="delay",
                        help="the jobs' profile: delay, or parallel_homogeneous (cpu only)")
    parser.add_argument("--source", type=Path, default=ROOT,
                        help="folder holding the hdrm package to run (default: the checkout)")
    parser.add_argument("--keep", type=Path, help="keep the output files in this folder")
    parser.add_argument("--timeout", type=cli.positive, default=600.0, help="seconds per session")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    if not (args.source / "hdrm" / "__init__.py").is_file():
        parser.error(f"--source {args.source}: no hdrm package there (no hdrm/__init__.py)")
    with tempfile.TemporaryDirectory(prefix="bench-serve-energy-") as tmp:
        folder = (args.keep or Path(tmp)).resolve()
        folder.mkdir(parents=True, exist_ok=True)
        inputs = (write_platform(folder / "platform.xml", args.hosts),
                  write_workload(folder / "workload.json", args.jobs, args.hosts, args.seed,
                                 args.profile))
        print(f"{args.jobs:,} {args.profile} jobs on {args.hosts} hosts (seed {args.seed}), "
              f"raw FCFS; hdrm from {args.source.resolve() / 'hdrm'}; {args.repeat} repeats",
              flush=True)
        runs: dict[str, list[dict]] = {case: [] for case in CASES}
        for _ in range(args.repeat):
            for case in CASES:
                energy = case == "-E"
                prefix = folder / ("energy" if energy else "plain") / "out"
                runs[case].append(run_once(inputs, args.hosts, energy, prefix, args.source,
                                           args.timeout))
    figures = report(runs)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return 0


def report(runs: dict[str, list[dict]]) -> dict:
    """Print each case's median CPU, the ratio and the output hashes; return the figures."""
    figures = {}
    for case, rows in runs.items():
        cpus = [r["serve_cpu_s"] for r in rows]
        whole = [r["process_cpu_s"] for r in rows]
        figures[case] = {"hdrm": rows[0]["hdrm"], "serve_cpu_s": cpus,
                         "median_s": statistics.median(cpus),
                         "process_cpu_s": whole, "process_median_s": statistics.median(whole),
                         "messages": rows[0]["messages"], "hashes": rows[0]["hashes"]}
        spread = ", ".join(f"{c:.2f}" for c in cpus)
        print(f"{case:<11} serve() CPU median {figures[case]['median_s']:.3f} s ({spread}); "
              f"whole process {figures[case]['process_median_s']:.3f} s; "
              f"{rows[0]['messages']} messages")
        if any(r["hdrm"] != rows[0]["hdrm"] for r in rows):
            print(f"warning: {case}: hdrm imported from several places")
        if any(r["hashes"] != rows[0]["hashes"] for r in rows):
            print(f"warning: {case}: the output files differ between repeats")
        for name, digest in rows[0]["hashes"].items():
            print(f"  {name:<28} {digest}")
    ratio = figures["-E"]["median_s"] / figures["without -E"]["median_s"]
    whole = figures["-E"]["process_median_s"] / figures["without -E"]["process_median_s"]
    figures["ratio"], figures["process_ratio"] = ratio, whole
    print(f"whole process (imports included): {whole:.3f}x")
    print(f"target -E CPU <= {TARGET:g} x without -E: {ratio:.3f}x "
          f"({'met' if ratio <= TARGET else 'MISSED'})")
    return figures


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
