"""The openb reader: every column, GPU-model alternatives, run times, never-ran tasks, errors."""

from __future__ import annotations

import math

import pytest

from hdrm.errors import WorkloadError
from hdrm.workload.job import AcceleratorDemand
from hdrm.workload.openb import read_openb_nodes, read_openb_pods

HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
          "deletion_time,scheduled_time\n")
ROWS = [
    "p0,12000,16384,1,1000,,LS,Running,100,1100,150\n",
    "p1,6000,12288,1,460,V100M16|V100M32|V100M32,BE,Succeeded,200,900,300\n",
    "p2,3152,5600,2,1000,T4,Burstable,Pending,250,400,\n",
    "p3,500,1024,0,0,,Guaranteed,Failed,300,310,300\n",
]


def _write(tmp_path, text, name="pods.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_every_column_and_the_demand_vector(tmp_path):
    work = read_openb_pods(_write(tmp_path, HEADER + "".join(ROWS)))
    p0, p1, p2, p3 = work.jobs
    assert [j.id for j in work.jobs] == ["p0", "p1", "p2", "p3"]
    assert [j.submit_s for j in work.jobs] == [0.0, 100.0, 150.0, 200.0]
    assert (p0.cpu_milli, p0.res, p0.mem_mb, p0.run_time_s) == (12000, 12, 16384 / 12, 950.0)
    assert p1.accel == AcceleratorDemand(1, 460, ("V100M16", "V100M32"))  # repeats dropped
    assert p1.accel.is_shared and p1.accel.allows("V100M32") and not p1.accel.allows("T4")
    assert p2.accel == AcceleratorDemand(2, 1000, ("T4",)) and p2.accel.total_milli == 2000
    assert p3.accel is None and p3.res == 1 and p3.run_time_s == 10.0
    assert [j.extra["qos"] for j in work.jobs] == ["LS", "BE", "Burstable", "Guaranteed"]
    assert p1.extra["openb"]["pod_phase"] == "Succeeded" and p1.run_time_s == 600.0
    assert not p2.extra["ran"] and p2.run_time_s == 0.0  # never scheduled: kept, counted
    assert work.header["never_ran"] == 1 and work.header["gpu_tasks"] == 3
    assert math.isinf(p0.walltime_s)


def test_five_column_lists_are_read_as_never_ran(tmp_path):
    work = read_openb_pods(_write(tmp_path, "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                                            "a,1000,10,1,500\nb,2000,10,0,0\n"))
    assert [j.accel for j in work.jobs] == [AcceleratorDemand(1, 500), None]
    assert work.header["never_ran"] == 2


@pytest.mark.parametrize("row, column, reason", [
    ("p9,12x,1,1,1000,,LS,Running,1,2,1\n", "cpu_milli", "expected an integer, got '12x'"),
    ("p9,1,1,2,500,,LS,Running,1,2,1\n", "gpu_milli", "a share below 1000 is for one GPU"),
    ("p9,1,1,1,1500,,LS,Running,1,2,1\n", "gpu_milli", "expected an integer 0..1000, got 1500"),
    ("p9,1,1,1,0,,LS,Running,1,2,1\n", "gpu_milli", "a task asking 1 GPU.s. needs a share of 1..1000"),
    ("p9,1,1,1,100,,XX,Running,1,2,1\n", "qos", "expected one of LS, BE"),
    ("p9,1,1,1,100,,LS,Running,5,2,3\n", "deletion_time", "deleted (2) before scheduled (3)"),
])
def test_a_malformed_row_names_file_line_and_column(tmp_path, row, column, reason):
    path = _write(tmp_path, HEADER + ROWS[0] + row)
    with pytest.raises(WorkloadError, match=rf"pods\.csv:3: column '{column}': "
                                            rf"{reason.replace('(', '.').replace(')', '.')}"):
        read_openb_pods(path)
    work = read_openb_pods(path, strict=False)
    assert len(work) == 1 and sum(work.skipped.values()) == 1


def test_missing_column_and_nodes(tmp_path):
    with pytest.raises(WorkloadError, match=r"x\.csv:1: missing column\(s\) num_gpu, gpu_milli"):
        read_openb_pods(_write(tmp_path, "name,cpu_milli,memory_mib\na,1,1\n", "x.csv"))
    nodes, _ = read_openb_nodes(_write(tmp_path, "sn,cpu_milli,memory_mib,gpu,model\n"
                                                 "n0,64000,262144,2,P100\nn1,32000,1024,0,\n"))
    assert [(n.gpus, n.model) for n in nodes] == [(2, "P100"), (0, "")]
    with pytest.raises(WorkloadError, match=r"n\.csv:2: column 'model': a node with 2 GPUs"):
        read_openb_nodes(_write(tmp_path, "sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,2,\n",
                                "n.csv"))


def test_shared_traces_read_whole(tmp_path):
    work = read_openb_pods("/work/shared/traces/gpu/openb_pod_list_default.csv")
    assert len(work) == 8152 and not work.skipped
    assert work.header["never_ran"] == 897  # the 897 Pending tasks
    assert sum(j.accel.total_milli for j in work.jobs if j.accel) == 6_086_800


def test_byte_order_mark_crlf_and_blanks_after_commas_are_read_like_plain(tmp_path):
    # spreadsheet programs save "CSV UTF-8" with a byte order mark: it hid the column 'name'
    plain = read_openb_pods(_write(tmp_path, HEADER + "".join(ROWS)))
    text = "\ufeff" + (HEADER + "".join(ROWS)).replace(",", ", ").replace("\n", "\r\n")
    path = tmp_path / "excel.csv"
    path.write_bytes(text.encode("utf-8"))
    work = read_openb_pods(path)
    assert [(j.id, j.cpu_milli, j.accel, j.submit_s, j.run_time_s) for j in work.jobs] == [
        (j.id, j.cpu_milli, j.accel, j.submit_s, j.run_time_s) for j in plain.jobs]
    nodes = tmp_path / "nodes.csv"
    nodes.write_bytes("\ufeffsn,cpu_milli,memory_mib,gpu,model\nn0,64000,1024,2,P100\n".encode())
    assert [n.name for n in read_openb_nodes(nodes)[0]] == ["n0"]


def test_text_that_is_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes((HEADER + ROWS[0] + "p\xe9,1,1,1,100,,LS,Running,1,2,1\n").encode("latin-1"))
    with pytest.raises(WorkloadError, match=r"^.*latin1\.csv:3: not UTF-8 text \(byte 0xe9\); "
                                            r"save the file as UTF-8$"):
        read_openb_pods(path)


@pytest.mark.parametrize("row, message, key", [
    ("p9,1,1,1,100,,LS,Running,1,2,1,7\n",
     "12 cells, the header has 11: unexpected cell '7'", "cells beyond the header"),
    ("p9,1,1,1,100,,LS\n",
     "7 cells, the header has 11: the row ends before column 'pod_phase'", "cells missing"),
    ("p0,1,1,1,100,,LS,Running,1,2,1\n",
     "column 'name': already the name of line 2 (value 'p0')", "name: repeated"),
])
def test_rows_that_do_not_fit_the_header_or_repeat_a_name(tmp_path, row, message, key):
    # were read silently: a cell beyond the header dropped, a short row's times taken as
    # "never ran", a second task with the same id in out_jobs.csv
    path = _write(tmp_path, HEADER + ROWS[0] + row + ROWS[1])
    with pytest.raises(WorkloadError) as info:
        read_openb_pods(path)
    assert str(info.value) == (f"{path}:3: {message}; fix the row, or read with strict=False "
                               "to skip bad rows (counted)")
    work = read_openb_pods(path, strict=False)
    assert [j.id for j in work.jobs] == ["p0", "p1"] and work.skipped == {key: 1}
    assert work.jobs[0].run_time_s == 950.0  # the first row named p0 is the one kept


def test_empty_cells_after_the_header_are_no_data(tmp_path):
    work = read_openb_pods(_write(tmp_path, HEADER + ROWS[0].replace("\n", ",,\n")))
    assert [j.id for j in work.jobs] == ["p0"] and not work.skipped
