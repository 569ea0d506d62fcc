"""``hdrm sweep`` without Ray: the grid's runs equal ``hdrm replay``, the table is ``hdrm
compare``'s, backends agree, an interrupted sweep resumes, and Ray options without Ray fail in one
line naming the extra."""

from __future__ import annotations

import csv
import json
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import hdrm.distributed.sweep as sweep_module
from hdrm.cli.main import main
from hdrm.distributed import RAY_MISSING
from hdrm.distributed.runner import DONE_FILE, SCRATCH_PREFIX
from hdrm.distributed.spec import expand, load_sweep
from hdrm.distributed.sweep import run_sweep
from hdrm.errors import ConfigError
from hdrm.results.compare import compare_rows, format_csv

from .helpers import ROOT, SDSC, TINY, outputs, write_sweep


@pytest.fixture
def no_ray(monkeypatch):
    """Behave as if Ray were not installed."""
    monkeypatch.setattr(sweep_module, "ray_installed", lambda: False)


def _column(path: Path, name: str) -> list[float]:
    with open(path, newline="", encoding="utf-8") as handle:
        return [float(row[name]) for row in csv.DictReader(handle)]


def test_each_run_equals_hdrm_replay_and_the_table_is_hdrm_compare(tmp_path, capsys):
    path = write_sweep(tmp_path, policies=["shortest-high_gflops"], backfill=["easy"],
                       seeds=[1], load_factors=[1, 2])
    report = run_sweep(path, tmp_path / "out", backend="serial", progress=False)
    assert (report.nb_runs, report.nb_run, report.nb_skipped) == (2, 2, 0)
    run, faster = expand(load_sweep(path))
    folder = tmp_path / "out" / "runs" / run.name
    assert main(["replay", "--platform", str(run.platform), "--workload", str(SDSC),
                 "--nb-jobs", "30", "--policy", "shortest-high_gflops", "--backfill", "easy",
                 "--seed", "1", "--outdir", str(tmp_path / "replay")]) == 0
    capsys.readouterr()
    for name in ("out_jobs.csv", "out_timeline.csv", "overutilizations.json"):
        assert (folder / name).read_bytes() == (tmp_path / "replay" / name).read_bytes(), name
    # load factor 2: the same jobs, submitted at half the times
    jobs, fast_jobs = folder / "out_jobs.csv", tmp_path / "out" / "runs" / faster.name / "out_jobs.csv"
    assert _column(fast_jobs, "job_id") == _column(jobs, "job_id")
    assert _column(fast_jobs, "submission_time") == pytest.approx(
        [t / 2 for t in _column(jobs, "submission_time")], abs=1e-5)
    table = (tmp_path / "out" / "results.csv").read_text(encoding="utf-8")
    assert table == format_csv(compare_rows([folder, fast_jobs.parent], allow_mismatch=True))
    assert table.splitlines()[1].startswith(f"{run.name},30,")
    done = json.loads((folder / DONE_FILE).read_text(encoding="utf-8"))
    assert done["digest"] == run.digest() and done["run"]["seed"] == 1


def test_serial_and_processes_give_identical_results(tmp_path, no_ray):
    path = write_sweep(tmp_path)
    serial = run_sweep(path, tmp_path / "serial", progress=False)
    processes = run_sweep(path, tmp_path / "processes", max_parallel=2, progress=False)
    assert (serial.backend, processes.backend, processes.parallel) == ("serial", "processes", 2)
    first, second = outputs(tmp_path / "serial"), outputs(tmp_path / "processes")
    assert len([k for k in first if k.endswith("out_jobs.csv")]) == 8
    assert first == second
    rows = (tmp_path / "serial" / "results.csv").read_text(encoding="utf-8").splitlines()
    assert [r.split(",")[0] for r in rows[1:]] == [r.name for r in expand(load_sweep(path))]


