"""The DAG model: derived structure, and one-line errors naming the task for bad graphs."""

from __future__ import annotations

import math

import pytest

from hdrm.dag.model import Dag, Network
from hdrm.errors import WorkloadError

NET = Network.uniform(["P1", "P2"], bandwidth_mb_s=2.0, latency_s=0.5)


def _dag(costs, edges, name="g"):
    return Dag.from_names(costs, edges, NET, name)


def test_structure_and_topological_order(classic):
    assert classic.size == 10
    assert [classic.tasks[t] for t in classic.entries] == ["n1"]
    assert [classic.tasks[t] for t in classic.exits] == ["n10"]
    position = {t: i for i, t in enumerate(classic.order)}
    assert all(position[s] < position[d] for s, d, _ in classic.edges)
    # ties in Kahn's order go by task index: n2 .. n6 right after n1
    assert [classic.tasks[t] for t in classic.order[:6]] == ["n1", "n2", "n3", "n4", "n5", "n6"]


def test_transfer_times():
    assert NET.comm_s(10, 0, 0) == 0.0  # same processor: free, even with latency
    assert NET.comm_s(10, 0, 1) == pytest.approx(0.5 + 10 / 2)
    assert NET.mean_comm_s(10) == pytest.approx(5.5)
    assert Network.uniform(1).mean_comm_s(10) == 0.0
    bw = ((0.0, 1.0, 4.0), (1.0, 0.0, 4.0), (4.0, 4.0, 0.0))
    net = Network(("a", "b", "c"), bw, ((0.0,) * 3,) * 3)
    assert net.mean_bandwidth_mb_s == pytest.approx(18 / 6)  # ordered pairs of distinct ones
    assert net.comm_s(8, 2, 0) == pytest.approx(2.0)


def test_a_cycle_is_reported_with_its_tasks():
    costs = {"a": (1, 1), "b": (1, 1), "c": (1, 1), "d": (1, 1)}
    with pytest.raises(WorkloadError) as info:
        _dag(costs, [("a", "b", 0), ("b", "c", 0), ("c", "d", 0), ("d", "b", 0)])
    message = str(info.value)
    assert message == ("g: the graph has a cycle through task 'b' ('b' -> 'c' -> 'd' -> 'b'); "
                       "remove one of these edges")
    assert "\n" not in message


@pytest.mark.parametrize("cost, shown", [(-1.0, "-1.0"), (math.nan, "nan"), (math.inf, "inf")])
def test_bad_costs_name_the_task_and_processor(cost, shown):
    with pytest.raises(WorkloadError, match=(
            rf"^g: task 'b' costs {shown} s on processor 'P2'; a cost must be finite and >= 0$")):
        _dag({"a": (1, 1), "b": (1, cost)}, [])


def test_cost_rows_must_match_the_processors():
    with pytest.raises(WorkloadError, match=r"^g: task 'a' has 3 costs for 2 processors; give one "
                                            r"cost per processor$"):
        _dag({"a": (1, 1, 1)}, [])


@pytest.mark.parametrize("edges, message", [
    ([("a", "a", 0)], "g: task 'a' depends on itself; remove the edge 'a' -> 'a'"),
    ([("a", "b", 1), ("a", "b", 2)], "g: edge 'a' -> 'b' given twice; give each edge once"),
    ([("a", "b", -3)], "g: edge 'a' -> 'b' carries -3.0 MB; data must be finite and >= 0"),
    ([("a", "zz", 0)], "g: edge 'a' -> 'zz' names task 'zz', which has no costs"),
])
def test_bad_edges(edges, message):
    with pytest.raises(WorkloadError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        _dag({"a": (1, 1), "b": (1, 1)}, edges)


def test_bad_networks():
    with pytest.raises(WorkloadError, match="network: bandwidth_mb_s from 'a' to 'b' is 0.0; "
                                            "it must be > 0"):
        Network(("a", "b"), ((1.0, 0.0), (1.0, 1.0)), ((0.0, 0.0), (0.0, 0.0)))
    with pytest.raises(WorkloadError, match="processor name 'a' given twice"):
        Network.uniform(["a", "a"])
    with pytest.raises(WorkloadError, match="no processors"):
        Network.uniform(0)
