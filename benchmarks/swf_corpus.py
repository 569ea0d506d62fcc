"""Sweep SWF traces (Parallel Workloads Archive logs and variants) through hdrm's entry points.

Given files and folders of SWF traces (plain, gzip, bzip2 or xz; folders give their ``*.swf*``
files), each trace runs, on a slice of ``--nb-jobs`` jobs where a run is long, through

``workload``  ``hdrm workload TRACE`` (the whole trace: its summary and skip counts);
``convert``   ``hdrm workload TRACE --nb-jobs N --json W.json``, then ``hdrm workload W.json``;
``replay``    ``hdrm replay --homogeneous-procs P`` (built-in engine, FCFS + EASY, walltime kills
              on, as the batsim engine always kills);
``batsim``    the same with ``--engine batsim`` (the real binary), compared with ``replay``;
``launch``    ``hdeeprm-launch agents/classic.py options.json`` (FCFS, one episode);
``env``       the Gymnasium environment built from that options.json, stepped to its end;
``sweep``     ``hdrm sweep`` of one point (FCFS, no backfilling, ``platforms/hetero.json``);
``compare``   ``benchmarks/compare.py --extra-trace`` (heuristics only: no models, no shipped
              traces, one window).

and prints one tab-separated row per (trace, entry point): ``ok`` with what the run kept and
skipped, ``refused`` with its one-line error, or ``FAIL`` with what broke. A run passes when

* it exits 0 and its outputs hold up: ``out_jobs.csv`` has each job of the slice exactly once
  (the jobs the reader keeps), no core runs two jobs at once, no job is submitted before 0,
  starts before its submission or ends before its start, finish = start + execution time; or
* it exits 2 with one line ``PROG: error: ...`` naming the trace (or the options file) and no
  traceback. Where the reader refuses a line, the ``workload`` row tries ``--no-strict`` too
  (reported after ``->``) and the other entry points run with it (``"strict": false``).

P is 0 where the trace states MaxProcs (or MaxNodes): the commands read it themselves
(``--homogeneous-procs 0``, no ``nb_resources``, no ``:PROCS``); else ``--procs``, or the widest
job of the slice. Where both engines finish, each job's final state and its start and finish
times (to 1 ms, contention off) must be equal. A run longer than ``--timeout`` seconds is stopped
(its process group) and reported as ``FAIL timeout``.

Usage::

    python benchmarks/swf_corpus.py TRACES... [--entries workload,replay,...] [--nb-jobs 200]
        [--procs P] [--conventions default|rlscheduler] [--outdir OUT] [--batsim PATH]
        [--timeout 300]

The last line counts the rows per status; the exit status is 0 even when rows fail (the table is
the result), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AGENT = ROOT / "agents" / "classic.py"
SWEEP_PLATFORM = ROOT / "platforms" / "hetero.json"
ENTRIES = ("workload", "convert", "replay", "batsim", "launch", "env", "sweep", "compare")
_SUFFIXES = (".swf", ".gz", ".bz2", ".xz")
#: Seconds two engines' start or finish times may differ by.
TIME_TOLERANCE_S = 1e-3


@dataclass
class Row:
    """One (trace, entry point) result."""

    trace: str
    entry: str
    status: str  # ok, refused, FAIL, skipped
    detail: str

    def line(self) -> str:
        return f"{self.trace}\t{self.entry}\t{self.status}\t{self.detail}"


def traces_of(paths: list[str]) -> list[Path]:
    """The trace files named, folders expanded to their SWF files in name order."""
    out: list[Path] = []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            out += sorted(p for p in path.iterdir() if p.is_file() and ".swf" in p.name)
        elif path.exists():
            out.append(path)
        else:
            from hdrm.errors import ConfigError

            raise ConfigError(f"{text}: no such file or folder; give SWF traces or folders")
    return out


def run(argv: list[str], timeout_s: float, cwd: Path | None = None) -> tuple[int, str, str]:
    """Run ``argv`` in its own session; on timeout kill its whole process group (rc -9)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=cwd, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return -9, out, err
    return proc.returncode, out, err


#: An error line: ``PROG: error: MESSAGE`` (``error: MESSAGE`` from compare.py).
_ERROR = re.compile(r"^(?:[^:]+: )?error: (.*)$")


