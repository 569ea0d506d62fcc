"""What the real Batsim 4.2.1 does on the platforms of tests/zero_bandwidth_platforms.py, so
that each of hdrm's refusals there rests on a test that can fail.

Measured (runs/s26r/measure.py): the binary never hangs on a link of bandwidth 0. SimGrid 3.32
finds that no activity can end ("Oops! Deadlock detected, some activities are still around but
will never complete"), and Batsim exits with status 0 without SIMULATION_ENDS:

* over the master host's route to itself, right after SIMULATION_BEGINS: the first submission
  never reaches the server, so the decision process gets SIMULATION_BEGINS and nothing else;
* over a compute host's route to the master, when the first job on that host ends: its
  JOB_COMPLETED never arrives, the server waits on it, and no event follows;
* a torus, fat-tree or dragonfly cluster of ``bw`` 0 is refused when SimGrid loads the platform
  (an uncaught std::invalid_argument: Batsim aborts, no message at all).

A bandwidth of 0 that no message crosses (a route between two compute hosts, a compute node's
loopback, a compute peer's incoming link) changes nothing: the session runs to its end.
Each binary run has a hard timeout; on it the binary's process group is killed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from batsim_helpers import RawScheduler, fcfs
from real_batsim import real_batsim
from test_serve_workloads import seeded_workload
from zero_bandwidth_platforms import ACCEPTED, REFUSED

from hdrm.batsim.platform_hosts import load_hosts
from hdrm.errors import PlatformError

BATSIM, WHY_NOT = real_batsim()
pytestmark = [pytest.mark.skipif(BATSIM is None, reason=WHY_NOT), pytest.mark.slow]

TIMEOUT_S = 30.0
DEADLOCK = "Oops! Deadlock detected, some activities are still around but will never complete"
#: refused platforms where the master host's messages to itself cross the link of bandwidth 0
AT_BEGIN = {"link on the master's route to itself", "master cluster: loopback_lat alone",
            "master cluster: loopback_bw 0", "master cluster: bb_lat without bb_bw",
            "master peer: bw_in 0"}
#: refused platforms SimGrid refuses when it loads them: the words of its exception
AT_LOAD = {"torus: bw 0": "TorusZone: incorrect bandwidth for internode communication, bw=0",
           "fat tree: bw 0": "FatTreeZone: incorrect bandwidth for internode communication",
           "dragonfly: bw 0": "DragonflyZone: incorrect bandwidth for internode communication"}


def _run(tmp_path: Path, text: str) -> tuple[int, str, list[list[str]]]:
    """The binary's exit status, its stderr and the event types of each message it sent; it
    runs in its own session, killed with its group if it outlives TIMEOUT_S (a failure)."""
    platform = tmp_path / "platform.xml"
    platform.write_text(text)
    scheduler = RawScheduler(fcfs(6))
    scheduler.start()
    args = [BATSIM, "-p", str(platform), "-w", str(seeded_workload(tmp_path / "w.json", 1)),
            "-e", str(tmp_path / "out"), "-q",
            "-s", scheduler.endpoint.replace("localhost", "127.0.0.1")]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        _, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"the binary ran past {TIMEOUT_S} s (killed)")
    finally:
        scheduler.stop()
    events = [[e["type"] for e in json.loads(m)["events"]] for m in scheduler.received]
    return proc.returncode, err, events


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_binary_cannot_run_what_hdrm_refuses(name, tmp_path):
    rc, err, events = _run(tmp_path, REFUSED[name][0])
    flat = [t for ts in events for t in ts]
    if name in AT_LOAD:
        assert rc != 0 and AT_LOAD[name] in err and events == []
    elif name in AT_BEGIN:
        assert rc == 0 and DEADLOCK in err
        assert events == [["SIMULATION_BEGINS"]]
    else:  # a compute host's message: jobs are submitted, the session stops without its end
        assert rc == 0 and DEADLOCK in err
        assert events[0] == ["SIMULATION_BEGINS"] and "JOB_SUBMITTED" in flat
        assert "SIMULATION_ENDS" not in flat and flat.count("JOB_COMPLETED") < 20
    with pytest.raises(PlatformError):
        load_hosts(tmp_path / "platform.xml")


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_the_binary_runs_what_hdrm_reads(name, tmp_path):
    rc, err, events = _run(tmp_path, ACCEPTED[name])
    flat = [t for ts in events for t in ts]
    assert rc == 0 and DEADLOCK not in err
    assert flat.count("JOB_COMPLETED") == 20 and flat[-1] == "SIMULATION_ENDS"
    assert len(load_hosts(tmp_path / "platform.xml")) >= 6
