"""openb lists as users bring them: empty files, and GPU counts written as shares."""

from __future__ import annotations

import pytest

from hdrm.errors import WorkloadError
from hdrm.workload.openb import read_openb_nodes, read_openb_pods

PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n")
NODES = "sn,cpu_milli,memory_mib,gpu,model\n"


@pytest.mark.parametrize("read, header", [(read_openb_pods, "name,cpu_milli,memory_mib,num_gpu"),
                                          (read_openb_nodes, "sn,cpu_milli,memory_mib,gpu")])
def test_an_empty_file_is_named_as_such(tmp_path, read, header):
    path = tmp_path / "list.csv"
    path.write_text("")
    with pytest.raises(WorkloadError, match=(r"list\.csv: empty file; an openb file starts with "
                                             rf"the header line {header}")):
        read(path)


def test_half_a_gpu_written_as_num_gpu_names_the_share_column(tmp_path):
    path = tmp_path / "pods.csv"
    path.write_text(PODS + "p0,1000,1024,1,1000,,LS,Running,0,10,0\n"
                           "p1,1000,1024,0.5,1000,,LS,Running,0,10,0\n")
    with pytest.raises(WorkloadError, match=(
            r"pods\.csv:3: column 'num_gpu': expected an integer, got '0\.5': a share of one GPU "
            r"is num_gpu 1 with gpu_milli 1\.\.999 \(500: half a GPU\) \(value '0\.5'\); fix the "
            r"row")):
        read_openb_pods(path)
    workload = read_openb_pods(path, strict=False)
    assert [job.id for job in workload.jobs] == ["p0"]
    assert workload.skipped == {"num_gpu: expected an integer": 1}


def test_a_node_with_half_a_gpu_is_refused_naming_whole_gpus(tmp_path):
    path = tmp_path / "nodes.csv"
    path.write_text(NODES + "n0,64000,262144,0.5,T4\n")
    with pytest.raises(WorkloadError, match=r"nodes\.csv:2: column 'gpu': expected an integer, "
                                            r"got '0\.5': a node has whole GPUs"):
        read_openb_nodes(path)


def test_a_word_in_a_gpu_count_gets_no_share_hint(tmp_path):
    path = tmp_path / "nodes.csv"
    path.write_text(NODES + "n0,64000,262144,two,T4\n")
    with pytest.raises(WorkloadError, match=r"column 'gpu': expected an integer, got 'two' "
                                            r"\(value 'two'\); fix the row"):
        read_openb_nodes(path)
