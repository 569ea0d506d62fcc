"""Accelerators in the platform model: the type library, platform JSON, from-openb."""

from __future__ import annotations

import json

import pytest

from hdrm.cli.main import main
from hdrm.errors import PlatformError
from hdrm.platform.library import default_library
from hdrm.platform.loader import load_platform, platform_from_dict

GPU_NODE = {"processors": [{"type": "xeon_gold_6148", "count": 2}], "memory_gb": 192,
            "accelerators": [{"type": "V100M32", "count": 4}, {"type": "T4", "count": 1}]}


def _doc(**node_type):
    return {"name": "g", "node_types": {"gpu4": {**GPU_NODE, **node_type}},
            "clusters": [{"name": "c", "network": "ethernet_25g",
                          "nodes": [{"type": "dell_r640_gold6148", "count": 1},
                                    {"type": "gpu4", "count": 2}]}]}


def test_library_has_the_issue_models_with_their_datasheet_figures():
    types = default_library().accelerator_types
    assert {"K80", "P100", "T4", "V100M16", "V100M32", "A10", "G2", "G3"} <= set(types)
    t4 = types["T4"]
    assert (t4.memory_gb, t4.busy_w, t4.fp32_tflops, t4.milli_capacity) == (16, 70, 8.1, 1000)
    assert types["V100M32"].memory_gb == 32 and types["G2"].fp32_tflops == 0  # undisclosed


def test_devices_get_global_ids_node_by_node():
    platform = platform_from_dict(_doc())
    assert [n.accelerator_ids for n in platform.nodes] == [(), range(0, 5), range(5, 10)]
    assert [a.type.name for a in platform.accelerators[:5]] == ["V100M32"] * 4 + ["T4"]
    assert [a.node_id for a in platform.accelerators] == [1] * 5 + [2] * 5
    assert platform.nb_cores == 120  # the CPUs are as before


def test_cpu_only_platforms_have_no_accelerators(tmp_path):
    platform = load_platform("platforms/hetero.json")
    assert platform.accelerators == ()
    assert all(node.accelerator_ids == () for node in platform.nodes)


def test_unknown_accelerator_type_names_the_path_and_suggests():
    doc = _doc(accelerators=[{"type": "V100M23", "count": 1}])
    with pytest.raises(PlatformError, match=r"<dict>: node_types\.gpu4\.accelerators\[0\]\.type: "
                                            r"unknown accelerator type 'V100M23'; did you mean"):
        platform_from_dict(doc)


def test_bad_accelerator_field_is_one_line_with_the_path():
    doc = _doc()
    doc["accelerator_types"] = {"X1": {"memory_gb": -1, "idle_w": 1, "busy_w": 2,
                                       "price_usd_per_hour": 1}}
    with pytest.raises(PlatformError, match=r"accelerator_types\.X1\.memory_gb: .*-1"):
        platform_from_dict(doc)
    doc["accelerator_types"] = {"X1": {"memory_gb": 8, "idle_w": 1, "busy_w": 2,
                                       "price_usd_per_hour": 1}}
    doc["node_types"]["gpu4"]["accelerators"] = [{"type": "X1", "count": 2}]
    assert [a.type.name for a in platform_from_dict(doc).accelerators] == ["X1"] * 4


def test_from_openb_builds_the_published_gpu_counts(tmp_path, capsys):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\n"
                     "a,64000,262144,2,P100\nb,64000,262144,2,P100\nc,32000,131072,0,\n"
                     "d,96000,393216,8,G2\n")
    out = tmp_path / "gpu.json"
    assert main(["platform", "from-openb", str(nodes), "-o", str(out)]) == 0
    assert "4 nodes, 256 cores, 12 GPUs (8 G2, 4 P100)" in capsys.readouterr().out
    platform = load_platform(out)
    assert [len(n.accelerator_ids) for n in platform.nodes] == [2, 2, 0, 8]
    assert platform.nodes[3].memory_mb == 393216
    assert len(json.loads(out.read_text())["clusters"][0]["nodes"]) == 3  # a and b grouped
    assert main(["platform", str(out)]) == 0
    assert capsys.readouterr().out.endswith("accelerators:\n  12 GPUs (8 G2, 4 P100)\n")


def test_from_openb_unknown_model_is_one_line(tmp_path, capsys):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\na,64000,262144,2,H100X\n")
    assert main(["platform", "from-openb", str(nodes), "-o", str(tmp_path / "x.json")]) == 2
    assert "node 0 (a): unknown GPU model 'H100X'" in capsys.readouterr().err


def test_from_openb_into_a_missing_folder_is_one_line(tmp_path, capsys):
    # was a FileNotFoundError traceback
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\na,64000,262144,2,P100\n")
    out = tmp_path / "no" / "such" / "p.json"
    assert main(["platform", "from-openb", str(nodes), "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"hdrm platform: error: -o {out}: cannot write the platform JSON (No such file or "
        "directory); check that the folder exists and is writable\n")
