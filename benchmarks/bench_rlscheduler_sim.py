"""RLScheduler's evaluation protocol on hdrm and on RLScheduler's own simulator, same machine.

The protocol (Zhang et al., SC20): sequences of 1,024 consecutive SDSC-SP2 jobs (RLScheduler's
loader conventions), each started on an empty cluster of the trace's 128 processors, scheduled by
FCFS and by SJF, with and without backfilling, under RLScheduler's commit-to-pick semantics; the
average bounded slowdown of every run. Both sides run the same uncompressed SWF file and the same
start indices (``--sequences`` of them, drawn with a seeded generator in RLScheduler's own range
``[1024, jobs - 1025)``), each in a process of its own:

* ``hdrm``: :func:`hdrm.workload.swf.read_swf` (``conventions="rlscheduler"``), then per sequence
  and per run one :class:`hdrm.sim.engine.Simulation` (``decision="commit"``, no contention, no
  walltime kill, no timeline; backfilling ``none`` or ``easy``) and
  :func:`hdrm.sim.outputs.mean_bounded_slowdown` (the mean of the out_jobs.csv rows, computed
  from the outcomes without making the rows);
* ``rlscheduler``: ``HPCSimPickJobs.HPCEnv`` imported from a checkout of
  DIR-LAB/deep-batch-scheduler (never copied here), run by its own Python with an old gym and
  numpy: ``my_init`` once, then per sequence ``reset_for_test`` and
  ``schedule_curr_sequence_reset`` with ``fcfs_score`` and ``sjf_score``, with ``backfil`` off
  and on. Its random start is fed the chosen index (the env's ``np_random`` answers ``randint``
  with it); TensorFlow, which only its learner uses, is replaced by an empty module.

The two processes run one after the other, alternately, ``--repeats`` times (default 3); the
figure of each side is its median CPU time (user + system of the process, from ``os.wait4``,
interpreter start, imports and trace reading included). Each side also reports the CPU seconds
of its protocol loop alone (``time.process_time``). The bench checks that both sides saw the same
job ids at the start indices.

Setting up RLScheduler's side (Python 3.7, from the package registry; nothing goes into hdrm's
environment)::

    python3.7 -m venv /tmp/rlsched-venv
    /tmp/rlsched-venv/bin/pip install numpy==1.17.0 scipy==1.3.1 gym==0.14.0
    # HPCSimPickJobs.py, job.py and cluster.py of github.com/DIR-LAB/deep-batch-scheduler in /tmp/rlscheduler

Usage::

    python benchmarks/bench_rlscheduler_sim.py --rlscheduler /tmp/rlscheduler \\
        --python /tmp/rlsched-venv/bin/python [--sequences 100] [--repeats 3] [--json OUT]

This file runs on both sides (Python 3.7 too): hdrm is imported only on hdrm's side.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from hdrm.cli import script as cli

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = ROOT.parent / "shared" / "traces" / "SDSC-SP2-1998-4.2-cln.swf.gz"
SEQUENCE_LENGTH = 1024
#: (policy, backfilling) runs of every sequence, in order.
RUNS = (("fcfs", False), ("sjf", False), ("fcfs", True), ("sjf", True))
SIDES = ("rlscheduler", "hdrm")


def choose_starts(nb_jobs: int, count: int, seed: int, length: int = SEQUENCE_LENGTH) -> list[int]:
    """``count`` start indices in RLScheduler's test range ``[length, nb_jobs - length - 1)``."""
    low, high = length, nb_jobs - length - 1
    if high <= low:
        raise SystemExit(f"the trace has {nb_jobs} jobs: too few for sequences of {length}")
    rng = random.Random(seed)
    return [rng.randrange(low, high) for _ in range(count)]


def run_key(policy: str, backfill: bool) -> str:
    """Name of one run in the reports: ``fcfs``, ``sjf+backfill`` ..."""
    return policy + ("+backfill" if backfill else "")


