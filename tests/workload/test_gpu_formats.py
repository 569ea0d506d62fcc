"""Philly, Helios and PAI traces recognised by content wherever GPU traces are taken, and each
sample replayed end to end on a GPU platform with classic placements, its schedule checked."""

from __future__ import annotations

import gzip
import math
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from gpu_builders import check_capacities, gpu_platform, replay  # noqa: E402
from gpu_trace_samples import (HELIOS_EXPECTED, PAI_EXPECTED, PAI_JOBS,  # noqa: E402
                               PAI_TASKS, PHILLY_EXPECTED, helios_text, pai_text, philly_text)

from hdrm.cli.main import main  # noqa: E402
from hdrm.errors import WorkloadError  # noqa: E402
from hdrm.sim.engine import REJECTED  # noqa: E402
from hdrm.sim.gpu_inputs import is_gpu_input, load_gpu_workload  # noqa: E402
from hdrm.workload.gpu_formats import read_gpu_trace, trace_kind  # noqa: E402

#: 64 cores and 8 V100M16; 16 cores and 4 T4 (the Helios job of 16 GPUs fits neither)
NODES = [(64, 524288, 8, "V100M16"), (16, 131072, 4, "T4")]
NODES_CSV = "sn,cpu_milli,memory_mib,gpu,model\nv,64000,524288,8,V100M16\nt,16000,131072,4,T4\n"


def _samples(folder: Path) -> dict[str, Path]:
    paths = {"philly": folder / "cluster_job_log", "helios": folder / "cluster_log.csv",
             "pai": folder / "pai_task_table.csv"}
    paths["philly"].write_text(philly_text())
    paths["helios"].write_text(helios_text())
    paths["pai"].write_text(pai_text(PAI_TASKS))
    (folder / "pai_job_table.csv").write_text(pai_text(PAI_JOBS))
    return paths


EXPECTED_IDS = {"philly": [e[0] for e in PHILLY_EXPECTED],
                "helios": [e[0] for e in HELIOS_EXPECTED], "pai": [e[0] for e in PAI_EXPECTED]}


def test_each_trace_is_recognised_by_its_content_plain_or_gzip(tmp_path):
    for kind, path in _samples(tmp_path).items():
        assert trace_kind(path) == kind
        packed = path.with_name(path.name + ".gz")
        packed.write_bytes(gzip.compress(path.read_bytes()))
        assert trace_kind(packed) == kind
        assert [j.id for j in read_gpu_trace(packed).jobs] == EXPECTED_IDS[kind]
    assert trace_kind(tmp_path / "pai_job_table.csv") == "pai_job"
    openb = tmp_path / "pods.csv"
    openb.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\nt1,1000,1024,1,500\n")
    assert trace_kind(openb) == "openb"
    assert trace_kind(tmp_path / "missing.csv") is None
    assert trace_kind(tmp_path) is None and not is_gpu_input(None, None)  # a folder, no path


def test_a_pai_job_table_as_the_workload_names_the_task_table(tmp_path):
    _samples(tmp_path)
    with pytest.raises(WorkloadError, match=r"pai_job_table.csv: a PAI job table .*; give the "
                                            r"task table, pai_task_table.csv"):
        read_gpu_trace(tmp_path / "pai_job_table.csv")


def test_gpu_inputs_take_them_where_openb_and_gavel_are_taken(tmp_path):
    paths = _samples(tmp_path)
    for kind, path in paths.items():
        assert is_gpu_input(None, str(path))  # Philly's log has no extension
        assert [j.id for j in load_gpu_workload(path).jobs] == EXPECTED_IDS[kind]
    swf = tmp_path / "t.swf"
    swf.write_text("; MaxProcs: 4\n1 0 0 10 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1\n")
    batsim = tmp_path / "w.json"
    batsim.write_text('{"nb_res": 1, "jobs": [], "profiles": {}}')
    assert not is_gpu_input(None, str(swf)) and not is_gpu_input(None, str(batsim))


