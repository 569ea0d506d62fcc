"""The output folder of a launch: the lock, previous outputs and ``--overwrite``, leftover temp files."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hdrm.errors import ConfigError
from hdrm.launch.outdir import LOCK_NAME, OUTPUT_NAMES, claim_outdir, remove_stale_temps


def dead_pid() -> int:
    """The pid of a process that has ended."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait(timeout=30)
    return process.pid


def test_the_lock_file_holds_the_owner_pid_and_goes_with_the_run(tmp_path):
    claim = claim_outdir(tmp_path / "run")
    assert (tmp_path / "run" / LOCK_NAME).read_text() == f"{os.getpid()}\n"
    with pytest.raises(ConfigError) as caught:
        claim_outdir(tmp_path / "run")
    assert str(caught.value) == (
        f"--outdir {tmp_path / 'run'}: in use by another run (pid {os.getpid()}, lock file "
        f"{tmp_path / 'run' / LOCK_NAME}); wait for it to end or give another folder")
    claim.release()
    assert not (tmp_path / "run" / LOCK_NAME).exists()
    claim_outdir(tmp_path / "run").release()  # free again


def test_a_dead_owners_lock_is_taken_over_and_named(tmp_path):
    pid = dead_pid()
    (tmp_path / LOCK_NAME).write_text(f"{pid}\n")
    claim = claim_outdir(tmp_path)
    assert claim.stale_pid == pid
    assert (tmp_path / LOCK_NAME).read_text() == f"{os.getpid()}\n"
    claim.release()


def test_previous_outputs_are_refused_then_cleared_by_overwrite_leaving_other_files(tmp_path):
    for name in ("episodes.csv", "out_jobs.csv", "model.pt", "gantt.png", "notes.txt", "my.csv"):
        (tmp_path / name).write_text("x")
    (tmp_path / "tensorboard").mkdir()
    (tmp_path / "tensorboard" / "events").write_text("x")
    (tmp_path / "data").mkdir()
    with pytest.raises(ConfigError) as caught:
        claim_outdir(tmp_path)
    assert str(caught.value) == (
        f"--outdir {tmp_path}: holds the outputs of a previous run (episodes.csv, gantt.png, "
        "model.pt, out_jobs.csv, tensorboard); give --overwrite to replace them (files hdrm does "
        "not write are kept) or another folder")
    assert not (tmp_path / LOCK_NAME).exists()  # a refusal releases the lock
    claim = claim_outdir(tmp_path, overwrite=True, keep=(tmp_path / "model.pt",))
    assert [p.name for p in claim.removed_outputs] == ["episodes.csv", "gantt.png", "out_jobs.csv",
                                                       "tensorboard"]
    claim.release()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "model.pt", "my.csv", "notes.txt"]


def test_only_dead_processes_temp_files_are_removed(tmp_path):
    pid = dead_pid()
    stale = tmp_path / f".model.pt.{pid}.k2j_x9.tmp"
    stale.write_bytes(b"x" * 1000)
    live = tmp_path / f".model.pt.{os.getpid()}.abc.tmp"
    live.write_bytes(b"y")
    other = tmp_path / ".notes.tmp"
    other.write_bytes(b"z")
    assert remove_stale_temps(tmp_path) == [(stale, 1000)]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name])


def test_every_launch_output_is_a_known_name(tmp_path):
    from hdrm.launch.logs import RunLog

    names = {"episodes.csv", "actions.csv", "out_jobs.csv", "out_schedule.csv", "out_timeline.csv",
             "overutilizations.json", "model.pt", "tensorboard", "batsim.log", "learning.png"}
    assert names <= OUTPUT_NAMES
    log = RunLog(tmp_path, ["a"])
    assert {log.episodes_path.name, log.actions_path.name} <= OUTPUT_NAMES
