"""Run the GPU entry points on a corpus of GPU cluster traces and check what they did.

Given openb pod lists (or Philly, Helios, PAI traces: anything ``hdrm replay`` reads as a GPU
workload) and openb node lists, folders or files, this runs for every (trace, node list) pair:

* ``hdrm fragmentation`` (the FGD placement-only protocol) with each ``--policies`` and one seed
  (not on Gavel traces, which need their throughput file);
* ``hdrm replay`` on a time-replayed slice (``--slice`` tasks from ``--start``) with each
  ``--pairs`` (queue order x placement);
* ``hdrm sweep`` (serial) over the same pairs on the first ``--slice`` tasks at load factors 1
  and ``--load`` (arrivals that many times faster, so that tasks queue), every run checked as
  a replay (not on Gavel traces);
* the Gymnasium environment (``job_pick`` mode) and the two-agent PettingZoo environment for
  ``--steps`` random steps among the valid actions of their masks, on the same slice;

and prints one tab-separated row per run: trace, node list, entry point, setting, status and
detail, seconds::

    python benchmarks/gpu_corpus.py --traces T_DIR --nodes N1.csv N2.csv --outdir OUT

A status is ``ok`` (exit 0 and every check holds), ``error`` (exit status 2 with one line naming
an input file: the detail is that line), or ``FAIL`` (a traceback, a longer or anonymous error,
or a broken invariant: the detail says which). The checks (:mod:`gpu_corpus_checks`): the curves
add up and no node holds more than it has; every task of a replay ends once or is rejected,
times add up, no CPU, memory or GPU share is double-booked at any instant and time never goes
back; in the environments every action a mask allows is a placement that fits by hand (and every
one it forbids does not), and the free amounts stay within [0, capacity] after each step.
``--reader-speed`` adds, per trace, the reader's rows per second (best of 3).
Exit status 1 when a row FAILs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's hdrm, installed or not
sys.path.insert(0, str(ROOT / "benchmarks"))

import gpu_corpus_checks as checks  # noqa: E402
from hdrm.cli import script as cli  # noqa: E402
from hdrm.errors import HdrmError  # noqa: E402
from hdrm.policies.gpu_state import TaskShape  # noqa: E402

POLICIES = ("fgd", "best_fit", "gpu_packing", "random")
PAIRS = ("fifo-fgd", "sjf-best_fit", "drf-gpu_packing", "las-first_fit")
COLUMNS = ("trace", "nodes", "entry", "setting", "status", "detail", "seconds")


def _files(paths: list[Path], node_lists: bool) -> list[Path]:
    """The files named, and in each folder the openb node lists (``node_lists``) or every other
    file, sorted."""
    found: list[Path] = []
    for path in (p.resolve() for p in paths):
        if path.is_dir():
            found += sorted(p for p in path.iterdir() if p.is_file()
                            and ("node_list" in p.name) == node_lists)
        else:
            found.append(path)
    return found


def _hdrm(args: list[str], cwd: Path) -> tuple[int, str, float]:
    """Run ``hdrm ARGS`` in its own session; (exit status, stderr, seconds)."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "hdrm.cli.main", *args], cwd=cwd,
                          capture_output=True, text=True, start_new_session=True)
    return proc.returncode, proc.stderr, time.perf_counter() - start