def _check_schedule(nodes, jobs, result) -> None:
    """Each job ends once, never before it is submitted, after exactly its run time; what is
    placed fits every node's cores, memory and GPUs at all times."""
    assert sorted(o.job.idx for o in result.outcomes) == list(range(len(jobs)))
    placed = result.gpu.placements
    for o in result.outcomes:
        if o.state == REJECTED:
            assert o.job.idx not in placed
            continue
        p = placed[o.job.idx]
        assert o.job.submit_s <= o.start_s
        assert o.finish_s == pytest.approx(o.start_s + o.job.run_time_s)
        assert len(p.gpus) == (o.job.accel.count if o.job.accel else 0)
    check_capacities(nodes, placed)
    assert math.isfinite(result.energy_j) and result.energy_j > 0


@pytest.mark.parametrize("policy", ["fifo-first_fit", "fifo-best_fit", "sjf-load_balance"])
def test_each_sample_replays_on_a_gpu_platform_with_the_schedule_invariants(tmp_path, policy):
    platform = gpu_platform(NODES)
    for kind, path in _samples(tmp_path).items():
        jobs = load_gpu_workload(path).jobs
        result = replay(platform, jobs, policy)
        _check_schedule(NODES, jobs, result)
        rejected = [o.job.id for o in result.outcomes if o.state == REJECTED]
        assert rejected == (["7003"] if kind == "helios" else [])  # 16 GPUs: no node has them


def test_pai_shares_put_two_half_gpu_instances_on_one_gpu(tmp_path):
    jobs = load_gpu_workload(_samples(tmp_path)["pai"]).jobs
    result = replay(gpu_platform([(16, 131072, 1, "T4")]), jobs, "fifo-first_fit")
    placed = result.gpu.placements
    assert placed[0].gpus == placed[1].gpus == (0,) and placed[0].start_s == placed[1].start_s
    # j2 (3 GPUs) and j5 (2 GPUs) can never run on a 1-GPU node
    assert [o.job.id for o in result.outcomes if o.state == REJECTED] == \
        ["j2/tensorflow/0", "j5/evaluator/0"]


def test_hdrm_replay_runs_a_philly_log_and_names_a_bad_job_with_its_flag(tmp_path, capsys):
    paths = _samples(tmp_path)
    nodes = tmp_path / "nodes.csv"
    nodes.write_text(NODES_CSV)
    assert main(["replay", "--platform", str(nodes), "--workload", str(paths["philly"]),
                 "--outdir", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "skipped from the source    3" in out
    paths["philly"].write_text(philly_text().replace('"Failed"', '"Done"'))
    assert main(["replay", "--platform", str(nodes), "--workload", str(paths["philly"]),
                 "--outdir", str(tmp_path / "out2")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "column 'status'" in err and "'Done'" in err
    assert "rerun with --no-strict to skip bad jobs (counted)" in err


def test_the_gpu_environment_plays_each_sample_to_its_end(tmp_path):
    from hdrm.env.gpu_env import GpuSchedulingEnv
    from hdrm.env.scheduling_env import SchedulingEnv

    nodes = tmp_path / "nodes.csv"
    nodes.write_text(NODES_CSV)
    for kind, path in _samples(tmp_path).items():
        env = SchedulingEnv(platform_file=str(nodes), workload_file=str(path), observation="gpu")
        assert isinstance(env, GpuSchedulingEnv), kind
        _, info = env.reset(seed=0)
        done = False
        while not done:
            action = int(info["action_mask"].nonzero()[0][0])
            _, _, done, truncated, info = env.step(action)
            done = done or truncated
        assert sorted(o.job.id for o in env.sim.outcomes.values()) == sorted(EXPECTED_IDS[kind])


def test_hdrm_workload_names_each_gpu_trace_and_where_it_is_replayed(tmp_path, capsys):
    for kind, path in _samples(tmp_path).items():
        assert main(["workload", str(path)]) == 2
        err = capsys.readouterr().err
        assert f"{path}: hdrm workload reads SWF traces and Batsim JSON; " in err
        assert "is replayed with hdrm replay --platform NODES.csv --workload TRACE" in err
        assert {"philly": "Philly's job log", "helios": "a Helios job log",
                "pai": "a PAI task table"}[kind] in err
