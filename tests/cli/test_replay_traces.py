"""Real-trace shapes through ``hdrm replay`` and ``hdrm workload``: a right-aligned header with
``MaxRuntime: N/A`` replays by default on the MaxProcs it states; lines the SWF standard does not
allow (fractional processors, a repeated job number) are one-line errors naming ``--no-strict``,
and with it they are skipped, counted and shown in the summary; no job id appears twice in the
outputs."""

from __future__ import annotations

import csv
import json
import logging
import re
from pathlib import Path

import pytest

from hdrm.cli.main import main

HETERO = Path(__file__).resolve().parents[2] / "platforms" / "hetero.json"

HEADER = [
    ";          Version: 2.2",
    ";         Computer: Test cluster",
    ";          MaxJobs: 5",
    ";         MaxNodes: 2",
    ";         MaxProcs: 8",
    ";       MaxRuntime: N/A",
    ";",
]


def _line(number: int, submit: int, procs: float, run: int = 100) -> str:
    return f"{number} {submit} 0 {run} {procs} -1 -1 {procs} 200 -1 1 3 1 -1 1 -1 -1 -1"


def _trace(tmp_path, jobs: list[str]):
    path = tmp_path / "site.swf"
    path.write_text("\n".join(HEADER + jobs) + "\n", encoding="utf-8")
    return path


def test_right_aligned_header_with_na_replays_by_default(tmp_path, capsys, caplog):
    path = _trace(tmp_path, [_line(1, 0, 4), _line(2, 10, 8), _line(3, 20, 2)])
    with caplog.at_level(logging.WARNING):
        status = main(["replay", "--homogeneous-procs", "0", "--workload", str(path),
                       "--outdir", str(tmp_path / "out"), "--quiet"])
    out, err = capsys.readouterr()
    assert status == 0 and err == ""
    assert "3 jobs of site[:3] on homogeneous_8 (8 cores)" in out.splitlines()[0]
    assert re.search(r"\n  skipped from the source +none\n", out)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [f"{path}:6: header directive MaxRuntime: 'N/A' is not an integer; "
                        "ignored (header values are informational)"]


@pytest.mark.parametrize(("jobs", "message"), [
    ([_line(1, 0, 4), _line(2, 10, 1.5)],
     r"site\.swf:9: field 5 \(allocated processors\) is 1\.5, not a whole number; write a whole "
     r"number \(hdrm never rounds it\), or rerun with --no-strict to skip such lines \(counted\)$"),
    ([_line(1, 0, 4), _line(2, 10, 2), _line(1, 20, 2)],
     r"site\.swf:10: field 1 \(job number\) is 1, already the number of line 8; give each job "
     r"its own number, or rerun with --no-strict to skip lines that repeat a number \(counted\)$"),
    ([_line(1, 0, 4), _line(2, 10, 2) + " 7"],
     r"site\.swf:9: found 19 fields, SWF needs 18: unexpected field 19 '7' after field 18 "
     r"\(think time\); fix the line, or rerun with --no-strict to skip malformed lines"),
])
@pytest.mark.parametrize("command", ["replay", "workload"])
def test_strict_errors_name_the_command_line_flag(tmp_path, capsys, jobs, message, command):
    path = _trace(tmp_path, jobs)
    argv = (["replay", "--homogeneous-procs", "8", "--workload", str(path), "--outdir",
             str(tmp_path / "out")] if command == "replay" else ["workload", str(path)])
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert err.startswith(f"hdrm {command}: error: {path}")
    assert "strict=False" not in err
    assert re.search(message, err.strip())


def test_no_strict_skips_counts_and_reports(tmp_path, capsys):
    path = _trace(tmp_path, [_line(1, 0, 4), _line(2, 10, 1.5), _line(1, 20, 2), _line(3, 30, 2),
                             _line(4, 40, 2, run=-1)])
    status = main(["replay", "--homogeneous-procs", "0", "--workload", str(path), "--no-strict",
                   "--outdir", str(tmp_path / "out"), "--quiet"])
    out = capsys.readouterr().out
    assert status == 0
    assert "2 jobs of site[:2]" in out.splitlines()[0]
    assert re.search(r"\n  skipped from the source +3 \(run time unknown \(< 0\): 1, fractional "
                     r"processors: 1, duplicate job number: 1\)\n", out)
    with open(tmp_path / "out" / "out_jobs.csv", newline="") as handle:
        ids = [row["job_id"] for row in csv.DictReader(handle)]
    assert sorted(ids) == ["1", "3"]
    status = main(["workload", str(path), "--no-strict"])
    out = capsys.readouterr().out
    assert status == 0 and "jobs skipped    3" in out
    assert "  fractional processors       1" in out and "  duplicate job number        1" in out


def test_launcher_strict_errors_name_the_options_key(tmp_path, capsys):
    from hdrm.launcher import main as launch_main

    root = Path(__file__).resolve().parents[2]
    path = _trace(tmp_path, [_line(1, 0, 4), _line(2, 10, 1.5)])
    options = json.loads((root / "examples" / "classic" / "options.json").read_text())
    options.update(workload_file_path=str(path), platform_file_path=None, nb_resources=8)
    (tmp_path / "options.json").write_text(json.dumps(options))
    status = launch_main([str(root / "agents" / "classic.py"), str(tmp_path / "options.json"),
                          "--outdir", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert err == (f"hdeeprm-launch: error: {path}:9: field 5 (allocated processors) is 1.5, not a "
                   "whole number; write a whole number (hdrm never rounds it), or set \"strict\": "
                   "false under \"workload\" in the options file to skip such lines (counted)\n")


def test_jobs_without_a_requested_time_are_never_killed(tmp_path, capsys):
    """Lublin, NASA-iPSC and SDSC-Par record no requested time (field 9 is -1): such a job has no
    walltime, so Batsim's strict walltime test (killed when the run time reaches the walltime) never
    applies to it, on a platform of any speed."""
    lines = [f"{n} {10 * n} 0 {run} 2 -1 -1 2 -1 -1 1 3 1 -1 1 -1 -1 -1"
             for n, run in enumerate([100, 50, 7, 300], start=1)]
    path = _trace(tmp_path, lines)
    for platform in (["--homogeneous-procs", "0"], ["--platform", str(HETERO)]):
        out_dir = tmp_path / f"out{len(platform)}{platform[-1][-4:]}"
        status = main(["replay", *platform, "--workload", str(path), "--outdir", str(out_dir),
                       "--quiet"])
        capsys.readouterr()
        assert status == 0
        with (out_dir / "out_jobs.csv").open(encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert [row["final_state"] for row in rows] == ["COMPLETED_SUCCESSFULLY"] * 4
        assert {float(row["requested_time"]) for row in rows} == {-1.0}