def judge_failure(rc: int, err: str, names: tuple[str, ...]) -> tuple[str, str]:
    """``refused`` with the error line, or ``FAIL`` with why (a traceback, several lines ...)."""
    if rc == -9:
        return "FAIL", "timeout"
    if "Traceback" in err:
        last = [line for line in err.splitlines() if line.strip()][-1:]
        return "FAIL", f"traceback: {last[0][:200] if last else ''}"
    errors = [found for line in err.splitlines() if (found := _ERROR.match(line))]
    if rc != 2 or len(errors) != 1:
        return "FAIL", f"rc {rc}, {len(errors)} error lines: {err.strip()[-200:]!r}"
    message = errors[0].group(1)
    if not any(name in message for name in names):
        return "FAIL", f"error names no input: {message[:200]}"
    return "refused", message


def parse_ids(text: str) -> list[int]:
    """Batsim's interval set ``0-3 7`` as ids."""
    ids: list[int] = []
    for part in text.split():
        low, _, high = part.partition("-")
        ids += range(int(low), int(high or low) + 1)
    return ids


def check_jobs(path: Path, expected: set[str] | None) -> tuple[list[dict], str | None]:
    """The rows of an out_jobs.csv and the first broken invariant (None: all hold).

    Args:
        path: the out_jobs.csv.
        expected: the ids of the jobs of the slice, as the reader keeps them (None: unknown).
    """
    if not path.is_file():
        return [], f"no {path.name}"
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    ids = [row["job_id"] for row in rows]
    if len(set(ids)) != len(ids):
        return rows, "a job id appears twice in out_jobs.csv"
    if expected is not None and set(ids) != expected:
        other = sorted(set(ids) ^ expected, key=lambda x: (len(x), x))
        return rows, (f"{len(rows)} jobs in out_jobs.csv, the slice has {len(expected)}; "
                      f"{len(other)} differ, e.g. job {other[0]}")
    busy: dict[int, list[tuple[float, float, str]]] = {}
    for row in rows:
        if row["final_state"] == "REJECTED":
            continue
        submit, start = float(row["submission_time"]), float(row["starting_time"])
        finish, execution = float(row["finish_time"]), float(row["execution_time"])
        if submit < 0 or start < submit - 1e-6 or finish < start - 1e-6:
            return rows, f"job {row['job_id']}: times go back ({submit}, {start}, {finish})"
        if abs(finish - start - execution) > 1e-3:
            return rows, f"job {row['job_id']}: finish != start + execution"
        for core in parse_ids(row["allocated_resources"]):
            busy.setdefault(core, []).append((start, finish, row["job_id"]))
    for core, spans in busy.items():
        spans.sort()
        for (_, end, job), (begin, _, other) in zip(spans, spans[1:]):
            if begin < end - 1e-6:
                return rows, f"core {core} runs jobs {job} and {other} at once"
    return rows, None


def ok_detail(rows: list[dict], extra: str = "") -> str:
    states: dict[str, int] = {}
    for row in rows:
        states[row["final_state"]] = states.get(row["final_state"], 0) + 1
    text = ", ".join(f"{k.lower()} {v}" for k, v in sorted(states.items()))
    return f"{len(rows)} jobs ({text}){extra}"


@dataclass
class Trace:
    """One trace as the sweep sees it: its file, its slice, its processors."""

    path: Path
    outdir: Path
    nb_jobs: int
    procs: int  # given to the commands; 0: they read the trace's MaxProcs themselves
    strict: bool
    expected: set[str] | None  # ids of the slice's jobs (None: the reader refuses the trace)
    skipped: str
    conventions: str = "default"


def inspect(path: Path, outdir: Path, nb_jobs: int, procs: int, conventions: str) -> Trace:
    """Read the trace in this process to know its slice, its processors and its skips."""
    from hdrm.errors import HdrmError, SkippableLineError
    from hdrm.workload.select import select
    from hdrm.workload.swf import read_swf

    strict, skipped = True, ""
    quiet = logging.getLogger("hdrm")  # the runs report what they skip
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        try:
            workload = read_swf(path, conventions)
        except SkippableLineError:
            strict, workload = False, read_swf(path, conventions, strict=False)
    except HdrmError:
        return Trace(path, outdir, nb_jobs, procs or 1, True, None, "", conventions)
    finally:  # the caller's logging as it was (a test run in-process keeps its warnings)
        quiet.setLevel(level)
    part = select(workload, 0, min(nb_jobs, len(workload)))
    skipped = ", ".join(f"{k}: {v}" for k, v in workload.skipped.items())
    widest = max(job.res for job in part.jobs)
    return Trace(path, outdir, nb_jobs, procs or (0 if workload.nb_res else widest), strict,
                 {str(job.id) for job in part.jobs}, skipped, conventions)


