"""Output files written block by block and timelines kept as columns (issue 27: a million jobs in
2 GB): the same bytes as before, without the whole file's text or one object per number."""

from __future__ import annotations

import pickle
import re
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.errors import ConfigError
from hdrm.results import csvio
from hdrm.results.csvio import JOBS_COLUMNS, write_jobs_csv, write_lines
from hdrm.results.example import example_timeline
from hdrm.results.metrics import machine_times
from hdrm.results.records import JobResult, parse_interval_ranges
from hdrm.results.timeline import TimelineRow, TimelineRows, write_timeline_csv


def _results(n: int):
    """``n`` job results made one at a time (the caller holds none of them)."""
    for i in range(n):
        yield JobResult(job_id=str(i), profile=f"p{i}", submission_time=float(i),
                        requested_number_of_resources=1 + i % 7, requested_time=3600.0,
                        starting_time=i + 0.5, execution_time=100.0 + i % 13,
                        allocated_resources=f"{i % 100}-{i % 100 + i % 7}")


@pytest.mark.parametrize("block", [1, 2, 3, 4096])
def test_lines_are_written_as_one_text_would_be(tmp_path: Path, monkeypatch, block: int):
    """Whatever the block size, the file is the header and the lines, each ending in a newline."""
    monkeypatch.setattr(csvio, "LINES_PER_BLOCK", block)
    for lines in ([], ["a"], ["a", "b"], ["a", "b", "c", "d", "e"]):
        path = tmp_path / "f.csv"
        write_lines(path, "h,i", iter(lines))
        assert path.read_bytes() == "\n".join(["h,i", *lines]).encode() + b"\n"


def test_an_unwritable_file_is_named(tmp_path: Path):
    target = tmp_path / "missing" / "out_jobs.csv"
    with pytest.raises(ConfigError, match=r"missing/out_jobs.csv: cannot write"):
        write_lines(target, "h", ["x"])


