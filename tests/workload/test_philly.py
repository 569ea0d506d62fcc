"""The Philly job log reader: hand-checked jobs, the left-out counts, and one-line errors."""

from __future__ import annotations

import copy
import gzip
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_trace_samples import (PHILLY_EXPECTED, PHILLY_JOBS, PHILLY_SKIPPED,  # noqa: E402
                               philly_text)

from hdrm.errors import SkippableLineError, WorkloadError  # noqa: E402
from hdrm.workload.philly import read_philly  # noqa: E402


def _write(tmp_path: Path, text: str, name: str = "cluster_job_log") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _jobs_with(change) -> list:
    jobs = copy.deepcopy(PHILLY_JOBS)
    change(jobs)
    return jobs


def test_jobs_gpus_run_times_and_left_out_counts_by_hand(tmp_path):
    work = read_philly(_write(tmp_path, philly_text()))
    got = [(j.id, j.submit_s, j.run_time_s, j.accel.count if j.accel else 0) for j in work.jobs]
    assert got == PHILLY_EXPECTED
    assert [j.idx for j in work.jobs] == [0, 1, 2]
    assert work.skipped == PHILLY_SKIPPED
    assert work.header == {"format": "philly", "status": {"Pass": 1, "Failed": 1, "Killed": 1},
                           "multi_attempt": 1, "gpu_jobs": 2}
    first = work.jobs[0]
    assert first.accel.milli == 1000 and first.accel.models == () and first.res == 1
    assert first.extra["philly"]["gpus_per_attempt"] == [4, 4]
    assert first.extra["philly"]["status"] == "Pass" and first.extra["philly"]["vc"] == "vc1"
    assert work.jobs[2].accel is None  # no GPU ids: a CPU-only job


def test_gzip_file_gives_the_same_jobs(tmp_path):
    path = tmp_path / "cluster_job_log.gz"
    path.write_bytes(gzip.compress(philly_text().encode()))
    assert [(j.id, j.run_time_s) for j in read_philly(path).jobs] == \
        [(e[0], e[2]) for e in PHILLY_EXPECTED]


def _error(tmp_path, jobs) -> str:
    with pytest.raises(SkippableLineError) as info:
        read_philly(_write(tmp_path, philly_text(jobs)))
    return str(info.value)


def _line_of(text: str, jobid: str) -> int:
    """The line where the job object holding ``jobid`` starts (its '{')."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if f'"{jobid}"' in line)
    return next(i for i in range(at, -1, -1) if lines[i].strip() == "{") + 1


def test_a_bad_status_names_file_line_key_and_value(tmp_path):
    jobs = _jobs_with(lambda j: j[1].update(status="Done"))
    message = _error(tmp_path, jobs)
    line = _line_of(philly_text(jobs), "application_b")
    assert f"cluster_job_log:{line}: column 'status': expected one of Pass, Killed, Failed " \
           "(value 'Done'); fix the job, or read with strict=False to skip bad jobs (counted)" \
        in message


def test_times_out_of_order_are_refused_or_counted(tmp_path):
    def swap(jobs):
        jobs[1]["attempts"][0]["end_time"] = "2017-11-02 09:05:59"  # before its 09:06:00 start
    jobs = _jobs_with(swap)
    message = _error(tmp_path, jobs)
    assert "column 'attempts[0].end_time': the attempt ends before it starts " \
           "(2017-11-02 09:06:00) (value '2017-11-02 09:05:59')" in message
    work = read_philly(_write(tmp_path, philly_text(jobs)), strict=False)
    assert work.skipped == {**PHILLY_SKIPPED, "times out of order": 1}
    assert [j.id for j in work.jobs] == ["application_a", "application_f"]


def test_a_start_before_the_submission_is_refused(tmp_path):
    jobs = _jobs_with(lambda j: j[0].update(submitted_time="2017-11-02 09:00:31"))
    assert "column 'attempts[0].start_time': the first attempt starts before the job's " \
           "submitted_time (2017-11-02 09:00:31)" in _error(tmp_path, jobs)


def test_bad_date_missing_attempts_and_repeated_jobid(tmp_path):
    jobs = _jobs_with(lambda j: j[0].update(submitted_time="02/11/2017 09:00"))
    assert "column 'submitted_time': expected a date YYYY-MM-DD HH:MM:SS " \
           "(value '02/11/2017 09:00')" in _error(tmp_path, jobs)
    jobs = _jobs_with(lambda j: j[1].pop("attempts"))
    assert "column 'attempts': expected a list of attempts (value None)" in \
        _error(tmp_path, jobs)
    jobs = _jobs_with(lambda j: j[1].update(jobid="application_a"))
    line = _line_of(philly_text(jobs), "Failed")
    assert f":{line}: column 'jobid': already the jobid of the job at line 2 " \
           "(value 'application_a')" in _error(tmp_path, jobs)


def test_broken_json_names_line_and_column(tmp_path):
    path = _write(tmp_path, '[\n {"jobid": "x",\n  "status" "Pass"}\n]')
    with pytest.raises(WorkloadError, match=r"cluster_job_log:3:12: not valid JSON \(Expecting "
                                            r"':' delimiter\); fix the file"):
        read_philly(path)
    with pytest.raises(WorkloadError, match=r":1: expected a JSON array of jobs"):
        read_philly(_write(tmp_path, '{"jobid": "x"}'))
    with pytest.raises(WorkloadError, match=r"the array is not closed"):
        read_philly(_write(tmp_path, philly_text()[:-1]))


def test_not_utf8_tar_archive_and_nothing_to_replay(tmp_path):
    raw = philly_text().replace("u1", "\u00e91").encode("latin-1")
    path = tmp_path / "cluster_job_log"
    path.write_bytes(raw)
    with pytest.raises(WorkloadError, match=r"cluster_job_log:\d+: not UTF-8 text \(byte 0xe9\)"
                                            r"; save the file as UTF-8"):
        read_philly(path)
    tar = bytearray(1024)
    tar[257:262] = b"ustar"
    path.write_bytes(gzip.compress(bytes(tar)))
    with pytest.raises(WorkloadError, match=r"a tar archive, not the Philly job log .*; extract "
                                            r"it \(tar -xf cluster_job_log\)"):
        read_philly(path)
    with pytest.raises(WorkloadError, match=r"no job with a run time in the Philly job log "
                                            r"\(left out: \{'no attempt': 1\}\)"):
        read_philly(_write(tmp_path, philly_text([PHILLY_JOBS[2]])))
