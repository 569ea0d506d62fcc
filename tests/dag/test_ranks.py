"""Ranks and the optimistic cost table on the classic DAG, against the papers' values."""

from __future__ import annotations

import pytest

from hdrm.dag.ranks import (downward_ranks, longest_min_path_s, mean_costs,
                            optimistic_cost_table, oct_ranks, upward_ranks)

NAMES = ["n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10"]


def test_upward_ranks_are_the_papers(classic):
    # Topcuoglu et al. 2002, Table 1 (rank_u)
    expected = [108.000, 77.000, 80.000, 80.000, 69.000, 63.333, 42.667, 35.667, 44.333, 14.667]
    assert upward_ranks(classic) == pytest.approx(expected, abs=1e-3)
    # by hand: n10 = mean(21, 7, 16); n7 = mean(7, 15, 11) + 17 + rank_u(n10)
    assert upward_ranks(classic)[6] == pytest.approx(11 + 17 + 44 / 3)


def test_downward_ranks_are_the_papers(classic):
    # Table 1 (rank_d); rank_u + rank_d = 108 on the critical path n1 n2 n9 n10
    expected = [0.000, 31.000, 25.000, 22.000, 24.000, 27.000, 62.333, 66.667, 63.667, 93.333]
    down = downward_ranks(classic)
    assert down == pytest.approx(expected, abs=1e-3)
    up = upward_ranks(classic)
    assert [NAMES[t] for t in range(10) if abs(up[t] + down[t] - 108) < 1e-9] == [
        "n1", "n2", "n9", "n10"]


def test_optimistic_cost_table_by_hand(classic):
    table = optimistic_cost_table(classic)
    assert table[9] == [0, 0, 0]  # exit
    # n7 -> n10 (c = 17), w(n10) = (21, 7, 16): P1 min(21, 7 + 17, 16 + 17) = 21, P2 7, P3 16
    assert table[6] == [21, 7, 16]
    # n8 -> n10 (c = 11): P1 min(21, 18, 27) = 18, P2 7, P3 min(32, 18, 16) = 16
    assert table[7] == [18, 7, 16]
    # n1: max over its five successors; the worst is n2 (c = 18) on P1 and P3, n4 on P2
    assert table[0] == [48, 38, 53]
    assert oct_ranks(table)[0] == pytest.approx(139 / 3)


def test_mean_costs_and_lower_bound(classic):
    assert mean_costs(classic)[0] == pytest.approx(13)
    assert longest_min_path_s(classic) == 41  # n1 9 + n2 13 + n9 12 + n10 7
