"""SWF reader and field 11 (status): whole jobs, and the partial-execution lines of SWF 2.2.

The standard: status 1 completed, 0 failed, 5 cancelled, -1 unknown; a job that was checkpointed
or swapped out has one line for the whole job followed by lines with the same job number and
status 2 (a partial execution that will be continued), 3 (the last one; the job completed) or 4
(the last one; the job failed).
"""

from __future__ import annotations

import pytest

from hdrm.workload.swf import SkippableLineError, read_swf


def test_failed_cancelled_and_unknown_status_jobs_are_replayed(write_swf_text, swf_line):
    path = write_swf_text([swf_line(f1=1, f11=1), swf_line(f1=2, f11=0, f4=30),
                           swf_line(f1=3, f11=5, f4=7), swf_line(f1=4, f11=-1)])
    workload = read_swf(path)
    assert [(job.id, job.run_time_s) for job in workload.jobs] == [
        (1, 100.0), (2, 30.0), (3, 7.0), (4, 100.0)]
    assert workload.skipped == {}


def test_partial_execution_lines_leave_the_job_to_its_summary_line(write_swf_text, swf_line):
    path = write_swf_text([
        swf_line(f1=5, f2=10, f4=100, f11=1),
        swf_line(f1=5, f2=10, f3=5, f4=40, f11=2),
        swf_line(f1=5, f2=10, f3=80, f4=60, f11=3),
        swf_line(f1=6, f2=20, f4=50, f11=0),
        swf_line(f1=6, f2=20, f4=50, f11=4),
    ])
    workload = read_swf(path)
    assert [(job.id, job.submit_s, job.run_time_s) for job in workload.jobs] == [
        (5, 10.0, 100.0), (6, 20.0, 50.0)]
    assert workload.skipped == {"partial execution line": 3}


def test_summary_line_may_follow_its_partial_executions(write_swf_text, swf_line):
    path = write_swf_text([swf_line(f1=5, f4=40, f11=2), swf_line(f1=5, f4=60, f11=3),
                           swf_line(f1=5, f4=100, f11=1)])
    workload = read_swf(path)
    assert [(job.id, job.run_time_s) for job in workload.jobs] == [(5, 100.0)]


def test_partial_execution_without_its_summary_line_is_refused(write_swf_text, swf_line):
    path = write_swf_text([swf_line(f1=1), swf_line(f1=2, f11=2), swf_line(f1=2, f11=3)])
    with pytest.raises(SkippableLineError, match=(
            r"trace\.swf:2: field 11 \(status\) is 2, a partial execution of job 2, and no "
            r"line of job 2 has another status \(its summary line\); add the job's summary "
            r"line before its partial executions, or read with strict=False to skip partial "
            r"executions without their job's line \(counted\)$")):
        read_swf(path)


def test_partial_execution_without_its_summary_line_is_counted(write_swf_text, swf_line):
    path = write_swf_text([swf_line(f1=1), swf_line(f1=2, f11=2), swf_line(f1=2, f11=3),
                           swf_line(f1=3, f11=1), swf_line(f1=3, f11=4)])
    workload = read_swf(path, strict=False)
    assert [job.id for job in workload.jobs] == [1, 3]
    assert workload.skipped == {"partial execution without its job's line": 2,
                                "partial execution line": 1}


def test_two_summary_lines_of_one_job_are_still_a_duplicate(write_swf_text, swf_line):
    path = write_swf_text([swf_line(f1=5, f11=1), swf_line(f1=5, f11=2),
                           swf_line(f1=5, f11=0)])
    with pytest.raises(SkippableLineError, match=r"trace\.swf:3: field 1 \(job number\) is 5, "
                                                 r"already the number of line 1"):
        read_swf(path)
