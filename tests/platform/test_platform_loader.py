"""Platform JSON files: derived figures by hand, hierarchy ids, every validation message."""

from __future__ import annotations

import copy
import json
import math
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.errors import PlatformError
from hdrm.platform.library import default_library
from hdrm.platform.loader import load_platform, platform_from_dict
from hdrm.platform.simgrid import platform_to_xml

PLATFORMS = Path(__file__).resolve().parents[2] / "platforms"
ALL_FILES = sorted(PLATFORMS.glob("*.json"))


def test_the_shipped_platforms_are_there():
    names = {p.name for p in ALL_FILES}
    assert {"tiny4.json", "tiny_hetero.json", "hetero.json", "large.json"} <= names


def test_tiny4_by_hand():
    p = load_platform(PLATFORMS / "tiny4.json")
    assert (p.name, p.nb_cores, len(p.processors), len(p.nodes), len(p.clusters)) == (
        "tiny4", 4, 2, 1, 1)
    assert p.core_gflops == (8.0,) * 4  # 2.0 GHz x 4 flops/cycle
    assert p.core_power_w == (20.0,) * 4  # 40 W / 2 cores
    assert p.core_processor == (0, 0, 1, 1)
    assert p.processor_mem_bw_gbps == (10.0, 10.0)
    assert p.node_memory_mb == (4096.0,)  # 4 GB x 1024
    assert p.nodes[0].name == "c0-n0"
    assert p.source.endswith("tiny4.json")


def test_tiny_hetero_by_hand():
    p = load_platform(PLATFORMS / "tiny_hetero.json")
    assert p.core_gflops == (48.0,) * 4 + (16.0,) * 4  # 3.0 x 16 and 2.0 x 8
    assert p.core_power_w == (20.0,) * 4 + (15.0,) * 4  # 80 / 4 and 30 / 2
    assert p.core_processor == (0, 0, 0, 0, 1, 1, 2, 2)
    assert p.core_node == (0, 0, 0, 0, 1, 1, 1, 1)
    assert p.processor_mem_bw_gbps == (20.0, 8.0, 8.0)
    assert p.node_memory_mb == (8192.0, 4096.0)
    assert p.total_gflops == 256.0
    assert p.reference_gflops == 32.0
    assert p.total_power_w == 140.0
    assert p.total_memory_mb == 12288.0
    assert [n.name for n in p.nodes] == ["c0-n0", "c0-n1"]
    assert [n.type.name for n in p.nodes] == ["fast_node", "slow_node"]
    assert p.nodes[1].processor_ids == range(1, 3) and p.nodes[1].core_ids == range(4, 8)
    assert p.processors[2].core_ids == range(6, 8)
    assert not p.is_homogeneous


def test_hetero_and_large_sizes():
    hetero = load_platform(PLATFORMS / "hetero.json")
    assert 256 <= hetero.nb_cores <= 400
    assert len({proc.type.name for proc in hetero.processors}) >= 3
    large = load_platform(PLATFORMS / "large.json")
    assert large.nb_cores >= 2000 and len(large.clusters) >= 3
    assert large.nb_cores == 24 * 40 + 6 * 128 + 8 * 64 + 4 * 68


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name)
def test_every_platform_file_has_consistent_hierarchy_ids(path):
    p = load_platform(path)
    assert [c.id for c in p.cores] == list(range(p.nb_cores))
    assert [c.id for c in p.clusters] == list(range(len(p.clusters)))
    seen_cores: list[int] = []
    for node in p.nodes:
        from_procs = [c for pid in node.processor_ids for c in p.processors[pid].core_ids]
        assert list(node.core_ids) == from_procs
        seen_cores += from_procs
        assert node.name.startswith(p.clusters[node.cluster_id].name + "-n")
        assert node.memory_mb == node.type.memory_gb * 1024
        for pid in node.processor_ids:
            assert p.processors[pid].node_id == node.id
    assert seen_cores == list(range(p.nb_cores))  # hierarchy order
    assert [n for c in p.clusters for n in c.node_ids] == list(range(len(p.nodes)))
    assert len({n.name for n in p.nodes}) == len(p.nodes)
    description = json.loads(path.read_text())["description"]
    assert str(p.nb_cores) in description.replace(",", "")


def test_node_names_count_inside_each_cluster():
    p = load_platform(PLATFORMS / "large.json")
    assert p.nodes[23].name == "skx-n23"
    assert p.nodes[24].name == "rome-n0"
    assert p.nodes[-1].name == "knl-n3"


def test_inline_type_overrides_the_library():
    doc = _doc()
    doc["processor_types"] = {"xeon_gold_6148": {
        "cores": 4, "clock_ghz": 1.0, "flops_per_cycle": 2, "mem_bw_gbps": 9, "tdp_w": 8}}
    p = platform_from_dict(doc)
    assert p.nb_cores == 2 * 2 * 4  # two dell_r640_gold6148 nodes of 2 overridden processors
    assert set(p.core_gflops) == {2.0} and set(p.core_power_w) == {2.0}
    assert default_library().processor_types["xeon_gold_6148"].cores == 20


