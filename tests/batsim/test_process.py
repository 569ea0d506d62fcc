"""Running "the real Batsim": the happy path and every error path, with fake ``batsim`` programs.

The fake batsim of the happy path is ``hdrm serve`` itself (it takes Batsim's options), so the run
goes through the exported platform.xml and workload.json exactly as with the real binary.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from batsim_helpers import PLATFORMS

from hdrm.batsim.adapter import HdrmScheduler
from hdrm.batsim.process import INSTALL_HINT, QUIET_ARGS, batsim_command, find_batsim, log_tail, run_batsim
from hdrm.errors import ConfigError, ProtocolError, SimulationError
from hdrm.platform.loader import load_platform
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.workload.job import Job, Workload

TINY4 = PLATFORMS / "tiny4.json"


def fake_batsim(folder: Path, body: str) -> Path:
    """A ``batsim`` executable running ``body`` (Python; ``args`` holds Batsim's argv)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "batsim"
    path.write_text(f"#!{sys.executable}\nimport sys\nargs = sys.argv[1:]\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return path


def workload() -> Workload:
    jobs = [Job(i, i, float(2 * i), 1 + i % 3, 100.0, float("nan"), mem_bw_gbps=6.0,
                ops_gflop=40.0 + 10 * i, profile=f"p{i}", profile_type="parallel_homogeneous")
            for i in range(6)]
    return Workload(jobs, "six", nb_res=4)


def test_run_through_hdrm_serve_as_batsim(tmp_path):
    exe = fake_batsim(tmp_path / "bin", f"""
        from hdrm.cli.main import main
        quiet = {list(QUIET_ARGS)!r}  # Batsim's output switches, which hdrm serve does not take
        sys.exit(main(["serve", *(a for a in args if a not in quiet)]))
    """)
    platform = load_platform(TINY4)
    scheduler = HdrmScheduler(platform=platform, policy="shortest-high_gflops", seed=4)
    run = run_batsim(platform, workload(), tmp_path / "run", scheduler, binary=str(exe), timeout_s=10)
    assert [Path(a).name for a in run.command[2:5:2]] == ["platform.xml", "workload.json"]
    assert run.command[9:] == ["-E", *QUIET_ARGS] and run.command[8].startswith("tcp://localhost:")
    assert int(run.command[8].rsplit(":", 1)[1]) != 28000
    assert run.jobs_csv.is_file() and run.schedule_csv.is_file()
    sim = Simulation(platform, workload(), SimulationConfig(seed=4))
    outcomes = {str(o.job.id): o for o in sim.run("shortest-high_gflops").outcomes}
    assert len(run.results) == 6
    for row in run.results:
        assert row.starting_time == pytest.approx(outcomes[row.job_id].start_s, abs=1e-6)
        assert row.finish_time == pytest.approx(outcomes[row.job_id].finish_s, abs=1e-6)
        assert row.core_ids() == sorted(outcomes[row.job_id].cores)
    assert "hdrm serve: 6 jobs" in (run.run_dir / "batsim.log").read_text()
    assert any(state == 1 for _, state, _ in scheduler.state_requests)


def test_batsim_not_found(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError, match="batsim.binary: 'batsim' not found on PATH; install Batsim 4.x"):
        find_batsim("batsim")
    with pytest.raises(ConfigError, match=r"'/no/such/batsim' is not an executable file; .*nur-kapack"):
        find_batsim("/no/such/batsim")
    assert "guix-hpc" in INSTALL_HINT and "hdrm serve" in INSTALL_HINT and "http" not in INSTALL_HINT
    exe = fake_batsim(tmp_path, "pass\n")
    assert find_batsim("batsim") == str(exe)


def test_batsim_exiting_early_shows_its_log(tmp_path):
    exe = fake_batsim(tmp_path / "bin", """
        print("[batsim] loading platform")
        print("[error] Invalid platform: host 'core_0000' has no pstate 3", file=sys.stderr)
        sys.exit(3)
    """)
    platform = load_platform(TINY4)
    with pytest.raises(SimulationError, match=r"batsim exited with status 3 before the simulation ended; "
                                              r"last lines of .*batsim.log:\n\[batsim\] loading platform\n"
                                              r"\[error\] Invalid platform"):
        run_batsim(platform, workload(), tmp_path / "run", HdrmScheduler(platform=platform),
                   binary=str(exe), timeout_s=10)


def test_silent_batsim_times_out(tmp_path):
    exe = fake_batsim(tmp_path / "bin", "import time\ntime.sleep(30)\n")
    platform = load_platform(TINY4)
    with pytest.raises(ProtocolError, match=r"Batsim sent nothing for 0.5 s; it stopped answering"):
        run_batsim(platform, workload(), tmp_path / "run", HdrmScheduler(platform=platform),
                   binary=str(exe), timeout_s=0.5)


def test_unknown_message_type_is_named(tmp_path):
    exe = fake_batsim(tmp_path / "bin", """
        import zmq
        endpoint = args[args.index("-s") + 1]
        socket = zmq.Context().socket(zmq.REQ)
        socket.connect(endpoint)
        socket.send_string('{"now": 0, "events": [{"timestamp": 0, "type": "JOB_TELEPORTED", "data": {}}]}')
        socket.poll(5000)
        sys.exit(1)
    """)
    platform = load_platform(TINY4)
    error = r"Batsim's event 0 \(JOB_TELEPORTED\) at t=0.0: type: unknown value \"JOB_TELEPORTED\""
    with pytest.raises(ProtocolError, match=error + "; did you mean 'JOB_COMPLETED'"):
        run_batsim(platform, workload(), tmp_path / "run", HdrmScheduler(platform=platform),
                   binary=str(exe), timeout_s=5)


def test_log_tail(tmp_path):
    log = tmp_path / "b.log"
    log.write_text("\n".join(f"line {i}" for i in range(30)) + "\n")
    assert log_tail(log, 2) == "line 28\nline 29"
    assert log_tail(tmp_path / "none.log") == "(no log)"
    (tmp_path / "empty.log").write_text("")
    assert log_tail(tmp_path / "empty.log") == "(empty log)"


def test_batsim_command_is_quiet_unless_told_otherwise():
    base = ["batsim", "-p", "p.xml", "-w", "w.json", "-e", "o/out", "-s", "tcp://localhost:5"]
    assert batsim_command("batsim", Path("p.xml"), Path("w.json"), Path("o/out"), 5) == [
        *base, "-E", "--verbosity", "quiet", "--disable-schedule-tracing",
        "--disable-machine-state-tracing"]
    loud = batsim_command("batsim", Path("p.xml"), Path("w.json"), Path("o/out"), 5, energy=False,
                          extra_args=["-v", "information", "--disable-schedule-tracing"])
    assert loud == [*base, "--disable-machine-state-tracing", "-v", "information",
                    "--disable-schedule-tracing"]
