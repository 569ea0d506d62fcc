"""Make the shared test helpers of this folder (``builders``, ``launch_options``, ...) importable
from every test folder (the suite runs with ``--import-mode=importlib``, which adds no folder to
``sys.path``)."""

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
