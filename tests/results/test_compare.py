"""Rows of the comparison table checked by hand, in Markdown and CSV."""

from __future__ import annotations

from pathlib import Path

import pytest

from hdrm.results.compare import as_runs, compare_rows, format_csv, format_markdown

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
    rows = compare_rows([example_run, GOLDEN / "small_delays/fillerSched"])
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
