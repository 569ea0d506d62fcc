"""bench_batsim: --bytecode runs hdrm from a byte-compiled copy of the checkout's package; bad
options are one-line errors."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import bench_batsim  # noqa: E402


def test_the_copy_has_every_module_compiled_and_is_imported_from_its_bytecode(tmp_path):
    source = bench_batsim.compiled_copy(tmp_path)
    modules = sorted((source / "hdrm").rglob("*.py"))
    assert len(modules) == len(list((ROOT / "hdrm").rglob("*.py")))
    assert all(Path(importlib.util.cache_from_source(str(m))).is_file() for m in modules)
    # a child process as the bench starts it (no bytecode written) reads the copy's .pyc files
    code = "import hdrm.cli.main as m, hdrm.sim.engine; print(m.__file__)"
    env = dict(os.environ, PYTHONPATH=str(source), PYTHONDONTWRITEBYTECODE="1", PYTHONVERBOSE="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path, env=env)
    assert out.stdout.strip() == str(source / "hdrm" / "cli" / "main.py")
    engine_pyc = importlib.util.cache_from_source(str(source / "hdrm" / "sim" / "engine.py"))
    assert f"code object from '{engine_pyc}'" in out.stderr  # not compiled from the source


@pytest.mark.parametrize("argv, says", [
    (["--jobs", "-1"], "argument --jobs: expected an integer >= 1, got '-1'"),
    (["--timeout", "0"], "argument --timeout: expected a number > 0, got '0'"),
    (["--batsim", "/nonexistent/batsim"], "--batsim /nonexistent/batsim: no such executable"),
])
def test_bad_options_are_refused_before_any_run(capsys, argv, says):
    # a missing binary was a FileNotFoundError traceback from the first case's subprocess
    with pytest.raises(SystemExit) as stop:
        bench_batsim.main(argv)
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(
        f"bench_batsim.py: error: {says}")


def test_a_missing_trace_folder_is_a_one_line_error(tmp_path, capsys):
    # was a WorkloadError traceback; the binary itself is not needed to get there
    binary = tmp_path / "batsim"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    assert bench_batsim.main(["--batsim", str(binary), "--traces", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"bench_batsim.py: error: {tmp_path / 'none'}/")
    assert err.endswith("no such file; give the path of an SWF trace (.swf or .swf.gz)")