def test_name_defaults_to_the_file_stem(tmp_path):
    doc = _doc()
    del doc["name"]
    path = tmp_path / "my_plat.json"
    path.write_text(json.dumps(doc))
    assert load_platform(path).name == "my_plat"
    assert platform_from_dict(doc).name == "platform"
    assert platform_from_dict(_doc()).name == "t"


def _doc() -> dict:
    return {
        "name": "t",
        "clusters": [
            {"name": "c0", "network": "infiniband_edr",
             "nodes": [{"type": "dell_r640_gold6148", "count": 2}]},
        ],
    }


def _set(doc: dict, path: tuple, value) -> dict:
    doc = copy.deepcopy(doc)
    target = doc
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


_DELETE = object()
_CPU = {"cores": 4, "clock_ghz": 2, "flops_per_cycle": 8, "mem_bw_gbps": 10, "tdp_w": 40}

ERRORS = [
    # (path to change, new value, expected message after "x.json: ")
    (("clusters", 0, "nodes", 0, "type"), "dell_r64",
     r"clusters\[0\]\.nodes\[0\]\.type: unknown node type 'dell_r64'; did you mean .*"
     r"'dell_r640_gold6148'.*\? choose one of: dell_r620_e5_2670, "),
    (("clusters", 0, "nodes", 0, "count"), 0,
     r"clusters\[0\]\.nodes\[0\]\.count: expected an integer > 0, got 0$"),
    (("clusters", 0, "nodes", 0, "count"), -3,
     r"clusters\[0\]\.nodes\[0\]\.count: expected an integer > 0, got -3$"),
    (("clusters", 0, "nodes", 0, "count"), "2",
     r"clusters\[0\]\.nodes\[0\]\.count: expected an integer > 0, got \"2\"$"),
    (("clusters", 0, "nodes", 0, "count"), _DELETE,
     r"clusters\[0\]\.nodes\[0\]\.count: missing required key \(an integer > 0\); add it$"),
    (("clusters", 0, "network"), "infiniband_edx",
     r"clusters\[0\]\.network: unknown network type 'infiniband_edx'; did you mean "
     r"'infiniband_edr'"),
    (("clusters", 0, "network"), 100,
     r"clusters\[0\]\.network: expected a string, got 100$"),
    (("clusters", 0, "name"), "bad name",
     r"clusters\[0\]\.name: expected a name of letters, digits and '_\.\+-' \(not starting "
     r"with '\.', '\+' or '-'\), got 'bad name'$"),
    (("clusters", 0, "nodes"), [],
     r"clusters\[0\]\.nodes: expected a non-empty list, got \[\]$"),
    (("clusters", 0, "nodes"), {"type": "x"},
     r"clusters\[0\]\.nodes: expected a non-empty list of objects, got \{\"type\": \"x\"\}$"),
    (("clusters", 0, "nodez"), [],
     r"clusters\[0\]\.nodez: unknown key; did you mean 'nodes'\? valid keys: description, name, "
     r"network, nodes$"),
    (("clusters",), [],
     r"clusters: expected a non-empty list, got \[\]$"),
    (("clusters",), _DELETE,
     r"clusters: missing required key \(a non-empty list of objects\); add it$"),
    (("clusterz",), [],
     r"clusterz: unknown key; did you mean 'clusters'\?"),
    (("processor_types",), {"cpu": {k: v for k, v in _CPU.items() if k != "tdp_w"}},
     r"processor_types\.cpu\.tdp_w: missing required key \(a number > 0\); add it$"),
    (("processor_types",), {"cpu": dict(_CPU, cores=4.5)},
     r"processor_types\.cpu\.cores: expected an integer > 0, got 4\.5$"),
    (("processor_types",), {"cpu": dict(_CPU, clock_ghz=-2)},
     r"processor_types\.cpu\.clock_ghz: expected a number > 0, got -2$"),
    (("processor_types",), {"cpu": dict(_CPU, tdp_watts=3)},
     r"processor_types\.cpu\.tdp_watts: unknown key; did you mean 'tdp_w'\?"),
    (("processor_types",), {"cpu": dict(_CPU, year="2020")},
     r"processor_types\.cpu\.year: expected an integer >= 0, got \"2020\"$"),
    (("processor_types",), {"a cpu": _CPU},
     r"processor_types\.\"a cpu\": bad type name 'a cpu'; expected a name of letters"),
    (("processor_types",), [],
     r"processor_types: expected an object, got \[\]$"),
    (("node_types",), {"n": {"processors": [{"type": "xeon_gold_614", "count": 1}],
                             "memory_gb": 1}},
     r"node_types\.n\.processors\[0\]\.type: unknown processor type 'xeon_gold_614'; did you "
     r"mean 'xeon_gold_6148'"),
    (("node_types",), {"n": {"processors": [{"type": "a64fx", "count": 0}], "memory_gb": 1}},
     r"node_types\.n\.processors\[0\]\.count: expected an integer > 0, got 0$"),
    (("node_types",), {"n": {"processors": [{"type": "a64fx", "count": 1}], "memory_gb": 0}},
     r"node_types\.n\.memory_gb: expected a number > 0, got 0$"),
    (("node_types",), {"n": {"processors": [], "memory_gb": 1}},
     r"node_types\.n\.processors: expected a non-empty list, got \[\]"),
    (("node_types",), {"n": {"processors": [["a64fx", 1]], "memory_gb": 1}},
     r"node_types\.n\.processors\[0\]: expected an object, got \[\"a64fx\", 1\]$"),
    (("network_types",), {"net": {"latency_us": 1}},
     r"network_types\.net\.bandwidth_gbps: missing required key \(a number > 0\); add it$"),
    (("network_types",), {"net": {"bandwidth_gbps": 10, "latency_us": -1}},
     r"network_types\.net\.latency_us: expected a number >= 0, got -1$"),
    (("name",), 7, r"name: expected a string, got 7$"),
]


