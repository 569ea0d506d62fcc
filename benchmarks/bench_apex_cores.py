"""Ape-X against the single-process DQN on a many-core machine: every run on cores of its own.

``benchmarks/bench_apex.py`` times the single-process DQN's seeds and Ape-X's seeds one after
the other in one process, so on a machine of two cores Ape-X's learner, replay and actors share
those two. On a machine with a core for each of them this command runs the same runs *at the
same time*, each in its own process pinned to cores that no other run uses
(``os.sched_setaffinity``; Ray's processes inherit the pinning of the Ape-X run that starts
them):

* each single-process DQN seed (``--peer-seeds``) gets one core: it is one process, and
  ``bench_apex.py`` trains it with one torch thread;
* each Ape-X seed (``--apex-seeds``) gets ``--cores-per-apex`` cores (default: the actors', one
  for the learner and one for the replay), and its local Ray is given that many CPUs. Seeds
  beyond the number of such core sets wait for one to free up.

Every run is ``bench_apex.py`` with one seed (``--peer-seeds S --apex-seeds none`` or the
reverse) and ``--target``; its output goes to ``--outdir``/``peer_S.log`` or ``apex_S.log``,
its figures to the ``.json`` beside it. At the end (or on Ctrl-C, with the runs that finished)
the figures are gathered into ``--outdir``/``summary.json`` in ``bench_apex.py``'s format,
with the cores of each run, and the medians are compared as there.

Usage::

    python benchmarks/bench_apex_cores.py --target 30.8508 --peer-seeds 0,1,2 \\
        --apex-seeds 0,1,2,3,4 --peer-minutes 6 --minutes 3.5 [--cores-per-apex 4] \\
        [--cores 0-15] [--outdir runs/bench_apex_cores] [-- BENCH_APEX_OPTIONS...]

Options after ``--`` go to every Ape-X run (e.g. ``--validate-updates 2560 --apex-json
'{"min_replay_ratio": 0.05}'``); the peers keep the row's settings.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import bench_apex, cli_lists  # noqa: E402
from hdrm.errors import ConfigError  # noqa: E402

BENCH = ROOT / "benchmarks" / "bench_apex.py"
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


@dataclass
class Run:
    """One ``bench_apex.py`` process: a peer seed or an Ape-X seed."""

    kind: str  # "peer" or "apex"
    seed: int
    cores: tuple[int, ...] = ()
    process: subprocess.Popen | None = None
    started: float = 0.0
    ended: float | None = None
    argv: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        """``peer_S`` or ``apex_S``: the stem of its log and figures."""
        return f"{self.kind}_{self.seed}"


def core_list(text: str) -> list[int]:
    """``0-3,8,10-11`` as core numbers."""
    cores: list[int] = []
    for part in cli_lists.items(text):
        low, _, high = part.partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            raise ConfigError(f"--cores {text!r}: {part!r} is not a core or a range of cores; "
                              "write e.g. 0-15 or 0-3,8") from None
        if first < 0 or last < first:
            raise ConfigError(f"--cores {text!r}: {part!r} is not a range low-high of cores "
                              "numbered from 0")
        cores.extend(range(first, last + 1))
    if len(set(cores)) != len(cores):
        raise ConfigError(f"--cores {text!r}: a core is named twice")
    return cores


def plan(cores: list[int], peers: int, per_apex: int) -> tuple[list[tuple[int, ...]],
                                                                list[tuple[int, ...]]]:
    """One core for each peer, then as many core sets of ``per_apex`` as the rest holds.

    Raises:
        ConfigError: not enough cores for the peers and one Ape-X run.
    """
    need = peers + per_apex
    if len(cores) < need:
        raise ConfigError(f"{len(cores)} cores: {peers} single-process runs and one Ape-X run of "
                          f"{per_apex} cores need {need}; give fewer --peer-seeds, a smaller "
                          "--cores-per-apex, or use benchmarks/bench_apex.py, which runs them "
                          "one after the other")
    peer_cores = [(c,) for c in cores[:peers]]
    rest = cores[peers:]
    apex_cores = [tuple(rest[i:i + per_apex]) for i in range(0, len(rest) - per_apex + 1,
                                                              per_apex)]
    return peer_cores, apex_cores


def start(run: Run, outdir: Path) -> None:
    """Start ``run``'s process on its cores, in a process group of its own."""
    cores = set(run.cores)
    env = {**os.environ, **ONE_THREAD, "PYTHONUNBUFFERED": "1"}
    log = (outdir / f"{run.name}.log").open("w", encoding="utf-8")
    run.process = subprocess.Popen(
        [sys.executable, str(BENCH), *run.argv], cwd=ROOT, env=env, stdout=log,
        stderr=subprocess.STDOUT, start_new_session=True,
        preexec_fn=lambda: os.sched_setaffinity(0, cores))
    log.close()
    run.started = time.perf_counter()