def test_jobs_file_is_streamed(tmp_path: Path):
    """100,000 rows (15 MB of text) written from a generator: the writer's peak (~2 MB, one
    block of lines and its text) stays a small fraction of the file; the old writer built every
    line and then the joined text, over twice the file's size."""
    path = tmp_path / "out_jobs.csv"
    tracemalloc.start()
    try:
        write_jobs_csv(_results(100_000), path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    size = path.stat().st_size
    assert size > 15_000_000
    assert peak < size / 5, (peak, size)
    lines = path.read_text().splitlines()
    assert lines[0] == ",".join(JOBS_COLUMNS) and len(lines) == 100_001
    assert lines[2] == ("1,w0,p1,1.000000,2,3600.000000,1,COMPLETED_SUCCESSFULLY,1.500000,"
                        "101.000000,102.500000,0.500000,101.500000,1.004950,1-2,-1.000000,\"\"")


def test_timeline_rows_read_back_as_added():
    rows = example_timeline()
    columns = TimelineRows(rows)
    assert len(columns) == len(rows) and columns == rows and list(columns) == rows
    assert columns[3] == rows[3] and columns[-1] == rows[-1] and columns[2:5] == rows[2:5]
    assert type(columns[0].queue_size) is int and type(columns[0].time_s) is float
    assert columns != rows[:-1] and bool(TimelineRows()) is False
    assert pickle.loads(pickle.dumps(columns)) == columns
    columns.add(99.0, 1, 2, 3, 0, 12.5, 1e9)
    assert columns[-1] == TimelineRow(99.0, 1, 2, 3, 0, 12.5, 1e9)


def test_timeline_columns_write_the_same_bytes_as_rows(tmp_path: Path):
    rows = example_timeline() + [TimelineRow(1e7 + 1 / 3, 10**6, 4096, 100_000, 7, 1234.5678901,
                                             9.87654321e12)]
    a = write_timeline_csv(rows, tmp_path / "a.csv").read_bytes()
    b = write_timeline_csv(TimelineRows(rows), tmp_path / "b.csv").read_bytes()
    assert a == b
    assert a.splitlines()[-1] == (b"10000000.333333,1000000,4096,100000,7,1234.567890,"
                                  b"9876543210000.000000")


def test_timeline_columns_cost_56_bytes_an_instant():
    """Seven 8-byte columns (plus the arrays' growth slack); a TimelineRow with its float and
    int objects cost ~200 bytes."""
    tracemalloc.start()
    try:
        columns = TimelineRows()
        for i in range(100_000):
            columns.add(i * 1.5, 1000 + i, 500 + i, 3000 + i, 0, 1e4 + i, 1e9 + i)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held / len(columns) < 70, held / len(columns)


def test_rows_of_every_kind_by_hand(tmp_path: Path):
    """The one-format row and the column-by-column row (unknown columns empty) as Batsim
    writes them: a rejected job, a killed one with a 0 s run (stretch nan), integer inputs."""
    rows = [
        JobResult(job_id="7", final_state="REJECTED", success=0, consumed_energy=None,
                  metadata="user=3"),
        JobResult(job_id="8", submission_time=3, requested_number_of_resources=2, starting_time=3,
                  execution_time=0, allocated_resources="0-1", consumed_energy=12.5,
                  final_state="COMPLETED_KILLED", success=0),
        JobResult(job_id="9", workload_name="w1", profile="p", submission_time=1.25,
                  requested_time=60.0, starting_time=2.0, execution_time=4.5,
                  allocated_resources="3 5-6", consumed_energy=None),
    ]
    lines = write_jobs_csv(rows, tmp_path / "j.csv").read_text().splitlines()[1:]
    assert lines == [
        '7,w0,,0.000000,1,-1.000000,0,REJECTED,,,,,,,,,"user=3"',
        '8,w0,,3.000000,2,-1.000000,0,COMPLETED_KILLED,3.000000,0.000000,3.000000,0.000000,'
        '0.000000,nan,0-1,12.500000,""',
        '9,w1,p,1.250000,1,60.000000,1,COMPLETED_SUCCESSFULLY,2.000000,4.500000,6.500000,'
        '0.750000,5.250000,1.166667,3 5-6,,""',
    ]


def test_machine_times_by_hand_and_without_a_list_of_spans():
    """Batsim's computing and idle machine-seconds by hand; over 100,000 jobs the computation
    holds one double per id range (the old one held a 5-tuple per range, ~17 MB here)."""
    small = [
        JobResult(job_id="a", starting_time=0.0, execution_time=10.0, allocated_resources="0-1"),
        JobResult(job_id="b", starting_time=15.0, execution_time=5.0, allocated_resources="1"),
        JobResult(job_id="r", final_state="REJECTED", success=0, consumed_energy=None),
        JobResult(job_id="c", starting_time=5.0, execution_time=2.0, allocated_resources="3"),
    ]
    # computing: 10 x 2 + 5 + 2; idle: core 1 waits 5 s before b, core 3 5 s before c
    assert machine_times(small) == (27.0, 10.0)
    results = list(_results(100_000))
    tracemalloc.start()
    try:
        computing_s, idle_s = machine_times(results)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000, peak
    busy, last_end = [0.0] * 107, [0.0] * 107  # core by core (the runs overlap: idle < 0)
    for r in results:
        for core in r.core_ids():
            busy[core] += r.execution_time
            last_end[core] = max(last_end[core], r.finish_time)
    assert computing_s == pytest.approx(sum(busy), rel=1e-12)
    assert idle_s == pytest.approx(sum(last_end) - sum(busy), rel=1e-9)


_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")  # the rule of a part, as a regex


def _by_regex(text: str) -> list[tuple[int, int]] | None:
    """Interval ranges by the regex rule (None where a part breaks it or ends before it starts)."""
    ranges = []
    for part in text.split():
        match = _RANGE.match(part)
        if not match:
            return None
        lo = int(match.group(1))
        hi = int(match.group(2)) if match.group(2) is not None else lo
        if hi < lo:
            return None
        ranges.append((lo, hi))
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789-  \t\u0663x+", max_size=14))
def test_interval_sets_parse_as_the_regex_rule(text: str):
    """Parsing without a regex accepts and refuses exactly what the regex rule does (Unicode
    decimal digits such as '\u0663' included)."""
    expected = _by_regex(text)
    if expected is None:
        with pytest.raises(ConfigError, match="bad interval set"):
            parse_interval_ranges(text)
    else:
        assert parse_interval_ranges(text) == expected