# ---------------------------------------------------------------------------------- hdrm's side
def hdrm_side(swf: str, starts: list[int], length: int) -> dict:
    """The protocol on hdrm; mean bsld per run, start job ids and CPU seconds."""
    sys.path.insert(0, str(ROOT))  # the checkout's hdrm, installed or not
    from hdrm.platform.model import Platform
    from hdrm.sim.engine import Simulation, SimulationConfig
    from hdrm.sim.outputs import mean_bounded_slowdown
    from hdrm.workload.select import sequences
    from hdrm.workload.swf import read_swf

    t0 = time.process_time()
    workload = read_swf(swf, conventions="rlscheduler")
    platform = Platform.homogeneous(workload.nb_res)
    t1 = time.process_time()
    ids = [workload.jobs[s].id for s in starts]
    sums = {run_key(p, b): 0.0 for p, b in RUNS}
    for seq in sequences(workload, starts, length):
        for policy, backfill in RUNS:
            config = SimulationConfig(contention="none", backfilling="easy" if backfill else "none",
                                      decision="commit", kill_on_walltime=False,
                                      record_timeline=False)
            result = Simulation(platform, seq, config).run(policy)
            sums[run_key(policy, backfill)] += mean_bounded_slowdown(result)
    t2 = time.process_time()
    return {"start_ids": ids, "nb_jobs": len(workload.jobs), "load_cpu_s": t1 - t0,
            "protocol_cpu_s": t2 - t1, "mean_bsld": {k: v / max(len(starts), 1) for k, v in sums.items()}}


# --------------------------------------------------------------------------- RLScheduler's side
class GivenStarts:
    """Stands in for the env's ``np_random``: ``randint`` returns the next chosen start index."""

    def __init__(self, starts: list[int]) -> None:
        self._starts = iter(starts)

    def randint(self, low: int, high: int) -> int:
        start = next(self._starts)
        if not low <= start < high:
            raise SystemExit(f"start index {start} outside RLScheduler's range [{low}, {high})")
        return start


def rlscheduler_side(checkout: str, swf: str, starts: list[int], length: int) -> dict:
    """The protocol on RLScheduler's ``HPCEnv``; the same report as :func:`hdrm_side`."""
    sys.path.insert(0, checkout)
    sys.modules.setdefault("tensorflow", types.ModuleType("tensorflow"))  # its learner only
    import HPCSimPickJobs  # noqa: the checkout's module

    t0 = time.process_time()
    env = HPCSimPickJobs.HPCEnv()
    env.my_init(workload_file=swf)
    env.np_random = GivenStarts(starts)
    t1 = time.process_time()
    ids = [env.loads[s].job_id for s in starts]
    scores = {"fcfs": env.fcfs_score, "sjf": env.sjf_score}
    sums = {run_key(p, b): 0.0 for p, b in RUNS}
    for _ in starts:
        env.reset_for_test(length, 0)
        for policy, backfill in RUNS:
            env.backfil = backfill
            sums[run_key(policy, backfill)] += sum(env.schedule_curr_sequence_reset(scores[policy]).values())
    t2 = time.process_time()
    return {"start_ids": ids, "nb_jobs": env.loads.size(), "load_cpu_s": t1 - t0,
            "protocol_cpu_s": t2 - t1, "mean_bsld": {k: v / max(len(starts), 1) for k, v in sums.items()}}


