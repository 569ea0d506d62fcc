"""A run folder: finding files (Batsim prefixes included), errors naming the missing file, the
number of cores and the energy from whichever file knows it."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from hdrm.errors import ConfigError
from hdrm.results.csvio import write_jobs_csv
from hdrm.results.example import example_jobs
from hdrm.results.run import Run

from .golden import GOLDEN, needs_golden


def test_missing_folder(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"run folder .*nowhere does not exist"):
        Run(tmp_path / "nowhere")
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match=r"run folder .*file is not a folder"):
        Run(tmp_path / "file")


def test_missing_file_lists_what_is_there(tmp_path: Path):
    write_jobs_csv(example_jobs(), tmp_path / "out_jobs.csv")
    run = Run(tmp_path)
    with pytest.raises(ConfigError, match=r"has no episodes.csv \(needed for per-episode learning "
                                          r"results\); files there: out_jobs.csv"):
        run.episodes()
    with pytest.raises(ConfigError, match=r"has no overutilizations.json \(needed for contention"):
        run.overutilizations()
    assert run.overutilizations_or_none() is None
    assert run.schedule() is None


def test_empty_folder_has_no_jobs(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"has no out_jobs.csv \(needed for job results\); files "
                                          r"there: none"):
        Run(tmp_path).jobs()


def test_other_batsim_prefix_is_found(tmp_path: Path):
    write_jobs_csv(example_jobs(), tmp_path / "expe_jobs.csv")
    run = Run(tmp_path)
    assert run.file("out_jobs.csv") == tmp_path / "expe_jobs.csv"
    assert len(run.jobs()) == 5
    write_jobs_csv(example_jobs(), tmp_path / "other_jobs.csv")
    assert Run(tmp_path).file("out_jobs.csv") is None  # two candidates: ambiguous


def test_example_run(example_run: Path):
    run = Run(example_run, label="ex")
    assert run.label == "ex" and Run(example_run).label == "example"
    assert run.nb_resources() == 4
    assert run.energy_j() == 10240.0  # the timeline's last energy, idle power included
    assert not run.timeline().derived
    summary = run.summary()
    assert summary["consumed_joules"] == 10240.0 and summary["mean_waiting_time"] == 4.2


def test_energy_and_cores_without_timeline_or_schedule(example_run: Path):
    (example_run / "out_timeline.csv").unlink()
    run = Run(example_run)
    assert run.energy_j() == 10240.0  # from out_schedule.csv
    assert run.timeline().derived
    (example_run / "out_schedule.csv").unlink()
    run = Run(example_run)
    assert run.energy_j() == 10000.0  # the jobs' own energy
    assert run.nb_resources() == 4  # highest allocated core + 1


@needs_golden
def test_batsim_without_energy_has_unknown_energy():
    run = Run(GOLDEN / "small_delays/fillerSched")
    assert math.isnan(run.energy_j())
    assert math.isnan(run.summary()["consumed_joules"])
    assert run.nb_resources() == 4
    assert Run(GOLDEN / "pstate_slowdown/pstateDemo").energy_j() == 10400.0


@needs_golden
def test_files_are_read_once(tmp_path: Path):
    shutil.copy(GOLDEN / "small_delays/fillerSched/out_jobs.csv", tmp_path / "out_jobs.csv")
    run = Run(tmp_path)
    first = run.jobs()
    (tmp_path / "out_jobs.csv").unlink()
    assert run.jobs() is first
