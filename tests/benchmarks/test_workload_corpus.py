"""benchmarks/workload_corpus.py: the pairs it picks, the checks it makes on out_jobs.csv, and a
small sweep on the built-in engine (the batsim rows say "skipped" without the binary)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import workload_corpus as wc

PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="z" routing="Full">
<host id="master_host" speed="1Gf"/><host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>
</zone></platform>
"""


def _inputs(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "w").mkdir()
    (tmp_path / "p").mkdir()
    jobs = [{"id": i, "subtime": i, "res": 1, "walltime": 100, "profile": "d"} for i in range(5)]
    (tmp_path / "w" / "test_delays.json").write_text(json.dumps(
        {"nb_res": 2, "jobs": jobs, "profiles": {"d": {"type": "delay", "delay": 3}}}))
    (tmp_path / "p" / "small_platform.xml").write_text(PLATFORM)
    (tmp_path / "p" / "cluster512.xml").write_text(PLATFORM)
    return tmp_path / "w", tmp_path / "p"


def test_batsim_test_pairs_and_the_default_platform(tmp_path):
    w, p = _inputs(tmp_path)
    (w / "mine.json").write_text((w / "test_delays.json").read_text())
    workloads, platforms = wc.files_in([str(w)], ".json"), wc.files_in([str(p)], ".xml")
    pairs = [(a.name, b.name) for a, b in wc.choose_pairs(workloads, platforms, "batsim-tests",
                                                          [])]
    # test_delays runs on Batsim's seven test platforms (two of them here); an unknown
    # workload on cluster512.xml
    assert pairs == [("mine.json", "cluster512.xml"), ("test_delays.json", "small_platform.xml"),
                     ("test_delays.json", "cluster512.xml")]
    assert len(wc.choose_pairs(workloads, platforms, "all", [])) == 4


def test_rows_missing_twice_or_inconsistent_are_reported(tmp_path):
    w, _ = _inputs(tmp_path)
    run = wc.Run(w / "test_delays.json", Path("p.xml"), "builtin", "fcfs", "none")
    header = ("job_id,submission_time,final_state,starting_time,execution_time,finish_time,"
              "waiting_time\n")
    rows = [f"{i},{i},COMPLETED_SUCCESSFULLY,{i},3,{i + 3},0\n" for i in range(5)]
    (tmp_path / "out_jobs.csv").write_text(header + "".join(rows))
    assert wc.check_rows(run, tmp_path) == "" and len(run.rows) == 5
    (tmp_path / "out_jobs.csv").write_text(header + "".join(rows[:4]) + rows[0])
    assert wc.check_rows(run, tmp_path) == "rows 5/5 (missing ['4'], twice ['0'])"
    (tmp_path / "out_jobs.csv").write_text(header + "".join(rows[:4])
                                           + "4,4,COMPLETED_SUCCESSFULLY,4,3,8,0\n")
    assert wc.check_rows(run, tmp_path) == "job 4: start 4.0 + execution 3.0 != finish 8.0"


def test_a_builtin_sweep_without_the_binary(tmp_path, capsys):
    w, p = _inputs(tmp_path)
    assert wc.main(["--workloads", str(w), "--platforms", str(p / "small_platform.xml"),
                    "--quick", "--batsim", "none", "--outdir", str(tmp_path / "out")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split("\t")[:7] == ["test_delays.json", "small_platform.xml",
                                        "first-high_gflops", "none", "skipped", "ok", "-"]
    assert lines[-1] == "# ok 1, skipped 1"
