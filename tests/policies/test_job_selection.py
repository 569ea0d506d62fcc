"""Job selection policies: the order each one gives a hand-made queue, with hand-computed keys."""

from __future__ import annotations

import math

import numpy as np
import pytest
from builders import job

from hdrm.errors import ConfigError
from hdrm.policies.job_selection import JOB_POLICIES

NOW = 100.0


def queue() -> list:
    """Four jobs in submission order (the queue's order), seen at t = 100.

    ====  ======  =====  ====  =====  ==========  =====  ======  =====
    id    submit  w      r     n      trace s     mem    bw
    ====  ======  =====  ====  =====  ==========  =====  ======  =====
    A     0       100    100   4      1000        300    2
    D     20      80     40    64     1020        100    5
    B     50      50     10    1      1050        200    1
    C     90      10     1000  2      1090        50     3
    ====  ======  =====  ====  =====  ==========  =====  ======  =====
    """
    spec = [("A", 0, 100, 4, 1000, 300, 2), ("D", 20, 40, 64, 1020, 100, 5),
            ("B", 50, 10, 1, 1050, 200, 1), ("C", 90, 1000, 2, 1090, 50, 3)]
    return [job(i, submit, n, r, mem_mb=mem, mem_bw_gbps=bw, trace_submit_s=s, id=name)
            for i, (name, submit, r, n, s, mem, bw) in enumerate(spec)]


def ids(name: str, jobs=None, now: float = NOW, seed: int = 0) -> str:
    ordered = JOB_POLICIES.get(name).order(jobs or queue(), now, np.random.default_rng(seed))
    return "".join(j.id for j in ordered)


def keys(name: str) -> dict[str, float]:
    policy = JOB_POLICIES.get(name)
    return {j.id: policy.key(j, NOW) for j in queue()}


@pytest.mark.parametrize("name,expected", [
    ("first", "ADBC"),
    ("fcfs", "ADBC"),
    ("shortest", "BDAC"),
    ("sjf", "BDAC"),
    ("ljf", "CADB"),
    ("smallest", "BCAD"),
    ("low_mem", "CDBA"),
    ("low_mem_bw", "BACD"),
])
def test_static_orders(name, expected):
    assert ids(name) == expected


def test_wfp3_largest_wait_ratio_cubed_times_size_first():
    # (w / r)^3 * n: A (1)^3 * 4 = 4; D (2)^3 * 64 = 512; B (5)^3 * 1 = 125; C (0.01)^3 * 2 = 2e-6
    assert keys("wfp3") == pytest.approx({"A": -4.0, "D": -512.0, "B": -125.0, "C": -2e-6})
    assert ids("wfp3") == "DBAC"


def test_unicep_largest_wait_over_log_size_times_r_first():
    # w / (log2(n) * r), log2 floored at 1: A 100 / 200 = 0.5; D 80 / (6 * 40) = 1/3;
    # B 50 / 10 = 5; C 10 / 1000 = 0.01
    assert keys("unicep") == pytest.approx({"A": -0.5, "D": -1 / 3, "B": -5.0, "C": -0.01})
    assert ids("unicep") == "BADC"


def test_f1_smallest_score_first():
    # log10(r) * n + 870 * log10(s)
    expected = {
        "A": 2 * 4 + 870 * 3.0,
        "D": math.log10(40) * 64 + 870 * math.log10(1020),  # 102.53 + 2617.48 = 2720.01
        "B": 1 * 1 + 870 * math.log10(1050),  # 2629.43
        "C": 3 * 2 + 870 * math.log10(1090),  # 2648.57
    }
    assert keys("f1") == pytest.approx(expected)
    assert keys("f1")["D"] == pytest.approx(2720.01, abs=0.01)
    assert ids("f1") == "ABCD"


def test_dynamic_policies_reorder_with_time():
    # at t = 55 (A, D, B queued): A (55 / 100)^3 * 4 = 0.67; D (35 / 40)^3 * 64 = 42.9;
    # B (5 / 10)^3 * 1 = 0.125: D A B. At t = 100 B has overtaken A (125 > 4).
    jobs = [j for j in queue() if j.submit_s <= 55.0]
    assert ids("wfp3", jobs, now=55.0) == "DAB"
    assert ids("wfp3", jobs, now=100.0) == "DBA"
    assert JOB_POLICIES.get("wfp3").dynamic and JOB_POLICIES.get("unicep").dynamic
    assert not JOB_POLICIES.get("sjf").dynamic and not JOB_POLICIES.get("f1").dynamic


@pytest.mark.parametrize("name", ["sjf", "ljf", "smallest", "low_mem", "low_mem_bw", "shortest"])
def test_ties_keep_submission_order(name):
    jobs = [job(i, submit_s=0.0, res=1, walltime_s=5.0, id=n) for i, n in enumerate("XYZ")]
    assert ids(name, jobs) == "XYZ"


def test_requested_time_falls_back_to_run_time():
    no_wall = job(0, walltime_s=math.inf, run_time_s=7.0, id="N")
    tiny = job(1, walltime_s=math.inf, run_time_s=0.2, id="T")
    short = job(2, walltime_s=5.0, id="S")
    assert ids("sjf", [no_wall, tiny, short]) == "TSN"  # T counts as 1 s (floored)
    assert JOB_POLICIES.get("sjf").key(tiny, 0.0) == 1.0


def test_f1_submit_time_floor():
    early = job(0, walltime_s=10.0, trace_submit_s=0.0, id="E")
    assert JOB_POLICIES.get("f1").key(early, 0.0) == pytest.approx(1.0 + 870 * -1.0)


def test_random_is_seeded_and_a_permutation():
    orders = {ids("random", seed=s) for s in range(20)}
    assert all(sorted(o) == sorted("ADBC") for o in orders)
    assert len(orders) > 5
    assert ids("random", seed=3) == ids("random", seed=3)
    expected = "".join(queue()[i].id for i in np.random.default_rng(3).permutation(4))
    assert ids("random", seed=3) == expected


def test_every_policy_documents_itself():
    for name in JOB_POLICIES.names():
        assert len(JOB_POLICIES.get(name).doc) > 20, name
    assert "SC17" in JOB_POLICIES.get("f1").doc and "CLUSTER 2009" in JOB_POLICIES.get("wfp3").doc


def test_unknown_policy_suggests():
    with pytest.raises(ConfigError,
                       match=r"unknown job selection policy 'sjff'; did you mean 'sjf'"):
        JOB_POLICIES.get("sjff")
