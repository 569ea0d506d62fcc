"""The seeded random layered DAG generator."""

from __future__ import annotations

import math

import pytest

from hdrm.dag.generator import DagSpec, draw, random_dag
from hdrm.errors import ConfigError


def _layers(dag):
    """Depth of each task: 0 for entries, else 1 + the deepest predecessor."""
    depth = [0] * dag.size
    for t in dag.order:
        depth[t] = max((depth[p] + 1 for p, _ in dag.pred[t]), default=0)
    return depth


def test_same_seed_same_dag_and_different_seeds_differ():
    spec = DagSpec(depth=6, width=4, density=0.4, processors=3)
    a, b, c = random_dag(spec, 7), random_dag(spec, 7), random_dag(spec, 8)
    assert (a.tasks, a.costs_s, a.edges) == (b.tasks, b.costs_s, b.edges)
    assert (a.costs_s, a.edges) != (c.costs_s, c.edges)


def test_layers_edges_and_entries():
    spec = DagSpec(depth=8, width=5, density=0.3)
    for seed in range(20):
        dag = random_dag(spec, seed)
        depth = _layers(dag)
        assert max(depth) == spec.depth - 1  # every layer below the first hangs on the one above
        assert all(depth[d] == depth[s] + 1 for s, d, _ in dag.edges)  # consecutive layers only
        per_layer = [depth.count(k) for k in range(spec.depth)]
        assert all(1 <= k <= 2 * spec.width - 1 for k in per_layer)


def test_full_density_links_consecutive_layers_completely():
    dag = random_dag(DagSpec(depth=3, width=3, density=1.0), 1)
    depth = _layers(dag)
    sizes = [depth.count(k) for k in range(3)]
    assert len(dag.edges) == sizes[0] * sizes[1] + sizes[1] * sizes[2]


def test_related_costs_are_work_over_speed():
    drawn = draw(DagSpec(processors=4, heterogeneity=1.0, related=True), 3)
    assert len(drawn.speeds) == 4 and all(0.5 <= s <= 1.5 for s in drawn.speeds)
    for work, row in zip(drawn.work, drawn.dag.costs_s):
        assert row == tuple(work / s for s in drawn.speeds)


def test_unrelated_costs_stay_in_the_heterogeneity_band():
    drawn = draw(DagSpec(heterogeneity=0.4, processors=5), 4)
    assert drawn.speeds == ()
    for work, row in zip(drawn.work, drawn.dag.costs_s):
        assert all(0.8 * work - 1e-12 <= c <= 1.2 * work + 1e-12 for c in row)


def test_ccr_and_mean_cost_on_average():
    spec = DagSpec(depth=40, width=20, density=0.2, ccr=2.0, mean_cost_s=10.0,
                   bandwidth_mb_s=4.0)
    dag = random_dag(spec, 0)
    costs = [c for row in dag.costs_s for c in row]
    data = [x for _, _, x in dag.edges]
    mean_cost = math.fsum(costs) / len(costs)
    mean_comm = math.fsum(dag.network.mean_comm_s(x) for x in data) / len(data)
    assert mean_cost == pytest.approx(10.0, rel=0.05)
    assert mean_comm / mean_cost == pytest.approx(2.0, rel=0.05)


@pytest.mark.parametrize("field, value, rule", [
    ("depth", 0, "an integer >= 1"), ("density", 1.5, "between 0 and 1"),
    ("heterogeneity", 2.0, r"in \[0, 2\)"), ("ccr", -1.0, "finite and >= 0"),
    ("processors", 0, "an integer >= 1"),
])
def test_bad_specs_name_the_field(field, value, rule):
    with pytest.raises(ConfigError, match=rf"^DagSpec\.{field}: {value!r} is not {rule}$"):
        DagSpec(**{field: value})