def test_a_killed_sweep_resumes_and_skips_the_finished_runs(tmp_path):
    path = write_sweep(tmp_path, nb_jobs=120)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "hdrm.cli.main", "sweep", str(path), "--outdir", str(out),
               "--backend", "serial"]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    for line in proc.stderr:
        if line.startswith("hdrm sweep: [3/8]"):
            os.kill(proc.pid, signal.SIGKILL)
            break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    finished = sorted(p.name for p in (out / "runs").iterdir() if not p.name.startswith("."))
    assert 3 <= len(finished) < 8
    assert all((out / "runs" / name / DONE_FILE).is_file() for name in finished)
    before = {n: (out / "runs" / n / DONE_FILE).stat().st_mtime_ns for n in finished}
    (out / "runs" / f"{SCRATCH_PREFIX}half-written").mkdir()  # as a run killed while writing
    report = run_sweep(path, out, backend="serial", progress=False)
    assert (report.nb_skipped, report.nb_run) == (len(finished), 8 - len(finished))
    assert before == {n: (out / "runs" / n / DONE_FILE).stat().st_mtime_ns for n in finished}
    assert not list((out / "runs").glob(f"{SCRATCH_PREFIX}*"))
    run_sweep(path, tmp_path / "clean", backend="serial", progress=False)
    assert outputs(out) == outputs(tmp_path / "clean")
    again = run_sweep(path, out, backend="serial", progress=False)
    assert (again.nb_skipped, again.nb_run, again.backend) == (8, 0, "none")


def test_a_folder_of_another_run_under_the_same_name_is_refused(tmp_path):
    path = write_sweep(tmp_path, policies=["fcfs"], backfill=["none"], seeds=[0])
    run_sweep(path, tmp_path / "out", backend="serial", progress=False)
    (run,) = expand(load_sweep(path))
    marker = tmp_path / "out" / "runs" / run.name / DONE_FILE
    marker.write_text('{"digest": "0"}', encoding="utf-8")
    with pytest.raises(ConfigError, match=f"{marker}: records other settings than run "
                                          f"{run.name}; remove that folder"):
        run_sweep(path, tmp_path / "out", backend="serial", progress=False)


def test_without_ray_the_sweep_runs_serially_with_a_note(tmp_path, no_ray, caplog):
    path = write_sweep(tmp_path, policies=["fcfs"], seeds=[0])
    with caplog.at_level(logging.WARNING, logger="hdrm.distributed.sweep"):
        report = run_sweep(path, tmp_path / "out", progress=False)
    assert report.backend == "serial" and report.nb_run == 2
    assert "Ray is not installed: running the sweep in this process" in caplog.text


@pytest.mark.parametrize("argv", [["--address", "auto"], ["--backend", "ray"]])
def test_ray_options_without_ray_are_one_line_naming_the_extra(tmp_path, no_ray, capsys, argv):
    path = write_sweep(tmp_path)
    assert main(["sweep", str(path), "--outdir", str(tmp_path / "out"), *argv]) == 2
    err = capsys.readouterr().err
    assert err == f"hdrm sweep: error: {RAY_MISSING}\n"
    assert "'distributed' extra" in err and "hdrm[distributed]" in err
    assert not (tmp_path / "out").exists()


