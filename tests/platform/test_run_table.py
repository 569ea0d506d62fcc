"""Per-core tables of platform files kept as runs (issue 25, point 6): they read as the tuples
they stand for and hold one entry per processor, node or type stretch, none per core."""

from __future__ import annotations

import json
import math
import pickle
import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hdrm.platform.loader import load_platform, platform_from_dict
from hdrm.platform.run_table import RunTable


@given(st.lists(st.tuples(st.sampled_from([0, 1, 2.5, -0.0, 0.0, "a"]), st.integers(0, 4)),
                max_size=8))
def test_a_run_table_reads_as_its_tuple(runs):
    """Indexing (negative too), slices, iteration, numpy, equality and hash as the tuple."""
    values = [v for v, _ in runs]
    ends = list(np.cumsum([n for _, n in runs], dtype=int)) if runs else []
    table = RunTable(values, [int(e) for e in ends])
    expected = tuple(v for v, n in runs for _ in range(n))
    assert len(table) == len(expected) and tuple(table) == expected
    assert table == expected and expected == table and hash(table) == hash(expected)
    assert [table[i] for i in range(-len(expected), len(expected))] == list(expected * 2)
    assert table[1:-1:2] == expected[1:-1:2] and table[::-1] == expected[::-1]
    for lo in range(-2, len(expected) + 2):  # spans, read run by run
        assert table[lo:] == expected[lo:] and table[lo:lo + 3] == expected[lo:lo + 3]
    assert [math.copysign(1, x) for x in table if x == 0 and type(x) is float] == \
        [math.copysign(1, x) for x in expected if x == 0 and type(x) is float]
    with pytest.raises(IndexError):
        table[len(expected)]
    if all(type(v) is int for v in values):
        assert np.asarray(table).tolist() == list(expected)
    assert pickle.loads(pickle.dumps(table)) == table


def test_equal_runs_are_merged_and_bad_ends_refused():
    table = RunTable([7.5, 7.5, 9.0, 9.0], [2, 5, 5, 8])
    assert table.runs == [(7.5, 5), (9.0, 3)] and table == (7.5,) * 5 + (9.0,) * 3
    assert RunTable([1, 1.0], [1, 2]).runs == [(1, 1), (1.0, 1)]  # an int is not a float
    assert RunTable([0.0, -0.0], [1, 2]).runs == [(0.0, 1), (-0.0, 1)]
    with pytest.raises(ValueError, match="must not decrease: 1 after 3"):
        RunTable([1, 2], [3, 1])
    with pytest.raises(ValueError, match="one end per value"):
        RunTable([1], [1, 2])


def test_a_platform_file_keeps_its_core_tables_as_runs(tmp_path):
    """Two node types (2 x 20-core and 2 x 4-core processors) over 3 clusters: the tables
    equal those written core by core, one run per processor (core_processor), per node
    (core_node), per stretch of one type (speeds, powers) and per cluster."""
    doc = {"clusters": [
        {"name": "a", "network": "infiniband_edr",
         "nodes": [{"type": "dell_r640_gold6148", "count": 2}]},
        {"name": "b", "network": "infiniband_edr",
         "nodes": [{"type": "my_node", "count": 3}, {"type": "dell_r640_gold6148", "count": 1}]}],
        "node_types": {"my_node": {"processors": [{"type": "mine", "count": 2}],
                                   "memory_gb": 8}},
        "processor_types": {"mine": {"cores": 4, "clock_ghz": 2.0, "flops_per_cycle": 8,
                                     "mem_bw_gbps": 20, "tdp_w": 30}}}
    p = platform_from_dict(doc)
    sizes = [20] * 4 + [4] * 6 + [20] * 2
    assert p.core_processor == tuple(k for k, n in enumerate(sizes) for _ in range(n))
    nodes = [40, 40, 8, 8, 8, 40]
    assert p.core_node == tuple(k for k, n in enumerate(nodes) for _ in range(n))
    gold = p.processors[0].type.core_gflops
    assert p.core_gflops == (gold,) * 80 + (16.0,) * 24 + (gold,) * 40
    assert p.core_power_w[80:104] == (7.5,) * 24
    assert p.cores.cluster == (0,) * 80 + (1,) * 64
    assert len(p.core_processor.runs) == 12 and len(p.core_node.runs) == 6
    assert len(p.core_gflops.runs) == 3 and len(p.cores.cluster.runs) == 2
    assert p.cores[100].processor_id == 9 and p.cores[100].node_id == 4


def test_a_platform_file_of_identical_nodes_holds_nothing_per_core(tmp_path):
    """25,000 nodes of 40 cores (10**6 cores): the platform holds ~880 bytes a node (its node
    and processor objects, their id ranges, its runs): ~22 bytes a core, ~27 at the peak of the
    load (tracemalloc); with five per-core tuples it held ~64 and peaked at ~105."""
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"clusters": [{"name": "c", "network": "infiniband_edr", "nodes": [
        {"type": "dell_r640_gold6148", "count": 25_000}]}]}))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        platform = load_platform(path)
        held, peak = (x - before for x in tracemalloc.get_traced_memory())
    finally:
        tracemalloc.stop()
    assert platform.nb_cores == 10**6 and platform.core_node[999_999] == 24_999
    assert held / 10**6 < 30 and peak / 10**6 < 40, (held / 10**6, peak / 10**6)
