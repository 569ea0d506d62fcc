"""Periodic DAG pipelines: releases, deadlines, EDF / least laxity, metrics, by hand and by
property."""

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hdrm.dag.periodic import PeriodicTask, TaskGraph, TaskSet, expand
from hdrm.dag.periodic_gen import PeriodicSpec, generate
from hdrm.dag.periodic_devices import expand_on
from hdrm.dag.periodic_metrics import instance_rows, summarise
from hdrm.dag.periodic_rules import resolve_periodic_policy
from hdrm.platform.loader import load_platform
from hdrm.sim.engine import Simulation, SimulationConfig

T = PeriodicTask


def platform_file(tmp_path, cores: int):
    """A platform of ``cores`` identical cores on one node."""
    data = {"name": f"p{cores}", "processor_types": {"cpu": {
        "vendor": "hdrm", "model": "test", "year": 2024, "cores": cores, "clock_ghz": 2.0,
        "flops_per_cycle": 4, "mem_bw_gbps": 10, "tdp_w": 40}},
        "node_types": {"node": {"processors": [{"type": "cpu", "count": 1}], "memory_gb": 4}},
        "clusters": [{"name": "c0", "network": "ethernet_10g",
                      "nodes": [{"type": "node", "count": 1}]}]}
    path = tmp_path / f"p{cores}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return load_platform(path)


def simulate(taskset: TaskSet, platform, policy: str = "dag_edf"):
    workload = expand(taskset)
    config = SimulationConfig(kill_on_walltime=False, record_timeline=False)
    result = Simulation(platform, workload, config).run(policy)
    return workload, {o.job.idx: o for o in result.outcomes}


def rows_of(workload, outcomes):
    finish = [outcomes[j.idx].finish_s for j in workload.jobs]
    return instance_rows(workload.jobs, finish)


def two_graphs() -> TaskSet:
    a = TaskGraph("A", 10.0, 8.0, (T("a1", 2.0), T("a2", 3.0, 1.0)), ((0, 1, 1.0),))
    b = TaskGraph("B", 15.0, 15.0, (T("b", 4.0),), offset_s=5.0)
    return TaskSet((a, b), horizon_s=30.0)


def test_releases_and_deadlines_by_hand():
    jobs = expand(two_graphs()).jobs
    got = [(j.id, j.submit_s, j.extra["deadline_s"]) for j in jobs]
    # A at 0, 10, 20 (deadline +8); B at 5 and 20 (35 is past the horizon; deadline +15)
    assert got == [("A#0/a1", 0.0, 8.0), ("A#0/a2", 0.0, 8.0), ("B#0/b", 5.0, 20.0),
                   ("A#1/a1", 10.0, 18.0), ("A#1/a2", 10.0, 18.0), ("A#2/a1", 20.0, 28.0),
                   ("A#2/a2", 20.0, 28.0), ("B#1/b", 20.0, 35.0)]
    deps = expand(two_graphs()).dependencies
    assert sorted(zip(deps.job.tolist(), deps.pred.tolist(), deps.think_s.tolist())) == \
        [(1, 0, 1.0), (4, 3, 1.0), (6, 5, 1.0)]


def test_simulated_responses_by_hand(tmp_path):
    workload, outcomes = simulate(two_graphs(), platform_file(tmp_path, 4))
    # a1 [r, r+2], transfer 1, a2 [r+3, r+6]: response 6; b alone: 4
    a2 = [outcomes[j.idx] for j in workload.jobs if j.extra["task"] == "a2"]
    assert [(o.start_s, o.finish_s) for o in a2] == [(3.0, 6.0), (13.0, 16.0), (23.0, 26.0)]
    rows = rows_of(workload, outcomes)
    assert [(r.graph, r.instance, r.response_s, r.deadline_met) for r in rows] == \
        [("A", 0, 6.0, True), ("B", 0, 4.0, True), ("A", 1, 6.0, True), ("A", 2, 6.0, True),
         ("B", 1, 4.0, True)]


def edf_vs_llf() -> TaskSet:
    """X: one 2 s task, deadline 8. Y: y1 (1 s) -> y2 (6 s), deadline 12. Both at 0.
    Ranks: x 2, y1 7, y2 6. EDF: x (8) before y1, y2 (12). Laxity keys (deadline - rank):
    x 6, y1 5, y2 6: y1 first, then y2 before x (tie at 6, larger rank first)."""
    x = TaskGraph("X", 100.0, 8.0, (T("x", 2.0),))
    y = TaskGraph("Y", 100.0, 12.0, (T("y1", 1.0), T("y2", 6.0)), ((0, 1, 0.0),))
    return TaskSet((x, y), horizon_s=1.0)


def test_edf_and_least_laxity_orders_by_hand(tmp_path):
    one = platform_file(tmp_path, 1)
    workload, edf = simulate(edf_vs_llf(), one, "dag_edf")
    starts = {j.extra["task"]: (edf[j.idx].start_s, edf[j.idx].finish_s) for j in workload.jobs}
    assert starts == {"x": (0.0, 2.0), "y1": (2.0, 3.0), "y2": (3.0, 9.0)}
    edf_summary = summarise(rows_of(workload, edf))
    assert (edf_summary.missed, edf_summary.miss_ratio) == (0, 0.0)
    workload, llf = simulate(edf_vs_llf(), one, "dag_llf")
    starts = {j.extra["task"]: (llf[j.idx].start_s, llf[j.idx].finish_s) for j in workload.jobs}
    assert starts == {"y1": (0.0, 1.0), "y2": (1.0, 7.0), "x": (7.0, 9.0)}
    summary = summarise(rows_of(workload, llf))
    # X ends at 9 > 8: one miss of two; responses 9 (X) and 7 (Y)
    assert (summary.missed, summary.miss_ratio) == (1, 0.5)
    assert (summary.response_mean_s, summary.response_max_s) == (8.0, 9.0)


