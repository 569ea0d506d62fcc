"""``hdrm replay --engine batsim`` and the engine's glue, end to end with a fake ``batsim``.

The fake (``fake_batsim/batsim``) takes Batsim's command line and runs ``hdrm serve``; its folder
is put first on the PATH, so the real code path runs: finding ``batsim``, a subprocess, a free
port, ZeroMQ, Batsim's output files.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
from batsim_helpers import PLATFORMS, REPO

from hdrm.batsim import engine
from hdrm.batsim.adapter import HdrmScheduler
from hdrm.batsim.engine import BatsimSession, MachineMirror, batsim_settings, result_from_rows
from hdrm.cli.main import main
from hdrm.core.scheduler import DecisionCore
from hdrm.errors import ConfigError, ProtocolError
from hdrm.options import BatsimOptions
from hdrm.platform.loader import load_platform
from hdrm.platform.power import CONTENDED, IDLE, RUNNING, SLEEPING
from hdrm.results.csvio import read_jobs_csv
from hdrm.results.records import JobResult
from hdrm.workload.job import Job, Workload

TINY4 = PLATFORMS / "tiny4.json"
HETERO = PLATFORMS / "tiny_hetero.json"
SWF = REPO / "workloads" / "SDSC-SP2-1998-4.2-cln_first500.swf"



def replay(capsys, outdir: Path, *extra: str) -> tuple[int, str, str]:
    argv = ["replay", "--platform", str(HETERO), "--workload", str(SWF), "--nb-jobs", "40",
            "--start-index", "60", "--outdir", str(outdir), *extra]
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("policy, backfill, decision", [
    ("shortest-high_gflops", "easy", "event"),
    ("first-low_power", "conservative", "commit"),
])
def test_replay_under_batsim_makes_the_builtin_decisions(fake_batsim, tmp_path, capsys, policy,
                                                          backfill, decision):
    settings = ("--policy", policy, "--backfill", backfill, "--decision", decision, "--seed", "3")
    status, builtin_out, _ = replay(capsys, tmp_path / "builtin", *settings)
    assert status == 0
    status, batsim_out, err = replay(capsys, tmp_path / "batsim", *settings, "--engine", "batsim")
    assert (status, err) == (0, "")
    out = tmp_path / "batsim"
    assert sorted(p.name for p in out.iterdir()) == [
        "batsim.log", "out", "out_jobs.csv", "out_schedule.csv", "overutilizations.json",
        "platform.xml", "workload.json"]
    # Batsim's -E files stay in its export folder (the engine moves the first two only)
    assert sorted(p.name for p in (out / "out").iterdir()) == [
        "out_consumed_energy.csv", "out_pstate_changes.csv"]
    assert "hdrm serve: 40 jobs" in (out / "batsim.log").read_text()  # Batsim's own outputs
    expected = {r.job_id: r for r in read_jobs_csv(tmp_path / "builtin" / "out_jobs.csv")}
    rows = read_jobs_csv(out / "out_jobs.csv")
    assert sorted(r.job_id for r in rows) == sorted(expected)
    assert any(r.final_state == "REJECTED" for r in rows) and any(r.success for r in rows)
    for row in rows:
        want = expected[row.job_id]
        assert (row.final_state, row.allocated_resources) == (want.final_state, want.allocated_resources)
        if row.final_state != "REJECTED":
            # within 2e-6 s: hdrm serve keeps Batsim's sub-nanosecond message times; job 100
            # ends at 37585.444445 under it and under the binary, 37585.444444 built in
            assert row.starting_time == pytest.approx(want.starting_time, abs=2e-6)
            assert row.finish_time == pytest.approx(want.finish_time, abs=2e-6)
            assert row.consumed_energy == pytest.approx(want.consumed_energy, rel=1e-6)

    def summary(text: str) -> list[str]:
        return [line for line in text.splitlines() if "wall time" not in line and "outputs" not in line]

    assert summary(batsim_out) == summary(builtin_out)
    assert f"policy {policy}, backfilling {backfill}" in batsim_out


def test_replay_without_batsim_says_how_to_get_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    status, out, err = replay(capsys, tmp_path / "o", "--engine", "batsim")
    assert (status, out) == (2, "")
    assert err.startswith("hdrm replay: error: batsim.binary: 'batsim' not found on PATH; install "
                          "Batsim 4.x (4.2.1 is tested") and err.count("\n") == 1
    status, _, err = replay(capsys, tmp_path / "o", "--engine", "batsim", "--batsim", "/no/batsim")
    assert status == 2 and "batsim.binary: '/no/batsim' is not an executable file; install" in err
    assert not (tmp_path / "o").exists()


def test_replay_when_batsim_exits_early_shows_its_log(fake_batsim, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HDRM_FAKE_BATSIM", "crash")
    status, out, err = replay(capsys, tmp_path / "o", "--engine", "batsim")
    assert (status, out) == (2, "")
    first, *tail = err.splitlines()
    assert first == ("hdrm replay: error: batsim exited with status 3 before the simulation ended; "
                     f"last lines of {tmp_path / 'o' / 'batsim.log'}:")
    assert tail[-1] == "[error] Invalid platform: host 'core_0000' has no pstate 3"


def test_replay_when_batsim_goes_silent_times_out(fake_batsim, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HDRM_FAKE_BATSIM", "silent")
    monkeypatch.setattr(engine, "DEFAULT_TIMEOUT_S", 0.5)
    t0 = time.monotonic()
    status, out, err = replay(capsys, tmp_path / "o", "--engine", "batsim")
    assert time.monotonic() - t0 < 10  # the silent fake sleeps 30 s: it was killed
    assert (status, out) == (2, "")
    assert err == ("hdrm replay: error: Batsim sent nothing for 0.5 s; it stopped answering "
                   f"(batsim log: {tmp_path / 'o' / 'batsim.log'})\n")


def test_replay_refuses_to_run_without_walltime_kills(fake_batsim, tmp_path, capsys):
    status, _, err = replay(capsys, tmp_path / "o", "--engine", "batsim", "--no-walltime-kill")
    assert status == 2
    assert err == ("hdrm replay: error: --no-walltime-kill: Batsim always kills jobs at their "
                   "walltime; keep walltime kills on with engine 'batsim', or use engine 'builtin'\n")


def test_result_from_batsim_rows():
    jobs = [Job(i, f"j{i}", float(i), 1, 100.0, 10.0) for i in range(3)]
    workload = Workload(jobs, "three")
    rows = [
        JobResult("j2", "w0", "p", 2.0, 1, 100.0, 1, "COMPLETED_SUCCESSFULLY", 5.0, 10.0, 15.0,
                  allocated_resources="1-2", consumed_energy=300.0),
        JobResult("j0", "w0", "p", 0.0, 1, 100.0, 0, "REJECTED"),
    ]
    platform = load_platform(TINY4)
    result = result_from_rows(platform, workload, rows, 1234.5)
    assert [o.job.id for o in result.outcomes] == ["j0", "j2"]  # workload order, missing skipped
    rejected, done = result.outcomes
    assert rejected.state == "REJECTED" and rejected.start_s == -1.0
    assert (done.start_s, done.finish_s, done.cores, done.energy_j) == (5.0, 15.0, (1, 2), 300.0)
    assert (result.energy_j, result.makespan_s) == (1234.5, 15.0)
    stray = [JobResult("x9", "w0", "p", 0.0, 1, 100.0, 0, "REJECTED")]
    with pytest.raises(ProtocolError, match="out_jobs.csv has job 'x9', which is not in workload 'three'"):
        result_from_rows(platform, workload, stray, 0.0)


def test_machine_mirror_follows_the_core_states_and_batsim_ends():
    """tiny4: 8 GFLOP/s and 20 W per running core; two 6 GB/s jobs on one 10 GB/s processor."""
    platform = load_platform(TINY4)
    core = DecisionCore(platform)
    mirror = MachineMirror(platform)
    a = Job(0, "a", 0.0, 1, math.inf, math.nan, mem_bw_gbps=6.0, ops_gflop=80.0,
            profile_type="parallel_homogeneous")
    b = Job(1, "b", 0.0, 1, math.inf, math.nan, mem_bw_gbps=6.0, ops_gflop=160.0,
            profile_type="parallel_homogeneous")
    for job, cores in ((a, [0]), (b, [1])):
        core.state.allocate(job, cores, 0.0)
    mirror.sync(core.state)
    assert mirror.machine.state[:2] == [CONTENDED, CONTENDED] and mirror.machine.state[2:] == [SLEEPING] * 2
    mirror.start(a, [0])
    mirror.start(b, [1])
    assert mirror.machine.expected_end_s(0) == pytest.approx(80 / 6)  # 0.75 x 8 GFLOP/s
    power_w = mirror.machine.power_w
    energy_a = mirror.job_left(0, 80 / 6)  # Batsim reports a's end: the physics ended it too
    assert energy_a == pytest.approx(20.0 * 80 / 6)
    assert mirror.machine.energy_j() == pytest.approx(power_w * 80 / 6)
    core.complete(a, 80 / 6)
    mirror.sync(core.state)
    assert mirror.machine.state[:2] == [IDLE, RUNNING]
    # b did 80 of its 160 GFLOP at 6 GFLOP/s; the other 80 take 10 s at full speed
    assert mirror.machine.fraction_left(1, 80 / 6) == pytest.approx(10 / (80 / 6 + 10))
    energy_b = mirror.job_left(1, 15.0)  # Batsim ended b before the physics would: b is dropped
    assert energy_b == pytest.approx(20.0 * 15.0) and not mirror.machine.is_running(1)
    assert mirror.job_left(1, 16.0) == 0.0  # an end reported twice costs nothing


def test_batsim_settings_from_a_dict():
    assert batsim_settings(None) == BatsimOptions()
    given = BatsimOptions("/opt/batsim", 5.0)
    assert batsim_settings(given) is given
    assert batsim_settings({"binary": "b", "timeout_s": 2, "extra_args": ["-q"]}) == \
        BatsimOptions("b", 2.0, ("-q",))
    with pytest.raises(ConfigError, match="batsim: unknown setting 'timeout'; did you mean 'timeout_s'"):
        batsim_settings({"timeout": 3})
    with pytest.raises(ConfigError, match=r"batsim.timeout_s: must be > 0 seconds, got -1.0"):
        batsim_settings({"timeout_s": -1})


def test_a_session_closed_early_kills_batsim_and_stops_the_decision_thread(fake_batsim, tmp_path,
                                                                            monkeypatch):
    monkeypatch.setenv("HDRM_FAKE_BATSIM", "silent")
    platform = load_platform(TINY4)
    jobs = [Job(0, 0, 0.0, 1, 100.0, 10.0, profile="p0")]
    session = BatsimSession(platform, Workload(jobs, "one"), tmp_path / "run",
                            HdrmScheduler(platform=platform), timeout_s=30)
    session.start()
    assert session.run.command[0] == str(fake_batsim)
    assert session.check() is False  # running, nothing wrong yet
    session.close()
    assert session.process.poll() is not None and not session.thread.is_alive()
    session.close()  # twice is fine


def test_replay_with_relative_outdir_and_batsim_paths_in_a_subprocess(fake_batsim, tmp_path):
    """Batsim runs in the run folder: the paths it is given (and its own) must not be relative to
    the user's folder (was "Platform file 'runs/replay-batsim/platform.xml' cannot be read", and a
    FileNotFoundError traceback for a relative --batsim)."""
    import os
    import subprocess
    import sys

    relative = os.path.relpath(fake_batsim, tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "hdrm.cli.main", "replay", "--platform", str(HETERO), "--workload",
         str(SWF), "--nb-jobs", "10", "--engine", "batsim", "--batsim", relative, "--outdir",
         "runs/replay-batsim"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    out = tmp_path / "runs" / "replay-batsim"
    assert len(read_jobs_csv(out / "out_jobs.csv")) == 10
    assert f"wrote {out / 'out' / 'out_jobs.csv'}\n" in (out / "batsim.log").read_text()  # absolute
