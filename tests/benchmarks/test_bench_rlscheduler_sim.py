"""benchmarks/bench_rlscheduler_sim.py: the start indices, hdrm's side, the driving of
RLScheduler's env (on a stand-in module with its interface), and the printed figures."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import bench_rlscheduler_sim as bench  # noqa: E402
from benchmarks import reproduce_rlscheduler as rep  # noqa: E402
from hdrm.workload.select import sequences  # noqa: E402
from hdrm.workload.swf import read_swf  # noqa: E402

SLICE = ROOT / "workloads" / "SDSC-SP2-1998-4.2-cln_first500.swf"

#: RLScheduler's HPCEnv as the bench uses it, recording the calls.
FAKE_ENV = '''
CALLS = []

class Job:
    def __init__(self, job_id):
        self.job_id = job_id

class Loads:
    def __init__(self, n):
        self.jobs = [Job(100 + i) for i in range(n)]
    def size(self):
        return len(self.jobs)
    def __getitem__(self, i):
        return self.jobs[i]

class HPCEnv:
    def __init__(self):
        self.backfil = False
    def my_init(self, workload_file=""):
        CALLS.append(("my_init", workload_file))
        self.loads = Loads(5000)
    def reset_for_test(self, num, start):
        self.start = self.np_random.randint(num, self.loads.size() - num - 1)
        CALLS.append(("reset", num, self.start))
    def fcfs_score(self, job):
        return 0
    def sjf_score(self, job):
        return 0
    def schedule_curr_sequence_reset(self, score_fn):
        CALLS.append((score_fn.__name__, self.backfil))
        return {0: 10.0 * self.start, 1: 1.0 if self.backfil else 2.0}
'''


def test_starts_are_seeded_and_in_rlschedulers_range():
    starts = bench.choose_starts(5000, 100, seed=3)
    assert starts == bench.choose_starts(5000, 100, seed=3)
    assert starts != bench.choose_starts(5000, 100, seed=4)
    assert all(1024 <= s < 5000 - 1025 for s in starts)
    with pytest.raises(SystemExit, match="too few"):
        bench.choose_starts(2000, 1, seed=0)


def test_rlscheduler_side_feeds_the_starts_and_runs_the_four_runs(tmp_path, monkeypatch):
    (tmp_path / "HPCSimPickJobs.py").write_text(FAKE_ENV)
    # what the side changes in its own process is given back after the test
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setitem(sys.modules, "tensorflow", types.ModuleType("tensorflow"))
    monkeypatch.delitem(sys.modules, "HPCSimPickJobs", raising=False)
    report = bench.rlscheduler_side(str(tmp_path), "trace.swf", [1500, 2000], 1024)
    calls = sys.modules["HPCSimPickJobs"].CALLS
    monkeypatch.delitem(sys.modules, "HPCSimPickJobs")
    runs = [("fcfs_score", False), ("sjf_score", False), ("fcfs_score", True), ("sjf_score", True)]
    assert calls == [("my_init", "trace.swf"), ("reset", 1024, 1500), *runs,
                     ("reset", 1024, 2000), *runs]
    assert report["start_ids"] == [1600, 2100]
    assert report["nb_jobs"] == 5000
    # per run the sum of the scores, averaged over the sequences: (15,000 + 20,000) / 2 + 2 or 1
    assert report["mean_bsld"] == {"fcfs": 17502.0, "sjf": 17502.0, "fcfs+backfill": 17501.0,
                                   "sjf+backfill": 17501.0}


def test_a_start_outside_rlschedulers_range_is_refused():
    with pytest.raises(SystemExit, match="outside RLScheduler's range"):
        bench.GivenStarts([10]).randint(1024, 4000)


def test_hdrm_side_is_the_protocol_on_the_builtin_engine():
    report = bench.hdrm_side(str(SLICE), [50, 120], 100)
    workload = read_swf(SLICE, conventions="rlscheduler")
    assert report["nb_jobs"] == len(workload.jobs)
    assert report["start_ids"] == [workload.jobs[50].id, workload.jobs[120].id]
    seqs = sequences(workload, [50, 120], 100)
    for policy in ("fcfs", "sjf"):
        assert report["mean_bsld"][policy] == pytest.approx(
            rep.mean_bsld(seqs, workload.nb_res, policy, "commit", "none"), rel=1e-12)
        assert report["mean_bsld"][policy + "+backfill"] == pytest.approx(
            rep.mean_bsld(seqs, workload.nb_res, policy, "commit", "easy"), rel=1e-12)


def test_report_prints_medians_and_the_ratio(capsys):
    side = {"protocol_cpu_s": 1.0, "mean_bsld": {"fcfs": 2.0}}
    figures = {"sequences": 100, "length": 1024, "cpu_s": {"rlscheduler": [8.0, 9.0, 10.0],
                                                            "hdrm": [4.0, 6.0, 5.0]},
               "reports": {"rlscheduler": dict(side), "hdrm": dict(side, protocol_cpu_s=0.5)}}
    bench.report(figures)
    out = capsys.readouterr().out
    assert "hdrm / rlscheduler: 0.56x CPU (process), 0.50x (protocol loop, last run) -> hdrm faster" in out
    assert "rlscheduler            9.00" in out
