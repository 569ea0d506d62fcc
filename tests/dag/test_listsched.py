"""HEFT, CPOP and PEFT on the classic 10-task example (hand-checked) and on random DAGs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.dag.generator import DagSpec, random_dag
from hdrm.dag.listsched import DAG_POLICIES, cpop, critical_path, heft, peft, schedule_dag
from hdrm.dag.model import Dag, Network
from hdrm.dag.ranks import downward_ranks, upward_ranks
from hdrm.errors import ConfigError


def _placed(schedule):
    dag = schedule.dag
    return {dag.tasks[t]: (dag.network.processors[schedule.processor[t]], schedule.start_s[t],
                           schedule.finish_s[t]) for t in range(dag.size)}


def test_heft_reproduces_the_papers_schedule(classic):
    # Topcuoglu et al. 2002, Fig. 3(a): makespan 80, every task where the paper puts it
    schedule = heft(classic)
    assert schedule.makespan_s == 80
    assert _placed(schedule) == {
        "n1": ("P3", 0, 9), "n3": ("P3", 9, 28), "n4": ("P2", 18, 26), "n2": ("P1", 27, 40),
        "n5": ("P3", 28, 38), "n6": ("P2", 26, 42), "n9": ("P2", 56, 68), "n7": ("P3", 38, 49),
        "n8": ("P1", 57, 62), "n10": ("P2", 73, 80),
    }
    schedule.validate()


def test_heft_inserts_a_task_into_an_idle_gap():
    # a runs on P1 (0-1); b needs a's 10 MB over a 1 MB/s link, so on P0 it waits until 11
    # (11-12). c (independent, lower rank: mean 47.5 < b's 50.5) fits into P0's idle 0-11 gap.
    costs = {"a": (100, 1), "b": (1, 100), "c": (5, 90)}
    dag = Dag.from_names(costs, [("a", "b", 10)], Network.uniform(["P0", "P1"]))
    schedule = heft(dag)
    assert _placed(schedule) == {"a": ("P1", 0, 1), "b": ("P0", 11, 12), "c": ("P0", 0, 5)}
    assert schedule.makespan_s == 12


def test_cpop_keeps_the_critical_path_on_one_processor(classic):
    # the paper: |CP| = 108, CP = n1 n2 n9 n10 on P2 (16 + 19 + 12 + 7 = 54, the least);
    # Fig. 3(b): makespan 86
    priority = [u + d for u, d in zip(upward_ranks(classic), downward_ranks(classic))]
    assert [classic.tasks[t] for t in critical_path(classic, priority)] == ["n1", "n2", "n9", "n10"]
    schedule = cpop(classic)
    assert schedule.makespan_s == 86
    placed = _placed(schedule)
    assert {placed[t][0] for t in ("n1", "n2", "n9", "n10")} == {"P2"}
    assert placed["n1"] == ("P2", 0, 16) and placed["n10"] == ("P2", 79, 86)
    schedule.validate()


def test_peft_on_the_classic_dag(classic):
    # hand-checked from the OCT table (test_ranks): n1 goes to P2 (EFT 16 + OCT 38 = 54 beats
    # P1's 14 + 48 and P3's 9 + 53), then n4 (rank_oct 31) before n2 (29.67)
    schedule = peft(classic)
    placed = _placed(schedule)
    assert placed["n1"] == ("P2", 0, 16)
    assert placed["n4"] == ("P2", 16, 24)
    assert schedule.makespan_s == 85
    schedule.validate()


def test_metrics_of_the_heft_schedule(classic):
    schedule = heft(classic)
    # CP in least costs, no transfers: n1 (9) n2 (13) n9 (12) n10 (7) = 41; 80 / 41
    assert schedule.slr == pytest.approx(80 / 41)
    # best single processor: P1 runs everything in 14+13+11+13+12+13+7+5+18+21 = 127 s
    # (P2 130 s, P3 143 s)
    assert schedule.speedup == pytest.approx(127 / 80)


def test_ties_go_to_the_lowest_processor_and_topological_order():
    net = Network.uniform(3)
    dag = Dag.from_names({"a": (5, 5, 5), "b": (5, 5, 5)}, [], net)
    placed = _placed(heft(dag))
    assert placed == {"a": ("p0", 0, 5), "b": ("p1", 0, 5)}


def test_zero_cost_tasks_and_zero_data_keep_precedence():
    # equal upward ranks along an edge (zero cost, zero data): the topological tie-break
    dag = Dag.from_names({"a": (0, 0), "b": (0, 0), "c": (1, 2)},
                         [("a", "b", 0), ("b", "c", 0)], Network.uniform(2))
    for policy in ("heft", "cpop", "peft"):
        schedule = schedule_dag(dag, policy)
        schedule.validate()
        assert schedule.makespan_s == 1


def test_heft_refuses_ranks_against_the_edges(classic):
    ranks = list(range(classic.size))  # n10 first: wrong way round
    with pytest.raises(ConfigError, match="task 'n10' comes before one of its predecessors"):
        heft(classic, ranks=ranks)


def test_unknown_policy_suggests_the_names(classic):
    with pytest.raises(ConfigError, match="heft"):
        schedule_dag(classic, "heftt")
    assert DAG_POLICIES.names() == ["cpop", "heft", "peft"]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), depth=st.integers(1, 6), width=st.integers(1, 5),
       density=st.floats(0, 1), ccr=st.sampled_from([0, 0.1, 1, 10]),
       heterogeneity=st.floats(0, 1.9), processors=st.integers(1, 5), related=st.booleans(),
       latency=st.sampled_from([0.0, 0.5]))
def test_every_schedule_of_a_random_dag_is_valid(seed, depth, width, density, ccr, heterogeneity,
                                                 processors, related, latency):
    spec = DagSpec(depth=depth, width=width, density=density, ccr=ccr,
                   heterogeneity=heterogeneity, processors=processors, related=related)
    dag = random_dag(spec, seed)
    if latency:
        n = dag.network.size
        net = Network(dag.network.processors, dag.network.bandwidth_mb_s,
                      tuple((latency,) * n for _ in range(n)))
        dag = Dag(dag.tasks, dag.costs_s, dag.edges, net, dag.name)
    for policy in ("heft", "cpop", "peft"):
        schedule = schedule_dag(dag, policy)
        assert schedule.violations() == []
        assert schedule.slr >= 1 - 1e-12  # no schedule beats the least-cost critical path
        assert len(schedule.processor) == dag.size and min(schedule.processor) >= 0


# --------------------------------------------------------------------------- a plain reference


def _plain_earliest(busy: list[tuple[float, float]], ready: float, duration: float) -> float:
    """Earliest start >= ready of an idle gap of ``duration``, by trying every gap in turn."""
    for at in sorted([ready] + [f for _, f in busy if f >= ready]):
        if not any(s < at + duration and at < f for s, f in busy):
            return at
    raise AssertionError("the end of the last interval always fits")


def _arrival(dag: Dag, placed: dict, prev: int, data: float, proc: int) -> float:
    """When ``prev``'s data reaches ``proc`` (the sums in the schedulers' order, to the bit)."""
    where, start = placed[prev]
    finish = start + dag.costs_s[prev][where]
    if where == proc:
        return finish
    net = dag.network
    return finish + net.latency_s[where][proc] + data * net.inverse_bandwidth[where][proc]


def _plain_schedule(dag: Dag, policy: str) -> list[tuple[int, float]]:
    """(processor, start) per task by the policies' definitions, every processor tried."""
    from hdrm.dag.ranks import optimistic_cost_table, oct_ranks

    width = dag.network.size
    bonus = [[0.0] * width for _ in range(dag.size)]
    only: dict[int, int] = {}
    if policy == "heft":
        priority = upward_ranks(dag)
    elif policy == "peft":
        bonus = optimistic_cost_table(dag)
        priority = oct_ranks(bonus)
    else:
        priority = [u + d for u, d in zip(upward_ranks(dag), downward_ranks(dag))]
        path = critical_path(dag, priority)
        cp = min(range(width), key=lambda p: (sum(dag.costs_s[t][p] for t in path), p))
        only = {t: cp for t in path}
    position = {t: i for i, t in enumerate(dag.order)}
    busy: list[list[tuple[float, float]]] = [[] for _ in range(width)]
    placed: dict[int, tuple[int, float]] = {}
    while len(placed) < dag.size:
        ready_tasks = [t for t in range(dag.size) if t not in placed
                       and all(p in placed for p, _ in dag.pred[t])]
        task = min(ready_tasks, key=lambda t: (-priority[t], position[t]))
        best = None
        for p in [only[task]] if task in only else range(width):
            ready = max((_arrival(dag, placed, q, x, p) for q, x in dag.pred[task]), default=0.0)
            start = _plain_earliest(busy[p], ready, dag.costs_s[task][p])
            key = (start + dag.costs_s[task][p] + bonus[task][p], p)
            if best is None or key < best[0]:
                best = (key, p, start)
        _, proc, start = best
        busy[proc].append((start, start + dag.costs_s[task][proc]))
        placed[task] = (proc, start)
    return [placed[t] for t in range(dag.size)]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), depth=st.integers(1, 7), width=st.integers(1, 6),
       ccr=st.sampled_from([0.1, 1, 5]), processors=st.integers(1, 6),
       policy=st.sampled_from(["heft", "cpop", "peft"]))
def test_placements_equal_a_plain_search_of_every_processor(seed, depth, width, ccr, processors,
                                                            policy):
    # the pruned search (lower bounds, gap bounds) must choose exactly what trying every
    # processor and every gap chooses; links of different bandwidths and latencies
    dag = random_dag(DagSpec(depth=depth, width=width, density=0.4, ccr=ccr,
                             heterogeneity=1.5, processors=processors), seed)
    n = dag.network.size
    bandwidth = tuple(tuple(1.0 + ((p * 7 + q * 3) % 5) for q in range(n)) for p in range(n))
    latency = tuple(tuple(0.1 * ((p + q) % 3) for q in range(n)) for p in range(n))
    dag = Dag(dag.tasks, dag.costs_s, dag.edges, Network(dag.network.processors, bandwidth,
                                                         latency), dag.name)
    schedule = schedule_dag(dag, policy)
    expected = _plain_schedule(dag, policy)
    assert [p for p, _ in expected] == list(schedule.processor)
    assert [s for _, s in expected] == pytest.approx(list(schedule.start_s), rel=1e-12, abs=1e-9)
