"""out_timeline.csv written and read back, errors with line numbers, and timelines derived from
Batsim's out_jobs.csv checked by hand."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from hdrm.errors import ConfigError
from hdrm.results.csvio import read_jobs_csv
from hdrm.results.example import example_jobs, example_timeline
from hdrm.results.records import JobResult
from hdrm.results.timeline import (
    POWER_FROM_ENGINE,
    POWER_FROM_JOBS,
    POWER_UNKNOWN,
    TIMELINE_COLUMNS,
    TimelineRow,
    derive_timeline,
    read_timeline_csv,
    write_timeline_csv,
)

from .golden import GOLDEN, needs_golden


def test_write_then_read(tmp_path: Path):
    path = write_timeline_csv(example_timeline(), tmp_path / "out_timeline.csv")
    lines = path.read_text().splitlines()
    assert lines[0] == ",".join(TIMELINE_COLUMNS)
    assert lines[1] == "0.000000,0,2,4,2,400.000000,0.000000"
    assert len(lines) == 1 + 8
    timeline = read_timeline_csv(path)
    assert list(timeline.time_s) == [0, 5, 6, 7, 10, 20, 22, 27]
    assert list(timeline.queue_size) == [0, 1, 2, 2, 1, 1, 0, 0]
    assert list(timeline.contended_cores) == [2, 2, 2, 2, 0, 0, 4, 0]
    assert timeline.energy_j[-1] == 10240.0
    assert timeline.power_source == POWER_FROM_ENGINE and not timeline.derived
    # busy cores: 4 from 0 to 20 s, 0 until 22 s, 4 until 27 s
    assert timeline.mean_busy_cores() == pytest.approx(4 * 25 / 27)


def test_writer_takes_mappings(tmp_path: Path):
    row = {"time": 1.5, "queue_size": 3, "running_jobs": 1, "busy_cores": 2,
           "contended_cores": 0, "power_w": 12.25, "energy_j": 0.5}
    path = write_timeline_csv([row, TimelineRow(2.0, 0, 0, 0, 0, 0.0, 6.625)], tmp_path / "t.csv")
    assert path.read_text().splitlines()[1:] == [
        "1.500000,3,1,2,0,12.250000,0.500000",
        "2.000000,0,0,0,0,0.000000,6.625000",
    ]


def _timeline_file(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "out_timeline.csv"
    path.write_text("\n".join([",".join(TIMELINE_COLUMNS), *rows]) + "\n")
    return path


def test_reader_errors_name_the_line(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"out_timeline.csv:3: column power_w: 'hot' is not"):
        read_timeline_csv(_timeline_file(tmp_path, "0,0,0,0,0,1,0", "1,0,0,0,0,hot,0"))
    with pytest.raises(ConfigError, match=r"out_timeline.csv:2: expected 7 fields, found 3"):
        read_timeline_csv(_timeline_file(tmp_path, "0,0,0"))
    with pytest.raises(ConfigError, match=r"out_timeline.csv:4: time 1.0 is before the previous "
                                          r"row's 5.0"):
        read_timeline_csv(_timeline_file(tmp_path, "0,0,0,0,0,1,0", "5,0,0,0,0,1,5",
                                         "1,0,0,0,0,1,6"))
    (tmp_path / "short.csv").write_text("time,queue_size\n0,1\n")
    with pytest.raises(ConfigError, match=r"short.csv:1: header lacks column\(s\) running_jobs"):
        read_timeline_csv(tmp_path / "short.csv")


@needs_golden
def test_derived_from_pstate_demo_by_hand():
    timeline = derive_timeline(read_jobs_csv(GOLDEN / "pstate_slowdown/pstateDemo/out_jobs.csv"))
    # jobs 0 and 1 start at 0 on 2 cores each; job 2 (4 cores) arrives at 3 and runs 11-21;
    # job 3 (1 core) arrives at 4 and runs 21-26. Per-job power: 200, 200, 400, 100 W.
    assert list(timeline.time_s) == [0, 3, 4, 10, 11, 21, 26]
    assert list(timeline.queue_size) == [0, 1, 2, 2, 1, 0, 0]
    assert list(timeline.running_jobs) == [2, 2, 2, 1, 1, 1, 0]
    assert list(timeline.busy_cores) == [4, 4, 4, 2, 4, 1, 0]
    assert list(timeline.power_w) == pytest.approx([400, 400, 400, 200, 400, 100, 0])
    assert list(timeline.energy_j) == pytest.approx([0, 1200, 1600, 4000, 4200, 8200, 8700])
    assert timeline.power_source == POWER_FROM_JOBS and timeline.derived
    assert np.all(np.isnan(timeline.contended_cores))
    assert timeline.mean_busy_cores() == pytest.approx(87 / 26)


@needs_golden
def test_derived_without_job_energy_has_no_power():
    timeline = derive_timeline(read_jobs_csv(GOLDEN / "small_delays/fillerSched/out_jobs.csv"))
    assert timeline.power_source == POWER_UNKNOWN and not timeline.has_power
    assert np.all(np.isnan(timeline.power_w))
    assert timeline.busy_cores.max() == 4 and timeline.busy_cores[-1] == 0


def test_derived_leaves_rejected_jobs_out_and_starts_at_zero():
    timeline = derive_timeline(example_jobs())
    assert timeline.time_s[0] == 0.0
    assert 7.0 not in list(timeline.time_s)  # the rejected job's submission changes nothing
    assert timeline.queue_size.max() == 2
    late = derive_timeline([JobResult("1", submission_time=4.0, starting_time=6.0,
                                      execution_time=1.0, consumed_energy=3.0)])
    assert list(late.time_s) == [0, 4, 6, 7]
    assert list(late.queue_size) == [0, 1, 0, 0]
    assert list(late.energy_j) == pytest.approx([0, 0, 0, 3])


def test_derived_from_nothing_is_one_empty_instant():
    timeline = derive_timeline([])
    assert len(timeline) == 1 and timeline.busy_cores[0] == 0
    assert math.isnan(timeline.power_w[0])
