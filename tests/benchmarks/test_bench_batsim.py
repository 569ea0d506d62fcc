"""bench_batsim --bytecode: hdrm runs from a byte-compiled copy of the checkout's package."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

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
