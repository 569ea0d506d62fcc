"""benchmarks/diff_replays.py: wall-clock masking, case comparison, and a small pinned matrix.

The pinned digests were computed at 49caffb (before this session's fast paths; run with
``PYTHONPATH`` = that tree and ``-s -k pinned`` to print them) and are unchanged since: a fast path
that changes a decision or an output byte of these replays fails here. A change meant to change
outputs updates them, saying why.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import diff_cases, diff_replays  # noqa: E402
from hdrm.cli.main import main  # noqa: E402

QUICK_DIGESTS = {
    "pair_memory_smooth": "77d22060f4a2bc62", "random_conservative": "d3354274fa24ee56",
    "hetero_sjf_easy": "0d49389c1d6453c2", "hetero_wfp3_conservative": "50365cf6b9ba75a8",
    "large_f1_easy_first": "a9191ee728bd6d29", "tiny4_fcfs_none": "e104d7899a78679c",
    "homo_rls_commit": "776fc0e928d8b906", "homo_event_kills": "e1c45150268e8846",
    "inference_edf": "f114a4b4e1fc01f4", "inference_block": "a072ea8815e0bd5c",
    "inference_fair_share": "3838304ab0a14758", "openb_drf_fgd": "97184b268810d8f7",
}

SCHEDULE = ("makespan,nb_jobs,scheduling_time,simulation_time\n"
            "{makespan},3,{sched},{sim}\n")


def _write(folder: Path, makespan: str, sched: str, sim: str, summary: str = "") -> Path:
    folder.mkdir(parents=True)
    (folder / "out_schedule.csv").write_text(SCHEDULE.format(makespan=makespan, sched=sched, sim=sim))
    (folder / "_stdout.txt").write_text(f"  makespan 10.0 s\n  wall time {summary}\n"
                                        f"hdrm sweep: 2 runs (0 already done) in {sim} s\n")
    return folder


def test_wall_clock_columns_and_line_are_masked_and_nothing_else(tmp_path):
    _write(tmp_path / "a" / "same", "12.5", "0.01", "0.2", "0.12 s (24,207 jobs/s)")
    _write(tmp_path / "b" / "same", "12.5", "0.03", "0.9", "0.50 s (5,100 jobs/s)")
    _write(tmp_path / "a" / "other", "12.5", "0.01", "0.2")
    _write(tmp_path / "b" / "other", "12.6", "0.01", "0.2")
    (tmp_path / "b" / "other" / "out_jobs.csv").write_text("job_id\n1\n")
    differ = diff_replays.compare(tmp_path / "a", tmp_path / "b", ["same", "other"])
    assert differ == ["other: files ['out_jobs.csv'], out_schedule.csv"]


def test_json_wall_keys_masked_at_any_depth():
    doc = {"wall_s": 1.5, "runs": [{"simulation_time_s": 2.0, "makespan": 3.0}]}
    assert diff_replays.mask_json(doc) == {"wall_s": "<wall>", "runs": [{"simulation_time_s": "<wall>", "makespan": 3.0}]}


@pytest.fixture(scope="module")
def quick_outputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("quick")
    subprocess.run([sys.executable, "-m", "hdrm.cli.main", "workload", "inference", "--tenants",
                    str(ROOT / "hdrm/data/inference_tenants.json"), "--requests", "400", "-o", str(folder / "inf")],
                   check=True, capture_output=True)
    digests = {}
    for name, argv in diff_cases.quick_cases(folder).items():
        assert main(argv + ["--outdir", str(folder / name), "--quiet"]) == 0, name
        digests[name] = diff_replays.digest(folder / name)
    return digests


def test_pinned_quick_matrix_outputs(quick_outputs):
    print(quick_outputs)  # with -s: the digests to pin
    assert quick_outputs == QUICK_DIGESTS
