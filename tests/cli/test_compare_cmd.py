"""``hdrm compare``: the table on stdout (Markdown or CSV), the bar charts with ``-o``, one-line
errors with exit status 2."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hdrm.cli.main import main
from hdrm.results.example import write_example_run

GOLDEN = Path(__file__).resolve().parents[3] / "shared" / "batsim" / "golden"
needs_golden = pytest.mark.skipif(not GOLDEN.is_dir(), reason=f"no Batsim outputs under {GOLDEN}")

HEADER = ("| run | nb_jobs | makespan_s | energy_j | mean_waiting_s | max_waiting_s | "
          "mean_turnaround_s | mean_slowdown | mean_bounded_slowdown | utilization |")


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return write_example_run(tmp_path / "run")


@needs_golden
def test_markdown_table(run_dir: Path, capsys):
    assert main(["compare", str(run_dir), str(GOLDEN / "pstate_slowdown/pstateDemo"),
                 "--allow-mismatch"]) == 0
    out = capsys.readouterr()
    assert out.err == ("hdrm compare: warning: not comparable: pstateDemo differs from run in job "
                       "count (4 vs 5), job ids, 1 only in pstateDemo (0) and 2 only in run (4, "
                       "5), the requests of 2 jobs with the same id (e.g. job 2: submitted at +3 "
                       "s, 4 cores, 100 s requested vs submitted at +0 s, 2 cores, 100 s "
                       "requested)\n")
    assert out.out.splitlines() == [
        HEADER,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        "| run | 5 | 27.000 | 10240.000 | 4.200 | 16.000 | 13.200 | 1.540 | 1.120 | 0.926 |",
        # pstateDemo: waits 0, 0, 8, 17; turnarounds 10, 11, 18, 22; 87 core-s on 4 cores in 26 s
        "| pstateDemo | 4 | 26.000 | 10400.000 | 6.250 | 17.000 | 15.250 | 2.050 | 1.500 | 0.837 |",
    ]


def test_csv_table_and_charts(run_dir: Path, tmp_path: Path, capsys):
    out_file = tmp_path / "cmp.png"
    assert main(["compare", str(run_dir), "--format", "CSV", "-o", str(out_file)]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines()[1] == ("run,5,27.000000,10240.000000,4.200000,16.000000,"
                                       "13.200000,1.540000,1.120000,0.925926")
    assert out.err == f"wrote {out_file}\n"
    assert out_file.read_bytes()[:4] == b"\x89PNG"


def test_bad_format(run_dir: Path, capsys):
    assert main(["compare", str(run_dir), "--format", "mardown"]) == 2
    err = capsys.readouterr().err
    assert err == ("hdrm compare: error: --format: unknown table format 'mardown'; did you mean "
                   "'markdown'? choose one of: markdown, csv\n")


def test_missing_run_folder(run_dir: Path, tmp_path: Path, capsys):
    assert main(["compare", str(run_dir), str(tmp_path / "gone")]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == f"hdrm compare: error: run folder {tmp_path / 'gone'} does not exist; " \
                      "give the folder a run wrote\n"


def test_folder_without_jobs(run_dir: Path, tmp_path: Path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["compare", str(run_dir), str(empty)]) == 2
    assert "has no out_jobs.csv (needed for job results); files there: none" in \
        capsys.readouterr().err


SDSC = str(Path(__file__).resolve().parents[2] / "workloads" / "SDSC-SP2-1998-4.2-cln_first500.swf")


def _replay(outdir: Path, *argv: str) -> Path:
    assert main(["replay", "--workload", SDSC, "--outdir", str(outdir), "--quiet", *argv]) == 0
    return outdir


def test_runs_of_other_jobs_or_platforms_are_refused(tmp_path: Path, capsys):
    base = ("--homogeneous-procs", "128")
    first100 = _replay(tmp_path / "first100", *base, "--nb-jobs", "100")
    sjf100 = _replay(tmp_path / "sjf100", *base, "--nb-jobs", "100", "--policy", "sjf")
    every = _replay(tmp_path / "all", *base)
    wider = _replay(tmp_path / "wider", "--homogeneous-procs", "256", "--nb-jobs", "100")
    later = _replay(tmp_path / "later", *base, "--nb-jobs", "100", "--start-index", "100")
    capsys.readouterr()
    # the same 100 jobs on the same platform, another policy: compared without a word
    assert main(["compare", str(first100), str(sjf100)]) == 0
    out = capsys.readouterr()
    assert out.err == "" and len(out.out.splitlines()) == 4
    for other, what in [
        (every, r"all differs from first100 in job count \(468 vs 100\), job ids, 368 only in all "
                r"\(.*, \.\.\.\)"),
        (wider, r"wider differs from first100 in platform size \(256 vs 128 cores\)"),
        (later, r"later differs from first100 in job ids, 100 only in later .* and 100 only in "
                r"first100"),
    ]:
        assert main(["compare", str(first100), str(other)]) == 2
        out = capsys.readouterr()
        assert out.out == "" and out.err.count("\n") == 1
        assert re.match(r"hdrm compare: error: the runs are not comparable: " + what, out.err)
        assert out.err.endswith("or pass --allow-mismatch to compare them anyway\n")
    assert main(["compare", str(first100), str(every), "--allow-mismatch"]) == 0
    out = capsys.readouterr()
    assert re.match(r"hdrm compare: warning: not comparable: all differs from first100 in job "
                    r"count \(468 vs 100\)", out.err)
    assert [line.split(" | ")[1] for line in out.out.splitlines()[2:]] == ["100", "468"]
