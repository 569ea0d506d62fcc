"""External events and kills in hdrm serve's delayed model (:mod:`hdrm.batsim.delayed`, forced
here: latencies on routes it reads only as latencies), against Batsim 4.2.1.

Every link, the master host's route to itself included, has a 1 ms latency, so each of Batsim's
internal messages takes 1 ms: the event files' submitters greet the server and send their
batches like the job submitters; a KILL_JOB reaches the server 1 ms after the reply, Batsim's
killer actor kills the job there and reports (KILLING_DONE) after the forwarding actor's
SCHED_READY, another 2 ms later; out_jobs.csv's rows come in the order the ends reach the
server.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from real_batsim import real_batsim
from serve_vs_binary import run
from test_external_events import fcfs_avail, write_workload
from test_serve_events_vs_real import NB_HOSTS, _workloads, fcfs_killing, seeded_events

BATSIM, WHY_NOT = real_batsim()


@pytest.fixture(autouse=True)
def delayed_model(monkeypatch):
    """The delayed model for every session (the actor model reads these routes exactly)."""
    import hdrm.batsim.server as server_module
    monkeypatch.setattr(server_module, "message_bandwidths", lambda *args, **kwargs: None)


def write_platform(path: Path, nb_hosts: int, latency: str = "1ms") -> Path:
    watts = '<prop id="wattage_per_state" value="{}"/>'
    lines = ["<?xml version='1.0'?>",
             '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
             '<platform version="4.1">', '<zone id="AS0" routing="Full">',
             f'  <host id="master_host" speed="1Gf">{watts.format("10:10")}</host>']
    lines += [f'  <host id="h{i:02d}" speed="1Gf">{watts.format(f"{95 + i}:{200 + 7 * i}")}'
              '</host>' for i in range(nb_hosts)]
    lines += [f'  <link id="l{i:02d}" bandwidth="10GBps" latency="{latency}"/>'
              for i in range(nb_hosts)]
    lines += [f'  <link id="lm" bandwidth="10GBps" latency="{latency}"/>']
    lines += [f'  <route src="master_host" dst="h{i:02d}"><link_ctn id="l{i:02d}"/></route>'
              for i in range(nb_hosts)]
    lines += ['  <route src="master_host" dst="master_host"><link_ctn id="lm"/></route>']
    path.write_text("\n".join([*lines, "</zone>", "</platform>", ""]))
    return path


def kill_at_2():
    """Job 0 on host 1; a call at 2 s, answered with KILL_JOB."""
    def reply(doc: dict) -> str:
        out = []
        for e in doc["events"]:
            if e["type"] == "SIMULATION_BEGINS":
                out.append({"type": "CALL_ME_LATER", "data": {"timestamp": 2}})
            elif e["type"] == "JOB_SUBMITTED":
                out.append({"type": "EXECUTE_JOB", "data": {"job_id": "w0!0", "alloc": "1"}})
            elif e["type"] == "REQUESTED_CALL":
                out.append({"type": "KILL_JOB", "data": {"job_ids": ["w0!0"]}})
        return json.dumps({"now": doc["now"],
                           "events": [dict(x, timestamp=doc["now"]) for x in out]})
    return reply


def test_a_kill_is_reported_when_the_killers_message_arrives(tmp_path):
    """The job starts when its EXECUTE_JOB arrives (0.006 s: the reply to the message at 0.005
    s, 1 ms later); the call at 2 s reaches the server at 2.001 s, the KILL_JOB of its reply at
    2.002 s (the job stops there, having run 1.996 s), SCHED_READY at 2.003 s, the killer's
    message at 2.004 s, which stamps JOB_COMPLETED and JOB_KILLED (the binary's times)."""
    plat = write_platform(tmp_path / "p.xml", 2)
    workload = write_workload(tmp_path / "w.json", [(0, 1, 5)])
    out = run(kill_at_2(), plat, [workload], tmp_path / "out")
    got = [(json.loads(m)["now"], [(e["timestamp"], e["type"]) for e in json.loads(m)["events"]])
           for m in out.messages[2:]]
    assert got == [(2.001, [(2.001, "REQUESTED_CALL")]),
                   (2.004, [(2.004, "JOB_COMPLETED"), (2.004, "JOB_KILLED")]),
                   (2.005, [(2.005, "SIMULATION_ENDS")])]
    row = out.files["jobs.csv"].splitlines()[1].split(",")
    assert row[7:11] == ["COMPLETED_KILLED", "0.006000", "1.996000", "2.002000"]


def _rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT or "")
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("energy", [False, True], ids=["", "E"])
@pytest.mark.parametrize("kill", [False, True], ids=["avail", "kill"])
def test_seeded_event_sessions_are_the_binarys(tmp_path, seed, energy, kill):
    """Seeded workloads (two for seed 3) and event files (one or two, generic events forwarded
    for seed 1 and 4, 20 simultaneous ones for seed 1), a raw FCFS that avoids unavailable
    machines (and kills the jobs on those going down): the same messages byte for byte and
    the same out_jobs.csv, but the sixth decimal of a killed job's stretch and energy (Batsim
    takes its run time and energy as long-double differences)."""
    nb_files, forward, ties = 1 + seed % 2, seed % 3 == 1, seed % 4 == 1
    plat = write_platform(tmp_path / "p.xml", NB_HOSTS)
    events = seeded_events(tmp_path, seed, nb_files, forward, ties)
    workloads = _workloads(tmp_path, seed)
    flags = (("-E",) if energy else ()) + (("--forward-unknown-events",) if forward else ())
    real, ours = (run(fcfs_killing(NB_HOSTS) if kill else fcfs_avail(NB_HOSTS), plat, workloads,
                      tmp_path / who / "out", flags, events, binary)
                  for who, binary in (("bin", BATSIM), ("hdrm", None)))
    assert real.error == "" and ours.error == ""
    assert ours.messages == real.messages
    for a, b in zip(_rows(real.files["jobs.csv"]), _rows(ours.files["jobs.csv"]), strict=True):
        for column in ("stretch", "consumed_energy"):
            if a["final_state"] == "COMPLETED_KILLED":
                assert float(a.pop(column)) == pytest.approx(float(b.pop(column)), abs=1.5e-6)
        assert a == b


@pytest.mark.slow
@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT or "")
def test_a_kill_on_the_binary(tmp_path):
    plat = write_platform(tmp_path / "p.xml", 2)
    workload = write_workload(tmp_path / "w.json", [(0, 1, 5)])
    real, ours = (run(kill_at_2(), plat, [workload], tmp_path / who / "out", (), (), binary)
                  for who, binary in (("bin", BATSIM), ("hdrm", None)))
    assert ours.messages == real.messages and ours.files["jobs.csv"] == real.files["jobs.csv"]
