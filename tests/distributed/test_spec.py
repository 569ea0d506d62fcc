"""Sweep files: validation errors (file, JSON path, value, fix) and the grid they expand to."""

from __future__ import annotations

import json

import pytest

from hdrm.distributed.spec import RunSpec, expand, grid_size, load_sweep
from hdrm.errors import ConfigError
from hdrm.policies.pairs import ALL_PAIRS

from .helpers import HETERO, KTH, SDSC, TINY, write_sweep


def test_grid_is_the_cross_product_in_axis_order(tmp_path):
    path = write_sweep(tmp_path, policies=["sjf", "fcfs"], backfill=["easy"],
                       decision=["event", "commit"], platforms=[str(TINY), str(HETERO)],
                       traces=[str(SDSC), str(KTH)], load_factors=[1, 1.5], seeds=[3, 0])
    runs = expand(load_sweep(path))
    assert grid_size(load_sweep(path)) == len(runs) == 2 * 1 * 2 * 2 * 2 * 2 * 2
    first = runs[0]
    assert (first.policy, first.backfill, first.decision, first.platform, first.trace,
            first.load_factor, first.seed) == ("sjf", "easy", "event", str(TINY), str(SDSC), 1.0, 3)
    assert (runs[1].seed, runs[2].load_factor, runs[4].trace, runs[8].platform,
            runs[16].decision, runs[32].policy) == (0, 1.5, str(KTH), str(HETERO), "commit", "fcfs")
    keys = {(r.policy, r.decision, r.platform, r.trace, r.load_factor, r.seed) for r in runs}
    assert len(keys) == len(runs)  # every point once
    assert len({r.name for r in runs}) == len(runs)  # one folder each
    assert all(r.nb_jobs == 30 and r.contention == "hdeeprm" for r in runs)


def test_all_pairs_expands_to_the_36_pairs_without_repeats(tmp_path):
    path = write_sweep(tmp_path, policies=["shortest-high_gflops", "all-pairs", "fcfs"],
                       backfill=["none"], seeds=[0])
    policies = [r.policy for r in expand(load_sweep(path))]
    assert policies == ["shortest-high_gflops"] + [p for p in ALL_PAIRS
                                                   if p != "shortest-high_gflops"] + ["fcfs"]
    assert len(policies) == 37


def test_a_sample_is_seeded_in_grid_order_and_without_repeats(tmp_path):
    grid = expand(load_sweep(write_sweep(tmp_path, policies=["all-pairs"])))
    picked = expand(load_sweep(write_sweep(tmp_path, policies=["all-pairs"],
                                           sample={"size": 10, "seed": 7})))
    again = expand(load_sweep(write_sweep(tmp_path, policies=["all-pairs"],
                                          sample={"size": 10, "seed": 7})))
    other = expand(load_sweep(write_sweep(tmp_path, policies=["all-pairs"],
                                          sample={"size": 10, "seed": 8})))
    assert len(grid) == 36 * 2 * 2 and len(picked) == 10 == len(set(picked))
    assert picked == again and picked != other
    positions = [grid.index(run) for run in picked]
    assert positions == sorted(positions)


def test_relative_paths_resolve_against_the_sweep_file(tmp_path):
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "trace.swf").write_bytes(SDSC.read_bytes())
    path = write_sweep(folder, traces=["trace.swf"], platforms=[str(HETERO)])
    assert {r.trace for r in expand(load_sweep(path))} == {str(folder / "trace.swf")}


def test_the_run_name_shows_the_grid_values_and_the_digest_every_setting():
    run = RunSpec("fcfs", "easy", "event", "/p/hetero.json", "/w/lublin_256.swf.gz", 1.5, 2)
    assert run.name == f"fcfs_easy_event_hetero_lublin_256_x1.5_s2_{run.digest()[:8]}"
    other = RunSpec("fcfs", "easy", "event", "/p/hetero.json", "/w/lublin_256.swf.gz", 1.5, 2,
                    nb_jobs=10)
    assert other.digest() != run.digest() and other.name != run.name


@pytest.mark.parametrize("change, message", [
    ({"policies": ["fcfs", "shortst-high_gflops"]},
     r"sweep.json: policies: \[1\] \"shortst-high_gflops\": unknown policy "
     r"'shortst-high_gflops'; did you mean 'shortest-high_gflops'.* or 'all-pairs' for the 36"),
    ({"backfill": ["easy", "conservativ"]},
     r"sweep.json: backfill\[1\]: unknown value \"conservativ\"; did you mean 'conservative'\?"),
    ({"seeds": [0, -1]}, r"sweep.json: seeds\[1\]: expected an integer >= 0.*got -1"),
    ({"seeds": [1, 1]}, r"sweep.json: seeds: 1 is listed twice; list each value once"),
    ({"load_factors": [0]}, r"sweep.json: load_factors\[0\]: expected a number > 0.*got 0"),
    ({"traces": ["nope.swf"]}, r"sweep.json: traces: \[0\] \".*/nope.swf\": no such file; "
                               r"paths are relative to the sweep file"),
    ({"policies": []}, r"sweep.json: policies: expected a non-empty list, got \[\]"),
    ({"seed": [0]}, r"sweep.json: seed: unknown key; did you mean 'seeds'\?"),
    ({"contention": "hdeprm"}, r"sweep.json: contention: unknown contention model 'hdeprm'"),
    ({"sample": {"size": 9}}, r"sweep.json: sample.size: 9 runs asked, but the grid has only 8; "
                              r"ask for at most 8, or drop 'sample'"),
])
def test_bad_sweep_files_name_the_path_the_value_and_the_fix(tmp_path, change, message):
    with pytest.raises(ConfigError, match=message):
        load_sweep(write_sweep(tmp_path, **change))


def test_a_missing_key_and_bad_json_are_one_line_errors(tmp_path):
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps({"policies": ["fcfs"], "traces": [str(SDSC)]}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"sweep.json: platforms: missing required key"):
        load_sweep(path)
    path.write_text('{"policies": ["fcfs"],\n "seeds": [0,]}', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"sweep.json:2:.*invalid JSON"):
        load_sweep(path)
