"""Every benchmark script run from the command line reports bad input in one line, exit 2."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("*.py")
                 if 'if __name__ == "__main__":' in p.read_text(encoding="utf-8"))


def test_every_script_runs_its_entry_point_guarded():
    entry = re.compile(r'if __name__ == "__main__":\n(.*\n)*?\s+'
                       r'sys\.exit\((cli\.|script\.)?guarded\(')
    unguarded = [p.name for p in SCRIPTS if not entry.search(p.read_text(encoding="utf-8"))]
    assert len(SCRIPTS) > 30 and unguarded == []


def test_bad_input_from_deep_inside_is_one_line(tmp_path):
    # a missing trace folder is found by the openb reader, far below the script's main: it was a
    # WorkloadError traceback
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--traces",
                          str(tmp_path / "none")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert run.stderr.startswith(f"bench_gpu.py: error: {tmp_path / 'none'}/openb_")


@pytest.mark.parametrize("name, argv, says", [
    # each was a traceback: numpy's seeding, a min() of nothing, a ZeroDivisionError, an empty
    # np.stack, a JSONDecodeError or an AttributeError, a CalledProcessError
    ("train", ["--out", "x.pt", "--seed", "-1"], "argument --seed: expected an integer >= 0"),
    ("train", ["--out", "x.pt", "--agent-json", "-1"],
     "--agent-json '-1': expected a JSON object such as '{\"lr\": 0.001}'"),
    ("gpu_train", ["--out", "x.pt", "--agent-json", "{bad"],
     "--agent-json '{bad': not JSON (Expecting property name enclosed in double quotes at "
     "character 1)"),
    ("bench_env", ["--episodes", "0"], "argument --episodes: expected an integer >= 1, got '0'"),
    ("bench_gpu_env", ["--repeat", "0"], "argument --repeat: expected an integer >= 1"),
    ("bench_inference", ["--requests", "-1"], "argument --requests: expected an integer >= 1"),
    ("bench_inference", ["--seed", "-1"], "argument --seed: expected an integer >= 0"),
    ("bench_mappo", ["--decisions", "0"], "argument --decisions: expected an integer >= 1"),
    ("bench_distributed", ["--repeat", "0"], "argument --repeat: expected an integer >= 1"),
    ("bench_devices", ["--threads", "-1"], "argument --threads: expected an integer >= 0"),
    ("bench_sim", ["--cases", "scale-10k,zz"], "--cases 'scale-10k,zz': unknown case 'zz'"),
    # compare_dag trained a learner with seed -1 (writing models/dag/options_seed-1.json)
    ("compare_dag", ["--seeds", "1", "-1"], "argument --seeds: expected an integer >= 0"),
])
def test_bad_values_are_one_line_errors_before_any_work(capsys, name, argv, says):
    import importlib

    from hdrm.cli.script import guarded

    module = importlib.import_module(f"benchmarks.{name}")
    try:
        status = guarded(lambda: module.main(argv), f"{name}.py")
    except SystemExit as stop:  # argparse's own error
        status = stop.code
    assert status == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.endswith(says) or says in err, err
