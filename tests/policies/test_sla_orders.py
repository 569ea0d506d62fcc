"""Tenant and SLA orders (hdrm.policies.sla_orders): EDF, least laxity, fair share and SLA-class
priority orders by hand, bound per run; a template used unbound is a one-line error."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.core.scheduler import DecisionCore
from hdrm.errors import ConfigError
from hdrm.platform.model import Platform
from hdrm.policies.pairs import resolve_policy
from hdrm.policies.sla_orders import TenantUsage, bind_tenants
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.workload.job import Job, Workload
from hdrm.workload.tenants import Sla, Tenant, TenantTable

RNG = np.random.default_rng(0)


def _queue():
    # id, submit, res, walltime; deadlines below: A 500, B 450, C 300, D none
    return [Job(i, name, float(i), res, wall, wall) for i, (name, res, wall) in
            enumerate([("A", 1, 100.0), ("B", 2, 300.0), ("C", 1, 10.0), ("D", 1, 50.0)])]


def _table():
    tenants = (Tenant("x", 2.0, Sla("none"), "bronze", 1), Tenant("y", 1.0, Sla("none"), "gold", 0))
    return TenantTable(tenants, np.array([0, 1, 0, 1], np.int32),
                       np.array([500.0, 450.0, 300.0, math.inf]))


def _order(name, now=0.0, core=None):
    core = core or DecisionCore(Platform.homogeneous(4))
    pair = bind_tenants(resolve_policy(name), _table(), core)
    return "".join(j.id for j in pair.job.order(_queue(), now, RNG))


def test_edf_and_least_laxity_orders_by_hand():
    assert _order("edf") == "CBAD"  # deadlines 300, 450, 500, none
    assert _order("least_laxity") == "BCAD"  # d - walltime: 150, 290, 400, none
    assert _order("least_laxity", now=1000.0) == "BCAD"  # now shifts every laxity alike


def test_sla_class_priority_then_submission_order():
    assert _order("sla_class") == "BDAC"  # gold (y: B, D) before bronze (x: A, C)


def test_fair_share_follows_core_seconds_per_share():
    core = DecisionCore(Platform.homogeneous(4))
    pair = bind_tenants(resolve_policy("fair_share"), _table(), core)
    usage = core.usage_hooks[0]
    assert isinstance(usage, TenantUsage)
    jobs = _queue()
    usage(jobs[0], 0.0, 1)  # x holds 1 core from 0
    usage(jobs[1], 0.0, 1)  # y holds 2 cores from 0
    assert usage.usage(10.0).tolist() == [10.0, 20.0]
    # per share at 10: x 10 / 2 = 5, y 20 / 1 = 20: x's jobs (A, C) first
    assert "".join(j.id for j in pair.job.order(jobs, 10.0, RNG)) == "ACBD"
    usage(jobs[1], 10.0, -1)  # y's job ends at 10: y stays at 20
    # at 50: x 50 / 2 = 25 > y 20: y first
    assert "".join(j.id for j in pair.job.order(jobs, 50.0, RNG)) == "BDAC"


def test_unbound_templates_and_missing_classes_are_one_line_errors():
    policy = resolve_policy("edf").job
    with pytest.raises(ConfigError, match=r"policy 'edf' orders jobs by tenant and SLA; give "
                                          r"the run tenants"):
        policy.order(_queue(), 0.0, RNG)
    no_class = TenantTable((Tenant("x"),), np.zeros(4, np.int32), np.zeros(4))
    with pytest.raises(ConfigError, match=r"'sla_class': no tenant has an SLA class"):
        bind_tenants(resolve_policy("sla_class"), no_class, DecisionCore(Platform.homogeneous(1)))
    assert bind_tenants(resolve_policy("sjf"), no_class, None).job is resolve_policy("sjf").job


def test_edf_in_a_run_with_easy_backfilling_keeps_the_head_reservation():
    # two cores: A (0-100) takes both; B (deadline 450) and C (deadline 300) queue, 2 cores each;
    # EDF starts C before B; D (1 core, no deadline) comes last and finds no hole before 300.
    jobs = [Job(0, "A", 0.0, 2, 100.0, 100.0), Job(1, "B", 1.0, 2, 100.0, 100.0),
            Job(2, "C", 2.0, 2, 100.0, 100.0), Job(3, "D", 3.0, 1, 10.0, 10.0)]
    table = TenantTable((Tenant("x"),), np.zeros(4, np.int32),
                        np.array([200.0, 450.0, 300.0, math.inf]))
    sim = Simulation(Platform.homogeneous(2), Workload(jobs),
                     SimulationConfig(contention="none", backfilling="easy", record_timeline=False))
    result = sim.run(bind_tenants(resolve_policy("edf"), table, sim.core))
    starts = {o.job.id: o.start_s for o in result.outcomes}
    assert starts == {"A": 0.0, "C": 100.0, "B": 200.0, "D": 300.0}
    fcfs = Simulation(Platform.homogeneous(2), Workload(jobs),
                      SimulationConfig(contention="none", backfilling="easy", record_timeline=False))
    assert {o.job.id: o.start_s for o in fcfs.run("fcfs").outcomes}["B"] == 100.0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([10.0, 20.0, 30.0, math.inf]), st.floats(1, 50)),
                min_size=1, max_size=25))
def test_edf_and_laxity_orders_are_sorted_and_stable(rows):
    jobs = [Job(i, i, float(i), 1, wall, wall) for i, (_, wall) in enumerate(rows)]
    deadlines = np.array([d for d, _ in rows])
    table = TenantTable((Tenant("x"),), np.zeros(len(rows), np.int32), deadlines)
    core = DecisionCore(Platform.homogeneous(1))
    for name, key in (("edf", lambda j: deadlines[j.idx]),
                      ("least_laxity", lambda j: deadlines[j.idx] - j.walltime_s
                       if math.isfinite(deadlines[j.idx]) else math.inf)):
        order = bind_tenants(resolve_policy(name), table, core).job.order(jobs, 0.0, RNG)
        assert sorted(j.idx for j in order) == list(range(len(rows)))
        pairs = [(key(j), j.idx) for j in order]
        assert pairs == sorted(pairs)  # by key, ties in submission order


@pytest.mark.parametrize("name", ["edf", "least_laxity", "sla_class", "fair_share"])
def test_bound_keys_read_python_numbers_and_survive_a_pickle(name):
    """The keys read the table through memoryviews (a Python float per job, no numpy scalar),
    even from a strided or int64 table; a pickled copy (environments are copied) orders alike."""
    import pickle

    table = _table()
    table.deadline_s = np.array([500.0, 0.0, 450.0, 0.0, 300.0, 0.0, math.inf, 0.0])[::2]
    table.tenant_of = table.tenant_of.astype(np.int64)
    core = DecisionCore(Platform.homogeneous(4))
    pair = bind_tenants(resolve_policy(name), table, core)
    jobs = _queue()
    if name == "fair_share":
        core.usage_hooks[0](jobs[1], 0.0, 1)  # y holds 2 cores from 0: x's jobs first at 10
    keys = [pair.job.key(job, 10.0) for job in jobs]
    assert all(type(k) is float for k in keys)
    copy = pickle.loads(pickle.dumps(pair.job))
    assert [copy.key(job, 10.0) for job in jobs] == keys
    assert "".join(j.id for j in copy.order(jobs, 10.0, RNG)) == {
        "edf": "CBAD", "least_laxity": "BCAD", "sla_class": "BDAC", "fair_share": "ACBD"}[name]


def test_the_names_are_policies_without_the_tenants_code():
    """pairs.py registers edf, least_laxity, fair_share and sla_class by name (sla_names): a run
    that uses none of them never imports sla_orders or the tenants' code; unbound, a template
    still refuses in one line."""
    import subprocess
    import sys

    code = ("import sys; from hdrm.policies.pairs import resolve_policy\n"
            "names = [resolve_policy(n).job.name for n in ('edf', 'least_laxity', 'fair_share', "
            "'sla_class')]\n"
            "print(names, [m for m in ('hdrm.policies.sla_orders', 'hdrm.workload.tenants') "
            "if m in sys.modules])\n"
            "try:\n    resolve_policy('edf').job.key(None, 0.0)\n"
            "except Exception as exc:\n    print(type(exc).__name__, exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[0] == "['edf', 'least_laxity', 'fair_share', 'sla_class'] []"
    assert out[1] == ("ConfigError policy 'edf' orders jobs by tenant and SLA; give the run "
                      "tenants (hdrm replay --tenants user|group|qos|FILE)")
