"""Make ``batsim_helpers`` importable from this folder's tests; the fake ``batsim`` fixture."""

import os
import stat
import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

FAKE_DIR = Path(_HERE) / "fake_batsim"


@pytest.fixture
def fake_batsim(monkeypatch) -> Path:
    """The fake ``batsim`` first on the PATH (then this interpreter, which has hdrm)."""
    exe = FAKE_DIR / "batsim"
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)  # git may lose it
    path = os.pathsep.join([str(FAKE_DIR), os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    monkeypatch.setenv("PATH", path)
    monkeypatch.delenv("HDRM_FAKE_BATSIM", raising=False)
    return exe
