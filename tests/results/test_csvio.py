"""out_jobs.csv and out_schedule.csv: byte-identical round trips of real Batsim 4.2.1 files,
Batsim's layout for rejected jobs and metadata, and errors that name the file and line."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from hdrm.errors import ConfigError
from hdrm.results.csvio import (
    BATSIM_SCHEDULE_COLUMNS,
    HDRM_SCHEDULE_COLUMNS,
    JOBS_COLUMNS,
    read_jobs_csv,
    read_schedule_csv,
    write_jobs_csv,
    write_schedule_csv,
)
from hdrm.results.records import REJECTED, JobResult

from .golden import GOLDEN, GOLDEN_RUNS, needs_golden, run_id

HEADER = ",".join(JOBS_COLUMNS)


@needs_golden
@pytest.mark.parametrize("run_dir", GOLDEN_RUNS, ids=run_id)
def test_jobs_round_trip_is_byte_identical(run_dir: Path, tmp_path: Path):
    original = run_dir / "out_jobs.csv"
    results = read_jobs_csv(original)
    assert len(results) == len(original.read_text().splitlines()) - 1
    copy = write_jobs_csv(results, tmp_path / "out_jobs.csv")
    assert copy.read_bytes() == original.read_bytes()


@needs_golden
@pytest.mark.parametrize("run_dir", GOLDEN_RUNS, ids=run_id)
def test_schedule_round_trip_is_byte_identical(run_dir: Path, tmp_path: Path):
    original = run_dir / "out_schedule.csv"
    copy = write_schedule_csv(read_schedule_csv(original), tmp_path / "out_schedule.csv")
    assert copy.read_bytes() == original.read_bytes()


@needs_golden
def test_reader_types_the_golden_columns():
    jobs = read_jobs_csv(GOLDEN / "pstate_slowdown/pstateDemo/out_jobs.csv")
    assert [j.job_id for j in jobs] == ["1", "0", "2", "3"]
    last = jobs[3]
    assert last.final_state == "COMPLETED_WALLTIME_REACHED" and last.success == 0
    assert (last.starting_time, last.execution_time, last.consumed_energy) == (21.0, 5.0, 500.0)
    assert last.allocated_resources == "0" and last.metadata == ""
    schedule = read_schedule_csv(GOLDEN / "pstate_slowdown/pstateDemo/out_schedule.csv")
    assert schedule["batsim_version"] == "4.2.1"
    assert schedule["nb_jobs_killed"] == 1 and isinstance(schedule["nb_jobs_killed"], int)
    assert schedule["consumed_joules"] == 10400.0


def test_rejected_job_and_metadata_are_written_as_batsim_does(tmp_path: Path):
    rejected = JobResult("w", profile="p", submission_time=7.0, requested_number_of_resources=8,
                         requested_time=-1.0, success=0, final_state=REJECTED,
                         consumed_energy=None, metadata="user=bob")
    ran = JobResult("r", profile="p", submission_time=0.5, starting_time=1.0, execution_time=2.0,
                    allocated_resources="0-1 4", metadata='{"user": "a", "tags": [1, 2]}')
    path = write_jobs_csv([ran, rejected], tmp_path / "out_jobs.csv")
    assert path.read_text().splitlines() == [
        HEADER,
        "r,w0,p,0.500000,1,-1.000000,1,COMPLETED_SUCCESSFULLY,1.000000,2.000000,3.000000,"
        '0.500000,2.500000,1.250000,0-1 4,-1.000000,"{"user": "a", "tags": [1, 2]}"',
        'w,w0,p,7.000000,8,-1.000000,0,REJECTED,,,,,,,,,"user=bob"',
    ]
    back = read_jobs_csv(path)
    assert back[0].metadata == '{"user": "a", "tags": [1, 2]}'
    assert back[1].rejected and back[1].starting_time is None and back[1].consumed_energy is None
    assert write_jobs_csv(back, tmp_path / "again.csv").read_bytes() == path.read_bytes()


def test_reader_accepts_an_old_batsim_file_without_final_state(tmp_path: Path):
    path = tmp_path / "old_jobs.csv"
    path.write_text("job_id,submission_time,requested_number_of_resources,success,starting_time,"
                    "execution_time\n1,0.0,2,1,1.0,4.0\n2,0.0,1,0,2.0,1.0\n")
    first, second = read_jobs_csv(path)
    assert first.final_state == "COMPLETED_SUCCESSFULLY" and first.finish_time == 5.0
    assert second.final_state == "COMPLETED_FAILED" and second.killed



def test_a_byte_order_mark_is_dropped(tmp_path: Path):
    # a spreadsheet saving out_jobs.csv writes one: "header lacks column(s) job_id (found:
    # \ufeffjob_id, ...)"
    path = tmp_path / "old_jobs.csv"
    path.write_bytes(b"\xef\xbb\xbfjob_id,submission_time,requested_number_of_resources,success,"
                     b"starting_time,execution_time\r\n1,0.0,2,1,1.0,4.0\r\n")
    (job,) = read_jobs_csv(path)
    assert (job.job_id, job.finish_time, job.final_state) == ("1", 5.0, "COMPLETED_SUCCESSFULLY")

def _jobs_file(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "out_jobs.csv"
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    return path


GOOD_ROW = "1,w0,p,0.000000,1,10.000000,1,COMPLETED_SUCCESSFULLY,0.000000,1.000000,1.000000," \
           '0.000000,1.000000,1.000000,0,-1.000000,""'


def test_wrong_field_count_names_the_line(tmp_path: Path):
    path = _jobs_file(tmp_path, GOOD_ROW, "2,w0,p,1.0")
    with pytest.raises(ConfigError, match=r"out_jobs.csv:3: expected 17 comma-separated fields"):
        read_jobs_csv(path)


def test_bad_number_names_line_column_and_value(tmp_path: Path):
    path = _jobs_file(tmp_path, GOOD_ROW.replace("1,w0,p,0.000000", "1,w0,p,soon", 1))
    with pytest.raises(ConfigError, match=r"out_jobs.csv:2: column submission_time: 'soon' is not "
                                          r"a number"):
        read_jobs_csv(path)


def test_bad_final_state_names_the_line(tmp_path: Path):
    path = _jobs_file(tmp_path, GOOD_ROW.replace("COMPLETED_SUCCESSFULLY", "DONE"))
    with pytest.raises(ConfigError, match=r"out_jobs.csv:2: job '1': unknown final_state 'DONE'"):
        read_jobs_csv(path)


def test_missing_file_and_foreign_header(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"nothere.csv: no such file"):
        read_jobs_csv(tmp_path / "nothere.csv")
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(ConfigError, match=r"other.csv:1: header lacks column\(s\) job_id, "
                                          r"submission_time, requested_number_of_resources"):
        read_jobs_csv(other)


def _summary() -> dict:
    summary = {c: 0.0 for c in BATSIM_SCHEDULE_COLUMNS}
    summary.update(batsim_version="hdrm-0.1.0", nb_jobs=3, makespan=12.5)
    summary.update(mean_bounded_slowdown=1.25, max_bounded_slowdown=2.0, utilization=0.5,
                   mean_power_w=100.0)
    return summary


def test_schedule_writes_batsim_columns_then_ours(tmp_path: Path):
    path = write_schedule_csv(_summary(), tmp_path / "out_schedule.csv")
    header, values = path.read_text().splitlines()
    assert header.split(",") == list(BATSIM_SCHEDULE_COLUMNS + HDRM_SCHEDULE_COLUMNS)
    assert values.startswith("hdrm-0.1.0,0.000000,12.500000,")
    assert values.endswith(",1.250000,2.000000,0.500000,100.000000")
    back = read_schedule_csv(path)
    assert back["nb_jobs"] == 3 and back["utilization"] == 0.5
    assert back["batsim_version"] == "hdrm-0.1.0"


def test_schedule_without_a_batsim_column_is_refused(tmp_path: Path):
    summary = _summary()
    del summary["time_idle"], summary["nb_jobs"]
    with pytest.raises(ConfigError, match=r"lacks column\(s\) nb_jobs, time_idle"):
        write_schedule_csv(summary, tmp_path / "out_schedule.csv")


def test_schedule_reader_errors_and_unknown_columns(tmp_path: Path):
    path = tmp_path / "s.csv"
    path.write_text("makespan,nb_jobs\n1.0,2\n3.0,4\n")
    with pytest.raises(ConfigError, match=r"s.csv: expected a header line and one value line, "
                                          r"found 3 lines"):
        read_schedule_csv(path)
    path.write_text("makespan,nb_jobs,note,mean_slowdown\n1.0,2,fast,\n")
    values = read_schedule_csv(path)
    assert values["note"] == "fast" and math.isnan(values["mean_slowdown"])
    path.write_text("makespan,nb_jobs\nlong,2\n")
    with pytest.raises(ConfigError, match=r"s.csv:2: column makespan: 'long' is not a number"):
        read_schedule_csv(path)


@pytest.mark.filterwarnings("ignore:The inplace keyword")
def test_evalys_reads_our_files(example_run: Path):
    JobSet = pytest.importorskip("evalys.jobset").JobSet
    frame = JobSet.from_csv(str(example_run / "out_jobs.csv")).df
    assert list(frame["jobID"].astype(str)) == ["1", "2", "3", "4", "5"]
    assert list(frame["execution_time"].iloc[:4]) == [10.0, 20.0, 10.0, 5.0]


def test_a_file_written_block_by_block_and_stopped_keeps_the_previous_content(tmp_path: Path):
    # stopped after the first block, the file was a well-formed CSV with 4096 of its rows (it read
    # as a complete run); now the previous file stays, and no temporary file is left
    from hdrm.results.csvio import LINES_PER_BLOCK, write_lines

    path = tmp_path / "out_jobs.csv"
    write_lines(path, "job_id", ["1", "2"])

    def rows():
        for i in range(LINES_PER_BLOCK + 10):
            yield str(i)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_lines(path, "job_id", rows())
    assert path.read_text(encoding="utf-8") == "job_id\n1\n2\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out_jobs.csv"]
