"""GPU traces as users bring them (found by ``benchmarks/gpu_corpus.py``): compressed openb and
Gavel files, openb's node YAML, pod lists without times. The rows are cut from the real files
(Alibaba cluster-trace-gpu-v2023 ``csv/`` and ``node_yaml/``, Gavel's ``msr_seed0.trace``)."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma

import pytest

from hdrm.errors import WorkloadError
from hdrm.sim.gpu_inputs import load_gpu_platform, load_gpu_workload
from hdrm.workload.gavel import read_gavel
from hdrm.workload.openb import read_openb_nodes, read_openb_pods

POD_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
              "creation_time,deletion_time,scheduled_time\n")
#: openb_pod_list_default.csv, lines 2, 3 and 63 (a task that never ran)
PODS = POD_HEADER + ("openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0\n"
                     "openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061\n"
                     "openb-pod-0061,11908,47104,1,1000,,BE,Pending,10001278,10001403,\n")
#: openb_pod_list_multigpu20.csv, lines 1 to 4: the resampled lists carry no times
MULTIGPU = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
            "openb-pod-0000,12000,16384,1,1000\n"
            "openb-pod-0001,6000,12288,1,460\n"
            "openb-pod-0002,12000,24576,1,1000\n")
#: openb_node_list_gpu_node.csv, lines 1 to 3
NODES = ("sn,cpu_milli,memory_mib,gpu,model\n"
         "openb-node-0000,64000,262144,2,P100\n"
         "openb-node-0001,64000,262144,2,P100\n")
#: node_yaml/openb_node_list_gpu_node.yaml, its first lines
NODE_YAML = ("apiVersion: v1\nkind: Node\nmetadata:\n  labels:\n"
             "    alibabacloud.com/gpu-card-model: P100\n  name: openb-node-0000\nstatus:\n"
             "  allocatable:\n    alibabacloud.com/gpu-count: '2'\n    cpu: 64000m\n")
#: msr_seed0.trace, its first line (the command shortened)
GAVEL = "Transformer (batch size 128)\tcd %s && python3 train.py\t-step\t1\t95121\t0.000000\t1\n"
THROUGHPUTS = {"v100": {"('Transformer (batch size 128)', 1)": {"null": 10.0}},
               "k80": {"('Transformer (batch size 128)', 1)": {"null": 2.0}}}

COMPRESSORS = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}


def _write(path, text: str, suffix: str = ""):
    data = text.encode()
    if suffix:
        path = path.with_name(f"{path.name}.{suffix}")
        data = COMPRESSORS[suffix](data)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_compressed_openb_lists_read_as_the_plain_ones(tmp_path, suffix):
    # a .csv.gz pod list was recognised as openb but read as bytes: "not UTF-8 text (byte 0x8b)"
    plain = read_openb_pods(_write(tmp_path / "pods.csv", PODS))
    packed = read_openb_pods(_write(tmp_path / "pods.csv", PODS, suffix))
    assert [(j.id, j.submit_s, j.run_time_s, j.accel) for j in packed.jobs] == \
        [(j.id, j.submit_s, j.run_time_s, j.accel) for j in plain.jobs]
    assert [j.run_time_s for j in packed.jobs] == [12537496.0, 12475899.0, 0.0]
    nodes, _ = read_openb_nodes(_write(tmp_path / "nodes.csv", NODES, suffix))
    assert [(n.name, n.cpu_milli, n.gpus, n.model) for n in nodes] == \
        [("openb-node-0000", 64000, 2, "P100"), ("openb-node-0001", 64000, 2, "P100")]


def test_a_compressed_pod_list_replays_from_its_name(tmp_path):
    work = load_gpu_workload(_write(tmp_path / "pods.csv", PODS, "gz"))
    assert [j.id for j in work.jobs] == ["openb-pod-0000", "openb-pod-0001", "openb-pod-0061"]


def test_a_gzip_gavel_trace_reads_as_the_plain_one(tmp_path):
    tput = tmp_path / "tput.json"
    tput.write_text(json.dumps(THROUGHPUTS))
    job = read_gavel(_write(tmp_path / "msr.trace", GAVEL, "gz"), tput).jobs[0]
    # 95121 steps at 10 (V100) and 2 (K80) steps per second
    assert job.extra["gavel"]["run_time_s"] == {"V100M16": 9512.1, "K80": 47560.5}


@pytest.mark.parametrize("name", ["nodes.yaml", "nodes.yml.gz", "nodes.csv"])
def test_openb_node_yaml_is_refused_naming_the_csv_lists(tmp_path, name):
    # it read as broken JSON ("invalid JSON: Expecting value; fix the syntax there") as a
    # platform, and as a CSV header 'apiVersion: v1' as a node list
    suffix = "gz" if name.endswith(".gz") else ""
    path = _write(tmp_path / name.removesuffix(".gz"), NODE_YAML, suffix)
    message = (r"nodes\.(yaml|yml\.gz|csv): a YAML file \(Kubernetes objects, as openb's "
               r"node_yaml/\); hdrm reads openb lists as CSV: give the release's "
               r"csv/openb_node_list_\*\.csv")
    with pytest.raises(WorkloadError, match=message):
        read_openb_nodes(path)
    with pytest.raises(WorkloadError, match=message):
        load_gpu_platform(path)


def test_a_pod_list_without_times_is_refused_for_a_replay_but_placed(tmp_path):
    # every task was rejected ("never ran in the trace"), exit 0 and nothing replayed
    path = _write(tmp_path / "multigpu.csv", MULTIGPU)
    with pytest.raises(WorkloadError, match=r"multigpu\.csv: no task of the pod list has a run "
                       r"time \(it has no column scheduled_time or deletion_time\), so a replay "
                       r"over time would reject all; .* hdrm fragmentation"):
        load_gpu_workload(path)
    assert len(read_openb_pods(path).jobs) == 3  # the placement-only protocol takes them all


def test_a_pod_list_whose_tasks_never_ran_is_refused_too(tmp_path):
    path = _write(tmp_path / "pending.csv", POD_HEADER + PODS.splitlines(True)[3])
    with pytest.raises(WorkloadError, match=r"pending\.csv: no task of the pod list has a run "
                       r"time \(none has both a scheduled_time and a deletion_time\)"):
        load_gpu_workload(path)
    assert len(load_gpu_workload(_write(tmp_path / "pods.csv", PODS)).jobs) == 3


def test_a_repeated_node_name_is_refused_by_every_entry_point(tmp_path, capsys):
    # hdrm replay refused it (the platform's check) but hdrm fragmentation placed on both nodes
    from hdrm.cli.main import main

    nodes = _write(tmp_path / "nodes.csv", NODES + "openb-node-0000,32000,262144,0,\n")
    with pytest.raises(WorkloadError, match=r"nodes\.csv:4: column 'sn': already the sn of line "
                       r"2 \(value 'openb-node-0000'\); fix the row"):
        read_openb_nodes(nodes)
    kept, skipped = read_openb_nodes(nodes, strict=False)
    assert [n.name for n in kept] == ["openb-node-0000", "openb-node-0001"]
    assert skipped == {"sn: repeated": 1}
    pods = _write(tmp_path / "pods.csv", PODS)
    assert main(["fragmentation", "--nodes", str(nodes), "--pods", str(pods), "--policy", "fgd",
                 "--seeds", "1", "--outdir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nodes.csv:4: column 'sn': already the sn of line 2" in err
    with pytest.raises(WorkloadError, match=r"nodes\.csv:2: column 'sn': a node needs a name"):
        read_openb_nodes(_write(tmp_path / "nodes.csv", NODES.replace("openb-node-0000", " ")))
