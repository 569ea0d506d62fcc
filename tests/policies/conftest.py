"""Make ``tests/builders.py`` importable as ``builders`` from this folder's tests."""

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