def script(name: str, module: str) -> list[str]:
    """The installed console script beside this Python, else ``python -m module``."""
    found = Path(sys.executable).parent / name
    return [str(found)] if found.is_file() else [sys.executable, "-m", module]


def hdrm_cmd(*args: str) -> list[str]:
    return [*script("hdrm", "hdrm.cli.main"), *args]


def strictness(trace: Trace) -> list[str]:
    """The reading options of the hdrm commands: conventions, and --no-strict where needed."""
    return ["--conventions", trace.conventions] + ([] if trace.strict else ["--no-strict"])


def entry_workload(trace: Trace, timeout_s: float) -> Row:
    conventions = ["--conventions", trace.conventions]
    rc, out, err = run(hdrm_cmd("workload", str(trace.path), *conventions), timeout_s)
    if rc == 0:
        return Row("", "workload", "ok", _summary(out))
    status, detail = judge_failure(rc, err, (str(trace.path),))
    if status == "refused" and "--no-strict" in detail:
        rc, out, err = run(hdrm_cmd("workload", str(trace.path), *conventions, "--no-strict"),
                           timeout_s)
        again = _summary(out) if rc == 0 else " ".join(judge_failure(rc, err, (str(trace.path),)))
        detail = f"{detail} -> --no-strict: {again}"
    return Row("", "workload", status, detail)


def _summary(out: str) -> str:
    found = dict(re.findall(r"^(jobs kept|jobs skipped|cores)\s+(.*)$", out, re.M))
    notes = re.findall(r"^note\s+(.*)$", out, re.M)
    skips = re.findall(r"^  (\S.*?)\s{2,}(\d+)$", out, re.M)
    text = (f"kept {found.get('jobs kept', '?')}, skipped {found.get('jobs skipped', '?')}"
            f"{' (' + ', '.join(f'{k}: {v}' for k, v in skips) + ')' if skips else ''}, "
            f"cores {found.get('cores', '?')}")
    return text + "".join(f"; {note}" for note in notes)


def entry_convert(trace: Trace, timeout_s: float) -> Row:
    out_json = trace.outdir / "convert.json"
    rc, _, err = run(hdrm_cmd("workload", str(trace.path), "--nb-jobs", str(trace.nb_jobs),
                              "--json", str(out_json), *strictness(trace)), timeout_s)
    if rc != 0:
        return Row("", "convert", *judge_failure(rc, err, (str(trace.path),)))
    rc, out, err = run(hdrm_cmd("workload", str(out_json)), timeout_s)
    if rc != 0:
        status, detail = judge_failure(rc, err, (str(out_json),))
        return Row("", "convert", "FAIL", f"its JSON does not read back: {detail}")
    kept = re.search(r"^jobs kept\s+(\d+)", out, re.M)
    size = len(trace.expected or ())
    if trace.expected is not None and (not kept or int(kept.group(1)) != size):
        return Row("", "convert", "FAIL", f"JSON holds {kept and kept.group(1)} jobs, the "
                                          f"slice {size}")
    return Row("", "convert", "ok", f"{size} jobs written and read back")


def _replay(trace: Trace, name: str, timeout_s: float, extra: list[str]) -> tuple[Row, list]:
    outdir = trace.outdir / name
    rc, out, err = run(hdrm_cmd("replay", "--homogeneous-procs", str(trace.procs), "--workload",
                                str(trace.path), "--nb-jobs", str(trace.nb_jobs), "--policy",
                                "fcfs", "--backfill", "easy", "--contention", "none",
                                "--walltime-kill", "--outdir", str(outdir), *strictness(trace),
                                *extra), timeout_s)
    if rc != 0:  # the platform is an input too: --homogeneous-procs makes homogeneous_<N>
        return Row("", name, *judge_failure(rc, err, (str(trace.path), "homogeneous_"))), []
    rows, broken = check_jobs(outdir / "out_jobs.csv", trace.expected)
    if broken:
        return Row("", name, "FAIL", broken), rows
    skipped = re.search(r"skipped from the source\s+(.*)$", out, re.M)
    note = f"; skipped from the source {skipped.group(1)}" if skipped else ""
    if trace.procs:
        note += f"; on {trace.procs} processors (the trace states none)"
    return Row("", name, "ok", ok_detail(rows, note)), rows


