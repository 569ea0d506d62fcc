"""The cycle collector in an ``hdrm`` process: off while a command module is imported, and
kept off what is still alive at exit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: Runs ``hdrm replay`` in a fresh interpreter; a handler registered before ``main`` runs after
#: main's own (atexit is last in, first out) and reports what the collector still sees, and a
#: weakref finalizer and a file written without closing show that the rest of the exit happens.
_SCRIPT = """
import atexit, gc, io, contextlib, sys, weakref
atexit.register(lambda: print("frozen", gc.get_freeze_count() > 0, "young", gc.get_count()[0]))
from hdrm.cli.main import main

class Thing:
    pass

thing = Thing()
weakref.finalize(thing, print, "finalizer ran")
log = open(sys.argv[2], "w")
log.write("flushed at exit")
with contextlib.redirect_stdout(io.StringIO()):
    status = main(["replay", "--homogeneous-procs", "16", "--workload", sys.argv[1],
                   "--nb-jobs", "20", "--outdir", sys.argv[3], "--quiet"])
print("status", status)
"""


def test_the_exit_leaves_what_is_alive_to_the_operating_system(tmp_path):
    trace = REPO / "workloads" / "SDSC-SP2-1998-4.2-cln_first500.swf"
    log = tmp_path / "log.txt"
    out = subprocess.run([sys.executable, "-c", _SCRIPT, str(trace), str(log), str(tmp_path / "run")],
                         capture_output=True, text=True, check=True, cwd=REPO)
    lines = out.stdout.splitlines()
    assert lines[0] == "status 0"
    # every object alive at exit moved out of the collector's sight, none left to walk
    assert "frozen True young 0" in lines
    # the rest of the exit as usual: finalizers run, open files are flushed
    assert "finalizer ran" in lines
    assert log.read_text() == "flushed at exit"


def test_main_registers_the_exit_handler_once(monkeypatch):
    from hdrm.cli import main as cli_main

    registered = []
    monkeypatch.setattr(cli_main.atexit, "register", registered.append)
    monkeypatch.setattr(cli_main, "_exit_freeze_registered", False)
    cli_main._skip_exit_collections()
    cli_main._skip_exit_collections()
    assert registered == [cli_main.gc.freeze]


def test_a_command_module_is_imported_without_collections():
    # its modules, classes and functions live as long as the process: nothing to collect
    code = ("import gc; from hdrm.cli import main as m\n"
            "runs = []\n"
            "gc.callbacks.append(lambda phase, info: runs.append(info['generation']))\n"
            "m.build_parser(['replay', '--help'])\n"
            "import sys; assert 'hdrm.sim.engine' in sys.modules\n"
            "print(len(runs), gc.isenabled())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=REPO)
    assert out.stdout.split() == ["0", "True"]
