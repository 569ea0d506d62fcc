"""Platform size: a platform beyond the documented limit is refused up front, before anything
proportional to it is allocated, with the estimate; below it, the loader and the homogeneous
platform keep no object per core (memory measured with tracemalloc)."""

from __future__ import annotations

import json
import pickle
import re
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from hdrm.errors import PlatformError
from hdrm.platform.loader import load_platform
from hdrm.platform.model import (
    DEFAULT_MAX_CORES,
    MAX_CORES_ENV,
    Core,
    CoreTable,
    Platform,
    max_cores,
)
from hdrm.platform.simgrid import platform_from_simgrid

PLATFORMS = Path(__file__).resolve().parents[2] / "platforms"

#: Cores of the largest machines of the archive traces hdrm is checked on.
LLNL_ATLAS_CORES = 9_216
CEA_CURIE_CORES = 93_312


def _platform_file(tmp_path: Path, *counts: int, node_type: str = "dell_r640_gold6148") -> Path:
    """A platform of one cluster with one node group per count (a Dell R640 has 40 cores)."""
    path = tmp_path / "big.json"
    nodes = [{"type": node_type, "count": count} for count in counts]
    path.write_text(json.dumps({"clusters": [{"name": "c", "network": "infiniband_edr",
                                              "nodes": nodes}]}))
    return path


def _peak_mb(action) -> tuple[object, float]:
    """Run ``action``; return what it returned (or raised) and the peak of traced memory in MB."""
    tracemalloc.start()
    try:
        try:
            result = action()
        except PlatformError as exc:
            result = exc
        return result, tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def test_the_limit_is_well_above_the_shipped_platforms_and_traces():
    assert max_cores() == DEFAULT_MAX_CORES == 2**20
    assert DEFAULT_MAX_CORES > 10 * CEA_CURIE_CORES
    assert Platform.homogeneous(CEA_CURIE_CORES).nb_cores == CEA_CURIE_CORES


def test_a_trillion_nodes_are_refused_before_any_is_made(tmp_path):
    path = _platform_file(tmp_path, 10**12)
    error, peak_mb = _peak_mb(lambda: load_platform(path))
    assert isinstance(error, PlatformError)
    assert str(error) == (
        f"{path}: clusters[0].nodes[0].count: 1,000,000,000,000 nodes x 40 cores = "
        "40,000,000,000,000 cores, beyond the limit of 1,048,576 cores (a replay takes about "
        "400 bytes per core: about 16,000,000 GB here, about 0.4 GB at the limit); give fewer "
        "nodes, or raise the limit with $HDRM_MAX_CORES if you have the memory")
    assert peak_mb < 2


def test_the_largest_group_is_named_and_groups_add_up(tmp_path):
    path = _platform_file(tmp_path, 20_000, 10_000, 300)  # 800,000 + 400,000 + 12,000 cores
    with pytest.raises(PlatformError, match=(
            r"clusters\[0\]\.nodes\[0\]\.count: 20,000 nodes x 40 cores and 2 other node groups "
            r"= 1,212,000 cores, beyond the limit of 1,048,576 cores")):
        load_platform(path)


@pytest.mark.parametrize("nb", [10**7, 10**12])
def test_a_huge_homogeneous_platform_is_refused_up_front(nb):
    error, peak_mb = _peak_mb(lambda: Platform.homogeneous(nb))
    assert isinstance(error, PlatformError) and peak_mb < 1
    assert str(error).startswith(f"homogeneous platform: {nb:,} one-core nodes = {nb:,} cores, "
                                 "beyond the limit of 1,048,576 cores")
    assert str(error).endswith("give fewer homogeneous processors, or raise the limit with "
                               "$HDRM_MAX_CORES if you have the memory")


def test_the_refusal_quotes_the_estimate_of_its_kind_of_platform(tmp_path):
    # one-core nodes keep nothing per core: 200 bytes a core (10**7: 2.0 GB); a platform file
    # keeps runs of cores, but jobs with memory go core by core: 400 (4.0 GB; 800 before its
    # per-core tables were runs)
    with pytest.raises(PlatformError, match=re.escape(
            "(a replay takes about 200 bytes per core: about 2.0 GB here, about 0.2 GB at the "
            "limit)")):
        Platform.homogeneous(10**7)
    path = _platform_file(tmp_path, 250_000)  # 40-core nodes: 10**7 cores
    with pytest.raises(PlatformError, match=re.escape(
            "(a replay takes about 400 bytes per core: about 4.0 GB here, about 0.4 GB at the "
            "limit)")):
        load_platform(path)


def test_a_simgrid_radical_is_counted_before_it_is_expanded(tmp_path):
    path = tmp_path / "big.xml"
    path.write_text(
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        "<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">"
        "<cluster id=\"c\" prefix=\"h\" suffix=\"\" radical=\"0-999999999999\" speed=\"1Gf\" "
        "bw=\"1GBps\" lat=\"1us\"/></zone></platform>\n")
    error, peak_mb = _peak_mb(lambda: platform_from_simgrid(path))
    assert isinstance(error, PlatformError) and peak_mb < 2
    assert "radical '0-999999999999': 1,000,000,000,000 hosts of one core" in str(error)
    # hosts of a SimGrid file are objects: ~1,080 bytes a host measured at 2**19 hosts
    assert "(a replay takes about 1,100 bytes per core:" in str(error)


