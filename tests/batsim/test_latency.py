"""Batsim's message latencies in ``hdrm serve``: route latencies read from platforms, and the
delayed server (:class:`hdrm.batsim.delayed.DelayedSimulation`) checked by hand and against a
session recorded with the real Batsim 4.2.1."""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path

import pytest
from batsim_helpers import GOLDEN, PLATFORMS, SESSIONS, PybatsimProcess, read_session, recorded_replies
from builders import SIMGRID_HEAD
from test_serve_vs_real import BATSIM, NB_HOSTS, WHY_NOT, _events, raw_session, write_platform, write_workload

from hdrm.batsim import protocol as p
from hdrm.batsim.delayed import DelayedSimulation
from hdrm.batsim.hosts import load_hosts
from hdrm.batsim.jobs import read_job_table
from hdrm.batsim.latency import RouteLatencies, route_latencies
from hdrm.batsim.server import ServeOptions, serve
from hdrm.batsim.simulator import ServerConfig
from hdrm.results.csvio import read_jobs_csv, read_schedule_csv

SMALL = GOLDEN / "small_delays"

#: cluster256_1k's network on 4 nodes: 50 us node links, 500 us backbones, a 500 us link between.
TWO_CLUSTERS = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="AS0" routing="Full">
  <cluster id="c1" prefix="a" suffix="" radical="0-3" speed="1Gf" bw="125MBps" lat="50us"
           bb_bw="2.25GBps" bb_lat="500us"/>
  <cluster id="c2" prefix="master_host" suffix="" radical="0-0" speed="1Gf" bw="125MBps" lat="50us"
           bb_bw="2.25GBps" bb_lat="500us"><prop id="role" value="master"/></cluster>
  <link id="backbone" bandwidth="1.25GBps" latency="0.5ms"/>
  <zoneRoute src="c1" dst="c2" gw_src="ac1_router" gw_dst="master_hostc2_router">
    <link_ctn id="backbone"/></zoneRoute>
