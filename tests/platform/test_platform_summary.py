"""Platform summaries against hand computation, and their totals against the platform's."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from hdrm.platform.loader import load_platform
from hdrm.platform.model import Platform
from hdrm.platform.summary import summarize_platform

PLATFORMS = Path(__file__).resolve().parents[2] / "platforms"


def test_tiny_hetero_summary_by_hand():
    s = summarize_platform(load_platform(PLATFORMS / "tiny_hetero.json"))
    assert (s.name, s.nb_clusters, s.nb_nodes, s.nb_processors, s.nb_cores) == (
        "tiny_hetero", 1, 2, 3, 8)
    assert s.total_gflops == 256.0 and s.reference_gflops == 32.0
    assert s.total_memory_mb == 12288.0
    assert s.full_power_w == 140.0
    assert s.idle_power_w == pytest.approx(0.3 * 140.0)
    assert s.sleep_power_w == pytest.approx(0.05 * 140.0)
    assert not s.is_homogeneous
    fast, slow = s.processor_types
    assert (fast.name, fast.nb_processors, fast.nb_cores, fast.core_gflops, fast.total_gflops,
            fast.mem_bw_gbps, fast.full_power_w) == ("fast_cpu", 1, 4, 48.0, 192.0, 20.0, 80.0)
    assert (slow.name, slow.nb_processors, slow.nb_cores, slow.core_gflops, slow.total_gflops,
            slow.mem_bw_gbps, slow.full_power_w) == ("slow_cpu", 2, 4, 16.0, 64.0, 8.0, 60.0)
    (cluster,) = s.clusters
    assert (cluster.name, cluster.network, cluster.nb_nodes, cluster.nb_cores,
            cluster.total_gflops, cluster.memory_mb) == ("c0", "ethernet_25g", 2, 8, 256.0, 12288.0)


def test_breakdowns_add_up_on_large():
    p = load_platform(PLATFORMS / "large.json")
    s = summarize_platform(p)
    assert [t.name for t in s.processor_types] == [
        "xeon_gold_6148", "epyc_7742", "thunderx2_cn9980", "xeon_phi_7250"]
    assert sum(t.nb_cores for t in s.processor_types) == s.nb_cores == p.nb_cores
    assert sum(t.nb_processors for t in s.processor_types) == s.nb_processors
    assert math.isclose(math.fsum(t.total_gflops for t in s.processor_types), s.total_gflops)
    assert math.isclose(math.fsum(t.full_power_w for t in s.processor_types), s.full_power_w)
    assert [c.name for c in s.clusters] == ["skx", "rome", "arm", "knl"]
    assert sum(c.nb_nodes for c in s.clusters) == s.nb_nodes
    assert math.isclose(math.fsum(c.memory_mb for c in s.clusters), s.total_memory_mb)
    assert s.clusters[0].nb_cores == 960 and s.clusters[0].total_gflops == pytest.approx(960 * 76.8)


def test_homogeneous_platform_summary_is_json_ready():
    s = summarize_platform(Platform.homogeneous(3, gflops=2.0, power_w=10.0))
    assert s.is_homogeneous and s.nb_cores == 3 and s.full_power_w == 30.0
    data = dataclasses.asdict(s)
    assert data["processor_types"][0]["nb_cores"] == 3
    assert json.loads(json.dumps(data, default=str))["nb_nodes"] == 3


def test_summary_sums_equal_core_by_core_sums(tmp_path):
    """The cluster speed sums (read run by run from the tables) and the state power sums (one
    power table per distinct core power) equal the exact sums taken core by core."""
    import json
    import math

    from hdrm.platform import power
    from hdrm.platform.loader import load_platform
    from hdrm.platform.summary import summarize_platform

    path = tmp_path / "two.json"
    path.write_text(json.dumps({"clusters": [
        {"name": "a", "network": "infiniband_edr",
         "nodes": [{"type": "dell_r640_gold6148", "count": 3}, {"type": "small", "count": 2}]},
        {"name": "b", "network": "infiniband_edr", "nodes": [{"type": "small", "count": 5}]}],
        "node_types": {"small": {"processors": [{"type": "quad", "count": 2}], "memory_gb": 8}},
        "processor_types": {"quad": {"cores": 4, "clock_ghz": 2.3, "flops_per_cycle": 16,
                                     "mem_bw_gbps": 20, "tdp_w": 61}}}))
    platform = load_platform(path)
    summary = summarize_platform(platform)
    for cluster, row in zip(platform.clusters, summary.clusters):
        cores = [c for n in cluster.node_ids for c in platform.nodes[n].core_ids]
        assert row.nb_cores == len(cores)
        assert row.total_gflops == math.fsum(platform.core_gflops[c] for c in cores)
    assert summary.idle_power_w == math.fsum(power.state_power_w(w)[power.IDLE]
                                             for w in platform.core_power_w)
