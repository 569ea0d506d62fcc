"""Run hdeeprm-launch on a corpus of Batsim workloads and platforms, on both engines.

Given folders (or files) of Batsim JSON workloads and SimGrid XML platforms, this runs every
chosen (workload, platform) pair with ``hdeeprm-launch`` and the shipped classic agent
(``agents/classic.py``), for a few policy pairs and backfilling modes, on the ``batsim`` engine
(the real binary) and on the ``builtin`` engine, and prints one tab-separated row per setting::

    python benchmarks/workload_corpus.py --workloads W_DIR --platforms P_DIR --outdir OUT

Each run is checked: its exit status; on failure, that the error is one line (no traceback);
on success, that ``out_jobs.csv`` holds each job of the workload exactly once, with a final
state, and times that add up (finish = start + execution, wait = start - submission). Where
both engines finish, their rows are compared as ``docs/batsim.rst`` says they agree: final
state and allocated cores exactly, times within 1 ms, each job's and the total energy within 0.1 %.
``--engines batsim,builtin,replay`` adds ``hdrm replay --engine batsim`` (a fixed-policy replay)
as a third column. ``--sigint S`` also sends SIGINT to the process group of a 1000-episode launch
of each pair on each engine after S seconds, as a terminal's Ctrl-C does, and checks what it
left (exit status 130, the jobs that ended, each once).

Pairs: ``--pairs batsim-tests`` (default) runs each workload of Batsim 4.2.1's own ``workloads/``
on the platforms its ``test/conftest.py`` pairs it with (a workload the tests do not use runs on
``cluster512.xml``); ``--pairs all`` runs every workload on every platform; ``--pair W:P`` names
pairs by file name. Without the Batsim binary (``--batsim`` or ``batsim`` on the PATH) the
``batsim`` and ``replay`` rows say "skipped" and the built-in ones still run.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AGENT = ROOT / "agents" / "classic.py"

#: Batsim 4.2.1's test pairs (test/conftest.py and the test_*.py fixtures they feed).
_SMALL = "small_platform.xml"
_ALL7 = (_SMALL, "small_platform_usage_replay.xml", "cluster512.xml", "cluster512_pfs.xml",
         "energy_platform_homogeneous_no_net_128.xml", "cluster_energy_128.xml",
         "properties_example.xml")
_ENERGY = ("energy_platform_homogeneous_no_net_128.xml", "cluster_energy_128.xml")
BATSIM_TEST_PAIRS: dict[str, tuple[str, ...]] = {
    "test_delays.json": _ALL7,
    "test_sequence_delay.json": _ALL7,
    "test_various_profile_types.json": _ALL7,
    "test_one_delay_job.json": _ALL7,
    "test_one_computation_job.json": _ALL7,
    "test_one_computation_job_tot.json": _ALL7,
    "test_energy_minimal_load0.json": _ENERGY,
    "test_energy_minimal_load50.json": _ENERGY,
    "test_energy_minimal_load100.json": _ENERGY,
    "test_walltime.json": ("cluster512.xml",),
    "test_walltime_smpi.json": ("cluster512.xml",),
    "test_same_submit_time.json": (_SMALL,),
    "test_batsim_paper_workload_seed1.json": ("cluster512.xml",),
    "test_long_workload.json": ("energy_platform.xml",),
    "test_case_study1.json": (_SMALL,),
    "test_smpi_compute_only.json": (_SMALL,),
    "test_smpi_compute_only_2_jobs.json": (_SMALL,),
    "test_smpi_mapping.json": (_SMALL,),
    "test_smpi_mixed_comp_comm.json": (_SMALL,),
    "test_smpi_collectives.json": (_SMALL,),
    "test_usage_trace.json": ("small_platform_usage_replay.xml",),
    "test_tuto_stencil.json": ("cluster512_pfs.xml",),
}
DEFAULT_PLATFORM = "cluster512.xml"

#: (policy pair, backfilling) settings of every pair; the first alone with --quick.
SETTINGS = (("first-high_gflops", "none"), ("shortest-high_gflops", "none"),
            ("smallest-low_power", "none"), ("first-high_gflops", "easy"))
TIME_TOL_S = 1e-3
ENERGY_REL_TOL = 1e-3


@dataclass
class Run:
    """One hdeeprm-launch run and what the checks found."""

    workload: Path
    platform: Path
    engine: str
    policy: str
    backfilling: str
    status: str = ""
    detail: str = ""
    rows: dict[str, dict[str, str]] = field(default_factory=dict)
    energy_j: float = 0.0
    wall_s: float = 0.0


def files_in(items: list[str], suffix: str) -> list[Path]:
    """The ``suffix`` files of folders and the files named, sorted by name."""
    found: list[Path] = []
    for item in items:
        path = Path(item)
        found += sorted(path.glob(f"*{suffix}")) if path.is_dir() else [path]
    return sorted(found, key=lambda p: p.name)


def choose_pairs(workloads: list[Path], platforms: list[Path], mode: str,
                 named: list[str]) -> list[tuple[Path, Path]]:
    """The (workload, platform) pairs to run."""
    by_name = {p.name: p for p in platforms}
    if named:
        wl = {w.name: w for w in workloads}
        pairs = []
        for text in named:
            w, _, p = text.partition(":")
            if w not in wl or p not in by_name:
                raise SystemExit(f"--pair {text}: no such workload or platform among the inputs")
            pairs.append((wl[w], by_name[p]))
        return pairs
    if mode == "all":
        return [(w, p) for w in workloads for p in platforms]
    pairs = []
    for w in workloads:
        for name in BATSIM_TEST_PAIRS.get(w.name, (DEFAULT_PLATFORM,)):
            if name in by_name:
                pairs.append((w, by_name[name]))
    return pairs


def options_for(run: Run, batsim: str | None) -> dict:
    """The options.json of ``run``."""
    options: dict = {
        "seed": 1, "workload_file_path": str(run.workload.resolve()),
        "platform_file_path": str(run.platform.resolve()), "engine": run.engine,
        "simulation": {"backfilling": run.backfilling},
        "pybatsim": {"agent": {"type": "classic", "run": "test", "policy": run.policy,
                               "episodes": 1}},
    }
    if run.engine != "builtin":
        options["batsim"] = {"binary": batsim, "timeout_s": 60}
    return options


def command_for(run: Run, folder: Path, batsim: str | None, episodes: int) -> list[str]:
    """The command of ``run`` (run in ``folder``): hdeeprm-launch with an options.json written
    there, or, for engine ``replay``, ``hdrm replay --engine batsim`` (the fixed-policy replay)."""
    if run.engine == "replay":
        return [sys.executable, "-m", "hdrm.cli.main", "replay", "--engine", "batsim",
                "--batsim", str(batsim), "--platform", str(run.platform.resolve()),
                "--workload", str(run.workload.resolve()), "--policy", run.policy,
                "--backfill", run.backfilling, "--outdir", "out", "--overwrite", "--quiet"]
    (folder / "options.json").write_text(json.dumps(options_for(run, batsim), indent=1))
    return [sys.executable, "-m", "hdrm.launcher", str(AGENT), "options.json", "--outdir",
            "out", "--overwrite", "--quiet", "--episodes", str(episodes)]


def launch(run: Run, folder: Path, batsim: str | None, timeout_s: float,
           interrupt_after_s: float | None = None, episodes: int = 1
           ) -> subprocess.CompletedProcess:
    """Run ``run`` in ``folder`` (its own session; the whole group is killed on a timeout, and
    gets SIGINT after ``interrupt_after_s``, as a terminal's Ctrl-C)."""
    folder.mkdir(parents=True, exist_ok=True)
    command = command_for(run, folder, batsim, episodes)
    proc = subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        if interrupt_after_s is not None:
            time.sleep(interrupt_after_s)
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return subprocess.CompletedProcess(command, 124, out, err)
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def workload_ids(path: Path) -> list[str]:
    """The job ids of a Batsim workload, as out_jobs.csv writes them."""
    jobs = json.loads(path.read_text(encoding="utf-8-sig"))["jobs"]
    return [str(job["id"]) for job in jobs]


def read_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """out_jobs.csv's columns and rows."""
    with path.open(newline="") as stream:
        reader = csv.DictReader(stream)
        return list(reader.fieldnames or []), list(reader)


def check_rows(run: Run, out: Path) -> str:
    """'' when out_jobs.csv holds each job once with consistent times, else what is wrong."""
    jobs_csv = out / "out_jobs.csv"
    if not jobs_csv.is_file():
        return "no out_jobs.csv"
    _, rows = read_rows(jobs_csv)
    ids = [row["job_id"].split("!")[-1] for row in rows]
    expected = workload_ids(run.workload)
    if sorted(ids) != sorted(expected):
        missing = sorted(set(expected) - set(ids))[:3]
        twice = sorted({i for i in ids if ids.count(i) > 1})[:3]
        return f"rows {len(ids)}/{len(expected)} (missing {missing}, twice {twice})"
    for row in rows:
        problem = _row_problem(row)
        if problem:
            return f"job {row['job_id']}: {problem}"
    run.rows = {i: row for i, row in zip(ids, rows)}
    return ""


def _row_problem(row: dict[str, str]) -> str:
    if not row.get("final_state"):
        return "no final_state"
    if row["final_state"] == "REJECTED":
        return ""
    start, run_s, finish = (float(row[k]) for k in ("starting_time", "execution_time",
                                                    "finish_time"))
    if abs(start + run_s - finish) > TIME_TOL_S:
        return f"start {start} + execution {run_s} != finish {finish}"
    wait = float(row["waiting_time"])
    if abs(start - float(row["submission_time"]) - wait) > TIME_TOL_S:
        return f"waiting_time {wait} != start - submission"
    return ""


def one_run(run: Run, folder: Path, batsim: str | None, timeout_s: float) -> None:
    """Run and check ``run``, filling its status and detail."""
    if run.engine != "builtin" and not batsim:
        run.status, run.detail = "skipped", "no batsim binary"
        return
    start = time.perf_counter()
    done = launch(run, folder, batsim, timeout_s)
    run.wall_s = time.perf_counter() - start
    err = done.stderr.strip().splitlines()
    if done.returncode != 0:
        run.status = "TRACEBACK" if "Traceback" in done.stderr else f"refused({done.returncode})"
        if done.returncode == 124:
            run.status = "TIMEOUT"
        run.detail = err[-1][:160] if err else ""
        if len([line for line in err if line.strip()]) > 1 and run.status.startswith("ref"):
            run.status = f"multi-line({done.returncode})"
        return
    problem = check_rows(run, folder / "out")
    schedule = folder / "out" / "out_schedule.csv"
    if schedule.is_file():
        _, summary = read_rows(schedule)
        run.energy_j = float(summary[0].get("consumed_joules") or 0) if summary else 0.0
    run.status = "BAD-ROWS" if problem else "ok"
    run.detail = problem or f"{len(run.rows)} jobs"


def compare(batsim: Run, builtin: Run) -> str:
    """How the two engines' rows differ ('same' when they agree)."""
    if batsim.status != "ok" or builtin.status != "ok":
        return "-"
    total = (batsim.energy_j, builtin.energy_j)
    if abs(total[0] - total[1]) > ENERGY_REL_TOL * max(map(abs, total)):
        return f"consumed_joules {total[0]:.6g} vs {total[1]:.6g}"
    for job_id, a in batsim.rows.items():
        b = builtin.rows[job_id]
        if a["final_state"] != b["final_state"] or a["allocated_resources"] != \
                b["allocated_resources"]:
            return f"job {job_id}: {a['final_state']} {a['allocated_resources']} vs " \
                   f"{b['final_state']} {b['allocated_resources']}"
        for key in ("starting_time", "finish_time"):
            if abs(float(a[key] or 0) - float(b[key] or 0)) > TIME_TOL_S:
                return f"job {job_id}: {key} {a[key]} vs {b[key]}"
        energy = [float(row["consumed_energy"] or 0) for row in (a, b)]
        if abs(energy[0] - energy[1]) > ENERGY_REL_TOL * max(map(abs, energy)):
            return f"job {job_id}: consumed_energy {energy[0]} vs {energy[1]}"
    return "same"


def check_sigint(run: Run, folder: Path, batsim: str | None, timeout_s: float,
                 after_s: float) -> str:
    """Ctrl-C (SIGINT to the process group) a launch of many episodes after ``after_s`` and say
    what it left: its exit status and out_jobs.csv's rows (each job at most once, with
    consistent times)."""
    if run.engine != "builtin" and not batsim:
        return "skipped"
    done = launch(run, folder, batsim, timeout_s, interrupt_after_s=after_s, episodes=1000)
    err = [line for line in done.stderr.strip().splitlines() if line.strip()]
    if "Traceback" in done.stderr:
        return f"TRACEBACK: {err[-1][:100] if err else ''}"
    jobs_csv = folder / "out" / "out_jobs.csv"
    if not jobs_csv.is_file():
        return f"rc {done.returncode}, NO out_jobs.csv ({err[-1][:100] if err else ''})"
    _, rows = read_rows(jobs_csv)
    ids = [row["job_id"] for row in rows]
    problems = [p for p in map(_row_problem, rows) if p]
    if len(set(ids)) != len(ids) or problems or not set(ids) <= set(workload_ids(run.workload)):
        return f"rc {done.returncode}, BAD rows ({problems[:1]})"
    return f"rc {done.returncode}, {len(ids)} jobs ended kept ({err[-1][:80] if err else ''})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", nargs="+", required=True, help="folders or .json files")
    parser.add_argument("--platforms", nargs="+", required=True, help="folders or .xml files")
    parser.add_argument("--pairs", choices=("batsim-tests", "all"), default="batsim-tests")
    parser.add_argument("--pair", action="append", default=[], metavar="W.json:P.xml")
    parser.add_argument("--engines", default="batsim,builtin",
                        help="batsim, builtin and replay (hdrm replay --engine batsim), "
                        "comma-separated; the first two are compared")
    parser.add_argument("--quick", action="store_true", help="one setting per pair")
    parser.add_argument("--batsim", help="the Batsim binary (default: batsim on the PATH; "
                        "'none': skip its rows)")
    parser.add_argument("--outdir", default="runs/workload_corpus")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per run")
    parser.add_argument("--sigint", type=float, metavar="S",
                        help="also Ctrl-C a launch of 1000 episodes of each pair on each engine "
                        "after S seconds and check what it left")
    args = parser.parse_args(argv)
    batsim = None if args.batsim == "none" else args.batsim or shutil.which("batsim")
    workloads = files_in(args.workloads, ".json")
    platforms = files_in(args.platforms, ".xml")
    pairs = choose_pairs(workloads, platforms, args.pairs, args.pair)
    engines = [e for e in args.engines.split(",") if e]
    settings = SETTINGS[:1] if args.quick else SETTINGS
    out = Path(args.outdir)
    print("workload\tplatform\tpolicy\tbackfilling\t" + "\t".join(engines) + "\tengines\tdetail")
    counts: dict[str, int] = {}
    for w, p in pairs:
        for policy, backfilling in settings:
            runs = [Run(w, p, e, policy, backfilling) for e in engines]
            for r in runs:
                tag = f"{w.stem}/{p.stem}/{policy}-{backfilling}/{r.engine}"
                one_run(r, out / tag, batsim, args.timeout)
                counts[r.status] = counts.get(r.status, 0) + 1
            agree = compare(runs[0], runs[1]) if len(runs) >= 2 else "-"
            details = "; ".join(f"{r.engine}: {r.detail}" for r in runs if r.detail)
            print(f"{w.name}\t{p.name}\t{policy}\t{backfilling}\t"
                  + "\t".join(r.status for r in runs) + f"\t{agree}\t{details}", flush=True)
        for engine in engines if args.sigint is not None else ():
            if engine == "replay":
                continue
            run = Run(w, p, engine, *settings[0])
            print(f"SIGINT\t{w.name}\t{p.name}\t{engine}\t"
                  + check_sigint(run, out / f"{w.stem}/{p.stem}/sigint-{engine}", batsim,
                                 args.timeout, args.sigint), flush=True)
    print("# " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    from hdrm.cli import script as cli

    sys.exit(cli.guarded(main))