def entry_replay(trace: Trace, timeout_s: float, batsim: str | None) -> list[Row]:
    row, builtin = _replay(trace, "replay", timeout_s, [])
    if batsim is None:
        return [row, Row("", "batsim", "skipped", "no Batsim binary (--batsim)")]
    other, batsim_rows = _replay(trace, "batsim", timeout_s, ["--engine", "batsim", "--batsim",
                                                                batsim])
    if row.status == other.status == "ok":
        differ = compare_engines(builtin, batsim_rows)
        if differ:
            other = Row("", "batsim", "FAIL", f"engines differ: {differ}")
        else:
            other.detail += "; same states and times as replay"
    return [row, other]


def compare_engines(first: list[dict], second: list[dict]) -> str | None:
    """The first job whose final state, start or finish differs (None: all agree)."""
    by_id = {row["job_id"]: row for row in second}
    if set(by_id) != {row["job_id"] for row in first}:
        return "not the same jobs"
    for row in first:
        mate = by_id[row["job_id"]]
        if row["final_state"] != mate["final_state"]:
            return f"job {row['job_id']}: {row['final_state']} vs {mate['final_state']}"
        for key in ("starting_time", "finish_time"):
            if row[key] and abs(float(row[key]) - float(mate[key] or "nan")) > TIME_TOLERANCE_S \
                    or bool(row[key]) != bool(mate[key]):
                return f"job {row['job_id']}: {key} {row[key]} vs {mate[key]}"
    return None


def options_file(trace: Trace) -> Path:
    """An options.json running the classic agent (FCFS) on the trace's slice."""
    options = {
        "seed": 0, "workload_file_path": str(trace.path.resolve()), "nb_jobs": trace.nb_jobs,
        "nb_resources": trace.procs or None,
        "workload": {"strict": trace.strict, "conventions": trace.conventions},
        "simulation": {"contention": "none", "backfilling": "easy"},
        "pybatsim": {"log_level": "WARNING",
                     "agent": {"type": "classic", "run": "test", "policy": "fcfs",
                               "episodes": 1}},
    }
    path = trace.outdir / "options.json"
    path.write_text(json.dumps(options, indent=1))
    return path


def entry_launch(trace: Trace, timeout_s: float) -> Row:
    options = options_file(trace)
    outdir = trace.outdir / "launch"
    rc, _, err = run([*script("hdeeprm-launch", "hdrm.launcher"), str(AGENT), str(options),
                      "--outdir", str(outdir), "--overwrite", "--quiet"], timeout_s)
    if rc != 0:
        return Row("", "launch", *judge_failure(rc, err, (str(trace.path), str(options))))
    rows, broken = check_jobs(outdir / "out_jobs.csv", trace.expected)
    return Row("", "launch", "FAIL" if broken else "ok", broken or ok_detail(rows))


_ENV_SCRIPT = """
import sys
from hdrm.cli.script import guarded
def main():
    import numpy as np
    from hdrm.env import SchedulingEnv
    from hdrm.options import load_options
    env = SchedulingEnv(load_options(sys.argv[1]))
    obs, info = env.reset(seed=0)
    steps, done = 0, False
    while not done:
        action = int(np.flatnonzero(info["action_mask"])[0])
        obs, reward, terminated, truncated, info = env.step(action)
        steps, done = steps + 1, terminated or truncated
    print(f"steps {steps}")
sys.exit(guarded(main, "env"))
"""


def entry_env(trace: Trace, timeout_s: float) -> Row:
    options = options_file(trace)
    rc, out, err = run([sys.executable, "-c", _ENV_SCRIPT, str(options)], timeout_s)
    if rc != 0:
        return Row("", "env", *judge_failure(rc, err, (str(trace.path), str(options))))
    return Row("", "env", "ok", f"episode to its end, {out.strip()}")


def entry_sweep(trace: Trace, timeout_s: float) -> Row:
    sweep = {"policies": ["fcfs"], "platforms": [str(SWEEP_PLATFORM)],
             "traces": [str(trace.path.resolve())], "nb_jobs": trace.nb_jobs,
             "strict": trace.strict, "contention": "none", "conventions": trace.conventions}
    path = trace.outdir / "sweep.json"
    path.write_text(json.dumps(sweep))
    outdir = trace.outdir / "sweep"
    rc, out, err = run(hdrm_cmd("sweep", str(path), "--outdir", str(outdir), "--backend", "serial",
                                "--quiet"), timeout_s)
    if rc != 0:
        return Row("", "sweep", *judge_failure(rc, err, (str(trace.path), str(path))))
    found = sorted(outdir.glob("runs/*/out_jobs.csv"))
    if len(found) != 1:
        return Row("", "sweep", "FAIL", f"{len(found)} runs written, 1 expected")
    rows, broken = check_jobs(found[0], trace.expected)
    return Row("", "sweep", "FAIL" if broken else "ok", broken or ok_detail(rows))


