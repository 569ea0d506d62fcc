"""bench_serve_energy: one seeded session with and without -E, timed and hashed; bad options are
one-line errors."""

from __future__ import annotations

import json

import pytest

from benchmarks import bench_serve_energy as bench


def test_a_tiny_run_times_both_cases_and_hashes_the_same_files_each_repeat(tmp_path, capsys):
    out = tmp_path / "figures.json"
    assert bench.main(["--jobs", "40", "--hosts", "4", "--repeat", "2", "--json", str(out),
                       "--keep", str(tmp_path / "keep")]) == 0
    text = capsys.readouterr().out
    assert "warning" not in text and "target -E CPU <= 1.15 x without -E: " in text
    figures = json.loads(out.read_text())
    plain, energy = figures["without -E"], figures["-E"]
    assert len(plain["serve_cpu_s"]) == len(energy["serve_cpu_s"]) == 2
    assert figures["ratio"] == pytest.approx(energy["median_s"] / plain["median_s"])
    assert set(energy["hashes"]) - set(plain["hashes"]) == {"out_consumed_energy.csv",
                                                             "out_pstate_changes.csv"}
    assert energy["hdrm"] == str(bench.ROOT / "hdrm" / "__init__.py")  # (not another copy)
    rows = (tmp_path / "keep" / "energy" / "out_consumed_energy.csv").read_text().splitlines()
    assert rows[0] == "time,energy,event_type,wattmin,epower" and len(rows) == 1 + 2 * 40


def test_the_workload_is_seeded_and_sorted_by_submission(tmp_path):
    a = json.loads(bench.write_workload(tmp_path / "a.json", 30, 2, 7, "compute").read_text())
    b = json.loads(bench.write_workload(tmp_path / "b.json", 30, 2, 7, "compute").read_text())
    assert a == b and a["nb_res"] == 2
    subs = [j["subtime"] for j in a["jobs"]]
    assert subs == sorted(subs) and max(j["res"] for j in a["jobs"]) <= 2
    assert {p["type"] for p in a["profiles"].values()} == {"parallel_homogeneous"}
    assert bench.format_resources([0, 1, 2, 5, 7, 8]) == "0-2 5 7-8"  # the allocs it sends


def test_a_folder_without_hdrm_is_refused_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        bench.main(["--source", str(tmp_path)])
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"bench_serve_energy.py: error: --source {tmp_path}: no hdrm package there "
        "(no hdrm/__init__.py)")
