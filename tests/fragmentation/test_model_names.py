"""The placement-only protocol keeps both lists' names as written, but a pod list that names a
node list's model otherwise (its library key, or another spelling of it) runs on those nodes:
such tasks failed everywhere."""

from __future__ import annotations

from hdrm.fragmentation.experiment import load_inputs, run_seeds

# 13 nodes of 8 GPUs: 104 GPUs, so a one-GPU task is under 1% of them
NODES = "sn,cpu_milli,memory_mib,gpu,model\n" + "".join(
    f"n{i},64000,262144,8,NVIDIA A100-SXM4-80GB\n" for i in range(13))
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "p0,1000,1024,1,1000,A100M80,LS,Running,0,10,0\n"
        "p1,1000,1024,1,1000,nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB|V100,LS,Running,0,10,0\n")


def _lists(tmp_path):
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text(NODES)
    pods.write_text(PODS)
    return nodes, pods


def test_task_models_take_the_node_lists_spelling_and_the_specs_stay_as_written(tmp_path):
    inputs = load_inputs(*_lists(tmp_path))
    assert [shape.models for shape in inputs.shapes] == [
        ("NVIDIA A100-SXM4-80GB",), ("NVIDIA A100-SXM4-80GB", "V100")]
    assert inputs.specs == ["A100M80", "nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB|V100"]


def test_the_tasks_are_placed_until_the_gpus_run_out(tmp_path):
    run, = run_seeds(*_lists(tmp_path), "first_fit", [42])
    # 1.3 x 104 GPUs of one-GPU tasks arrive: the first 104 fit, the rest fail
    assert (run.nodes[:104] >= 0).all() and run.failed == len(run.nodes) - 104
