"""``--accelerator-types`` and today's GPU models on ``hdrm replay`` and ``hdrm platform``."""

from __future__ import annotations

import json

import pytest

from hdrm.cli.main import main
from hdrm.platform.loader import load_platform

# the node list of the report (engineer B, session 28): A100 and H100 nodes stopped the replay
NODES = ("sn,cpu_milli,memory_mib,gpu,model\n"
         "n0,64000,262144,8,A100\nn1,64000,262144,8,H100\nn2,64000,262144,2,V100M16\n")
# two whole GPUs for 100 and 50 s, two 0.5 shares for 40 s each: 100 + 50 + 20 + 20 = 190 GPU-s
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "p0,1000,1024,1,1000,,LS,Running,0,100,0\n"
        "p1,1000,1024,1,1000,,LS,Running,10,60,10\n"
        "p2,1000,1024,1,500,,LS,Running,20,60,20\n"
        "p3,1000,1024,1,500,,LS,Running,20,60,20\n")
Q100 = {"accelerator_types": {"Q100": {"memory_gb": 180, "idle_w": 100, "busy_w": 1000,
                                       "price_usd_per_hour": 36.0}}}


@pytest.fixture
def lists(tmp_path):
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text(NODES)
    pods.write_text(PODS)
    return nodes, pods


def _replay(nodes, pods, out, *extra):
    return main(["replay", "--platform", str(nodes), "--workload", str(pods), "--policy",
                 "sjf-first_fit", "--outdir", str(out), "--quiet", *extra])


def test_the_a100_h100_node_list_replays(lists, tmp_path):
    nodes, pods = lists
    assert _replay(nodes, pods, tmp_path / "o") == 0
    summary = json.loads((tmp_path / "o" / "out_gpu_summary.json").read_text())
    # first_fit puts every task on n0's A100s: 190 GPU-s x 2.934 USD per GPU-hour
    assert summary["cost_usd"] == pytest.approx(190 * 2.934 / 3600)
    assert summary["cost_usd_by_model"] == {"A100": pytest.approx(190 * 2.934 / 3600),
                                            "H100": 0.0, "V100M16": 0.0}


def test_a_user_file_adds_a_model_to_the_replay(lists, tmp_path, capsys):
    nodes, pods = lists
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nb0,64000,262144,8,Q100\n")
    assert _replay(nodes, pods, tmp_path / "o") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown GPU model 'Q100'" in err
    assert "--accelerator-types FILE.json" in err
    types = tmp_path / "q100.json"
    types.write_text(json.dumps(Q100))
    assert _replay(nodes, pods, tmp_path / "o", "--accelerator-types", str(types)) == 0
    summary = json.loads((tmp_path / "o" / "out_gpu_summary.json").read_text())
    assert summary["cost_usd_by_model"] == {"Q100": pytest.approx(190 * 36.0 / 3600)}


def test_a_bad_user_file_is_one_line_naming_file_key_and_value(lists, tmp_path, capsys):
    nodes, pods = lists
    types = tmp_path / "t.json"
    types.write_text(json.dumps({"accelerator_types": {"Q100": {
        **Q100["accelerator_types"]["Q100"], "busy_w": 0}}}))
    assert _replay(nodes, pods, tmp_path / "o", "--accelerator-types", str(types)) == 2
    assert capsys.readouterr().err == (
        f"hdrm replay: error: {types}: accelerator_types.Q100.busy_w: expected a number > 0, "
        "got 0\n")


def test_the_option_is_refused_on_a_cpu_replay(tmp_path, capsys):
    types = tmp_path / "t.json"
    types.write_text(json.dumps(Q100))
    status = main(["replay", "--platform", "platforms/hetero.json", "--workload",
                   "workloads/SDSC-SP2-1998-4.2-cln_first500.swf", "--outdir",
                   str(tmp_path / "o"), "--accelerator-types", str(types), "--quiet"])
    assert status == 2
    err = capsys.readouterr().err
    assert err.startswith("hdrm replay: error: --accelerator-types: for a GPU replay only")
    assert err.count("\n") == 1


def test_from_openb_writes_the_user_model_into_the_platform(tmp_path, capsys):
    nodes, types = tmp_path / "nodes.csv", tmp_path / "t.json"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\n"
                     "b0,64000,262144,4,Q100\nh0,64000,262144,8,NVIDIA H100 80GB HBM3\n")
    types.write_text(json.dumps(Q100))
    out = tmp_path / "p.json"
    assert main(["platform", "from-openb", str(nodes), "-o", str(out),
                 "--accelerator-types", str(types)]) == 0
    assert "2 nodes, 128 cores, 12 GPUs (8 H100, 4 Q100)" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert list(doc["accelerator_types"]) == ["Q100"]  # the shipped H100 is not copied
    platform = load_platform(out)  # without the user file: the platform stands alone
    assert [a.type.busy_w for a in platform.accelerators[:4]] == [1000] * 4
    assert main(["platform", str(out), "--accelerator-types", str(types)]) == 2
    assert "--accelerator-types go with 'from-openb' only" in capsys.readouterr().err


def test_a_pod_list_that_spells_the_model_as_the_node_list_runs_on_it(lists, tmp_path):
    nodes, pods = lists
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\n"
                     "n0,64000,262144,8,NVIDIA A100-SXM4-80GB\nn1,64000,262144,8,T4\n")
    spelled = PODS.replace(",,LS,Running,0,100,0", ",NVIDIA A100-SXM4-80GB,LS,Running,0,100,0")
    pods.write_text(spelled.replace(",,LS,Running,10,60,10", ",V100,LS,Running,10,60,10"))
    assert _replay(nodes, pods, tmp_path / "o") == 0
    summary = json.loads((tmp_path / "o" / "out_gpu_summary.json").read_text())
    # p0 asks the A100 as the lists spell it: it runs there (100 GPU-s at 3.93 USD/h); p1 asks
    # a V100, which the platform lacks: rejected; p2 and p3 (any model) go to n0 by first fit
    assert summary["rejected"] == {"asks GPU model(s) V100, the platform has A100M80, T4": 1}
    assert summary["cost_usd_by_model"] == {"A100M80": pytest.approx(140 * 3.93 / 3600),
                                            "T4": 0.0}
