"""Rows of the comparison table checked by hand, in Markdown and CSV."""

from __future__ import annotations

from pathlib import Path

import pytest

import dataclasses

from hdrm.errors import ConfigError
from hdrm.results.compare import (
    as_runs,
    compare_rows,
    format_csv,
    format_markdown,
    input_differences,
    recorded_inputs,
)
from hdrm.results.csvio import write_jobs_csv, write_schedule_csv
from hdrm.results.example import NB_CORES, example_jobs
from hdrm.results.metrics import summarize
from hdrm.results.run import Run

from .golden import GOLDEN, needs_golden

EXAMPLE_ROW = {
    "run": "example", "nb_jobs": 5, "makespan_s": 27.0, "energy_j": 10240.0,
    "mean_waiting_s": 4.2, "max_waiting_s": 16.0, "mean_turnaround_s": 13.2,
    "mean_slowdown": 1.54, "mean_bounded_slowdown": 1.12, "utilization": 100 / 108,
}


def test_example_row_by_hand(example_run: Path):
    (row,) = compare_rows([example_run])
    assert row.keys() == EXAMPLE_ROW.keys()
    for key, value in EXAMPLE_ROW.items():
        assert row[key] == (value if isinstance(value, str) else pytest.approx(value)), key


@needs_golden
def test_markdown_and_csv(example_run: Path):
    rows = compare_rows([example_run, GOLDEN / "small_delays/fillerSched"], allow_mismatch=True)
    assert format_markdown(rows).splitlines() == [
        "| run | nb_jobs | makespan_s | energy_j | mean_waiting_s | max_waiting_s | "
        "mean_turnaround_s | mean_slowdown | mean_bounded_slowdown | utilization |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        "| example | 5 | 27.000 | 10240.000 | 4.200 | 16.000 | 13.200 | 1.540 | 1.120 | 0.926 |",
        # 10 one-core jobs of 10 s on 4 cores, waits of about 5 ms, energy unknown
        "| fillerSched | 10 | 37.005 | n/a | 0.005 | 0.005 | 10.005 | 1.001 | 1.001 | 0.676 |",
    ]
    csv_lines = format_csv(rows).splitlines()
    assert csv_lines[1] == ("example,5,27.000000,10240.000000,4.200000,16.000000,13.200000,"
                            "1.540000,1.120000,0.925926")
    assert csv_lines[2].startswith("fillerSched,10,37.005045,,0.005048,0.005060,10.005048,")


def test_repeated_names_are_numbered(tmp_path: Path, example_run: Path):
    from hdrm.results.example import write_example_run

    other = write_example_run(tmp_path / "b" / "example")
    labels = [run.label for run in as_runs([example_run, other, tmp_path / "b"])]
    assert labels == ["example#1", "example#2", "b"]


def _run(folder: Path, jobs, nb_cores: int = NB_CORES) -> Path:
    """A run folder holding ``jobs`` on ``nb_cores`` cores."""
    folder.mkdir(parents=True)
    write_jobs_csv(jobs, folder / "out_jobs.csv")
    write_schedule_csv(summarize(jobs, nb_cores, 0.0), folder / "out_schedule.csv")
    return folder


def test_recorded_inputs_of_the_example_run(example_run: Path):
    inputs = recorded_inputs(Run(example_run))
    assert inputs.nb_jobs == 5 and inputs.nb_cores == NB_CORES
    assert inputs.jobs == {"1": (0.0, 2, 100.0), "2": (0.0, 2, 100.0), "3": (5.0, 2, 100.0),
                           "4": (6.0, 4, 100.0), "5": (7.0, 8, 100.0)}


def test_same_jobs_in_another_order_and_clock_are_comparable(tmp_path: Path, example_run: Path):
    shifted = [dataclasses.replace(j, submission_time=j.submission_time + 1000)
               for j in reversed(example_jobs())]
    other = _run(tmp_path / "shifted", shifted)
    assert input_differences([example_run, other]) == []
    assert len(compare_rows([example_run, other])) == 2


def test_other_job_count_and_selection_are_refused(tmp_path: Path, example_run: Path):
    jobs = example_jobs()
    first4 = _run(tmp_path / "first4", jobs[:4])
    later = _run(tmp_path / "later", [dataclasses.replace(j, job_id=str(int(j.job_id) + 3))
                                      for j in jobs])
    assert input_differences([example_run, first4, later]) == [
        "first4 differs from example in job count (4 vs 5), job ids, 1 only in example (5)",
        "later differs from example in job ids, 3 only in later (6, 7, 8) and 3 only in example "
        "(1, 2, 3), the requests of 2 jobs with the same id (e.g. job 4: submitted at +0 s, 2 "
        "cores, 100 s requested vs submitted at +6 s, 4 cores, 100 s requested)",
    ]
    with pytest.raises(ConfigError, match=(
            r"^the runs are not comparable: first4 differs from example in job count \(4 vs 5\)"
            r".*; compare runs of the same jobs \(trace, conventions, selection\) on platforms "
            r"of the same size, or pass allow_mismatch=True to compare them anyway$")):
        compare_rows([example_run, first4])
    assert [row["nb_jobs"] for row in compare_rows([example_run, first4],
                                                   allow_mismatch=True)] == [5, 4]


def test_other_platform_size_and_requests_are_refused(tmp_path: Path, example_run: Path):
    jobs = example_jobs()
    bigger = _run(tmp_path / "bigger", jobs, nb_cores=2 * NB_CORES)
    wider = _run(tmp_path / "wider", [dataclasses.replace(j, requested_number_of_resources=1)
                                      if j.job_id == "3" else j for j in jobs])
    assert input_differences([example_run, bigger, wider]) == [
        f"bigger differs from example in platform size ({2 * NB_CORES} vs {NB_CORES} cores)",
        "wider differs from example in the requests of 1 job with the same id (e.g. job 3: "
        "submitted at +5 s, 1 cores, 100 s requested vs submitted at +5 s, 2 cores, 100 s "
        "requested)",
    ]
