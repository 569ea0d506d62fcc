"""Speed of the ``batsim`` engine against the real Batsim driven by PyBatsim, in one run.

Four runs of the same input (the first ``--jobs`` jobs of the SDSC-SP2 trace, processor counts x 8,
on 1,024 identical hosts; delay jobs, no contention, energy accounting on everywhere, as
``--engine batsim`` needs it), each a set of subprocesses timed apart:

* ``batsim+pybatsim``: the real Batsim 4.x and PyBatsim's stock ``easyBackfill`` (the reference);
* ``serve+pybatsim``: the same ``easyBackfill`` on ``hdrm serve`` (hdrm's Batsim stand-in);
* ``replay-batsim``: ``hdrm replay --engine batsim`` (hdrm's decision core, FCFS + EASY, under the
  real Batsim; the decision process is hdrm itself);
* ``builtin``: ``hdrm replay`` on the built-in engine (same policy).

For each run: wall seconds, CPU seconds of the simulator side and of the decision side (user +
system of each process and its children, from ``os.wait4``), and the ratios to the reference.
Targets: ``replay-batsim`` CPU <= 1.5 x ``batsim+pybatsim`` and ``hdrm serve``'s own CPU <=
0.5 x Batsim's own CPU (issue 24); ``builtin`` CPU <= 0.05 x ``batsim+pybatsim`` (issue 27).

Usage::

    python benchmarks/bench_batsim.py [--jobs 10000] [--batsim PATH] [--traces DIR] [--json OUT]
                                      [--cases batsim+pybatsim,builtin]

Needs a runnable Batsim 4.x (default ``../shared/batsim/bin/batsim``, else ``batsim`` on the PATH)
and the full trace in ``--traces`` (default ``../shared/traces``).

Bytecode: PyBatsim and its libraries run from site-packages, byte-compiled when they were installed.
The checkout's hdrm has no ``.pyc`` files where none could be written (``PYTHONDONTWRITEBYTECODE``,
a fresh checkout), and then each hdrm process compiles every module it imports, about 0.05 CPU s
of a builtin replay. ``--bytecode`` runs hdrm from a copy of the checkout's package byte-compiled
beforehand, as ``pip install`` leaves a package; without it, hdrm runs from the checkout.
"""

from __future__ import annotations

import argparse
import compileall
import dataclasses
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's hdrm, installed or not

from hdrm.errors import HdrmError  # noqa: E402
from hdrm.platform.model import Platform  # noqa: E402
from hdrm.platform.simgrid import write_simgrid_xml  # noqa: E402
from hdrm.workload.batsim_json import write_batsim_json  # noqa: E402
from hdrm.workload.job import Workload  # noqa: E402
from hdrm.workload.swf import read_swf  # noqa: E402
from hdrm.cli import script as cli  # noqa: E402

DEFAULT_TRACES = ROOT.parent / "shared" / "traces"
DEFAULT_BATSIM = ROOT.parent / "shared" / "batsim" / "bin" / "batsim"
TRACE = "SDSC-SP2-1998-4.2-cln.swf.gz"
NB_HOSTS = 1024
SCALE = 8  # SDSC-SP2 has 128 processors: x 8 fills 1,024 hosts
#: Batsim's switches in every run, as ``--engine batsim`` passes them: energy on (hdrm's outputs
#: need it; SimGrid's energy plugin is about half of Batsim's CPU), errors-only log, no traces.
SWITCHES = ["-E", "-q", "--disable-schedule-tracing", "--disable-machine-state-tracing"]
CASES = ("batsim+pybatsim", "serve+pybatsim", "replay-batsim", "builtin")
#: CPU ratios to ``batsim+pybatsim`` not to exceed (issues 24 and 27).
TARGETS = {"replay-batsim": 1.5, "builtin": 0.05}


@dataclasses.dataclass
class Proc:
    """A started subprocess and its log."""

    name: str
    popen: subprocess.Popen
    log: object