@pytest.mark.parametrize("path, value, message", ERRORS, ids=[str(e[0]) for e in ERRORS])
def test_validation_messages_name_file_and_json_path(path, value, message):
    with pytest.raises(PlatformError, match=r"^x\.json: " + message):
        platform_from_dict(_set(_doc(), path, value), source="x.json")


def test_duplicate_cluster_names():
    doc = _doc()
    doc["clusters"].append(copy.deepcopy(doc["clusters"][0]))
    with pytest.raises(PlatformError, match=r"^x\.json: clusters\[1\]\.name: duplicate cluster "
                       r"name 'c0' \(also clusters\[0\]\.name\); give each cluster a unique name$"):
        platform_from_dict(doc, source="x.json")


def test_top_level_must_be_an_object():
    with pytest.raises(PlatformError, match=r"^x\.json: \(top level\): expected an object, "
                                            r"got \[1, 2\]$"):
        platform_from_dict([1, 2], source="x.json")


def test_repeated_keys_in_the_file(tmp_path):
    path = tmp_path / "dup.json"
    path.write_text(
        '{"network_types": {"n": {"bandwidth_gbps": 1}, "n": {"bandwidth_gbps": 2}},'
        ' "clusters": [{"name": "c", "network": "n", "nodes": [{"type": "a", "count": 1}]}]}'
    )
    with pytest.raises(PlatformError, match=r"dup\.json: network_types: duplicate key 'n'; each "
                       r"key may appear once in an object$"):
        load_platform(path)
    path.write_text('{"clusters": [{"name": "a", "name": "b", "network": "x", "nodes": []}]}')
    with pytest.raises(PlatformError, match=r"dup\.json: clusters\[0\]: duplicate key 'name'"):
        load_platform(path)


def test_invalid_json_names_line_and_column(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"clusters": [\n  {"name": "c0",}\n]}')
    with pytest.raises(PlatformError, match=r"broken\.json:2:17: invalid JSON: Expecting property "
                       r"name enclosed in double quotes; fix the syntax there$"):
        load_platform(path)


def test_missing_file_suggests_a_close_name():
    with pytest.raises(PlatformError, match=r"tiny_4\.json: no such platform file; did you mean "
                       r"'tiny4\.json'"):
        load_platform(PLATFORMS / "tiny_4.json")


def test_messages_are_one_line():
    for path, value, _ in ERRORS:
        with pytest.raises(PlatformError) as info:
            platform_from_dict(_set(_doc(), path, value), source="x.json")
        assert "\n" not in str(info.value)


def test_load_and_export_large_is_fast():
    start = time.perf_counter()
    platform = load_platform(PLATFORMS / "large.json")
    xml = platform_to_xml(platform)
    elapsed = time.perf_counter() - start
    assert xml.count(b"<host ") == platform.nb_cores + 1
    assert elapsed < 1.0, f"load + export of large.json took {elapsed:.2f} s"


_NODE_TYPES = sorted(default_library().node_types)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.sampled_from(_NODE_TYPES), st.integers(1, 3)), min_size=1,
                 max_size=3),
        min_size=1,
        max_size=3,
    )
)
def test_any_composition_adds_up(clusters):
    doc = {"clusters": [
        {"name": f"k{i}", "network": "ethernet_10g",
         "nodes": [{"type": t, "count": n} for t, n in groups]}
        for i, groups in enumerate(clusters)
    ]}
    p = platform_from_dict(doc)
    lib = default_library()
    expected_cores = expected_gflops = expected_mb = 0.0
    for groups in clusters:
        for name, count in groups:
            node = lib.node_types[name]
            expected_mb += count * node.memory_gb * 1024
            for ptype, pcount in node.processors:
                proc = lib.processor_types[ptype]
                expected_cores += count * pcount * proc.cores
                expected_gflops += count * pcount * proc.cores * proc.core_gflops
    assert p.nb_cores == expected_cores
    assert math.isclose(p.total_gflops, expected_gflops)
    assert math.isclose(p.total_memory_mb, expected_mb)
    assert p.core_node == tuple(sorted(p.core_node))
    assert p.core_processor == tuple(sorted(p.core_processor))
