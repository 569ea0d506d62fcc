"""The accelerator type library's current GPUs, its alias table and user type files."""

from __future__ import annotations

import json

import pytest

from hdrm.errors import ConfigError, PlatformError
from hdrm.platform.accelerators import (
    ALIASES, alias_key, load_accelerator_types, resolve_model)
from hdrm.platform.library import DATA_DIR, default_library
from hdrm.platform.loader import platform_from_dict
from hdrm.platform.openb import library_with_accelerator_types, platform_json_from_openb
from hdrm.policies.gpu_price import library_prices
from hdrm.workload.openb import OpenbNode

#: Datasheet figures (memory GB, board power W, FP32 TFLOP/s) of the models added in sessions 28-29,
#: typed from the vendors' datasheets independently of the JSON file.
DATASHEETS = {
    "A100": (40, 400, 19.5), "A100M80": (80, 400, 19.5), "H100": (80, 700, 67),
    "H100PCIe": (80, 350, 51), "L4": (24, 72, 30.3), "L40S": (48, 350, 91.6),
    "A30": (24, 165, 10.3), "A40": (48, 300, 37.4), "V100PCIe": (16, 250, 14),
    "MI300X": (192, 750, 163.4),
    # session 29: per device as a scheduler sees it (an MI250X module is two 64 GB devices of
    # 47.9 / 2 TFLOP/s and 560 / 2 W); the GH200's power is its module's maximum
    "H200": (141, 700, 67), "B200": (180, 1000, 80), "GH200": (96, 1000, 67),
    "MI250X": (128 / 2, 560 / 2, 47.9 / 2), "MI210": (64, 300, 22.6),
}

Q100 = {"memory_gb": 180, "idle_w": 100, "busy_w": 1000, "price_usd_per_hour": 6.0}


def _raw_types() -> dict:
    return json.loads((DATA_DIR / "accelerators.json").read_text())["accelerator_types"]


def _node(model: str, gpus: int = 8, name: str = "n0") -> OpenbNode:
    return OpenbNode(name, 64000, 262144, gpus, model)


def test_current_models_have_their_datasheet_figures():
    types = default_library().accelerator_types
    for name, (memory_gb, busy_w, tflops) in DATASHEETS.items():
        t = types[name]
        assert (t.memory_gb, t.busy_w, t.fp32_tflops) == (memory_gb, busy_w, tflops), name


def test_every_library_entry_is_sane_and_sourced():
    raw = _raw_types()
    assert set(raw) == set(default_library().accelerator_types)
    for name, t in default_library().accelerator_types.items():
        assert t.memory_gb > 0 and t.price_usd_per_hour > 0, name
        assert 0 < t.idle_w < t.busy_w, name
        assert raw[name]["sources"].strip(), name
        if "pricing" not in raw[name]["sources"].lower() and name not in ("G1", "G2", "G3"):
            # no price list named: the price must be stated as an assumption in the notes
            assert "assumption: price" in raw[name].get("notes", ""), name


def test_alias_table_points_at_library_keys_in_normal_form():
    types = default_library().accelerator_types
    for spelling, key in ALIASES.items():
        assert key in types, spelling
        assert alias_key(spelling) == spelling, spelling
        assert spelling not in {alias_key(k) for k in types} or alias_key(key) == spelling


@pytest.mark.parametrize("name, key", [
    ("A100", "A100"), ("a100", "A100"), ("NVIDIA A100-SXM4-40GB", "A100"),
    ("NVIDIA A100-SXM4-80GB", "A100M80"), ("NVIDIA-A100-SXM4-80GB", "A100M80"),
    ("NVIDIA H100 80GB HBM3", "H100"), ("NVIDIA H100 PCIe", "H100PCIe"),
    ("Tesla V100-PCIE-16GB", "V100PCIe"), ("Tesla V100-SXM2-32GB", "V100M32"),
    ("NVIDIA L40S", "L40S"), ("nvidia_l4", "L4"), ("AMD Instinct MI300X", "MI300X"),
    ("V100", None), ("A100 PCIe", None), ("Q100", None), ("", None),
])
def test_resolve_model_uses_the_table_and_guesses_nothing(name, key):
    assert resolve_model(name, default_library().accelerator_types) == key