def test_miss_ratio_response_and_jitter_by_hand():
    g = TaskGraph("G", 10.0, 5.0, (T("a", 1.0), T("b", 1.0)), ((0, 1, 0.0),))
    h = TaskGraph("H", 20.0, 20.0, (T("c", 1.0),))
    workload = expand(TaskSet((g, h), horizon_s=40.0))
    # G instances at 0, 10, 20, 30; H at 0, 20. finish per job by hand:
    ends = {("G", 0): 4.0, ("G", 1): 17.0, ("G", 2): 23.0, ("G", 3): math.nan,
            ("H", 0): 2.0, ("H", 1): 30.0}
    finish = [ends[(j.extra["graph"], j.extra["instance"])] for j in workload.jobs]
    rows = instance_rows(workload.jobs, finish)
    assert [(r.graph, r.instance, r.response_s == r.response_s and r.response_s, r.deadline_met)
            for r in rows] == [("G", 0, 4.0, True), ("H", 0, 2.0, True), ("G", 1, 7.0, False),
                               ("G", 2, 3.0, True), ("H", 1, 10.0, True), ("G", 3, False, False)]
    s = summarise(rows)
    assert (s.instances, s.missed) == (6, 2) and s.miss_ratio == pytest.approx(1 / 3)
    assert s.response_mean_s == pytest.approx(26.0 / 5) and s.response_max_s == 10.0
    # p99 of (2, 3, 4, 7, 10): linear between 7 and 10 at 0.96 of the way
    assert s.response_p99_s == pytest.approx(7.0 + 0.96 * 3.0)
    assert s.jitter_s == {"G": 4.0, "H": 8.0}


specs = st.builds(PeriodicSpec, graphs=st.integers(1, 3), utilisation=st.floats(0.3, 3.0),
                  depth=st.integers(1, 4), width=st.integers(1, 3), ccr=st.floats(0.0, 1.0),
                  period_min_s=st.just(5.0), period_max_s=st.just(20.0),
                  deadline_ratio=st.floats(0.5, 2.0), horizon_periods=st.floats(1.0, 4.0))


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=specs, seed=st.integers(0, 10_000), cores=st.integers(1, 3),
       policy=st.sampled_from(["dag_edf", "dag_llf", "cpop_edf", "peft_edf", "llf_defer",
                               "fcfs"]))
def test_property_precedence_and_periodic_releases(tmp_path, spec, seed, cores, policy):
    taskset = generate(spec, seed)
    platform = platform_file(tmp_path, cores)
    workload = expand_on(taskset, platform)
    config = SimulationConfig(kill_on_walltime=False, record_timeline=False)
    result = Simulation(platform, workload, config).run(
        resolve_periodic_policy(policy, platform, "policy"))
    outcomes = {o.job.idx: o for o in result.outcomes}
    assert sorted(outcomes) == list(range(len(workload.jobs)))
    by_core: dict[int, list[tuple[float, float]]] = {}
    for o in outcomes.values():
        assert o.finish_s - o.start_s == pytest.approx(o.job.extra["cpu_s"])
        assert len(o.cores) == 1
        by_core.setdefault(o.cores[0], []).append((o.start_s, o.finish_s))
    for spans in by_core.values():  # no core runs two tasks at once
        spans.sort()
        assert all(b[0] >= a[1] - 1e-9 for a, b in zip(spans, spans[1:]))
    deps = workload.dependencies
    if deps is not None:
        for j, p, think in zip(deps.job.tolist(), deps.pred.tolist(), deps.think_s.tolist()):
            assert outcomes[j].start_s >= outcomes[p].finish_s + think - 1e-9
    for graph in taskset.graphs:
        mine = [j for j in workload.jobs if j.extra["graph"] == graph.name]
        count = math.ceil(taskset.horizon_s / graph.period_s)
        assert {j.extra["instance"] for j in mine} == set(range(count))
        for job in mine:
            release = job.extra["instance"] * graph.period_s
            assert job.submit_s == pytest.approx(release) and outcomes[job.idx].start_s >= release
            assert job.extra["deadline_s"] == pytest.approx(release + graph.deadline_s)


def test_generator_uunifast_and_seeds():
    spec = PeriodicSpec(graphs=4, utilisation=2.5, gpu_fraction=1.0, gpu_speedup_min=2.0,
                        gpu_speedup_max=4.0, deadline_ratio=0.8)
    a, b = generate(spec, 3), generate(spec, 3)
    assert [g.utilisation for g in a.graphs] == [g.utilisation for g in b.graphs]
    assert a.utilisation == pytest.approx(2.5)
    assert generate(spec, 4).graphs[0].utilisation != a.graphs[0].utilisation
    for g in a.graphs:
        assert 10.0 <= g.period_s <= 100.0 and g.deadline_s == pytest.approx(0.8 * g.period_s)
        assert all(2.0 <= t.cpu_s / t.gpu_s <= 4.0 for t in g.tasks)
    assert a.horizon_s == pytest.approx(10 * max(g.period_s for g in a.graphs))
