"""benchmarks/swf_corpus.py: how it judges a run (a refusal, a traceback, out_jobs.csv broken)
and a small sweep of two traces through ``hdrm workload`` and ``hdrm replay``."""

from __future__ import annotations

import csv
import logging
import re
from pathlib import Path

import pytest

from benchmarks import swf_corpus as sc
from hdrm.errors import ConfigError

HEADER = ("job_id,submission_time,starting_time,execution_time,finish_time,final_state,"
          "allocated_resources")


def _jobs_csv(tmp_path: Path, rows: list[str]) -> Path:
    path = tmp_path / "out_jobs.csv"
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    return path


def test_a_sound_schedule_passes(tmp_path):
    path = _jobs_csv(tmp_path, ["1,0,0,10,10,COMPLETED_SUCCESSFULLY,0-1",
                                "2,5,10,5,15,COMPLETED_WALLTIME_REACHED,0 3",
                                "3,6,,,,REJECTED,"])
    rows, broken = sc.check_jobs(path, {"1", "2", "3"})
    assert broken is None and len(rows) == 3


@pytest.mark.parametrize("rows, expected, says", [
    (["1,0,0,10,10,COMPLETED_SUCCESSFULLY,0-1", "2,5,5,10,15,COMPLETED_SUCCESSFULLY,1-2"],
     {"1", "2"}, "core 1 runs jobs 1 and 2 at once"),
    (["1,0,0,10,10,COMPLETED_SUCCESSFULLY,0", "1,0,10,1,11,COMPLETED_SUCCESSFULLY,1"],
     {"1"}, "a job id appears twice"),
    (["1,8,5,10,15,COMPLETED_SUCCESSFULLY,0"], {"1"}, r"job 1: times go back \(8.0, 5.0, 15.0\)"),
    (["1,0,0,10,12,COMPLETED_SUCCESSFULLY,0"], {"1"}, "job 1: finish != start \\+ execution"),
    (["1,-920,-920,10,-910,COMPLETED_SUCCESSFULLY,0"], {"1"}, "job 1: times go back"),
    (["1,0,0,10,10,COMPLETED_SUCCESSFULLY,0"], {"1", "2"},
     "1 jobs in out_jobs.csv, the slice has 2; 1 differ, e.g. job 2"),
])
def test_broken_invariants_are_named(tmp_path, rows, expected, says):
    _, broken = sc.check_jobs(_jobs_csv(tmp_path, rows), expected)
    assert broken is not None
    assert re.search(says, broken), broken


@pytest.mark.parametrize("rc, err, status, detail", [
    (2, "hdrm replay: error: t.swf:3: field 5 is x; fix the line\n", "refused",
     "t.swf:3: field 5 is x; fix the line"),
    (2, "error: t.swf: no job lines found\n", "refused", "t.swf: no job lines found"),
    (1, "Traceback (most recent call last):\n  ...\nKeyError: 'x'\n", "FAIL",
     "traceback: KeyError: 'x'"),
    (2, "hdrm replay: error: Batsim stopped answering\n", "FAIL",
     "error names no input: Batsim stopped answering"),
    (2, "hdrm: error: a\nhdrm: error: b\n", "FAIL", "rc 2, 2 error lines"),
    (-9, "", "FAIL", "timeout"),
])
def test_failures_are_judged(rc, err, status, detail):
    got_status, got_detail = sc.judge_failure(rc, err, ("t.swf",))
    assert got_status == status and got_detail.startswith(detail)


def test_bad_arguments_are_one_line_errors():
    with pytest.raises(ConfigError, match="--entries: unknown entry point 'replya'"):
        sc.parse_args(["t.swf", "--entries", "workload,replya"])
    with pytest.raises(ConfigError, match="nope.swf: no such file or folder"):
        sc.traces_of(["nope.swf"])


def test_a_small_sweep(tmp_path, capsys):
    level = logging.getLogger("hdrm").level
    traces = tmp_path / "traces"
    traces.mkdir()
    lines = [f"{i} {10 * i} 0 {50 + i} {1 + i % 3} -1 -1 {1 + i % 3} 100 -1 1 1 1 -1 1 -1 -1 -1"
             for i in range(1, 9)]
    (traces / "good.swf").write_text("; maxprocs: 4\n" + "\n".join(lines) + "\n")
    (traces / "empty.swf").write_text("")
    sc.main([str(traces), "--entries", "workload,replay", "--nb-jobs", "5", "--outdir",
             str(tmp_path / "out")])
    out = capsys.readouterr().out.splitlines()
    table = list(csv.reader(out[1:-1], delimiter="\t"))
    assert [(r[0], r[1], r[2]) for r in table] == [
        ("empty.swf", "workload", "refused"), ("empty.swf", "replay", "refused"),
        ("good.swf", "workload", "ok"), ("good.swf", "replay", "ok")]
    assert table[0][3].endswith("empty.swf: the file is empty (a download or copy cut short?); "
                                "an SWF job line has 18 numbers")
    # the lower-case header keyword gives the machine size; 5 jobs of the slice, each once
    assert table[2][3].startswith("kept 8, skipped 0, cores 4")
    assert table[3][3].startswith("5 jobs (completed_successfully 5)")
    assert out[-1].startswith("2 traces: ok 2, refused 2")
    # the sweep quiets hdrm's warnings while it reads a trace, then gives the level back: it
    # once left it at ERROR, and later tests in the same process lost the warnings they check
    assert logging.getLogger("hdrm").level == level
