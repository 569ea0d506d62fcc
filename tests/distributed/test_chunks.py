"""Sweep runs in chunks per Ray task (hdrm.distributed.ray_backend.chunk_size and run_chunk,
played here in-process: no Ray needed): chunk sizes by hand, a retried chunk skips its finished
runs, a failing run ends its chunk."""

from __future__ import annotations

import json

from hdrm.distributed.ray_backend import MAX_CHUNK, chunk_size, run_chunk
from hdrm.distributed.runner import DONE_FILE, execute_reporting
from hdrm.distributed.spec import expand, load_sweep
from hdrm.distributed.sweep import index_csv, run_sweep, write_table

from .helpers import outputs, write_sweep


def test_chunk_sizes_shrink_so_the_workers_finish_together():
    assert MAX_CHUNK == 32
    assert chunk_size(360, 2) == 32  # 360 / 8 = 45, capped
    assert chunk_size(100, 2) == 12  # 100 // (4 x 2)
    assert chunk_size(15, 2) == 1 and chunk_size(8, 2) == 1 and chunk_size(1, 2) == 1
    assert chunk_size(16, 2) == 2 and chunk_size(40, 1) == 10
    left, sizes = 360, []
    while left:
        sizes.append(chunk_size(left, 2))
        left -= sizes[-1]
    # by hand: 4 x 32, then 232 // 8 = 29, 203 // 8 = 25 ... 17 // 8 = 2, then 15 runs of one
    assert sizes == [32] * 4 + [29, 25, 22, 19, 17, 15, 13, 11, 10, 8, 7, 7, 6, 5, 4, 4, 3, 3,
                                3, 2, 2, 2] + [1] * 15  # 41 tasks for 360 runs


def test_a_chunk_plays_its_runs_in_order_with_the_outputs_of_single_runs(tmp_path):
    path = write_sweep(tmp_path, seeds=[0, 1, 2])
    runs = expand(load_sweep(path))  # 12 runs
    out = tmp_path / "chunks"
    (out / "runs").mkdir(parents=True)
    results = run_chunk(runs[:7], str(out / "runs")) + run_chunk(runs[7:], str(out / "runs"))
    assert [r["name"] for r in results] == [run.name for run in runs]
    write_table(runs, out)
    (out / "index.csv").write_text(index_csv(runs), encoding="utf-8")
    run_sweep(path, tmp_path / "serial", backend="serial", progress=False)
    assert outputs(out) == outputs(tmp_path / "serial")


def test_a_retried_chunk_skips_the_runs_its_dead_worker_finished(tmp_path):
    runs = expand(load_sweep(write_sweep(tmp_path)))[:3]
    runs_dir = tmp_path / "runs"
    runs_dir.mkdir()
    execute_reporting(runs[1], runs_dir)  # the first try finished this one, then died
    recorded = json.loads((runs_dir / runs[1].name / DONE_FILE).read_text(encoding="utf-8"))
    played = []

    def play(run, folder):
        played.append(run.name)
        return execute_reporting(run, folder)

    results = run_chunk(runs, str(runs_dir), play)
    assert played == [runs[0].name, runs[2].name]
    assert results[1] == {"name": runs[1].name, "wall_s": recorded["wall_s"],
                          "cpu_s": recorded["cpu_s"]}
    assert [r["name"] for r in results] == [run.name for run in runs]


def test_a_failing_run_ends_its_chunk(tmp_path):
    runs = expand(load_sweep(write_sweep(tmp_path)))[:4]
    played = []

    def play(run, folder):
        played.append(run.name)
        if len(played) == 2:
            return {"name": run.name, "error_class": "WorkloadError", "error": "bad line"}
        return {"name": run.name, "wall_s": 0.0, "cpu_s": 0.0}

    results = run_chunk(runs, str(tmp_path), play)
    assert played == [runs[0].name, runs[1].name]  # runs 3 and 4 not started
    assert results[-1]["error"] == "bad line" and len(results) == 2