def test_the_limit_can_be_moved(monkeypatch, tmp_path):
    hetero = PLATFORMS / "hetero.json"  # 384 cores
    monkeypatch.setenv(MAX_CORES_ENV, "384")
    assert load_platform(hetero).nb_cores == 384
    monkeypatch.setenv(MAX_CORES_ENV, "383")
    with pytest.raises(PlatformError, match=r"hetero\.json: clusters\[0\]\.nodes\[\d\]\.count: .* "
                                            r"= 384 cores, beyond the limit of 383 cores"):
        load_platform(hetero)
    monkeypatch.setenv(MAX_CORES_ENV, "2_000_000")
    assert Platform.homogeneous(1_100_000).nb_cores == 1_100_000
    monkeypatch.setenv(MAX_CORES_ENV, "many")
    with pytest.raises(PlatformError, match=r"^\$HDRM_MAX_CORES: expected a positive number of "
                                            r"cores, got 'many'$"):
        Platform.homogeneous(4)


def test_the_loader_keeps_no_object_per_core(tmp_path):
    path = _platform_file(tmp_path, 2_500)  # 100,000 cores
    tracemalloc.start()
    platform = load_platform(path)
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert platform.nb_cores == 100_000
    # flat tables and one object per node and processor: 67 bytes a core (256 with a Core each)
    assert held / platform.nb_cores < 120
    assert isinstance(platform.cores, CoreTable)
    assert platform.nodes[7].core_ids == range(280, 320)


def test_the_homogeneous_platform_keeps_no_core_object():
    tracemalloc.start()
    platform = Platform.homogeneous(CEA_CURIE_CORES)
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    # 80 bytes a core: flat tables, nodes and processors made on demand (360 with a node and a
    # processor object per core, 640 with a core object and a dict per node and processor)
    assert held / CEA_CURIE_CORES < 120
    node = platform.nodes[-1]
    last = CEA_CURIE_CORES - 1
    assert (node.id, node.name, node.core_ids, node.processor_ids) == (
        last, f"n{last}", (last,), (last,))
    assert platform.processors[5].core_ids == (5,) and platform.core_node[5] == 5
    assert platform.node_memory_mb[:2] == (float("inf"),) * 2


def test_core_table_behaves_as_a_tuple_of_cores():
    platform = load_platform(PLATFORMS / "tiny_hetero.json")
    cores = tuple(platform.cores)
    assert all(isinstance(c, Core) for c in cores) and [c.id for c in cores] == list(range(8))
    assert platform.cores == cores and cores == tuple(platform.cores[:])
    assert platform.cores[-1] == cores[-1] and platform.cores[2:5] == cores[2:5]
    assert CoreTable.of(cores) == platform.cores and hash(CoreTable.of(cores)) == hash(cores)
    with pytest.raises(IndexError):
        platform.cores[8]
    again = pickle.loads(pickle.dumps(platform))
    assert again == platform and again.core_node == platform.core_node
    homogeneous = Platform.homogeneous(3)
    assert pickle.loads(pickle.dumps(homogeneous)) == homogeneous


def test_homogeneous_tables_hold_nothing_per_core_and_equal_tuples():
    """A homogeneous platform's flat tables are one value n times and the ids 0..n-1: equal to
    (and hashed as) the tuples they stand for, indexed, sliced and read by numpy as those."""
    p = Platform.homogeneous(5, gflops=2.0, power_w=50.0)
    assert p.core_gflops == (2.0,) * 5 and hash(p.core_gflops) == hash((2.0,) * 5)
    assert p.core_processor == tuple(range(5)) == p.core_node
    assert hash(p.core_node) == hash(tuple(range(5)))
    assert p.core_node[1:4] == (1, 2, 3) and p.core_node[-1] == 4 and p.core_power_w[-2] == 50.0
    assert p.core_node[2:5][0] == 2 and p.core_node[::-2] == (4, 2, 0)
    assert list(p.node_memory_mb) == [float("inf")] * 5 and p.processor_mem_bw_gbps[4] == float("inf")
    assert np.asarray(p.core_node).tolist() == [0, 1, 2, 3, 4]
    assert np.asarray(p.core_gflops, dtype=float).tolist() == [2.0] * 5
    assert p == Platform.homogeneous(5, gflops=2.0, power_w=50.0)
    assert p != Platform.homogeneous(5, gflops=3.0, power_w=50.0)
    assert p.total_gflops == 10.0 and p.is_homogeneous and p.cores[3].node_id == 3
    assert pickle.loads(pickle.dumps(p)) == p
    with pytest.raises(IndexError):
        p.core_node[5]


def test_homogeneous_ids_pool_is_the_items_objects():
    """``Ids.upto`` gives the pool the items and slices are read from: id i at index i, the
    very objects (placements slice it as a list; outcomes then share one int per core)."""
    ids = Platform.homogeneous(2000).core_processor
    pool = ids.upto(1500)
    assert len(pool) >= 1500 and pool[:1500] == list(range(1500))
    assert pool[1234] is ids[1234] and ids[1000:1003][2] is pool[1002]