def make_inputs(traces: Path, nb_jobs: int, folder: Path) -> tuple[Path, Path]:
    """platform.xml (1,024 hosts, hdrm's export) and workload.json (delay jobs) in ``folder``."""
    workload = read_swf(traces / TRACE)
    jobs = [dataclasses.replace(j, res=j.res * SCALE) for j in workload.jobs if j.res * SCALE <= NB_HOSTS]
    jobs = [dataclasses.replace(j, idx=i) for i, j in enumerate(jobs[:nb_jobs])]
    t0 = jobs[0].submit_s
    jobs = [dataclasses.replace(j, submit_s=j.submit_s - t0) for j in jobs]
    xml = write_simgrid_xml(Platform.homogeneous(NB_HOSTS), folder / "platform.xml")
    wl = folder / "workload.json"
    write_batsim_json(Workload(jobs, f"sdsc_x{SCALE}_{len(jobs)}", nb_res=NB_HOSTS), wl)
    return xml, wl


def compiled_copy(folder: Path) -> Path:
    """A copy of the checkout's ``hdrm`` package in ``folder/src``, every module byte-compiled
    (as ``pip install`` leaves it); returns the folder to put on ``PYTHONPATH``."""
    source = folder / "src"
    shutil.copytree(ROOT / "hdrm", source / "hdrm", ignore=shutil.ignore_patterns("__pycache__"))
    if not compileall.compile_dir(source / "hdrm", quiet=1):  # errors printed: a module that
        # does not compile fails where a run imports it, as it would from the checkout
        print(f"warning: some modules of {source / 'hdrm'} do not compile (above)", file=sys.stderr)
    return source


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(name: str, command: list[str], folder: Path, source: Path = ROOT) -> Proc:
    """Start ``command`` with its output in ``folder/NAME.log`` and hdrm imported from ``source``."""
    log = open(folder / f"{name}.log", "w", encoding="utf-8")
    env = dict(os.environ)  # the checkout's hdrm in the child processes too, installed or not
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(source), env.get("PYTHONPATH")) if p)
    return Proc(name, subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=folder,
                                       env=env), log)


def finish(procs: list[Proc], timeout_s: float) -> dict[str, float]:
    """Wait for every process (killing all past ``timeout_s``); CPU seconds of each, by name."""
    cpu: dict[str, float] = {}
    deadline = time.monotonic() + timeout_s
    pending = {p.popen.pid: p for p in procs}
    while pending:
        pid, status, usage = os.wait4(-1, os.WNOHANG)
        if pid == 0:
            if time.monotonic() > deadline:
                for p in pending.values():
                    p.popen.kill()
                raise SystemExit(f"timeout after {timeout_s:g} s: {', '.join(p.name for p in pending.values())}")
            time.sleep(0.01)
            continue
        proc = pending.pop(pid, None)
        if proc is None:
            continue
        proc.popen.returncode = os.waitstatus_to_exitcode(status)
        proc.log.close()
        cpu[proc.name] = usage.ru_utime + usage.ru_stime
        if proc.popen.returncode != 0:
            for p in pending.values():
                p.popen.kill()
            # the log's folder is a temporary one, removed on the way out: quote its end
            tail = "".join(Path(proc.log.name).read_text(errors="replace").splitlines(True)[-15:])
            raise SystemExit(f"{proc.name} exited with {proc.popen.returncode}; the end of "
                             f"{proc.log.name}:\n{tail}")
    return cpu


def pybatsim(port: int) -> list[str]:
    exe = shutil.which("pybatsim")
    head = [exe] if exe else [sys.executable, "-m", "batsim.cmds.launcher"]
    return [*head, "easyBackfill", "-s", f"tcp://*:{port}"]


def hdrm(*args: str) -> list[str]:
    return [sys.executable, "-m", "hdrm.cli.main", *args]


