"""GPU model names wherever users write them resolve through the one alias table
(:func:`hdrm.platform.accelerators.resolve_model`): platform JSON node types (they failed on an
nvidia-smi or Kubernetes spelling), node lists, Kubernetes labels written whole, price tables;
an unknown name is one line naming the file, the key and the value, with the nearest names."""

from __future__ import annotations

import json

import pytest

from hdrm.errors import ConfigError, PlatformError
from hdrm.platform.accelerators import alias_key, resolve_model, unknown_model
from hdrm.platform.library import default_library
from hdrm.platform.loader import load_platform, platform_from_dict
from hdrm.platform.openb import platform_json_from_openb
from hdrm.policies.gpu_price import library_prices
from hdrm.workload.openb import OpenbNode

TYPES = default_library().accelerator_types


def _doc(*devices: tuple[str, int], **extra) -> dict:
    node = {"processors": [{"type": "xeon_gold_6148", "count": 2}], "memory_gb": 192,
            "accelerators": [{"type": name, "count": n} for name, n in devices]}
    return {"name": "g", "node_types": {"gpu": node}, **extra,
            "clusters": [{"name": "c", "network": "ethernet_25g",
                          "nodes": [{"type": "gpu", "count": 2}]}]}


@pytest.mark.parametrize("spelling, key", [
    ("NVIDIA A100-SXM4-80GB", "A100M80"),                       # nvidia-smi
    ("NVIDIA-H100-80GB-HBM3", "H100"),                          # nvidia.com/gpu.product value
    ("nvidia.com/gpu.product=NVIDIA-A100-SXM4-40GB", "A100"),   # the label written whole
    ("nvidia.com/gpu.product = Tesla-T4", "T4"),
    ("amd.com/gpu.product-name=AMD_Instinct_MI300X", "MI300X"),
    ("AMD Instinct MI250X", "MI250X"), ("AMD_Instinct_MI210", "MI210"),
    ("NVIDIA H200", "H200"), ("NVIDIA B200", "B200"), ("NVIDIA GH200 480GB", "GH200"),
    ("h100pcie", "H100PCIe"),
])
def test_a_platform_json_node_type_takes_every_spelling(spelling, key):
    platform = platform_from_dict(_doc((spelling, 2), ("T4", 1)))
    assert [a.type.name for a in platform.accelerators] == [key, key, "T4"] * 2
    assert platform.nodes[0].type.accelerators == ((key, 2), ("T4", 1))  # keys downstream
    assert platform.accelerators[0].type == TYPES[key]


def test_the_platform_file_from_disk_resolves_and_prints_the_keys(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(_doc(("NVIDIA A100-SXM4-80GB", 4))))
    assert {a.type.memory_gb for a in load_platform(path).accelerators} == {80}


def test_an_unknown_name_in_a_platform_file_names_file_key_value_and_the_nearest(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(_doc(("T4", 1), ("NVIDIA A100-SXM4-80G", 4))))
    with pytest.raises(PlatformError) as err:
        load_platform(path)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(
        f"{path}: node_types.gpu.accelerators[1].type: unknown accelerator type "
        "'NVIDIA A100-SXM4-80G'; did you mean 'A100M80' (nvidia-a100-sxm4-80gb) or 'A100' ")
    assert message.endswith("and the spellings of hdrm.platform.accelerators.ALIASES (or "
                            "define it in the file's accelerator_types)")


def test_a_bare_v100_suggests_the_three_v100_boards_and_guesses_none():
    assert resolve_model("V100", TYPES) is None
    message = unknown_model("V100", TYPES)
    hint = message.split("did you mean ")[1].split("?")[0]
    assert [part.split()[0] for part in hint.split(" or ")] == [
        "'V100M16'", "'V100M32'", "'V100PCIe'"]
    assert unknown_model("Q100", TYPES).startswith("unknown GPU model 'Q100'; did you mean ")
    assert "did you mean" not in unknown_model("zzzz", TYPES)


def test_a_type_the_file_defines_under_a_spelling_wins_over_the_table():
    own = {"NVIDIA-A100-SXM4-80GB": {"memory_gb": 80, "idle_w": 10, "busy_w": 300,
                                     "price_usd_per_hour": 0.5}}
    platform = platform_from_dict(_doc(("NVIDIA A100-SXM4-80GB", 1), accelerator_types=own))
    assert {(a.type.name, a.type.price_usd_per_hour) for a in platform.accelerators} == {
        ("NVIDIA-A100-SXM4-80GB", 0.5)}
    assert resolve_model("NVIDIA A100-SXM4-80GB", TYPES) == "A100M80"  # without it: the table


def test_a_label_of_another_key_is_not_read_as_a_model():
    assert alias_key("nvidia.com/gpu.product=NVIDIA-L4") == "nvidia-l4"
    assert alias_key("nvidia.com/gpu.family=ampere") == "nvidia.com/gpu.family=ampere"
    assert resolve_model("nvidia.com/gpu.memory=81920", TYPES) is None


def test_a_node_list_takes_the_label_and_suggests_the_nearest():
    node = OpenbNode("n0", 64000, 262144, 8, "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3")
    doc = platform_json_from_openb([node], "p", "nodes.csv")
    assert list(doc["node_types"]) == ["openb_c64_m256g_8xH100"]
    with pytest.raises(PlatformError) as err:
        platform_json_from_openb([OpenbNode("n0", 64000, 262144, 8, "MI250")], "p", "nodes.csv")
    assert str(err.value).startswith("nodes.csv: node 0 (n0): unknown GPU model 'MI250' "
                                     "(column model); did you mean 'MI250X' ")


def test_library_prices_read_labels_and_name_the_unknown():
    label = "nvidia.com/gpu.product=NVIDIA-H200"
    assert library_prices([label, "MI210"]) == {label: 3.5, "MI210": 1.0}
    with pytest.raises(ConfigError, match=r"GPU model\(s\) MI250 not in the type library"):
        library_prices(["MI250"])
