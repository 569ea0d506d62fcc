"""``hdrm workload``: summary on stdout, Batsim JSON output, one-line errors with exit status 2."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from hdrm.cli import workload_cmd
from hdrm.cli.main import main
from hdrm.platform.loader import load_platform
from hdrm.platform.model import Platform
from hdrm.workload.batsim_json import read_batsim_json

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "workloads"
SDSC = str(EXAMPLES / "SDSC-SP2-1998-4.2-cln_first500.swf")
LUBLIN = str(EXAMPLES / "lublin_256_first500.swf")
SMALL_VARIOUS = Path(__file__).resolve().parents[3] / "shared" / "batsim" / "golden" / "small_various" / "workload.json"


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    status = main(["workload", *argv])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_summary_with_honest_skip_counts(capsys):
    status, out, err = run([SDSC], capsys)
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[:4] == ["workload        SDSC-SP2-1998-4.2-cln_first500", "jobs kept       468",
                         "jobs skipped    32", "  run time unknown (< 0)      32"]
    assert "cores           128" in lines and "max processors  100" in lines


def test_selection_options(capsys):
    status, out, _ = run([LUBLIN, "--start-index", "10", "--nb-jobs", "100"], capsys)
    assert status == 0
    assert "workload        lublin_256_first500[10:110]" in out and "jobs kept       100" in out
    status, out, _ = run([LUBLIN, "--nb-jobs", "20", "--conventions", "rlscheduler"], capsys)
    assert status == 0 and "jobs kept       20" in out
    status, out, _ = run([LUBLIN, "--start-index", "490"], capsys)
    assert status == 0 and "jobs kept       10" in out


def test_load_factor_scales_the_selection(tmp_path, capsys):
    base, heavier = tmp_path / "base.json", tmp_path / "heavier.json"
    run([LUBLIN, "--nb-jobs", "50", "--json", str(base)], capsys)
    status, out, _ = run([LUBLIN, "--nb-jobs", "50", "--load-factor", "2.5", "--json",
                          str(heavier)], capsys)
    assert status == 0 and "workload        lublin_256_first500[:50]x2.5" in out
    a, b = read_batsim_json(base), read_batsim_json(heavier)
    assert [j.submit_s / 2.5 for j in a.jobs] == pytest.approx([j.submit_s for j in b.jobs])
    assert [j.run_time_s for j in a.jobs] == [j.run_time_s for j in b.jobs]


def test_json_without_platform_keeps_delay_profiles(tmp_path, capsys):
    out_json = tmp_path / "w.json"
    status, out, _ = run([LUBLIN, "--nb-jobs", "30", "--json", str(out_json)], capsys)
    assert status == 0 and f"wrote {out_json}: 30 jobs" in out
    workload = read_batsim_json(out_json)
    assert len(workload) == 30 and workload.nb_res == 256
    assert {j.profile_type for j in workload.jobs} == {"delay"}
    assert workload.jobs[0].submit_s == 0.0


def test_platform_sets_cores_and_requirements(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(workload_cmd, "load_platform",
                        lambda path: Platform.homogeneous(512, gflops=2.0))
    out_json = tmp_path / "w.json"
    argv = [SDSC, "--platform", "p.json", "--nb-jobs", "50", "--json", str(out_json),
            "--seed", "4", "--bw", "constant:6"]
    status, out, _ = run(argv, capsys)
    assert status == 0
    assert "cores           512" in out and "reference speed 2 GFLOP/s per core (p.json)" in out
    workload = read_batsim_json(out_json)
    assert workload.nb_res == 512
    assert all(j.ops_gflop == j.run_time_s * 2.0 for j in workload.jobs)
    assert {j.mem_bw_gbps for j in workload.jobs} == {6.0}


def test_same_seed_same_json(tmp_path, capsys):
    platform = str(ROOT / "platforms" / "tiny_hetero.json")
    for name in ("a.json", "b.json"):
        run([LUBLIN, "--platform", platform, "--nb-jobs", "40", "--seed", "9",
             "--json", str(tmp_path / name)], capsys)
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()


@pytest.mark.skipif(not SMALL_VARIOUS.is_file(), reason="no Batsim golden files")
def test_batsim_json_input_warns_about_unsupported_profiles(capsys):
    status, out, _ = run([str(SMALL_VARIOUS)], capsys)
    assert status == 0
    assert "warning         2 jobs with unsupported profile type 'parallel'" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["/no/such/trace.swf"], r"/no/such/trace\.swf: no such file; give the path of an SWF"),
        ([LUBLIN, "--conventions", "rlsched"], r"--conventions: unknown SWF convention set "
                                               r"'rlsched'; did you mean 'rlscheduler'\?"),
        ([LUBLIN, "--start-index", "499", "--nb-jobs", "5"],
         r"cannot take 5 jobs from index 499: the workload has 500 jobs \(valid start indices: "
         r"0\.\.495\)"),
        ([LUBLIN, "--nb-jobs", "-3"], r"number of jobs must be a positive integer, or 0 for all "
                                      r"the jobs from the start index; got -3"),
        ([LUBLIN, "--start-index", "500"], r"start index 500 is outside the workload's 500 jobs "
                                           r"\(valid start indices: 0\.\.499\)"),
        ([LUBLIN, "--load-factor", "-1"], r"load factor must be a finite number > 0"),
        ([LUBLIN, "--platform", str(ROOT / "platforms" / "tiny4.json"), "--json", "x.json",
          "--bw", "gauss:3"], r"unknown kind 'gauss'"),
    ],
)
def test_errors_are_one_line_with_status_2(capsys, argv, message):
    status, _, err = run(argv, capsys)
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("hdrm workload: error: ")
    assert re.search(message, err)


def test_malformed_line_strict_and_no_strict(tmp_path, capsys):
    lines = Path(LUBLIN).read_text().splitlines()
    lines[20] = lines[20] + " 7"
    bad = tmp_path / "bad.swf"
    bad.write_text("\n".join(lines) + "\n")
    status, _, err = run([str(bad)], capsys)
    assert status == 2 and "bad.swf:21: found 19 fields, SWF needs 18" in err
    status, out, _ = run([str(bad), "--no-strict"], capsys)
    assert status == 0 and "  malformed line              1" in out and "jobs kept       499" in out


def test_help_lists_the_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["workload", "--help"])
    assert exit_info.value.code == 0
    help_text = capsys.readouterr().out
    for option in ("--platform", "--nb-jobs", "--start-index", "--conventions", "--no-strict",
                   "--json", "--seed", "--bw", "--load-factor"):
        assert option in help_text


def test_batsim_json_input_is_written_as_it_is(tmp_path, capsys):
    source = tmp_path / "in.json"
    source.write_text('{"nb_res": 4, "jobs": [{"id": "a", "subtime": 2, "res": 2, "walltime": 50,'
                      ' "profile": "w"}], "profiles": {"w": {"type": "parallel_homogeneous",'
                      ' "cpu": 8e10, "com": 0}}}')
    out_json = tmp_path / "out.json"
    argv = [str(source), "--platform", str(ROOT / "platforms" / "tiny4.json"),
            "--json", str(out_json)]
    status, out, _ = run(argv, capsys)
    assert status == 0 and "profiles as loaded" in out
    job = read_batsim_json(out_json).jobs[0]
    ref = load_platform(ROOT / "platforms" / "tiny4.json").reference_gflops
    # 80 GFLOP at the reference speed (8 GFLOP/s for tiny4 today: a 10 s run); nothing redrawn
    assert (job.id, job.ops_gflop, job.mem_bw_gbps) == ("a", 80.0, 0.0)
    assert job.run_time_s == pytest.approx(80.0 / ref)


def test_a_reader_that_stops_early_ends_the_command_quietly():
    # `hdrm workload trace.swf | head -1`: the reader has gone before the summary is written
    child = subprocess.Popen([sys.executable, "-m", "hdrm.cli.main", "workload", LUBLIN],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child.stdout.close()
    err = child.stderr.read().decode()
    assert child.wait(timeout=60) == 141
    assert err == ""


def test_the_file_kind_is_told_by_name_whatever_its_case_or_by_content(tmp_path, capsys):
    # W.JSON was read as SWF ("found 29 fields, SWF needs 18"), as was JSON named .txt, and an
    # openb pod list ("found 1 fields") that hdrm workload does not read
    doc = ('{"nb_res": 4, "profiles": {"d": {"type": "delay", "delay": 10}}, "jobs": '
           '[{"id": 1, "subtime": 0, "res": 1, "profile": "d"}]}')
    (tmp_path / "W.JSON").write_text(doc)
    status, out, err = run([str(tmp_path / "W.JSON")], capsys)
    assert status == 0 and err == "" and "jobs kept       1" in out.splitlines()
    (tmp_path / "w.txt").write_text("\n" + doc)
    status, out, err = run([str(tmp_path / "w.txt")], capsys)
    assert status == 2 and out == ""
    assert err == (f"hdrm workload: error: {tmp_path / 'w.txt'}:2: JSON, not an SWF trace; a "
                   "Batsim JSON workload is read from a file named *.json\n")
    pods = str(ROOT / "workloads" / "openb_pods_400.csv")
    status, out, err = run([pods], capsys)
    assert status == 2 and out == ""
    assert err == (f"hdrm workload: error: {pods}: hdrm workload reads SWF traces and Batsim JSON; "
                   "an openb pod list (.csv) is replayed with hdrm replay --platform NODES.csv "
                   "--workload PODS.csv\n")


def test_json_of_a_trace_without_machine_size_says_where_nb_res_comes_from(tmp_path, capsys):
    # a headerless trace (METACENTRUM-2009-2, RICC-2010-2 come so): the JSON's nb_res was the
    # widest job's without a word, and read back as "cores 6"
    trace, out_json = tmp_path / "t.swf", tmp_path / "w.json"
    trace.write_text("".join(f"{i} {i} 0 50 {p} -1 -1 {p} 60 -1 1 1 1 -1 1 -1 -1 -1\n"
                             for i, p in ((1, 2), (2, 6), (3, 4))))
    status, out, _ = run([str(trace), "--json", str(out_json)], capsys)
    assert status == 0 and read_batsim_json(out_json).nb_res == 6
    assert out.splitlines()[-1] == (
        f"note            nb_res 6 in {out_json} is the widest job's: the trace states no "
        "MaxProcs (nor MaxNodes); give --platform for the machine's cores")
    status, out, _ = run([LUBLIN, "--nb-jobs", "3", "--json", str(out_json)], capsys)
    assert status == 0 and "nb_res" not in out


def test_dependencies_are_summarised(tmp_path, capsys):
    # fields 17-18: the summary said nothing of them (hdrm replay's does), nor of those a
    # selection drops (job 3 waits for job 1, left out of the window)
    trace = tmp_path / "t.swf"
    trace.write_text("; MaxProcs: 4\n" + "".join(
        f"{i} {10 * i} 0 50 1 -1 -1 1 60 -1 1 1 1 -1 1 -1 {pred} {think}\n"
        for i, pred, think in ((1, -1, -1), (2, 1, 30), (3, 1, 30), (4, 3, 5))))
    status, out, _ = run([str(trace)], capsys)
    assert status == 0
    assert "dependencies    3 jobs wait for a preceding job (think time 5-30 s)" in out
    status, out, _ = run([str(trace), "--start-index", "2"], capsys)
    assert status == 0 and ("dependencies    1 jobs wait for a preceding job (think time 5 s); "
                            "dropped 1 (preceding job not replayed: 1)") in out
    status, out, _ = run([LUBLIN, "--nb-jobs", "3"], capsys)
    assert status == 0 and "dependencies" not in out