def entry_compare(trace: Trace, timeout_s: float) -> Row:
    empty = trace.outdir / "empty"
    empty.mkdir(exist_ok=True)
    window = min(trace.nb_jobs, len(trace.expected or ()) or trace.nb_jobs)
    rc, out, err = run([sys.executable, str(ROOT / "benchmarks" / "compare.py"),
                        "--evaluate-only", "--groups", "generalisation", "--models", str(empty),
                        "--traces", str(empty), "--starts", "0", "--nb-jobs", str(window),
                        "--max-parallel", "1", "--rst", "", "--extra-trace",
                        f"corpus={trace.path}" + (f":{trace.procs}" if trace.procs else "")],
                       timeout_s)
    if rc != 0:
        return Row("", "compare", *judge_failure(rc, err, (str(trace.path),)))
    cells = re.findall(r"^\| FCFS \(event\) \| ([\d.]+) ", out, re.M)
    return Row("", "compare", "ok", f"FCFS mean bsld {', '.join(cells)} (no bf, EASY)")


def sweep_trace(path: Path, entries: tuple[str, ...], args: argparse.Namespace,
                outdir: Path) -> list[Row]:
    """Every chosen entry point on one trace."""
    work = outdir / re.sub(r"[^\w.-]", "_", path.name)
    work.mkdir(parents=True, exist_ok=True)
    trace = inspect(path, work, args.nb_jobs, args.procs, args.conventions)
    rows: list[Row] = []
    for entry in entries:
        if entry == "batsim":
            continue
        if entry == "replay":
            both = entry_replay(trace, args.timeout, args.batsim if "batsim" in entries else None)
            rows += both if "batsim" in entries else both[:1]
        else:
            rows.append(globals()[f"entry_{entry}"](trace, args.timeout))
    if "batsim" in entries and "replay" not in entries:
        rows += entry_replay(trace, args.timeout, args.batsim)[1:]
    for row in rows:
        row.trace = path.name
    return rows


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("traces", nargs="+", help="SWF trace files or folders of them")
    p.add_argument("--entries", default=",".join(ENTRIES),
                   help=f"comma-separated entry points (default: all: {','.join(ENTRIES)})")
    p.add_argument("--nb-jobs", type=int, default=200, help="jobs of each slice (default 200)")
    p.add_argument("--procs", type=int, default=0,
                   help="processors where the trace states none (default: its widest job)")
    p.add_argument("--outdir", help="outputs of the runs (default: a temporary folder)")
    p.add_argument("--batsim", default=os.environ.get("HDRM_BATSIM")
                   or str(ROOT.parent / "shared" / "batsim" / "bin" / "batsim"),
                   help="the Batsim 4.x binary (a missing one skips the batsim rows)")
    p.add_argument("--conventions", default="default", choices=("default", "rlscheduler"),
                   help="SWF conventions of every run (default: default)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per run (default 300)")
    args = p.parse_args(argv)
    from hdrm.errors import ConfigError

    entries = tuple(e.strip() for e in args.entries.split(",") if e.strip())
    unknown = [e for e in entries if e not in ENTRIES]
    if unknown or not entries:
        raise ConfigError(f"--entries: unknown entry point {(unknown or [''])[0]!r}; choose "
                          f"from {', '.join(ENTRIES)}")
    if args.nb_jobs < 1 or args.procs < 0 or args.timeout <= 0:
        raise ConfigError("--nb-jobs must be >= 1, --procs >= 0 and --timeout > 0")
    args.entries = entries
    if not (args.batsim and Path(args.batsim).is_file()):
        args.batsim = None
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    paths = traces_of(args.traces)
    outdir = Path(args.outdir or tempfile.mkdtemp(prefix="swf_corpus_"))
    counts: dict[str, int] = {}
    print("trace\tentry\tstatus\tdetail", flush=True)
    for path in paths:
        for row in sweep_trace(path, args.entries, args, outdir):
            counts[row.status] = counts.get(row.status, 0) + 1
            print(row.line(), flush=True)
    print(f"{len(paths)} traces: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
          + f" (outputs in {outdir})")
    return 0


if __name__ == "__main__":
    from hdrm.cli import script as cli

    sys.exit(cli.guarded(main))