def run_case(case: str, batsim: str, xml: Path, wl: Path, folder: Path, timeout_s: float,
             source: Path = ROOT) -> dict:
    """One case, hdrm imported from ``source``; returns wall seconds and CPU seconds per side."""
    out = folder / case
    out.mkdir()
    t0 = time.perf_counter()
    if case in ("batsim+pybatsim", "serve+pybatsim"):
        port = free_port()
        sched = start("decision", pybatsim(port), out, source)
        time.sleep(0.5)  # pybatsim binds first (REP); the simulator connects
        endpoint = f"tcp://localhost:{port}"
        if case == "batsim+pybatsim":
            sim_cmd = [batsim, "-p", str(xml), "-w", str(wl), "-e", str(out / "out"), "-s", endpoint, *SWITCHES]
        else:
            sim_cmd = hdrm("serve", "-p", str(xml), "-w", str(wl), "-e", str(out / "out"), "-s", endpoint, "-E")
        cpu = finish([sched, start("simulator", sim_cmd, out, source)], timeout_s)
        wall = time.perf_counter() - t0 - 0.5
    else:
        engine = ["--engine", "batsim", "--batsim", batsim] if case == "replay-batsim" else []
        cmd = hdrm("replay", "--platform", str(xml), "--workload", str(wl), "--policy", "fcfs",
                   "--backfill", "easy", "--contention", "none", "--quiet", "--outdir", str(out / "run"),
                   *engine)
        cpu = finish([start("replay", cmd, out, source)], timeout_s)
        wall = time.perf_counter() - t0
    return {"wall_s": wall, "cpu_s": sum(cpu.values()), "cpu_by_process_s": cpu}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_batsim.py", description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=cli.count(1), default=10_000,
                        help="number of jobs (default 10,000)")
    parser.add_argument("--batsim", default=str(DEFAULT_BATSIM) if DEFAULT_BATSIM.exists() else "batsim")
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--timeout", type=cli.positive, default=900.0, help="seconds per case")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--cases", default=",".join(CASES),
                        help="comma-separated cases to run (batsim+pybatsim always runs)")
    parser.add_argument("--bytecode", action="store_true",
                        help="run hdrm from a byte-compiled copy of the checkout's package, as "
                        "pip installs it (PyBatsim's modules are byte-compiled in site-packages); "
                        "default: from the checkout, compiling where no .pyc can be kept")
    args = parser.parse_args(argv)
    cases = [c for c in CASES if c == CASES[0] or c in args.cases.split(",")]
    unknown = set(args.cases.split(",")) - set(CASES)
    if unknown:
        parser.error(f"--cases: unknown {', '.join(sorted(unknown))}; choose from {', '.join(CASES)}")
    batsim = shutil.which(args.batsim) or args.batsim
    if not os.access(batsim, os.X_OK) or os.path.isdir(batsim):
        parser.error(f"--batsim {args.batsim}: no such executable; give the path of Batsim 4.x's "
                     "binary (../shared/batsim/bin/batsim, after its install-runtime)")
    with tempfile.TemporaryDirectory(prefix="bench-batsim-") as tmp:
        folder = Path(tmp)
        try:
            xml, wl = make_inputs(args.traces, args.jobs, folder)
        except HdrmError as exc:
            print(f"bench_batsim.py: error: {exc}", file=sys.stderr)
            return 2
        source = compiled_copy(folder) if args.bytecode else ROOT
        print(f"{args.jobs:,} jobs of {TRACE} (processors x {SCALE}) on {NB_HOSTS:,} hosts; "
              f"batsim {os.path.abspath(batsim)}; hdrm from "
              f"{'a byte-compiled copy of ' if args.bytecode else ''}{ROOT / 'hdrm'}")
        figures = {}
        for case in cases:
            figures[case] = run_case(case, os.path.abspath(batsim), xml, wl, folder, args.timeout,
                                     source)
    report(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0


def report(figures: dict[str, dict]) -> None:
    ref = figures["batsim+pybatsim"]
    print(f"{'case':<17}{'wall s':>9}{'CPU s':>9}{'CPU ratio':>11}  CPU by process")
    for case, f in figures.items():
        parts = ", ".join(f"{k} {v:.2f}" for k, v in f["cpu_by_process_s"].items())
        print(f"{case:<17}{f['wall_s']:>9.2f}{f['cpu_s']:>9.2f}{f['cpu_s'] / ref['cpu_s']:>10.2f}x  {parts}")
    for case, target in TARGETS.items():
        if case in figures:
            ratio = figures[case]["cpu_s"] / ref["cpu_s"]
            # three decimals: a 0.053 x that misses 0.05 x must not print as 0.05 x
            print(f"target {case} CPU <= {target:g} x batsim+pybatsim: {ratio:.3f}x "
                  f"({'met' if ratio <= target else 'MISSED'})")
    if "serve+pybatsim" in figures:
        serve = figures["serve+pybatsim"]["cpu_by_process_s"]["simulator"]
        real = ref["cpu_by_process_s"]["simulator"]
        print(f"target hdrm serve CPU <= 0.5 x Batsim's: {serve:.2f} s / {real:.2f} s = "
              f"{serve / real:.2f}x ({'met' if serve <= 0.5 * real else 'MISSED'})")


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
