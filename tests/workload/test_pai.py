"""The PAI task table reader: one job per instance, GPU shares, submissions from the job table."""

from __future__ import annotations

import lzma
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_trace_samples import (PAI_EXPECTED, PAI_GROUPS, PAI_JOBS, PAI_SKIPPED,  # noqa: E402
                               PAI_TASKS, pai_text)

from hdrm.errors import SkippableLineError, WorkloadError  # noqa: E402
from hdrm.workload.job import AcceleratorDemand  # noqa: E402
from hdrm.workload.pai import read_pai  # noqa: E402


def _write(folder: Path, tasks: list[str], jobs: list[str] | None = PAI_JOBS) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / "pai_task_table.csv"
    path.write_text(pai_text(tasks), encoding="utf-8")
    if jobs is not None:
        (folder / "pai_job_table.csv").write_text(pai_text(jobs), encoding="utf-8")
    return path


def _got(work):
    return [(j.id, j.submit_s, j.run_time_s, j.accel.count if j.accel else 0,
             j.accel.milli if j.accel else 0, j.res, j.mem_mb) for j in work.jobs]


def test_instances_shares_and_submissions_from_the_job_table_by_hand(tmp_path):
    work = read_pai(_write(tmp_path, PAI_TASKS))
    assert _got(work) == PAI_EXPECTED
    assert work.skipped == PAI_SKIPPED
    assert work.header == {"format": "pai", "submit_from": str(tmp_path / "pai_job_table.csv"),
                           "models_from": None, "status": {"Terminated": 4, "Failed": 1},
                           "gpu_jobs": 4, "gpu_model_required": 0, "gpu_rounded_up": 1}
    assert work.jobs[0].cpu_milli == 4000 and work.jobs[0].accel.models == ()
    assert work.jobs[3].extra["pai"]["gpu_rounded_up"] is True
    assert work.jobs[3].extra["pai"]["gpu_type"] == "V100"  # where it ran: not a constraint


def test_without_a_job_table_tasks_arrive_at_their_launch(tmp_path):
    work = read_pai(_write(tmp_path, PAI_TASKS, jobs=None))
    assert work.header["submit_from"] == "task launch"
    # launches 1000, 1000, 1000, 2100, 2460 -> from 0
    assert [(j.id, j.submit_s) for j in work.jobs] == [
        ("j1/worker/0", 0.0), ("j1/worker/1", 0.0), ("j1/ps/0", 0.0),
        ("j2/tensorflow/0", 1100.0), ("j5/evaluator/0", 1460.0)]


def test_a_header_line_is_accepted_and_xz_is_read(tmp_path):
    header = ("job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,"
              "plan_gpu,gpu_type")
    assert _got(read_pai(_write(tmp_path, [header] + PAI_TASKS))) == PAI_EXPECTED
    xz = tmp_path / "x" / "pai_task_table.csv.xz"
    xz.parent.mkdir()
    xz.write_bytes(lzma.compress(pai_text(PAI_TASKS).encode()))
    assert len(read_pai(xz).jobs) == 5


def _error(tmp_path, tasks, jobs=PAI_JOBS) -> str:
    with pytest.raises(SkippableLineError) as info:
        read_pai(_write(tmp_path, tasks, jobs))
    return str(info.value)


def test_bad_rows_name_file_line_column_and_value(tmp_path):
    tasks = list(PAI_TASKS)
    tasks[2] = tasks[2].replace(",250.0,", ",lots,")
    assert "pai_task_table.csv:3: column 'plan_gpu': expected a number (value 'lots'); fix " \
           "the row" in _error(tmp_path, tasks)
    tasks = list(PAI_TASKS)
    tasks[1] = tasks[1].removesuffix(",")
    assert ":2: 9 cells, expected 10: job_name,task_name,inst_num,status,start_time,end_time," \
           "plan_cpu,plan_mem,plan_gpu,gpu_type (the PAI table's .header)" in \
        _error(tmp_path, tasks)
    tasks = PAI_TASKS + ["j9,worker,1.0,Terminated,3000.0,3100.0,100.0,1.0,100.0,T4"]
    assert ":7: column 'job_name': no such job in the job table (value 'j9')" in \
        _error(tmp_path, tasks)
    tasks = PAI_TASKS + [PAI_TASKS[1]]
    assert ":7: column 'task_name': job_name/task_name already at line 2 (value 'ps')" in \
        _error(tmp_path, tasks)