def _failed(rc: int, stderr: str, names: list[str]) -> tuple[str, str] | None:
    """(status, detail) of a failed run; None when it exited 0."""
    if rc == 0:
        return None
    problems = checks.check_error(rc, stderr, names)
    last = (stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
    if problems or rc != 2:
        return "FAIL", f"exit {rc}: {'; '.join(problems)}: {last[:300]}"
    return "error", last[:300]


def _count_outcomes(sim) -> dict[int, int]:
    """Count every outcome the engine reports, per task (wrapping the environment's hook)."""
    counts: dict[int, int] = {}
    hook = sim.on_outcome

    def counted(job, outcome):
        counts[job.idx] = counts.get(job.idx, 0) + 1
        return hook(job, outcome)

    sim.on_outcome = counted
    return counts


def _ended_once(counts: dict[int, int], sim, done: bool) -> list[str]:
    """Each task ended at most once, and every task once when the episode is over."""
    twice = sorted(i for i, n in counts.items() if n > 1)
    problems = [f"{len(twice)} tasks ended more than once"] if twice else []
    if done and len(counts) != len(sim.workload.jobs):
        problems.append(f"episode over with {len(counts)} of {len(sim.workload.jobs)} tasks "
                        "ended")
    return problems


class Corpus:
    """One sweep: the settings and the rows printed so far."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rows: list[tuple] = []
        self.outdir: Path = args.outdir.resolve()

    def emit(self, trace: Path, nodes: Path | None, entry: str, setting: str, status: str,
             detail: str, seconds: float) -> None:
        row = (trace.name, nodes.name if nodes else "-", entry, setting, status,
               detail.replace("\t", " ").replace("\n", " | "), f"{seconds:.1f}")
        self.rows.append(row)
        print("\t".join(row), flush=True)

    # ------------------------------------------------------------------ entry points
    def fragmentation(self, trace: Path, nodes: Path, inputs) -> None:
        for policy in self.args.policies:
            out = self.outdir / f"frag_{trace.stem}_{nodes.stem}_{policy}"
            rc, err, secs = _hdrm(["fragmentation", "--nodes", str(nodes), "--pods", str(trace),
                                   "--policy", policy, "--seeds", str(self.args.seed),
                                   "--outdir", str(out)], self.outdir)
            failed = _failed(rc, err, [trace.name, nodes.name])
            if failed:
                self.emit(trace, nodes, "fragmentation", policy, *failed, secs)
                continue
            summary = json.loads((out / "summary.json").read_text())
            seed = str(self.args.seed)
            if inputs["node_list"] is None or inputs["shapes_in_file_order"] is None:
                problems = ["exit 0 on inputs the checks could not read"]
            else:  # the protocol reads the node list as it is (any model name)
                problems = checks.check_curve(out / f"curve_{seed}.csv", summary, seed,
                                              inputs["node_list"],
                                              inputs["shapes_in_file_order"])
            detail = (f"unallocated {summary['unallocated_gpus_pct']['per_seed'][seed]}%, "
                      f"failed {summary['failed_tasks'][seed]}/{summary['arrivals'][seed]}")
            self.emit(trace, nodes, "fragmentation", policy, "FAIL" if problems else "ok",
                      "; ".join(problems) or detail, secs)

    def replay(self, trace: Path, nodes: Path, inputs) -> None:
        a = self.args
        for pair in a.pairs:
            out = self.outdir / f"replay_{trace.stem}_{nodes.stem}_{pair}"
            rc, err, secs = _hdrm(["replay", "--platform", str(nodes), "--workload", str(trace),
                                   "--policy", pair, "--nb-jobs", str(a.slice), "--start-index",
                                   str(a.start), "--seed", str(a.seed), "--outdir", str(out),
                                   "--quiet"] + (["--throughputs", self._throughputs(trace)]
                                                 if self._throughputs(trace) else []),
                                  self.outdir)
            failed = _failed(rc, err, [trace.name, nodes.name])
            if failed:
                self.emit(trace, nodes, "replay", pair, *failed, secs)
                continue
            if inputs["cluster"] is None or inputs["slice"] is None:
                problems = ["exit 0 on inputs the checks could not read"]
            else:
                problems = checks.check_replay(out, inputs["slice"], inputs["cluster"],
                                               inputs["shapes_by_id"])
            summary = json.loads((out / "out_gpu_summary.json").read_text())
            detail = (f"{summary['nb_finished']} ran, {summary['nb_rejected']} rejected, "
                      f"mean wait {summary['mean_waiting_time_s']:.0f} s, GPU alloc "
                      f"{100 * summary['gpu_allocation_rate_all']:.2f}%")
            self.emit(trace, nodes, "replay", pair, "FAIL" if problems else "ok",
                      "; ".join(problems) or detail, secs)

    def sweep(self, trace: Path, nodes: Path, inputs) -> None:
        """``hdrm sweep`` (serial) over the pairs at load factors 1 and ``--load`` (arrivals
        that many times faster: the queue fills), each run checked as a replay."""
        a = self.args
        out = self.outdir / f"sweep_{trace.stem}_{nodes.stem}"
        out.mkdir(parents=True, exist_ok=True)
        spec = {"policies": a.pairs, "platforms": [str(nodes)], "traces": [str(trace)],
                "seeds": [a.seed], "load_factors": [1.0, a.load], "nb_jobs": a.slice}
        (out / "sweep.json").write_text(json.dumps(spec))
        rc, err, secs = _hdrm(["sweep", str(out / "sweep.json"), "--outdir", str(out / "d"),
                               "--backend", "serial", "--quiet"], self.outdir)
        setting = f"{len(a.pairs)} pairs x load 1, {a.load:g}"
        failed = _failed(rc, err, [trace.name, nodes.name])
        if failed:
            self.emit(trace, nodes, "sweep", setting, *failed, secs)
            return
        runs = sorted(p for p in (out / "d" / "runs").iterdir() if p.is_dir())
        problems = [] if len(runs) == 2 * len(a.pairs) else [
            f"{len(runs)} run folders for {2 * len(a.pairs)} points"]
        if inputs["cluster"] is None or inputs["jobs"] is None:
            problems.append("exit 0 on inputs the checks could not read")
        else:
            jobs = inputs["jobs"][:a.slice]  # the sweep's slice starts at the first task
            shapes = {str(j.id): TaskShape.of_job(j) for j in jobs}
            for run in runs:
                problems += [f"{run.name}: {p}" for p in checks.check_replay(
                    run, jobs, inputs["cluster"], shapes)]
        waits = [json.loads((r / "out_gpu_summary.json").read_text())["mean_waiting_time_s"]
                 for r in runs if (r / "out_gpu_summary.json").exists()]
        detail = (f"{len(runs)} runs, mean wait {min(waits, default=0):.0f}.."
                  f"{max(waits, default=0):.0f} s")
        self.emit(trace, nodes, "sweep", setting, "FAIL" if problems else "ok",
                  "; ".join(problems[:3]) or detail, secs)

    def environments(self, trace: Path, nodes: Path) -> None:
        for entry, play in (("gpu_env", self._play_env), ("multiagent", self._play_multiagent)):
            start = time.perf_counter()
            try:
                status, detail = play(trace, nodes)
            except HdrmError as exc:
                status, detail = "error", str(exc).splitlines()[0]
                if len(str(exc).splitlines()) != 1 or not any(
                        n in str(exc) for n in (trace.name, nodes.name)):
                    status = "FAIL"
            except Exception as exc:  # noqa: BLE001: the sweep reports any crash as a FAIL
                status, detail = "FAIL", f"{type(exc).__name__}: {exc}"[:300]
            self.emit(trace, nodes, entry, f"{self.args.steps} steps", status, detail,
                      time.perf_counter() - start)

    def _throughputs(self, trace: Path) -> str | None:
        """Gavel's throughput file for a Gavel trace (neither CSV nor Philly's JSON array)."""
        from hdrm.workload.gpu_formats import is_gpu_trace_name, trace_kind
        if self.args.throughputs is None or is_gpu_trace_name(trace) \
                or trace_kind(trace) == "philly":
            return None
        return str(self.args.throughputs.resolve())

    def _settings(self, trace: Path, nodes: Path) -> dict:
        return dict(platform_file=str(nodes), workload_file=str(trace), nb_jobs=self.args.slice,
                    start_index=self.args.start, seed=self.args.seed,
                    throughputs=self._throughputs(trace))

    def _play_env(self, trace: Path, nodes: Path) -> tuple[str, str]:
        from hdrm.env import SchedulingEnv
        env = SchedulingEnv(mode="job_pick", **self._settings(trace, nodes))
        rng = np.random.default_rng(self.args.seed)
        env.reset(seed=self.args.seed)
        cluster, problems, steps, last = env.sim.core.cluster, [], 0, -np.inf
        done = env._done  # every task rejected: the episode ended in reset()
        counts = {} if done else _count_outcomes(env.sim)
        while not done and steps < self.args.steps and not problems:
            mask = env.action_masks()
            window = env.window_jobs()
            for i, job in enumerate(window):
                by_hand = bool(checks.fits_by_hand(cluster, env.sim.core.shape(job)).any())
                if by_hand != bool(mask[i]):
                    problems.append(f"step {steps}: mask {bool(mask[i])} for task {job.id}, "
                                    f"fits by hand {by_hand}")
            action = int(rng.choice(np.flatnonzero(mask)))
            done = env.step(action)[2]
            steps += 1
            problems += checks.state_problems(cluster)
            if env.sim.now < last:
                problems.append(f"step {steps}: time went back {last} -> {env.sim.now}")
            last = env.sim.now
        if counts:
            problems += _ended_once(counts, env.sim, done)
        if problems:
            return "FAIL", "; ".join(problems[:3])
        return "ok", f"{steps} steps{', episode ended' if done else ''}, t={last:.0f} s"

    def _play_multiagent(self, trace: Path, nodes: Path) -> tuple[str, str]:
        from hdrm.env.gpu_multiagent import GpuMultiAgentEnv
        env = GpuMultiAgentEnv(**self._settings(trace, nodes))
        rng = np.random.default_rng(self.args.seed)
        obs, infos = env.reset(seed=self.args.seed)
        core = env.core
        cluster, problems, steps, last = core.sim.core.cluster, [], 0, -np.inf
        counts = _count_outcomes(core.sim) if env.agents else {}
        while env.agents and steps < self.args.steps and not problems:
            actor = env.phase
            mask = obs[actor]["action_mask"].astype(bool)
            if actor == "place":
                shape = core.sim.core.shape(core.chosen)
                by_hand = checks.fits_by_hand(cluster, shape)
                if (by_hand != mask).any():
                    bad = int(np.flatnonzero(by_hand != mask)[0])
                    problems.append(f"step {steps}: place mask {mask[bad]} on node {bad}, fits "
                                    f"by hand {by_hand[bad]}")
            else:
                for i, job in enumerate(core.window_jobs()):
                    fits = bool(checks.fits_by_hand(cluster, core.sim.core.shape(job)).any())
                    if fits != bool(mask[i]):
                        problems.append(f"step {steps}: order mask {bool(mask[i])} for task "
                                        f"{job.id}, fits by hand {fits}")
            action = int(rng.choice(np.flatnonzero(mask)))
            acts = {"order": 0, "place": 0, actor: action}
            obs, _, _, _, infos = env.step(acts)
            steps += 1
            problems += checks.state_problems(cluster)
            if core.sim.now < last:
                problems.append(f"step {steps}: time went back {last} -> {core.sim.now}")
            last = core.sim.now
        if counts:
            problems += _ended_once(counts, core.sim, not env.agents)
        if problems:
            return "FAIL", "; ".join(problems[:3])
        return "ok", f"{steps} steps{', episode ended' if not env.agents else ''}, t={last:.0f} s"

    # ------------------------------------------------------------------ inputs
    def inputs(self, trace: Path, nodes: Path) -> dict:
        """Capacities and demands for the checks, each None (and an ``error`` row) when it
        cannot be read: ``cluster`` (the platform of a replay); ``node_list`` (the openb node
        list as the placement-only protocol reads it, any model name); ``jobs``, ``slice`` and
        ``shapes_by_id`` (the replay's tasks); ``shapes_in_file_order`` (the protocol's). The
        entry points still run, to see how they say it."""
        from hdrm.policies.gpu_state import GpuCluster
        from hdrm.sim.gpu_inputs import load_gpu_platform, load_gpu_workload
        from hdrm.workload.gpu_formats import is_gpu_trace_name, read_gpu_trace, trace_kind
        from hdrm.workload.openb import read_openb_nodes
        kind = "gavel" if self._throughputs(trace) else trace_kind(trace)
        out: dict = {"kind": kind, "cluster": None, "jobs": None, "slice": None,
                     "shapes_by_id": None, "shapes_in_file_order": None, "node_list": None}
        steps = [("cluster", lambda: GpuCluster.from_platform(load_gpu_platform(nodes))),
                 ("jobs", lambda: load_gpu_workload(trace, self._throughputs(trace)).jobs)]
        if is_gpu_trace_name(nodes):  # a node list, not a platform JSON
            steps.insert(0, ("node_list",
                             lambda: GpuCluster.from_openb(read_openb_nodes(nodes)[0])))
        if kind != "gavel":
            steps.append(("shapes_in_file_order",
                          lambda: [TaskShape.of_job(j) for j in read_gpu_trace(trace).jobs]))
        for key, read in steps:
            try:
                out[key] = read()
            except HdrmError as exc:
                self.emit(trace, nodes, "read", key, "error", str(exc).splitlines()[0], 0.0)
        if out["jobs"] is not None and self.args.start >= len(out["jobs"]):
            self.emit(trace, nodes, "read", "slice", "error", f"--start {self.args.start}: "
                      f"the trace has {len(out['jobs'])} tasks", 0.0)
        if out["jobs"] is not None:
            out["slice"] = out["jobs"][self.args.start:self.args.start + self.args.slice]
            out["shapes_by_id"] = {str(j.id): TaskShape.of_job(j) for j in out["slice"]}
        return out

    def reader_speed(self, trace: Path) -> None:
        from hdrm.sim.gpu_inputs import load_gpu_workload
        from hdrm.workload.gpu_formats import read_gpu_trace
        best, rows = np.inf, 0
        for _ in range(3):
            start = time.perf_counter()
            try:
                work = (read_gpu_trace(trace) if self._throughputs(trace) is None else
                        load_gpu_workload(trace, self._throughputs(trace)))
            except HdrmError as exc:
                self.emit(trace, None, "reader", "-", "error", str(exc).splitlines()[0], 0.0)
                return
            best = min(best, time.perf_counter() - start)
            rows = len(work.jobs) + sum(work.skipped.values())
        self.emit(trace, None, "reader", "speed", "ok",
                  f"{rows} rows in {best:.3f} s = {rows / best:,.0f} rows/s", best)

    def run(self) -> int:
        a = self.args
        self.outdir.mkdir(parents=True, exist_ok=True)
        print("\t".join(COLUMNS), flush=True)
        traces, node_lists = _files(a.traces, False), _files(a.nodes, True)
        for trace in traces:
            if a.reader_speed:
                self.reader_speed(trace)
            for nodes in node_lists:
                inputs = self.inputs(trace, nodes)
                if "fragmentation" in a.entries and inputs["kind"] != "gavel":
                    self.fragmentation(trace, nodes, inputs)
                if "replay" in a.entries:
                    self.replay(trace, nodes, inputs)
                if "sweep" in a.entries and inputs["kind"] != "gavel":
                    self.sweep(trace, nodes, inputs)
                if "env" in a.entries:
                    self.environments(trace, nodes)
        fails = sum(row[4] == "FAIL" for row in self.rows)
        print(f"{len(self.rows)} rows: {sum(r[4] == 'ok' for r in self.rows)} ok, "
              f"{sum(r[4] == 'error' for r in self.rows)} error, {fails} FAIL", flush=True)
        return 1 if fails else 0


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments and run the sweep."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, nargs="+", required=True,
                        help="GPU traces (openb pod lists, Philly, Helios, PAI), files or folders")
    parser.add_argument("--nodes", type=Path, nargs="+", required=True,
                        help="openb node lists (or GPU platform JSON files), files or folders")
    parser.add_argument("--outdir", type=Path, required=True)
    parser.add_argument("--policies", type=lambda s: s.split(","), default=list(POLICIES))
    parser.add_argument("--pairs", type=lambda s: s.split(","), default=list(PAIRS))
    parser.add_argument("--entries", type=lambda s: s.split(","),
                        default=["fragmentation", "replay", "sweep", "env"])
    parser.add_argument("--load", type=float, default=8.0,
                        help="the sweep's second load factor (arrivals that many times faster)")
    parser.add_argument("--slice", type=cli.count(1), default=2000, help="tasks replayed")
    parser.add_argument("--start", type=cli.count(0), default=0, help="first task replayed")
    parser.add_argument("--steps", type=cli.count(1), default=300, help="environment steps")
    parser.add_argument("--throughputs", type=Path,
                        help="Gavel's simulation_throughputs.json, for Gavel traces")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--reader-speed", action="store_true")
    args = parser.parse_args(argv)
    return Corpus(args).run()


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
