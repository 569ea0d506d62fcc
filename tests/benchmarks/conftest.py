"""Make the repository's ``benchmarks`` package importable by the tests of this folder (the suite
runs with ``--import-mode=importlib``, which puts no folder on ``sys.path``)."""

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
