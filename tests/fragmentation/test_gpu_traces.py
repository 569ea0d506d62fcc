"""The placement-only protocol on the other GPU traces: a Philly job log (a JSON array) as the
tasks, read as ``hdrm replay`` reads it; a PAI or Helios job's model constraint as its type."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hdrm.cli.main import main
from hdrm.fragmentation.experiment import load_inputs, written_spec
from hdrm.fragmentation.protocol import JumpedOver, allocation_at, arrival_order
from hdrm.policies.gpu_state import TaskShape
from hdrm.workload.job import AcceleratorDemand, Job

#: Three jobs of a Philly-format job log (hyeonss0417/blox-simul-knee-slo, cluster_job_log,
#: application_000000, _000002 and _000011), their extra keys dropped: 1, 4 and 2 GPUs.
PHILLY = [
    {"status": "Pass", "vc": "TXT_2_IMG", "jobid": "application_000000", "user": "G0000",
     "submitted_time": "2024-11-15 16:57:50",
     "attempts": [{"start_time": "2024-11-15 16:57:55", "end_time": "2024-11-15 16:58:27",
                   "detail": [{"ip": "m1", "gpus": ["gpu0"]}]}]},
    {"status": "Pass", "vc": "TXT_2_IMG", "jobid": "application_000002", "user": "G0001",
     "submitted_time": "2024-11-15 18:17:06",
     "attempts": [{"start_time": "2024-11-15 18:17:11", "end_time": "2024-11-15 18:17:47",
                   "detail": [{"ip": "m3", "gpus": ["gpu0", "gpu1", "gpu2", "gpu3"]}]}]},
    {"status": "Pass", "vc": "TXT_2_IMG", "jobid": "application_000011", "user": "G0002",
     "submitted_time": "2024-11-15 18:36:50",
     "attempts": [{"start_time": "2024-11-15 18:36:55", "end_time": "2024-11-15 18:37:27",
                   "detail": [{"ip": "m12", "gpus": ["gpu0", "gpu1"]}]}]},
]
NODES = "sn,cpu_milli,memory_mib,gpu,model\na,8000,65536,4,T4\nb,8000,65536,3,T4\n"


def _inputs(tmp_path):
    nodes, log = tmp_path / "nodes.csv", tmp_path / "cluster_job_log"
    nodes.write_text(NODES)
    log.write_text(json.dumps(PHILLY, indent=2))
    return nodes, log


def test_a_philly_job_log_gives_the_tasks(tmp_path):
    # it was read as an openb pod list: "missing column(s) name, ... in the header '['"
    inputs = load_inputs(*_inputs(tmp_path))
    assert inputs.names == ["application_000000", "application_000002", "application_000011"]
    # one core each (Philly names no CPU), whole GPUs, any model
    assert [(s.cpu_milli, s.gpus, s.milli, s.models) for s in inputs.shapes] == \
        [(1000, 1, 1000, ()), (1000, 4, 1000, ()), (1000, 2, 1000, ())]
    assert inputs.specs == ["", "", ""]


def test_the_command_places_a_philly_job_log(tmp_path, capsys):
    nodes, log = _inputs(tmp_path)
    out = tmp_path / "out"
    # 7 GPUs asked of 7: the list as it is reaches 100% at its last arrival
    assert main(["fragmentation", "--nodes", str(nodes), "--pods", str(log), "--policy",
                 "first_fit", "--seeds", "1", "--ties", "first", "--outdir", str(out),
                 "--workload-tuning-ratio", "0"]) == 0, capsys.readouterr().err
    gpus = [1, 4, 2]
    order = arrival_order(load_inputs(nodes, log).shapes, [j["jobid"] for j in PHILLY], 7000,
                          0, np.random.default_rng(1))
    free, placed = [4, 3], 0  # first_fit by hand: the first node (a, then b) with the GPUs free
    for task in order:
        node = next((n for n in (0, 1) if free[n] >= gpus[task]), None)
        if node is not None:
            free[node] -= gpus[task]
            placed += gpus[task]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["arrivals"]["1"] == 3
    assert summary["unallocated_gpus_pct"]["per_seed"]["1"] == round(100 - placed / 7 * 100, 2)


def test_a_curve_that_jumps_over_100_percent_says_so():
    # it said "never reaches 100% (last 116.7%)" of a curve that passed it
    with pytest.raises(JumpedOver, match=r"^the arrived workload jumps over 100% \(from 50\.0% "
                       r"to 116\.7% in one arrival\)$"):
        allocation_at(np.array([50.0, 116.7]), np.array([50.0, 100.0]), 100)
    with pytest.raises(ValueError, match=r"never reaches 100% \(last 87\.5%\)"):
        allocation_at(np.array([50.0, 87.5]), np.array([50.0, 87.5]), 100)


def test_a_model_constraint_without_an_openb_row_is_the_jobs_models():
    job = Job(idx=0, id="j1/worker/0", submit_s=0.0, res=4, walltime_s=1.0, run_time_s=1.0,
              accel=AcceleratorDemand(1, 500, ("T4", "V100M32")))
    assert written_spec(job) == "T4|V100M32"  # was "": any model, one type with the others
    assert TaskShape.of_job(job).models == ("T4", "V100M32")


def test_a_workload_without_gpu_tasks_is_one_line_not_an_endless_tuning(tmp_path):
    # the tuning appended copies of GPU-less tasks until the GPU requests reached 130% of the
    # cluster's: never (hdrm fragmentation grew to 3 GB in 10 minutes on 1,088 CPU-only tasks
    # of openb_pod_list_default.csv)
    from hdrm.errors import ConfigError

    nodes, pods = tmp_path / "nodes.csv", tmp_path / "cpu.csv"
    nodes.write_text(NODES)
    pods.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"  # default list's, cut
                    "openb-pod-0005,20000,65536,0,0\nopenb-pod-0016,32000,65536,0,0\n")
    with pytest.raises(ConfigError, match=r"cpu\.csv: none of its 2 tasks asks a GPU; the "
                       r"protocol measures the GPUs a workload leaves unallocated"):
        load_inputs(nodes, pods)
    shapes = [TaskShape(20000, 65536), TaskShape(32000, 65536)]
    with pytest.raises(ValueError, match="no task asks a GPU"):
        arrival_order(shapes, ["a", "b"], 7000, 1.3, np.random.default_rng(1))
    assert arrival_order(shapes, ["a", "b"], 7000, 0, np.random.default_rng(1)).tolist() in (
        [0, 1], [1, 0])  # the list as it is: nothing to tune
