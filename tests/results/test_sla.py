"""SLA metrics (hdrm.results.sla) on a four-job, two-tenant case computed by hand.

Tenant A (share 1): job 0 submit 0, alone 10 s, finish 10, deadline 30 (met, NTT 1);
job 1 submit 0, alone 10, finish 40, deadline 30 (10 s late, NTT 4).
Tenant B (share 2): job 2 submit 10, alone 20, finish 50, deadline 70 (met, NTT 2);
job 3 rejected, deadline 40 (a miss without tardiness or NTT).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.results.records import JobResult
from hdrm.results.sla import (
    SLA_COLUMNS,
    jain_index,
    nearest_rank,
    report_from_arrays,
    sla_report,
    write_sla_csv,
)
from hdrm.workload.job import Job
from hdrm.workload.tenants import Sla, Tenant, TenantTable


def _table():
    tenants = (Tenant("A", 1.0, Sla("latency", 30.0)), Tenant("B", 2.0, Sla("latency", 30.0)))
    return TenantTable(tenants, np.array([0, 0, 1, 1], np.int32),
                       np.array([30.0, 30.0, 70.0, 40.0]))


def _report():
    return report_from_arrays(
        _table(), submit_s=np.array([0.0, 0.0, 10.0, 10.0]),
        finish_s=np.array([10.0, 40.0, 50.0, np.nan]),
        completed=np.array([True, True, True, False]), alone_s=np.array([10.0, 10.0, 20.0, 5.0]))


def test_overall_metrics_by_hand():
    o = _report().overall
    assert (o.jobs, o.with_deadline) == (4, 4)
    assert o.sla_satisfaction == 0.5 and o.deadline_miss_rate == 0.5  # jobs 0 and 2 met
    assert o.tardiness_mean_s == pytest.approx(10 / 3)  # (0 + 10 + 0) / 3 jobs that ran
    assert o.tardiness_p99_s == 10.0  # ceil(0.99 x 3) = 3rd smallest
    assert o.antt == pytest.approx((1 + 4 + 2) / 3)
    assert o.stp == pytest.approx(1 + 0.25 + 0.5)


def test_per_tenant_metrics_and_fairness_by_hand():
    report = _report()
    a, b = report.tenants["A"], report.tenants["B"]
    assert (a.sla_satisfaction, a.tardiness_mean_s, a.antt, a.stp) == (0.5, 5.0, 2.5, 1.25)
    assert a.normalised_progress == 0.625
    assert (b.sla_satisfaction, b.tardiness_mean_s, b.antt, b.stp) == (0.5, 0.0, 2.0, 0.5)
    # share-normalised progress: A 0.625 / 1, B 0.5 / 2
    assert report.jain_fairness == pytest.approx(0.875 ** 2 / (2 * (0.625 ** 2 + 0.25 ** 2)))
    assert report.max_min_ratio == pytest.approx(2.5)


def test_helpers():
    assert nearest_rank(np.array([5.0, 1.0, 3.0, 2.0]), 0.5) == 2.0
    assert math.isnan(nearest_rank(np.array([]), 0.99))
    assert jain_index([1, 1, 1]) == 1.0 and jain_index([1, 0, 0]) == pytest.approx(1 / 3)


def test_jobs_without_deadline_count_in_neither_rate():
    table = TenantTable((Tenant("A"),), np.zeros(2, np.int32), np.array([math.inf, 5.0]))
    r = report_from_arrays(table, np.zeros(2), np.array([100.0, 4.0]), np.ones(2, bool),
                           np.array([10.0, 4.0]))
    assert r.overall.with_deadline == 1 and r.overall.sla_satisfaction == 1.0
    assert r.overall.antt == pytest.approx((10 + 1) / 2)


def test_from_job_records_and_out_sla_csv(tmp_path):
    jobs = [Job(i, i + 1, s, 1, 100.0, a) for i, (s, a) in enumerate([(0, 10), (0, 10), (10, 20), (10, 5)])]
    rows = [JobResult(str(1), submission_time=0, starting_time=0, execution_time=10),
            JobResult(str(2), submission_time=0, starting_time=30, execution_time=10),
            JobResult(str(3), submission_time=10, starting_time=30, execution_time=20),
            JobResult(str(4), submission_time=10, success=0, final_state="REJECTED",
                      consumed_energy=None)]
    report = sla_report(_table(), jobs, rows)
    assert report == _report()
    path = write_sla_csv(report, tmp_path / "out_sla.csv")
    lines = path.read_text().splitlines()
    assert lines[0] == ",".join(SLA_COLUMNS)
    assert lines[1].startswith("A,1,latency 30 s,2,2,0.5,0.5,5,10,2.5,1.25,0.625,,")
    assert lines[3].startswith("overall,,,4,4,0.5,0.5,3.333333333,10,2.333333333,1.75,")
    assert lines[3].endswith(",0.8448275862,2.5")  # 10 significant digits

_JOB = st.tuples(st.integers(0, 3), st.floats(0, 100), st.floats(0.5, 50), st.floats(0, 200),
                 st.booleans(), st.floats(1, 300) | st.just(math.inf))


@settings(max_examples=60, deadline=None)
@given(st.lists(_JOB, min_size=1, max_size=30), st.lists(st.floats(0.5, 4), min_size=4, max_size=4))
def test_invariants(jobs, shares):
    tenant, submit, alone, wait, ran, latency = (np.array(c) for c in zip(*jobs))
    finish = np.where(ran, submit + alone + wait, np.nan)
    tenants = tuple(Tenant(f"t{i}", s) for i, s in enumerate(shares))
    table = TenantTable(tenants, tenant.astype(np.int32), submit + latency)
    r = report_from_arrays(table, submit, finish, ran.astype(bool), alone)
    o = r.overall
    if o.with_deadline:
        assert o.sla_satisfaction + o.deadline_miss_rate == pytest.approx(1.0)
        assert 0 <= o.sla_satisfaction <= 1
    assert sum(m.jobs for m in r.tenants.values()) == len(jobs)
    assert o.stp == pytest.approx(sum(m.stp for m in r.tenants.values()))
    if ran.any():
        assert o.antt >= 1 - 1e-9  # turnaround >= run time alone here
        assert o.stp <= ran.sum() + 1e-9
        fair = [t for t, m in r.tenants.items() if not math.isnan(m.normalised_progress)]
        assert 1 / len(fair) - 1e-9 <= r.jain_fairness <= 1 + 1e-9
        assert r.max_min_ratio >= 1 - 1e-9
    if not math.isnan(o.tardiness_p99_s):  # at most 30 jobs: p99 is the largest tardiness
        assert o.tardiness_mean_s <= o.tardiness_p99_s + 1e-9
