"""``hdrm replay``'s inputs and outputs: it selects jobs as ``hdrm workload`` does (``--nb-jobs 0`` is
every job from ``--start-index``; a negative count or a start index past the trace is a one-line
error), and an output folder it cannot make is a one-line error before the simulation runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hdrm.cli.main import main
from hdrm.errors import ConfigError
from hdrm.sim.outputs import make_outdir

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


@pytest.mark.parametrize("engine", ["builtin", "batsim"])
@pytest.mark.parametrize(("below", "reason"), [("", "File exists"), ("run", "Not a directory")])
def test_an_output_folder_that_cannot_be_made_is_refused_before_the_run(
        engine, below, reason, tmp_path, capsys, monkeypatch):
    taken = tmp_path / "taken"
    taken.write_text("a file, not a folder\n")
    outdir = taken / below if below else taken
    ran = []
    monkeypatch.setattr("hdrm.cli.replay_cmd.Simulation.run", lambda *a, **k: ran.append(1))
    status = main(["replay", "--workload", KTH, "--homogeneous-procs", "100", "--engine", engine,
                   "--outdir", str(outdir)])
    out, err = capsys.readouterr()
    assert status == 2 and out == "" and not ran
    assert err == (f"hdrm replay: error: --outdir: cannot create the folder {outdir}: {reason}; "
                   "give a folder you can write to\n")


def test_make_outdir_reports_a_folder_it_cannot_make(tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("")
    with pytest.raises(ConfigError, match=r"--outdir: cannot create the folder .*taken/x: Not a "
                                          r"directory; give a folder you can write to"):
        make_outdir(taken / "x")
    assert make_outdir(tmp_path / "a" / "b").is_dir()


PLATFORM = str(ROOT / "platforms" / "tiny_hetero.json")


@pytest.mark.parametrize("command, argv, message", [
    # a negative seed was numpy's "ValueError: expected non-negative integer" traceback
    ("replay", ["--seed", "-1", "--policy", "random"], "--seed: expected an integer >= 0, got -1"),
    ("replay", ["--seed", "-3", "--platform", PLATFORM],
     "--seed: expected an integer >= 0, got -3"),
    ("workload", ["--seed", "-1", "--platform", PLATFORM, "--json", "{tmp}/w.json"],
     "--seed: expected an integer >= 0, got -1"),
    # a bad bandwidth spec was ignored where no bandwidth is drawn
    ("replay", ["--bandwidth", "uniform:5:1"], "--bandwidth: bandwidth distribution 'uniform:5:1': "
     "uniform:A:B needs A <= B; write uniform:1:5"),
    ("workload", ["--bw", "constant:nan"], "--bw: bandwidth distribution 'constant:nan': 'nan' "
     "must be a finite number >= 0 GB/s"),
])
def test_a_negative_seed_or_a_bad_bandwidth_is_one_line(command, argv, message, tmp_path, capsys):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    if command == "replay":
        if "--platform" in argv:
            argv = ["replay", "--workload", KTH, "--outdir", str(tmp_path / "out"), *argv]
            status = main(argv)
            out, err = capsys.readouterr()
        else:
            status, out, err = _replay(argv, tmp_path, capsys)
    else:
        status = main(["workload", KTH, *argv])
        out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert err == f"hdrm {command}: error: {message}\n"
    assert not (tmp_path / "out").exists() and not (tmp_path / "w.json").exists()
