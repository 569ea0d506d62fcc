"""Node names: an openb node list keeps its names in the platform and the outputs; a platform
file may name its nodes (unique names, one per node), else ``<cluster>-n<i>``."""

from __future__ import annotations

import pytest

from hdrm.cli.main import main
from hdrm.errors import PlatformError
from hdrm.platform.loader import load_platform, platform_from_dict
from hdrm.platform.openb import platform_json_from_openb
from hdrm.workload.openb import OpenbNode

HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"


def _node(name: str, gpus: int = 1) -> OpenbNode:
    return OpenbNode(name, 8000, 16384, gpus, "T4" if gpus else "")


def test_openb_nodes_keep_their_names_in_file_order_across_groups(tmp_path, capsys):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text(HEADER + "openb-node-0007,8000,16384,1,T4\nopenb-node-0003,8000,16384,1,T4\n"
                     "cpu-7,4000,8192,0,\nopenb-node-0100,8000,16384,1,T4\n")
    out = tmp_path / "p.json"
    assert main(["platform", "from-openb", str(nodes), "-o", str(out)]) == 0
    platform = load_platform(out)
    assert [n.name for n in platform.nodes] == ["openb-node-0007", "openb-node-0003", "cpu-7",
                                                "openb-node-0100"]
    assert [len(n.accelerator_ids) for n in platform.nodes] == [1, 1, 0, 1]


def test_a_replay_names_the_trace_nodes_in_its_outputs(tmp_path, capsys):
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text(HEADER + "openb-node-0042,8000,16384,1,T4\nopenb-node-0007,8000,16384,1,T4\n")
    pods.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                    "creation_time,deletion_time,scheduled_time\n"
                    "a,1000,1024,1,1000,,LS,Running,0,100,0\n"
                    "b,1000,1024,1,1000,,LS,Running,0,50,0\n")
    out = tmp_path / "run"
    assert main(["replay", "--platform", str(nodes), "--workload", str(pods), "--policy",
                 "fifo-first_fit", "--outdir", str(out)]) == 0
    rows = (out / "out_jobs.csv").read_text().splitlines()
    node_column = rows[0].split(",").index("node")
    assert [r.split(",")[node_column] for r in rows[1:]] == ["openb-node-0042", "openb-node-0007"]


def test_a_repeated_openb_node_name_is_one_line_naming_both_rows():
    with pytest.raises(PlatformError, match=r"^nodes.csv: node 2 \(x\): node name 'x' \(column sn\)"
                       r" is also node 0's; give each node a unique name$"):
        platform_json_from_openb([_node("x"), _node("y"), _node("x", 0)], "p", "nodes.csv")


def test_an_openb_node_name_that_is_not_plain_is_refused():
    with pytest.raises(PlatformError, match=r"node 1 \(a b\): node name \(column sn\): expected "
                       r"a name of letters.*got 'a b'; rename the node$"):
        platform_json_from_openb([_node("a"), _node("a b")], "p", "nodes.csv")


def _doc(*groups: dict, cluster: str = "c") -> dict:
    return {"name": "p", "clusters": [{"name": cluster, "network": "ethernet_25g",
                                       "nodes": list(groups)}]}


NODE = "dell_r640_gold6148"


def test_a_platform_file_may_name_its_nodes_and_others_keep_the_generated_names():
    doc = _doc({"type": NODE, "count": 2, "names": ["alpha", "beta"]}, {"type": NODE, "count": 1})
    assert [n.name for n in platform_from_dict(doc).nodes] == ["alpha", "beta", "c-n2"]
    assert [n.name for n in platform_from_dict(_doc({"type": NODE, "count": 2})).nodes] == [
        "c-n0", "c-n1"]


@pytest.mark.parametrize("groups, message", [
    (({"type": NODE, "count": 2, "names": ["a", "a"]},),
     r"clusters\[0\].nodes\[0\].names\[1\]: node name 'a' is used twice \(also "
     r"clusters\[0\].nodes\[0\].names\[0\]\); give each node a unique name$"),
    (({"type": NODE, "count": 1}, {"type": NODE, "count": 1, "names": ["c-n0"]}),
     r"clusters\[0\].nodes\[1\].names\[0\]: node name 'c-n0' is used twice \(also "
     r"clusters\[0\].nodes\[0\] \(node c-n0\)\)"),
    (({"type": NODE, "count": 2, "names": ["a"]},),
     r"clusters\[0\].nodes\[0\].names: 1 names for count 2; give one name per node, or none$"),
    (({"type": NODE, "count": 1, "names": ["-a"]},),
     r"clusters\[0\].nodes\[0\].names: \[0\]: expected a name of letters"),
])
def test_bad_node_names_in_a_platform_file_are_one_line_with_the_path(groups, message):
    with pytest.raises(PlatformError, match=r"^p.json: " + message):
        platform_from_dict(_doc(*groups), source="p.json")
    assert "\n" not in str(pytest.raises(PlatformError, platform_from_dict, _doc(*groups)).value)


def test_names_are_unique_across_clusters():
    doc = _doc({"type": NODE, "count": 1, "names": ["x"]})
    doc["clusters"].append({"name": "d", "network": "ethernet_25g",
                            "nodes": [{"type": NODE, "count": 1, "names": ["x"]}]})
    with pytest.raises(PlatformError, match=r"clusters\[1\].nodes\[0\].names\[0\]: node name 'x'"
                       r" is used twice \(also clusters\[0\].nodes\[0\].names\[0\]\)"):
        platform_from_dict(doc)


def test_nodes_of_other_memory_get_their_own_type_and_keep_their_memory():
    # the type's name held the memory in whole GiB: a 1,024 MiB node after a 1,025 MiB one (and a
    # 1,536 MiB one) became a node of 1,025 MiB, so a task of 1,025 MiB was placed on it
    nodes = [OpenbNode("a", 3000, 1025, 1, "V100M16"), OpenbNode("b", 1000, 1024, 0, ""),
             OpenbNode("c", 3000, 1024, 1, "V100M16"), OpenbNode("d", 3000, 1536, 1, "V100M16"),
             OpenbNode("e", 3000, 2048, 1, "V100M16")]
    doc = platform_json_from_openb(nodes, "mem")
    assert sorted(doc["node_types"]) == [
        "openb_c1_m1g", "openb_c3_m1025m_1xV100M16", "openb_c3_m1536m_1xV100M16",
        "openb_c3_m1g_1xV100M16", "openb_c3_m2g_1xV100M16"]
    platform = platform_from_dict(doc, source="<mem>")
    assert [n.memory_mb for n in platform.nodes] == [1025, 1024, 1024, 1536, 2048]
