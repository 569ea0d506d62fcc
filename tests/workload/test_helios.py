"""The Helios cluster_log.csv reader: hand-checked jobs, left-out counts, one-line errors."""

from __future__ import annotations

import bz2
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_trace_samples import (HELIOS_EXPECTED, HELIOS_HEADER, HELIOS_ROWS,  # noqa: E402
                               HELIOS_SKIPPED, helios_text)

from hdrm.errors import SkippableLineError, WorkloadError  # noqa: E402
from hdrm.workload.helios import read_helios  # noqa: E402


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cluster_log.csv"
    path.write_text(text, encoding="utf-8")
    return path


def _with(index: int, row: str) -> str:
    rows = list(HELIOS_ROWS)
    rows[index] = row
    return helios_text(rows)


def test_jobs_by_hand_with_cpu_jobs_multi_node_jobs_and_left_out_rows(tmp_path):
    work = read_helios(_write(tmp_path, helios_text()))
    got = [(j.id, j.submit_s, j.run_time_s, j.accel.count if j.accel else 0, j.res)
           for j in work.jobs]
    assert got == HELIOS_EXPECTED
    assert work.skipped == HELIOS_SKIPPED
    assert work.header == {"format": "helios", "gpu_jobs": 3, "multi_node": 1,
                           "state": {"COMPLETED": 1, "FAILED": 1, "CANCELLED": 1, "TIMEOUT": 1}}
    first = work.jobs[0]
    assert first.cpu_milli == 8000 and first.accel.milli == 1000 and first.accel.models == ()
    assert work.jobs[2].extra["node_num"] == 2 and work.jobs[2].extra["helios"]["vc"] == "vcX"
    assert work.jobs[1].accel is None  # gpu_num 0: a CPU job


def test_bzip2_file_gives_the_same_jobs(tmp_path):
    path = tmp_path / "cluster_log.csv.bz2"
    path.write_bytes(bz2.compress(helios_text().encode()))
    assert [j.id for j in read_helios(path).jobs] == [e[0] for e in HELIOS_EXPECTED]


def _error(tmp_path, text) -> str:
    with pytest.raises(SkippableLineError) as info:
        read_helios(_write(tmp_path, text))
    return str(info.value)


def test_a_missing_column_names_it_and_the_header_to_write(tmp_path):
    text = HELIOS_HEADER.replace("gpu_num,", "") + "\n"
    with pytest.raises(WorkloadError, match=r"cluster_log.csv:1: missing column\(s\) gpu_num in "
                                            r"the header .*; a Helios cluster_log.csv starts "
                                            r"with job_id,user,vc,gpu_num,cpu_num"):
        read_helios(_write(tmp_path, text))


def test_bad_values_name_file_line_column_and_value(tmp_path):
    row = HELIOS_ROWS[1].replace(",0,4,1,FAILED", ",two,4,1,FAILED")
    assert "cluster_log.csv:3: column 'gpu_num': expected a number (value 'two'); fix the row" \
        in _error(tmp_path, _with(1, row))
    row = HELIOS_ROWS[1].replace("FAILED", "DONE")
    assert "column 'state': expected one of COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL, " \
           "SUSPENDED (value 'DONE')" in _error(tmp_path, _with(1, row))
    row = HELIOS_ROWS[0].replace(",2,8,1,", ",1.5,8,1,")
    assert ":2: column 'gpu_num': expected a whole number (value '1.5')" in \
        _error(tmp_path, _with(0, row))
    assert ":3: the row's cells do not match the header's columns" in \
        _error(tmp_path, _with(1, HELIOS_ROWS[1] + ",extra"))


def test_times_out_of_order_and_a_wrong_duration(tmp_path):
    row = HELIOS_ROWS[1].replace("2020-07-01 10:02:40,100", "2020-07-01 10:00:40,100")
    assert ":3: column 'end_time': ends before its start_time (2020-07-01 10:01:00) " \
           "(value '2020-07-01 10:00:40')" in _error(tmp_path, _with(1, row))
    row = HELIOS_ROWS[0].replace("10:00:00,2020-07-01 10:00:05", "10:00:06,2020-07-01 10:00:05")
    assert ":2: column 'start_time': starts before its submit_time (2020-07-01 10:00:06)" in \
        _error(tmp_path, _with(0, row))
    row = HELIOS_ROWS[0].replace(",3600,", ",3000,")
    assert ":2: column 'duration': expected end_time - start_time = 3600 s (value '3000')" in \
        _error(tmp_path, _with(0, row))


def test_non_strict_skips_and_counts_each_bad_row(tmp_path):
    rows = list(HELIOS_ROWS) + [HELIOS_ROWS[0], HELIOS_ROWS[1].replace("FAILED", "DONE")]
    work = read_helios(_write(tmp_path, helios_text(rows)), strict=False)
    assert [j.id for j in work.jobs] == [e[0] for e in HELIOS_EXPECTED]
    assert work.skipped == {**HELIOS_SKIPPED, "job_id: repeated": 1, "state: expected one of "
                            "COMPLETED": 1}
    with pytest.raises(SkippableLineError, match=r":8: column 'job_id': already the job_id of "
                                                 r"line 2 \(value '7001'\)"):
        read_helios(_write(tmp_path, helios_text(rows)))


def test_not_utf8_and_binary_data(tmp_path):
    path = tmp_path / "cluster_log.csv"
    path.write_bytes(helios_text().replace("uB", "\u00fcB").encode("latin-1"))
    with pytest.raises(WorkloadError, match=r"cluster_log.csv:3: not UTF-8 text \(byte 0xfc\)"):
        read_helios(path)
    path.write_bytes(b"PK\x03\x04" + b"\x00" * 40)
    with pytest.raises(WorkloadError, match=r"a zip archive, not the text of a Helios job log"):
        read_helios(path)
