"""The output folder of ``hdrm replay`` (and the DAG replays): locked while a replay runs, a
previous replay's outputs replaced with nothing stale left beside the new ones, other runs'
outputs refused unless ``--overwrite``, and nothing deleted when the replay fails.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hdrm.cli.main import main
from hdrm.launch.outdir import LOCK_NAME, claim_outdir, replay_outdir

DATA = Path(__file__).resolve().parents[2] / "hdrm" / "data"
# One processor: job 1 (user 1) runs 0-100 s, job 2 (user 2) 100-150 s.
LINES = ["1 0 0 100 1 -1 -1 1 200 -1 1 1 1 -1 -1 -1 -1 -1",
         "2 10 0 50 1 -1 -1 1 100 -1 1 2 1 -1 -1 -1 -1 -1"]


@pytest.fixture
def swf(tmp_path):
    path = tmp_path / "two.swf"
    path.write_text("; MaxProcs: 1\n" + "\n".join(LINES) + "\n")
    return str(path)


def _replay(swf, outdir, capsys, *argv):
    status = main(["replay", "--workload", swf, "--homogeneous-procs", "1", "--contention", "none",
                   "--policy", "fcfs", "--quiet", "--outdir", str(outdir), *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_a_folder_held_by_another_run_is_refused_in_one_line(swf, tmp_path, capsys):
    outdir = tmp_path / "out"
    held = claim_outdir(outdir)  # another run (a separate open file: flock conflicts in-process too)
    try:
        status, out, err = _replay(swf, outdir, capsys)
    finally:
        held.release()
    assert status == 2
    assert len(err.strip().splitlines()) == 1
    assert f"--outdir {outdir}: in use by another run (pid {os.getpid()}" in err
    assert not (outdir / "out_jobs.csv").exists()
    status, _, err = _replay(swf, outdir, capsys)  # released: the replay runs
    assert status == 0 and err == ""
    assert (outdir / "out_jobs.csv").is_file() and not (outdir / LOCK_NAME).exists()


def test_a_rerun_replaces_the_outputs_and_deletes_those_it_does_not_write(swf, tmp_path, capsys):
    outdir = tmp_path / "out"
    assert _replay(swf, outdir, capsys, "--tenants", "user")[0] == 0
    assert (outdir / "out_sla.csv").is_file()
    (outdir / "gantt.png").write_bytes(b"old plot")
    (outdir / "notes.txt").write_text("mine")  # not an hdrm output: never touched
    first = (outdir / "out_jobs.csv").read_bytes()
    status, _, err = _replay(swf, outdir, capsys)  # no tenants: no out_sla.csv this time
    assert status == 0
    assert err.strip() == (f"hdrm replay: note: removed a previous replay's outputs that this one "
                           f"does not write, from {outdir}: gantt.png, out_sla.csv")
    assert not (outdir / "out_sla.csv").exists() and not (outdir / "gantt.png").exists()
    assert (outdir / "notes.txt").read_text() == "mine"
    assert (outdir / "out_jobs.csv").read_bytes() == first
    status, _, err = _replay(swf, outdir, capsys)  # the same replay again: nothing to say
    assert status == 0 and err == ""


def test_outputs_of_another_kind_need_overwrite(swf, tmp_path, capsys):
    outdir = tmp_path / "out"
    outdir.mkdir()
    (outdir / "model.pt").write_bytes(b"a trained model")
    status, _, err = _replay(swf, outdir, capsys)
    assert status == 2 and len(err.strip().splitlines()) == 1
    assert "holds the outputs of a previous run (model.pt); give --overwrite" in err
    assert (outdir / "model.pt").read_bytes() == b"a trained model"
    assert not (outdir / "out_jobs.csv").exists()
    assert _replay(swf, outdir, capsys, "--overwrite")[0] == 0
    assert not (outdir / "model.pt").exists() and (outdir / "out_jobs.csv").is_file()


def test_a_failed_replay_deletes_nothing(tmp_path):
    outdir = tmp_path / "out"
    outdir.mkdir()
    (outdir / "out_sla.csv").write_text("previous")
    with pytest.raises(RuntimeError), replay_outdir(outdir):
        raise RuntimeError("the simulation failed")
    assert (outdir / "out_sla.csv").read_text() == "previous"
    assert not (outdir / LOCK_NAME).exists()
    with replay_outdir(outdir) as held:  # a replay that ends normally and rewrites nothing
        pass
    assert held.removed == [outdir / "out_sla.csv"] and not (outdir / "out_sla.csv").exists()


def test_batsim_engine_refuses_to_overwrite_an_input_in_the_folder(tmp_path, capsys):
    """Batsim's run writes workload.json (the selected jobs only) and platform.xml into --outdir:
    an input at that path was silently replaced by a 3-job copy before."""
    outdir = tmp_path / "out"
    outdir.mkdir()
    workload = outdir / "workload.json"
    platform = str(DATA / "example_platform.json")
    assert main(["workload", str(DATA / "example_workload.swf"), "--platform", platform,
                 "--json", str(workload)]) == 0
    before = workload.read_bytes()
    capsys.readouterr()
    status = main(["replay", "--engine", "batsim", "--platform", platform, "--workload",
                   str(workload), "--nb-jobs", "3", "--outdir", str(outdir), "--quiet"])
    err = capsys.readouterr().err
    assert status == 2 and len(err.strip().splitlines()) == 1
    assert f"--workload {workload}: --engine batsim writes its own workload.json" in err
    assert workload.read_bytes() == before


def test_a_failed_replay_into_a_new_folder_leaves_no_folder(tmp_path):
    outdir = tmp_path / "new"
    with pytest.raises(RuntimeError), replay_outdir(outdir):
        assert outdir.is_dir()
        raise RuntimeError("batsim not found")
    assert not outdir.exists()