def test_the_repro_node_list_builds_a100_and_h100_nodes():
    nodes = [_node("A100"), _node("H100", name="n1"), _node("V100M16", 2, "n2")]
    doc = platform_json_from_openb(nodes, "nodes")
    platform = platform_from_dict(doc)
    assert [a.type.name for a in platform.accelerators] == ["A100"] * 8 + ["H100"] * 8 + [
        "V100M16"] * 2
    assert "accelerator_types" not in doc  # shipped models only: nothing of its own


def test_an_alias_becomes_the_library_key_in_the_platform():
    doc = platform_json_from_openb([_node("NVIDIA A100-SXM4-80GB")], "p")
    assert list(doc["node_types"]) == ["openb_c64_m256g_8xA100M80"]
    platform = platform_from_dict(doc)
    assert {a.type.name for a in platform.accelerators} == {"A100M80"}
    assert platform.accelerators[0].type.memory_gb == 80


def test_unknown_model_is_one_line_naming_the_option():
    with pytest.raises(PlatformError) as err:
        platform_json_from_openb([_node("Q100")], "p", "nodes.csv")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("nodes.csv: node 0 (n0): unknown GPU model 'Q100' (column model)")
    assert "--accelerator-types FILE.json" in message and "ALIASES" in message


def test_a_user_file_adds_a_model_that_the_document_carries(tmp_path):
    path = tmp_path / "extra.json"
    path.write_text(json.dumps({"accelerator_types": {"Q100": Q100}}))
    library = library_with_accelerator_types(path)
    doc = platform_json_from_openb([_node("q100", 4)], "p", library=library)
    assert doc["accelerator_types"]["Q100"]["memory_gb"] == 180
    platform = platform_from_dict(json.loads(json.dumps(doc)))  # stands alone, as from-openb
    assert [a.type.price_usd_per_hour for a in platform.accelerators] == [6.0] * 4
    assert "Q100" not in default_library().accelerator_types  # the shipped library is unchanged


def test_a_user_file_replaces_a_library_model(tmp_path):
    path = tmp_path / "extra.json"
    path.write_text(json.dumps({"accelerator_types": {
        "A100": {**Q100, "memory_gb": 40, "price_usd_per_hour": 1.25}}}))
    doc = platform_json_from_openb([_node("A100", 2)],
                                   "p", library=library_with_accelerator_types(path))
    platform = platform_from_dict(doc)
    assert {a.type.price_usd_per_hour for a in platform.accelerators} == {1.25}


@pytest.mark.parametrize("content, pattern", [
    ({"accelerator_types": {"Q100": {**Q100, "memory_gb": -1}}},
     r"x\.json: accelerator_types\.Q100\.memory_gb: expected a number > 0, got -1$"),
    ({"accelerator_types": {"Q100": {**Q100, "colour": "red"}}},
     r"x\.json: accelerator_types\.Q100\.colour: unknown key; valid keys: busy_w, "),
    ({"accelerator_types": {"Q100": {"memory_gb": 1}}},
     r"x\.json: accelerator_types\.Q100\.idle_w: missing required key \(a number >= 0\)"),
    ({"accelerator_types": {"bad name": Q100}}, r"bad type name 'bad name'"),
    ({"types": {}}, r"x\.json: "),
    ("{not json", r"x\.json"),
])
def test_bad_user_files_are_one_line(tmp_path, content, pattern):
    path = tmp_path / "x.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(PlatformError, match=pattern) as err:
        load_accelerator_types(path)
    assert "\n" not in str(err.value)


def test_a_missing_user_file_is_one_line(tmp_path):
    with pytest.raises(PlatformError, match=r"no such accelerator types file"):
        load_accelerator_types(tmp_path / "none.json")


def test_price_aware_prices_aliases_and_refuses_unknown_models_in_one_line():
    prices = library_prices(["NVIDIA A100-SXM4-80GB", "T4"])
    assert prices == {"NVIDIA A100-SXM4-80GB": 3.93, "T4": 0.35}
    with pytest.raises(ConfigError, match=r"price_aware: GPU model\(s\) V100 not in the type "):
        library_prices(["V100"])