def test_times_out_of_order(tmp_path):
    tasks = list(PAI_TASKS)
    tasks[0] = tasks[0].replace("1000.0,1600.0", "1000.0,999.0")
    assert ":1: column 'end_time': ends before its start_time (1000.0) (value '999.0')" in \
        _error(tmp_path, tasks)
    tasks = list(PAI_TASKS)
    tasks[0] = tasks[0].replace("1000.0,1600.0", "800.0,1600.0")
    assert ":1: column 'start_time': launched before its job's submission (900 in the job " \
           "table) (value '800.0')" in _error(tmp_path, tasks)


def test_non_strict_counts_task_and_job_table_rows(tmp_path):
    tasks = PAI_TASKS + ["j1,ps,1.0,Terminated,1000.0,1600.0,600.0,24.0,,"]
    jobs = PAI_JOBS + ["j1,i1,u1,Terminated,900.0,1600.0"]
    work = read_pai(_write(tmp_path, tasks, jobs), strict=False)
    assert _got(work) == PAI_EXPECTED
    assert work.skipped == {**PAI_SKIPPED, "task: repeated": 1, "job table: job_name: "
                            "repeated": 1}
    with pytest.raises(SkippableLineError, match=r"pai_job_table.csv:6: column 'job_name': "
                                                 r"repeated \(value 'j1'\)"):
        read_pai(_write(tmp_path, tasks, jobs))


def test_a_tar_gz_as_published_is_refused_with_the_fix(tmp_path):
    import gzip

    tar = bytearray(1024)
    tar[257:262] = b"ustar"
    path = tmp_path / "pai_task_table.tar.gz"
    path.write_bytes(gzip.compress(bytes(tar)))
    with pytest.raises(WorkloadError, match=r"a tar archive, not the PAI task table .*extract "
                                            r"it \(tar -xf pai_task_table.tar.gz\)"):
        read_pai(path)


def test_gpu_model_requirements_from_the_group_tag_table_through_the_inst_id(tmp_path):
    path = _write(tmp_path, PAI_TASKS)
    (tmp_path / "pai_group_tag_table.csv").write_text(pai_text(PAI_GROUPS))
    work = read_pai(path)
    models = {j.id: j.accel.models for j in work.jobs if j.accel}
    assert models == {"j1/worker/0": (), "j1/worker/1": (), "j2/tensorflow/0": ("V100M32",),
                      "j5/evaluator/0": ("T4",)}
    assert work.jobs[3].accel == AcceleratorDemand(3, 1000, ("V100M32",))
    assert work.header["models_from"] == str(tmp_path / "pai_group_tag_table.csv")
    assert work.header["gpu_model_required"] == 2


def test_group_tag_table_errors(tmp_path):
    path = _write(tmp_path, PAI_TASKS)
    groups = tmp_path / "pai_group_tag_table.csv"
    groups.write_text(pai_text(PAI_GROUPS + ["i2,u1,P100,g9,"]))
    with pytest.raises(SkippableLineError, match=r"pai_group_tag_table.csv:5: column "
                                                 r"'gpu_type_spec': the inst_id already requires "
                                                 r"V100M32 \(value 'P100'\)"):
        read_pai(path)
    work = read_pai(path, strict=False)
    assert work.skipped == {**PAI_SKIPPED, "group table: gpu_type_spec: two for one inst_id": 1}
    alone = _write(tmp_path / "alone", PAI_TASKS, jobs=None)
    with pytest.raises(WorkloadError, match=r"group tag table is joined to the tasks through "
                                            r"the job table's inst_id; put pai_job_table.csv"):
        read_pai(alone, group_table=groups)