# ------------------------------------------------------------------------------------ the bench
def run_side(command: list[str], folder: Path, name: str, timeout_s: float) -> tuple[float, float, dict]:
    """Run one side; returns (CPU seconds, wall seconds, its report)."""
    out = folder / f"{name}.json"
    log = folder / f"{name}.log"
    t0 = time.perf_counter()
    with open(log, "w", encoding="utf-8") as handle:
        proc = subprocess.Popen([*command, "--report", str(out)], stdout=handle, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise SystemExit(f"{name}: timeout after {timeout_s:g} s; see {log}")
            time.sleep(0.01)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{name} exited with {proc.returncode}:\n{log.read_text()[-2000:]}")
    return usage.ru_utime + usage.ru_stime, wall, json.loads(out.read_text())


def side_command(side: str, args: argparse.Namespace, swf: Path, starts: list[int]) -> list[str]:
    """The command line of one side (this file, in that side's Python)."""
    python = args.python if side == "rlscheduler" else sys.executable
    command = [python, str(Path(__file__).resolve()), "--side", side, "--swf", str(swf),
               "--starts", ",".join(map(str, starts)), "--length", str(args.length)]
    if side == "rlscheduler":
        command += ["--rlscheduler", str(Path(args.rlscheduler).resolve())]
    return command


def bench(args: argparse.Namespace) -> dict:
    """Both sides, alternately, ``args.repeats`` times; the figures."""
    with tempfile.TemporaryDirectory(prefix="bench-rlsched-") as tmp:
        folder = Path(tmp)
        swf = folder / "trace.swf"
        opener = gzip.open if str(args.trace).endswith(".gz") else open
        with opener(args.trace, "rb") as src, open(swf, "wb") as dst:
            shutil.copyfileobj(src, dst)
        # the kept jobs (run time 0 dropped) bound the range: ask hdrm's reader once
        probe = run_side(side_command("hdrm", args, swf, []), folder, "probe", args.timeout)[2]
        starts = choose_starts(probe["nb_jobs"], args.sequences, args.seed, args.length)
        cpu: dict[str, list[float]] = {s: [] for s in SIDES}
        wall: dict[str, list[float]] = {s: [] for s in SIDES}
        reports: dict[str, dict] = {}
        for rep in range(args.repeats):
            for side in (SIDES if rep % 2 == 0 else SIDES[::-1]):
                c, w, report = run_side(side_command(side, args, swf, starts), folder, side, args.timeout)
                cpu[side].append(c)
                wall[side].append(w)
                reports[side] = report
                print(f"  run {rep + 1} {side:<12} CPU {c:7.2f} s  wall {w:7.2f} s  "
                      f"(protocol {report['protocol_cpu_s']:.2f} s)", flush=True)
    if reports["hdrm"]["start_ids"] != reports["rlscheduler"]["start_ids"]:
        raise SystemExit("the two sides' sequences start at different jobs: "
                         f"{reports['hdrm']['start_ids'][:5]} vs {reports['rlscheduler']['start_ids'][:5]}")
    return {"sequences": args.sequences, "length": args.length, "starts": starts,
            "cpu_s": cpu, "wall_s": wall, "reports": reports}


def report(figures: dict) -> None:
    """Print medians, ratios and both sides' mean bounded slowdowns."""
    med = {s: statistics.median(figures["cpu_s"][s]) for s in SIDES}
    proto = {s: figures["reports"][s]["protocol_cpu_s"] for s in SIDES}
    print(f"\n{figures['sequences']} sequences x {figures['length']} jobs, "
          f"{len(RUNS)} runs each ({', '.join(run_key(p, b) for p, b in RUNS)})")
    print(f"{'side':<13}{'median CPU s':>14}{'protocol CPU s':>16}")
    for side in SIDES:
        print(f"{side:<13}{med[side]:>14.2f}{proto[side]:>16.2f}")
    ratio = med["hdrm"] / med["rlscheduler"]
    print(f"hdrm / rlscheduler: {ratio:.2f}x CPU (process), "
          f"{proto['hdrm'] / proto['rlscheduler']:.2f}x (protocol loop, last run) "
          f"-> hdrm {'faster' if ratio < 1 else 'SLOWER'}")
    print(f"{'mean bsld':<15}" + "".join(f"{s:>14}" for s in SIDES))
    for key in figures["reports"]["hdrm"]["mean_bsld"]:
        print(f"{key:<15}" + "".join(f"{figures['reports'][s]['mean_bsld'][key]:>14.2f}" for s in SIDES))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rlscheduler", help="folder holding RLScheduler's HPCSimPickJobs.py")
    parser.add_argument("--python", help="the Python of RLScheduler's environment (old gym, numpy)")
    parser.add_argument("--trace", default=str(DEFAULT_TRACE), help="SWF file (.swf or .swf.gz)")
    parser.add_argument("--sequences", type=cli.count(1), default=100)
    parser.add_argument("--length", type=cli.count(1), default=SEQUENCE_LENGTH)
    parser.add_argument("--repeats", type=cli.count(1), default=3)
    parser.add_argument("--seed", type=cli.seed, default=0)
    parser.add_argument("--timeout", type=cli.positive, default=900.0,
                        help="seconds per side and run")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--swf", help=argparse.SUPPRESS)
    parser.add_argument("--starts", default="", help=argparse.SUPPRESS)
    parser.add_argument("--report", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.side:
        starts = [int(s) for s in args.starts.split(",") if s]
        if args.side == "hdrm":
            result = hdrm_side(args.swf, starts, args.length)
        else:
            result = rlscheduler_side(args.rlscheduler, args.swf, starts, args.length)
        Path(args.report).write_text(json.dumps(result))
        return 0
    if not args.rlscheduler or not args.python:
        parser.error("--rlscheduler and --python are needed (see the module docstring)")
    figures = bench(args)
    report(figures)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
