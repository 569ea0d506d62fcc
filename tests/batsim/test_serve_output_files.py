"""``hdrm serve`` writes Batsim 4.2.1's other output files as the binary does, byte for byte:
out_machine_states.csv, the Pajé trace out_schedule.trace (but its job colours, which Batsim
shuffles at random on every run), and with ``-E`` out_consumed_energy.csv and
out_pstate_changes.csv; out_schedule.csv's ``time_*`` columns come from the same machine
states. Also the two ``--disable-*`` switches, and the paths that do not write them."""

from __future__ import annotations

import json
import logging
import re
import subprocess
from pathlib import Path

import pytest
from batsim_helpers import RawScheduler, raw_session
from test_serve_energy_order import BATSIM, WHY_NOT
from test_serve_network_energy import mixed_workload, sleeper, sleepy_platform

import test_serve_actors as actors
from hdrm.batsim.server import ServeOptions, serve

FILES = ("_machine_states.csv", "_schedule.trace", "_consumed_energy.csv", "_pstate_changes.csv")
COLOUR = re.compile(r'^(5 j\S+ machine_state "[^"]*") "[0-9. ]+"$', re.M)
#: out_schedule.csv's columns that are wall-clock times or hdrm's own
NOT_COMPARED = ("batsim_version", "scheduling_time", "simulation_time", "mean_bounded_slowdown",
                "max_bounded_slowdown", "utilization", "mean_power_w")


def contents(prefix: Path) -> dict[str, str]:
    """The files written at ``prefix`` (Pajé colours masked; out_schedule.csv's columns that
    both write, less the wall-clock ones)."""
    got = {}
    for suffix in (*FILES, "_jobs.csv"):
        path = Path(f"{prefix}{suffix}")
        if path.exists():
            got[suffix] = COLOUR.sub(r'\1 "colour"', path.read_text())
    keys, values = Path(f"{prefix}_schedule.csv").read_text().splitlines()
    got["_schedule.csv"] = {k: v for k, v in zip(keys.split(","), values.split(","))
                            if k not in NOT_COMPARED}
    return got


def compare(ours: dict, real: dict, expected: tuple[str, ...]) -> None:
    assert sorted(real) == sorted(ours) == sorted((*expected, "_jobs.csv", "_schedule.csv"))
    for name in real:  # one file at a time, for a readable failure
        assert ours[name] == real[name], name


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("kind, seed", [("hosts", 1), ("SHARED", 2)])
def test_sleep_states_and_communicating_jobs(tmp_path, kind, seed):
    """Jobs that communicate (SimGrid's accounts), hosts sent to sleep and woken, walltime
    kills, energy queries; with SHARED, the scheduler's reply to SIMULATION_ENDS holds a
    QUERY, whose transfer the trace's end waits for (2 of 18 sessions ended 0.6 ms early)."""
    platform, nb = sleepy_platform(tmp_path, kind)
    workload = mixed_workload(tmp_path / "w.json", seed, nb)
    for real in (True, False):
        raw_session(sleeper(nb, seed, "0"), platform, [workload], tmp_path / str(real), True,
                    BATSIM if real else None)
    compare(contents(tmp_path / "False"), contents(tmp_path / "True"), FILES)


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("seed, decisions, energy", [
    (1, {"sleep_at": 2, "wake_at": 6}, True), (2, {"kill_every": 2}, True),
    (3, {"kill_every": 3}, False)])
def test_delay_jobs_switches_and_kills(tmp_path, seed, decisions, energy):
    """Without an lmm system: the energy trace's mean power of rows a fraction of a nanosecond
    apart needs SimGrid's per-host sums (half the rows differed in the 4th decimal with the
    board's energy, runs/s28/F/corpus1.log)."""
    platform = actors.write_platform(tmp_path / "p.xml")
    workload = actors.write_workload(tmp_path / "w.json", seed)
    for real in (True, False):
        raw_session(actors.scheduler(**decisions), platform, [workload], tmp_path / str(real),
                    energy, BATSIM if real else None)
    compare(contents(tmp_path / "False"), contents(tmp_path / "True"),
            FILES if energy else FILES[:2])


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize("flags", [["--disable-schedule-tracing"],
                                   ["--disable-machine-state-tracing"],
                                   ["--disable-schedule-tracing",
                                    "--disable-machine-state-tracing"]])
def test_the_disable_switches(tmp_path, flags):
    platform = actors.write_platform(tmp_path / "p.xml")
    workload = actors.write_workload(tmp_path / "w.json", 2)
    scheduler = RawScheduler(actors.scheduler(kill_every=2))
    scheduler.start()
    try:
        done = subprocess.run([BATSIM, "-p", str(platform), "-w", str(workload), "-E", "-q",
                               "-e", str(tmp_path / "real"), *flags, "-s",
                               scheduler.endpoint.replace("localhost", "127.0.0.1")],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr[-2000:]
    finally:
        scheduler.stop()
    raw = scheduler.received
    options = ServeOptions(export_prefix=str(tmp_path / "ours"),
                           machine_states="--disable-machine-state-tracing" not in flags,
                           schedule_trace="--disable-schedule-tracing" not in flags)
    scheduler = RawScheduler(actors.scheduler(kill_every=2))
    scheduler.start()
    try:
        from dataclasses import replace

        from hdrm.batsim.simulator import ServerConfig
        serve(platform, workload, replace(options, endpoint=scheduler.endpoint,
                                          config=ServerConfig(energy=True)))
    finally:
        scheduler.stop()
    assert scheduler.received == raw
    kept = tuple(f for f in FILES if not (f == "_schedule.trace" and options.schedule_trace is False
                                          or f == "_machine_states.csv"
                                          and options.machine_states is False))
    compare(contents(tmp_path / "ours"), contents(tmp_path / "real"), kept)


def test_the_instant_model_writes_batsim_s_first_two_files_only(tmp_path, caplog):
    """A platform without routes (an hdrm JSON platform) runs on the instant model, which does
    not write these files: one warning says so."""
    platform = Path(__file__).resolve().parents[2] / "platforms" / "tiny4.json"
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"nb_res": 4, "profiles": {"d": {"type": "delay", "delay": 1}},
                                    "jobs": [{"id": "0", "subtime": 0, "res": 1, "profile": "d"}]}))

    def fcfs(doc: dict) -> str:
        out = [{"timestamp": doc["now"], "type": "EXECUTE_JOB",
                "data": {"job_id": e["data"]["job_id"], "alloc": "0"}}
               for e in doc["events"] if e["type"] == "JOB_SUBMITTED"]
        return json.dumps({"now": doc["now"], "events": out})

    scheduler = RawScheduler(fcfs)
    scheduler.start()
    with caplog.at_level(logging.WARNING, logger="hdrm.batsim.server"):
        try:
            result = serve(platform, workload, ServeOptions(scheduler.endpoint,
                                                            str(tmp_path / "o")))
        finally:
            scheduler.stop()
    assert [f.name for f in result.files] == ["o_jobs.csv", "o_schedule.csv"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "are not written: hdrm serve writes them where it runs Batsim's actors" in warnings[0]
