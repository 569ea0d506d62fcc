"""``hdrm replay`` and ``hdrm workload`` select jobs the same way: ``--nb-jobs 0`` is every job from
``--start-index``, and a negative count or a start index past the trace is a one-line error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hdrm.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
KTH = str(ROOT / "workloads" / "KTH-SP2-1996-2.1-cln_27200-27399.swf")  # 199 jobs kept


def _replay(argv, tmp_path, capsys):
    status = main(["replay", "--workload", KTH, "--homogeneous-procs", "100",
                   "--outdir", str(tmp_path / "out"), *argv])
    out = capsys.readouterr()
    return status, out.out, out.err


@pytest.mark.parametrize("command", ["replay", "workload"])
def test_zero_jobs_means_all_from_the_start_index(command, tmp_path, capsys):
    argv = ["--start-index", "190", "--nb-jobs", "0"]
    if command == "replay":
        status, out, err = _replay(argv, tmp_path, capsys)
        assert "9 jobs of KTH-SP2-1996-2.1-cln_27200-27399[190:199]" in out.splitlines()[0]
        rows = (tmp_path / "out" / "out_jobs.csv").read_text().splitlines()
        assert len(rows) == 1 + 9
    else:
        status = main(["workload", KTH, *argv])
        out, err = capsys.readouterr()
        assert "jobs kept       9" in out.splitlines()[1]
    assert status == 0 and err == ""


@pytest.mark.parametrize("command", ["replay", "workload"])
@pytest.mark.parametrize(("argv", "message"), [
    (["--nb-jobs", "-5"], r"KTH-SP2-1996-2\.1-cln_27200-27399\.swf: number of jobs must be a "
                          r"positive integer, or 0 for all the jobs from the start index; got -5"),
    (["--start-index", "500"], r"start index 500 is outside the workload's 199 jobs \(valid start "
                               r"indices: 0\.\.198\)"),
    (["--start-index", "190", "--nb-jobs", "20"], r"cannot take 20 jobs from index 190: the "
                                                  r"workload has 199 jobs"),
])
def test_bad_selections_are_one_line_errors(command, argv, message, tmp_path, capsys):
    if command == "replay":
        status, _, err = _replay(argv, tmp_path, capsys)
    else:
        status = main(["workload", KTH, *argv])
        err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and err.startswith(f"hdrm {command}: error: ")
    assert re.search(message, err)
    assert not (tmp_path / "out").exists()