def test_the_command_prints_progress_lines_and_where_the_table_is(tmp_path, capsys):
    path = write_sweep(tmp_path, policies=["fcfs"], backfill=["easy"], platforms=[str(TINY)])
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--outdir", str(out), "--backend", "serial"]) == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert [line.split("] ")[0] for line in lines] == ["hdrm sweep: [1/2", "hdrm sweep: [2/2"]
    assert captured.out.splitlines()[0].startswith(
        "hdrm sweep: 2 runs (0 already done, 2 run now on serial, 1 at a time) in ")
    assert f"table: {out / 'results.md'} and {out / 'results.csv'}" in captured.out
    assert main(["sweep", str(path), "--outdir", str(out), "--backend", "serial"]) == 0
    assert "2 runs (2 already done, 0 run now nothing left to run)" in capsys.readouterr().out


def test_bad_arguments(tmp_path):
    path = write_sweep(tmp_path)
    with pytest.raises(ConfigError, match="--max-parallel: expected a number >= 1, got 0"):
        run_sweep(path, tmp_path / "out", max_parallel=0)
    with pytest.raises(ConfigError, match="--address: joins a Ray cluster, but --backend is serial"):
        run_sweep(path, tmp_path / "out", backend="serial", address="auto")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="--outdir: cannot create the folder"):
        run_sweep(path, tmp_path / "file" / "out", backend="serial")


def test_nothing_imports_ray_until_a_ray_backend_runs(tmp_path):
    path = write_sweep(tmp_path, policies=["fcfs"], backfill=["none"], seeds=[0])
    probe = ("import sys\n"
             "from hdrm.cli.main import main\n"
             "import hdrm.distributed.ray_backend, hdrm.distributed.sweep\n"
             f"assert main(['sweep', {str(path)!r}, '--outdir', {str(tmp_path / 'out')!r}, "
             "'--backend', 'processes', '--quiet']) == 0\n"
             "assert 'ray' not in sys.modules, 'ray was imported'\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_table_row_is_measured_by_the_run_and_recomputed_when_missing(tmp_path):
    from hdrm.distributed.runner import table_row

    path = write_sweep(tmp_path, policies=["sjf"], backfill=["easy"], seeds=[2])
    run_sweep(path, tmp_path / "out", backend="serial", progress=False)
    (run,) = expand(load_sweep(path))
    runs_dir = tmp_path / "out" / "runs"
    marker = runs_dir / run.name / DONE_FILE
    stored = json.loads(marker.read_text(encoding="utf-8"))
    recomputed = compare_rows([runs_dir / run.name])[0]
    assert stored["row"] == recomputed == table_row(run, runs_dir)
    del stored["row"]  # a done.json written without the row (an older hdrm)
    marker.write_text(json.dumps(stored), encoding="utf-8")
    assert table_row(run, runs_dir) == recomputed


def _stop_after_runs(monkeypatch, count: int) -> None:
    """The serial backend stops (as Ctrl-C would) once ``count`` runs of the call are done."""
    real = sweep_module.run_serial

    def stopping(runs, runs_dir, on_done):
        real(runs[:count], runs_dir, on_done)
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_module, "run_serial", stopping)


def test_a_stopped_sweep_leaves_no_table_of_other_runs(tmp_path, monkeypatch):
    """A sweep stopped midway in the folder of another, finished sweep leaves no results table:
    the previous sweep's results.csv/results.md (2 runs) stayed beside the new sweep.json and
    index.csv (8 runs), read as the new sweep's complete table. The same sweep then resumes to
    the table of an uninterrupted sweep."""
    out = tmp_path / "out"
    first = tmp_path / "first"
    first.mkdir()
    run_sweep(write_sweep(first, policies=["fcfs"], backfill=["none"]), out, backend="serial",
              progress=False)
    assert len(_column(out / "results.csv", "makespan_s")) == 2
    path = write_sweep(tmp_path, nb_jobs=40)
    _stop_after_runs(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(path, out, backend="serial", progress=False)
    assert not (out / "results.csv").exists() and not (out / "results.md").exists()
    assert (out / "sweep.json").read_bytes() == path.read_bytes()
    assert len((out / "index.csv").read_text().splitlines()) == 9
    monkeypatch.undo()
    report = run_sweep(path, out, backend="serial", progress=False)
    assert (report.nb_skipped, report.nb_run) == (3, 5)
    run_sweep(path, tmp_path / "clean", backend="serial", progress=False)
    for name in ("results.csv", "results.md", "index.csv"):
        assert (out / name).read_bytes() == (tmp_path / "clean" / name).read_bytes()


def test_a_finished_sweeps_table_stays_when_its_rerun_is_stopped(tmp_path, monkeypatch):
    """Rerunning a finished sweep runs nothing: a stop while it writes its table again keeps
    the table (the same runs')."""
    path = write_sweep(tmp_path, nb_jobs=40)
    out = tmp_path / "out"
    run_sweep(path, out, backend="serial", progress=False)
    table = (out / "results.csv").read_bytes(), (out / "results.md").read_bytes()

    def stop(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_module, "format_markdown", stop)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(path, out, backend="serial", progress=False)
    assert ((out / "results.csv").read_bytes(), (out / "results.md").read_bytes()) == table
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