def stop_all(runs: list[Run]) -> None:
    """Stop every run still going, with its process group (Ray's processes included)."""
    for run in runs:
        if run.process is not None and run.process.poll() is None:
            try:
                os.killpg(run.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    for run in runs:
        if run.process is not None:
            try:
                run.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(run.process.pid, signal.SIGKILL)
                run.process.wait()


def figures(run: Run, outdir: Path) -> dict[str, Any] | None:
    """The run's figures from its ``.json`` (None if it wrote none: failed or stopped)."""
    path = outdir / f"{run.name}.json"
    if not path.is_file():
        return None
    summary = json.loads(path.read_text(encoding="utf-8"))
    rows = summary["single_process"] if run.kind == "peer" else summary["apex"]
    row = rows[0]
    row.update(cores=list(run.cores), process_wall_s=round((run.ended or 0) - run.started, 1))
    return row


def main(argv: list[str] | None = None) -> int:
    """Entry point: plan, run, gather, report."""
    argv = sys.argv[1:] if argv is None else argv
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    p = argparse.ArgumentParser(prog="bench_apex_cores.py", description=__doc__.split("\n")[0])
    p.add_argument("--target", type=float, required=True,
                   help="validation score every run must reach (e.g. 30.8508)")
    p.add_argument("--peer-seeds", default="0,1,2")
    p.add_argument("--apex-seeds", default="0,1,2,3,4")
    p.add_argument("--peer-minutes", type=float, default=6.0)
    p.add_argument("--minutes", type=float, default=3.5, help="budget of each Ape-X run")
    p.add_argument("--actors", type=int, default=2)
    p.add_argument("--cores-per-apex", type=int,
                   help="cores of each Ape-X run (default: actors + 2)")
    p.add_argument("--cores", help="cores to use, e.g. 0-15 (default: this process's)")
    p.add_argument("--outdir", default=str(ROOT / "runs" / "bench_apex_cores"))
    p.add_argument("--dry-run", action="store_true", help="print the plan and stop")
    a = p.parse_args(argv)
    try:
        if a.target <= 0 or a.minutes <= 0 or a.peer_minutes <= 0 or a.actors < 1:
            raise ConfigError(f"--target {a.target:g} --minutes {a.minutes:g} --peer-minutes "
                              f"{a.peer_minutes:g} --actors {a.actors}: each must be above 0")
        peer_seeds = cli_lists.ints(a.peer_seeds, "--peer-seeds", distinct=True, minimum=0)
        apex_seeds = cli_lists.ints(a.apex_seeds, "--apex-seeds", distinct=True, minimum=0)
        per_apex = a.cores_per_apex or a.actors + 2
        if per_apex < 1:
            raise ConfigError(f"--cores-per-apex {per_apex}: give 1 core or more")
        cores = core_list(a.cores) if a.cores else sorted(os.sched_getaffinity(0))
        peer_cores, apex_cores = plan(cores, len(peer_seeds), per_apex)
    except ConfigError as exc:
        print(f"bench_apex_cores.py: error: {exc}", file=sys.stderr)
        return 2
    outdir = Path(a.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    common = ["--target", repr(a.target), "--actors", str(a.actors)]
    peers = [Run("peer", s, c, argv=[*common, "--peer-seeds", str(s), "--apex-seeds", "none",
                                     "--peer-minutes", repr(a.peer_minutes),
                                     "--out", str(outdir / f"peer_{s}" / "apex.pt"),
                                     "--json", str(outdir / f"peer_{s}.json")])
             for s, c in zip(peer_seeds, peer_cores)]
    queue = [Run("apex", s, argv=[*common, "--peer-seeds", "none", "--apex-seeds", str(s),
                                  "--minutes", repr(a.minutes), "--cpus", str(per_apex),
                                  "--out", str(outdir / f"apex_{s}" / "apex.pt"),
                                  "--json", str(outdir / f"apex_{s}.json"), *extra])
             for s in apex_seeds]
    print(f"{len(cores)} cores: {len(peers)} single-process runs on cores "
          f"{[c[0] for c in peer_cores]}, {len(apex_seeds)} Ape-X runs of {per_apex} cores on "
          f"{len(apex_cores)} core sets {[list(c) for c in apex_cores]}", flush=True)
    if a.dry_run:
        return 0
    t0 = time.perf_counter()
    free = list(apex_cores)
    running: list[Run] = []
    done: list[Run] = []
    interrupted = False
    try:
        for run in peers:
            start(run, outdir)
            running.append(run)
        while running or queue:
            while queue and free:
                run = queue.pop(0)
                run.cores = free.pop(0)
                start(run, outdir)
                running.append(run)
            time.sleep(1.0)
            for run in [r for r in running if r.process.poll() is not None]:
                run.ended = time.perf_counter()
                running.remove(run)
                done.append(run)
                if run.kind == "apex":
                    free.append(run.cores)
                print(f"{run.ended - t0:7.0f} s  {run.name} ended (exit "
                      f"{run.process.returncode}) on cores {list(run.cores)}", flush=True)
    except KeyboardInterrupt:
        interrupted = True
        print("interrupted: stopping the runs still going; the finished ones are kept",
              file=sys.stderr)
        stop_all(running)
    rows = {run.name: figures(run, outdir) for run in done}
    failed = sorted(name for name, row in rows.items() if row is None)
    ns = argparse.Namespace(actors=a.actors, agent_json=None)
    summary = bench_apex.summarise(
        ns, a.target, [rows[r.name] for r in peers if rows.get(r.name)],
        [rows[f"apex_{s}"] for s in apex_seeds if rows.get(f"apex_{s}")], len(cores))
    summary.update(command="python benchmarks/bench_apex_cores.py " + " ".join(sys.argv[1:]),
                   concurrent=True, wall_s=round(time.perf_counter() - t0, 1),
                   failed_or_stopped=failed, interrupted=interrupted,
                   not_started=[f"apex_{r.seed}" for r in queue],
                   cpu_model=cpu_model())
    (outdir / "summary.json").write_text(json.dumps(summary, indent=1, default=str),
                                         encoding="utf-8")
    bench_apex.report(summary, echo=print)
    if failed:
        print(f"no figures from {', '.join(failed)}: see their .log in {outdir}",
              file=sys.stderr)
    return 1 if failed or interrupted else 0


def cpu_model() -> str | None:
    """The processor's name, from /proc/cpuinfo (None elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


if __name__ == "__main__":
    from hdrm.cli.script import guarded

    sys.exit(guarded(main))