</zone></platform>
"""


def _latencies(path: Path) -> RouteLatencies:
    return route_latencies(path, load_hosts(path))


def test_cluster_routes_sum_node_links_and_backbones(tmp_path):
    platform = tmp_path / "two.xml"
    platform.write_text(TWO_CLUSTERS)
    # master to itself: up 50, backbone 500, down 50; a node: 50 + 500 + 500 + 500 + 50
    assert _latencies(platform) == RouteLatencies(0.0006, (0.0016,) * 4)
    assert _latencies(GOLDEN / "cluster256_1k" / "platform.xml") == RouteLatencies(0.0006, (0.0016,) * 256)
    platform.write_text(TWO_CLUSTERS.replace(
        'bb_lat="500us"><prop', 'bb_lat="500us" loopback_lat="7us" loopback_bw="10GBps"><prop'))
    assert _latencies(platform).master_s == 7e-6  # (loopback_lat alone: bandwidth 0, refused)


def test_host_routes_sum_their_links():
    small = _latencies(SMALL / "platform.xml")
    assert small.master_s == 15e-6  # the explicit loopback route
    # resources by name: Bourassa, Fafard, Ginette, Jupiter (routes 4 3 2 0 1 6 7 / 4 3 2 0 1 8 / 4 3 5 / 9)
    assert small.host_s == pytest.approx((1955.365e-6, 1976.025e-6, 1272.279e-6, 1461.517e-6), abs=1e-12)
    sdsc = _latencies(GOLDEN / "sdsc1024_1k" / "platform.xml")
    assert sdsc.master_s == 0.0 and set(sdsc.host_s) == {10e-6}  # no master route: SimGrid's loopback


def test_exported_platforms_have_no_latency(caplog):
    assert _latencies(PLATFORMS / "tiny4.json").zero
    assert _latencies(GOLDEN / "pstate_lockstep" / "platform.xml").zero
    with caplog.at_level(logging.WARNING, logger="hdrm.batsim.latency"):
        assert _latencies(SESSIONS / "protocol_demo" / "energy_platform_8.xml").zero  # Vivaldi at 0 0 0
    assert caplog.text == ""


def test_unreadable_routes_keep_latency_zero_with_a_warning(tmp_path, caplog):
    platform = tmp_path / "noroute.xml"
    # a Full zone without h's route: SimGrid's empty route, latency 0 (Batsim runs it), read
    # without a warning since session 24 (tests/platform/test_simgrid_routes.py)
    platform.write_text(SIMGRID_HEAD + '<platform version="4.1"><zone id="z" routing="Full">'
                        '<host id="master_host" speed="1Gf"/><host id="h" speed="1Gf"/>'
                        '<link id="l" latency="1ms" bandwidth="1GBps"/></zone></platform>')
    with caplog.at_level(logging.WARNING, logger="hdrm.batsim.latency"):
        assert _latencies(platform).zero
    assert caplog.text == ""
    # a zone of Cluster routing, read since session 26: k0 up its cabinet link (50 us) and the
    # backbone (1 ms) to the router gw, then l (1 ms)
    platform.write_text(SIMGRID_HEAD + '<platform version="4.1"><zone id="w" routing="Full">'
                        '<zone id="m" routing="Full"><host id="master_host" speed="1Gf"/></zone>'
                        '<zone id="k" routing="Cluster"><cabinet id="cb" prefix="k" suffix="" '
                        'radical="0-1" speed="1Gf" bw="1GBps" lat="50us"/><backbone id="b" '
                        'bandwidth="1GBps" latency="1ms"/><router id="gw"/></zone>'
                        '<link id="l" latency="1ms" bandwidth="1GBps"/><zoneRoute src="k" dst="m" '
                        'gw_src="gw" gw_dst="master_host"><link_ctn id="l"/></zoneRoute>'
                        '</zone></platform>')
    with caplog.at_level(logging.WARNING, logger="hdrm.batsim.latency"):
        assert _latencies(platform) == RouteLatencies(0.0, (0.00205, 0.00205))
    assert caplog.text == ""
    # two chains of two links to the master, of 2 ms and 3 ms: not modelled
    platform.write_text(SIMGRID_HEAD + '<platform version="4.1"><zone id="z" routing="Floyd">'
                        '<host id="master_host" speed="1Gf"/><host id="h" speed="1Gf"/>'
                        '<router id="r1"/><router id="r2"/>'
                        '<link id="l" latency="1ms" bandwidth="1GBps"/>'
                        '<link id="l2" latency="2ms" bandwidth="1GBps"/>'
                        '<route src="h" dst="r1"><link_ctn id="l"/></route>'
                        '<route src="h" dst="r2"><link_ctn id="l2"/></route>'
                        '<route src="r1" dst="master_host"><link_ctn id="l"/></route>'
                        '<route src="r2" dst="master_host"><link_ctn id="l"/></route>'
                        '</zone></platform>')
    with caplog.at_level(logging.WARNING, logger="hdrm.batsim.latency"):
        assert _latencies(platform).zero
    assert "(latencies of routes of equal length, or of a link or zone not read)" in caplog.text
    assert "latency 0" in caplog.text


def _run(sim: DelayedSimulation, decide) -> list[p.Message]:
    """Run a session; ``decide(message)`` returns the reply's events (all at the message's now)."""
    sent, message = [], sim.begin()
    while message is not None:
        sent.append(message)
        sim.react(p.Message(message.now, [p.Event(message.now, k, d) for k, d in decide(message)]))
        message = sim.next_message()
    return sent


def test_hand_checked_delays(tmp_path):
    """0.6 ms per message on the master host, 1.6 ms from a node; the server takes one at a time."""
    platform = tmp_path / "two.xml"
    platform.write_text(TWO_CLUSTERS)
    workload = tmp_path / "wl.json"
    jobs = [{"id": i, "subtime": 10, "res": 1, "profile": "five"} for i in range(3)]
    jobs.append({"id": 3, "subtime": 20, "res": 1, "profile": "one"})
    workload.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": {
        "five": {"type": "delay", "delay": 5}, "one": {"type": "delay", "delay": 1}}}))
    hosts = load_hosts(platform)
    sim = DelayedSimulation(hosts, read_job_table(workload), None, route_latencies(platform, hosts))

    def execute_all(message: p.Message):
        submitted = [e.data["job_id"] for e in message.events if e.type == "JOB_SUBMITTED"]
        return [("EXECUTE_JOB", {"job_id": j, "alloc": j[-1]}) for j in submitted]

    sent = _run(sim, execute_all)
    summary = [(round(m.now, 7), [(e.type, round(e.timestamp, 7)) for e in m.events]) for m in sent]
    assert summary[1:] == [
        (10.0006, [("JOB_SUBMITTED", 10.0006)] * 3),  # first batch: one latency
        # decisions at +0.6, +1.2, +1.8 ms, SCHED_READY at 10.0030; the ends 0.6 ms apart arrive
        # 1.6 ms apart, in one message
        (15.006, [("JOB_COMPLETED", 15.0028), ("JOB_COMPLETED", 15.0044), ("JOB_COMPLETED", 15.006)]),
        (20.0012, [("JOB_SUBMITTED", 20.0012)]),  # a later batch: two latencies
        (20.003, [("NOTIFY", 20.0018)]),  # the goodbye one latency later; sent after SCHED_READY
        (21.004, [("JOB_COMPLETED", 21.004)]),  # started 20.0024, behind the goodbye
        (21.0046, [("SIMULATION_ENDS", 21.0046)]),
    ]
    rows = {r.job_id: r for r in sim.results()}
    assert [round(rows[j].starting_time, 7) for j in "0123"] == [10.0012, 10.0018, 10.0024, 20.0024]
    assert [round(rows[j].finish_time, 7) for j in "0123"] == [15.0012, 15.0018, 15.0024, 21.0024]


def test_recorded_session_is_reproduced_byte_for_byte():
    """Capture B of the recorded sessions (real Batsim, small_delays' 15 us loopback and routes of
    1.3 to 2 ms): every message after SIMULATION_BEGINS, times included (without the delays they
    differed by up to 2 ms)."""
    recorded = read_session(SESSIONS / "protocol_sample.txt", "B")
    hosts = load_hosts(SMALL / "platform.xml")
    sim = DelayedSimulation(hosts, read_job_table(SMALL / "workload.json"), None,
                            route_latencies(SMALL / "platform.xml", hosts))
    replies, sent = recorded_replies(recorded), []
    message = sim.begin()
    while message is not None:
        sent.append(p.encode_message(message))
        sim.react(p.decode_message(replies.pop(0), "scheduler"))
        message = sim.next_message()
    theirs = [m.text for m in recorded if m.sender == "batsim"]
    assert len(sent) == len(theirs) == 23
    assert sent[1:] == theirs[1:]


def _latency_platform(path: Path, master: str | None, host: str) -> Path:
    """test_serve_vs_real's platform with ``host`` on every host link and, unless None, a loopback
    route of latency ``master`` on the master host."""
    text = write_platform(path, NB_HOSTS).read_text().replace('latency="0us"', f'latency="{host}"')
    if master is not None:
        first_route = text.index("  <route")
        text = (text[:first_route] + f'  <link id="lo" bandwidth="10GBps" latency="{master}"/>\n'
                + text[first_route:].replace(
                    "</zone>", '  <route src="master_host" dst="master_host"><link_ctn id="lo"/></route>\n</zone>'))
    path.write_text(text)
    return path


@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize(("seed", "master", "host"), [(1, "30us", "100us"), (3, None, "10us"), (8, "600us", "1.6ms")])
def test_same_messages_as_the_real_batsim_with_latencies(seed, master, host, tmp_path):
    """The real binary and hdrm serve on test_serve_vs_real's tie-heavy workloads (calls, walltime
    kills, simultaneous submissions and ends) with link latencies: every message the same, events,
    order and times (1 us), and the same out_jobs.csv. Seed 8 differs without latencies (Batsim's
    sub-nanosecond drift); its latencies separate the events."""
    platform = _latency_platform(tmp_path / "platform.xml", master, host)
    assert not route_latencies(platform, load_hosts(platform)).zero
    workload = write_workload(tmp_path / "workload.json", seed)
    theirs = raw_session(platform, workload, tmp_path / "real", real=True)
    ours = raw_session(platform, workload, tmp_path / "ours", real=False)
    assert len(ours) == len(theirs)
    for i, (mine, ref) in enumerate(zip(ours, theirs)):
        assert _events(mine) == _events(ref), f"message {i} at t={ref['now']}"
        assert mine["now"] == pytest.approx(ref["now"], abs=1e-6), f"message {i}"
        for a, b in zip(mine["events"], ref["events"]):
            assert a["timestamp"] == pytest.approx(b["timestamp"], abs=1e-6), f"message {i}"
    mine, ref = read_jobs_csv(tmp_path / "ours_jobs.csv"), read_jobs_csv(tmp_path / "real_jobs.csv")
    assert [r.job_id for r in mine] == [r.job_id for r in ref]  # rows in the same order
    for a, b in zip(mine, ref):  # Batsim's stretch differs in the 6th decimal (its rounding)
        assert (a.allocated_resources, a.final_state) == (b.allocated_resources, b.final_state), a.job_id
        assert (a.starting_time, a.finish_time) == pytest.approx((b.starting_time, b.finish_time), abs=1e-6)


@pytest.mark.skipif(BATSIM is None, reason=WHY_NOT)
@pytest.mark.parametrize(("case", "folder"), [("pstate_slowdown", "pstateOne"), ("pstate_lockstep", "alternate")])
def test_power_states_with_latencies_as_the_real_batsim(case, folder, tmp_path):
    """The power-state goldens' schedulers on their platform with 100 us host links: the same jobs,
    times and energies as the real binary; hosts are charged until the last event, not for the
    last messages' transfer (12.0 s and 2,400 J for pstate_lockstep's job, 4,800 J in all)."""
    root = GOLDEN / case
    platform = tmp_path / "platform.xml"
    platform.write_text((root / "platform.xml").read_text().replace('latency="0us"', 'latency="100us"'))
    assert route_latencies(platform, load_hosts(platform)) == RouteLatencies(0.0, (1e-4,) * 4)
    summaries = {}
    for name in ("real", "ours"):
        sched = PybatsimProcess(str(root / f"{folder}.py"), tmp_path / f"{name}.log")
        try:
            if name == "real":
                done = subprocess.run(
                    [BATSIM, "-p", str(platform), "-w", str(root / "workload.json"), "-e", str(tmp_path / name),
                     "-s", f"tcp://127.0.0.1:{sched.port}", "-E", "-q", "--disable-schedule-tracing",
                     "--disable-machine-state-tracing"], capture_output=True, text=True, timeout=120)
                assert done.returncode == 0, done.stderr[-3000:]
            else:
                serve(platform, root / "workload.json",
                      ServeOptions(sched.endpoint, str(tmp_path / name), 30.0, ServerConfig(energy=True)))
            assert sched.finish() == 0, (tmp_path / f"{name}.log").read_text()[-2000:]
        finally:
            sched.close()
        summaries[name] = read_schedule_csv(tmp_path / f"{name}_schedule.csv")
    mine, ref = read_jobs_csv(tmp_path / "ours_jobs.csv"), read_jobs_csv(tmp_path / "real_jobs.csv")
    assert [r.job_id for r in mine] == [r.job_id for r in ref]
    for a, b in zip(mine, ref):
        assert (a.allocated_resources, a.final_state) == (b.allocated_resources, b.final_state), a.job_id
        assert (a.starting_time, a.finish_time, a.consumed_energy) == pytest.approx(
            (b.starting_time, b.finish_time, b.consumed_energy), abs=1e-6)
    for column in ("consumed_joules", "makespan", "nb_machine_switches"):
        assert summaries["ours"][column] == pytest.approx(summaries["real"][column], abs=1e-3), column
