"""Every benchmark script run from the command line reports bad input in one line, exit 2."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("*.py")
                 if 'if __name__ == "__main__":' in p.read_text(encoding="utf-8"))


def test_every_script_runs_its_entry_point_guarded():
    unguarded = [p.name for p in SCRIPTS
                 if not re.search(r'if __name__ == "__main__":\n(.*\n)*?\s+sys\.exit\(guarded\(',
                                  p.read_text(encoding="utf-8"))]
    assert len(SCRIPTS) > 30 and unguarded == []


def test_bad_input_from_deep_inside_is_one_line(tmp_path):
    # a missing trace folder is found by the openb reader, far below the script's main: it was a
    # WorkloadError traceback
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--traces",
                          str(tmp_path / "none")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert run.stderr.startswith(f"bench_gpu.py: error: {tmp_path / 'none'}/openb_")
