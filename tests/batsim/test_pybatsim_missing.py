"""Without PyBatsim (it is installed apart from hdrm's requirements), engine 'batsim' says so in one
line and exits 2; what needs no Batsim (the GPU refusal, engine 'builtin') works as before.

Each case runs in a fresh interpreter in which ``import batsim`` fails, as on a machine where only
``pip install hdrm`` was run.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from launch_options import example_options

ROOT = Path(__file__).resolve().parents[2]
SWF = ROOT / "workloads" / "SDSC-SP2-1998-4.2-cln_first500.swf"
PLATFORM = ROOT / "platforms" / "tiny4.json"
#: Runs ``main(argv)`` of a module with ``batsim`` unimportable (a None entry in sys.modules).
WITHOUT_PYBATSIM = ("import importlib, sys; sys.modules['batsim'] = None; "
                    "sys.exit(importlib.import_module(sys.argv[1]).main(sys.argv[2:]))")
#: The one line (after the program's prefix); the parenthesis holds Python's own ImportError text.
NEEDS = re.compile(
    r"engine 'batsim' needs PyBatsim 3\.2\.1 \(import name 'batsim'\), which cannot be imported here "
    r"\(No module named 'batsim\.batsim'[^\n]*\); install it with: python -m pip install pyzmq procset "
    r"sortedcontainers docopt && python -m pip install --no-deps pybatsim==3\.2\.1; or use engine "
    r"'builtin', which needs neither Batsim nor PyBatsim\n")


def without_pybatsim(module: str, *argv: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WITHOUT_PYBATSIM, module, *map(str, argv)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_replay_with_engine_batsim_names_the_missing_package_and_how_to_install_it(tmp_path):
    run = without_pybatsim("hdrm.cli.main", "replay", "--platform", PLATFORM, "--workload", SWF,
                           "--nb-jobs", 20, "--policy", "fcfs", "--engine", "batsim",
                           "--outdir", tmp_path / "out")
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr.startswith("hdrm replay: error: ") and NEEDS.fullmatch(run.stderr[20:])


def test_the_launcher_with_engine_batsim_names_the_missing_package(tmp_path):
    options = example_options(tmp_path, "classic", episodes=1)
    data = json.loads(options.read_text(encoding="utf-8"))
    options.write_text(json.dumps({**data, "engine": "batsim"}), encoding="utf-8")
    run = without_pybatsim("hdrm.launcher", ROOT / "agents" / "classic.py", options,
                           "--outdir", tmp_path / "out")
    assert (run.returncode, run.stdout) == (2, "")
    prefix = f"hdeeprm-launch: error: {options}: "  # the options file that asks for the engine
    assert run.stderr.startswith(prefix) and NEEDS.fullmatch(run.stderr[len(prefix):])


def test_the_gpu_refusal_and_engine_builtin_need_no_pybatsim(tmp_path):
    nodes = ROOT / "workloads" / "openb_nodes_41.csv"
    pods = ROOT / "workloads" / "openb_pods_400.csv"
    run = without_pybatsim("hdrm.cli.main", "replay", "--platform", nodes, "--workload", pods,
                           "--policy", "fifo", "--engine", "batsim", "--outdir", tmp_path / "r")
    assert run.returncode == 2 and run.stderr.count("\n") == 1
    assert "Batsim cannot express GPUs" in run.stderr and "PyBatsim" not in run.stderr
    run = without_pybatsim("hdrm.cli.main", "replay", "--platform", PLATFORM, "--workload", SWF,
                           "--nb-jobs", 20, "--policy", "fcfs", "--quiet", "--outdir", tmp_path / "b")
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "b" / "out_jobs.csv").is_file()
