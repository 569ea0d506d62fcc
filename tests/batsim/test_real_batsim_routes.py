"""Routes to the master host under the REAL Batsim 4.2.1 and hdrm (session 24, engineer H).

* Refusals: a platform whose compute host (or the master host itself) has no route to the master
  host makes the binary abort (at its start, or when a job on that host ends); hdrm refuses the
  same platforms when it reads them, and reads the others.
* Latencies: on platforms of nested zones, a Full zone missing a route, chains of Floyd and
  Dijkstra routes, ``hdrm serve`` sends the binary's messages at the binary's times (1 us) and
  writes its out_jobs.csv rows (Batsim's actors, :mod:`hdrm.batsim.maestro`).

Skipped, with the reason, when no real Batsim can run (``real_batsim.py``); ``-m slow`` runs them.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from batsim_helpers import binary_run
from real_batsim import real_batsim
from test_serve_workloads import seeded_workload
from test_serve_workloads_latency import _assert_same, _session, timed

from hdrm.batsim.hosts import load_hosts
from hdrm.batsim.latency import route_latencies
from hdrm.errors import PlatformError

BATSIM, WHY_NOT = real_batsim()
pytestmark = [pytest.mark.skipif(BATSIM is None, reason=WHY_NOT), pytest.mark.slow]

HEAD = ("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        '<platform version="4.1">\n')
MASTER = '<host id="master_host" speed="1Gf"/>'
#: 10 GBps links as test_serve_vs_real's (test_actor_latency runs them at 1 GBps too): a message
#: takes its route's latency, then its byte (under 1 ns), which decides which of a job end and
#: a message arriving at the same instant comes first in the binary
LINKS = ('<link id="l1" bandwidth="10GBps" latency="1ms"/>'
         '<link id="l2" bandwidth="10GBps" latency="2ms"/>'
         '<link id="lo" bandwidth="10GBps" latency="30us"/>')
LOOP = '<route src="master_host" dst="master_host"><link_ctn id="lo"/></route>'
#: Floyd and Dijkstra zones refuse a symmetrical route from a point to itself (it exists twice)
LOOP_NO = '<route src="master_host" dst="master_host" symmetrical="NO"><link_ctn id="lo"/></route>'


def _cluster(cid: str, radical: str, lat: str) -> str:
    return (f'<cluster id="{cid}" prefix="{cid}" suffix="" radical="{radical}" speed="1Gf" '
            f'bw="10GBps" lat="{lat}" bb_bw="10GBps" bb_lat="5us"/>')


def _zr(src: str, dst: str, gw_src: str, gw_dst: str, link: str, sym: str = "") -> str:
    sym = f' symmetrical="{sym}"' if sym else ""
    return (f'<zoneRoute src="{src}" dst="{dst}" gw_src="{gw_src}" gw_dst="{gw_dst}"{sym}>'
            f'<link_ctn id="{link}"/></zoneRoute>')


def _route(src: str, dst: str, *links: str, sym: str = "") -> str:
    sym = f' symmetrical="{sym}"' if sym else ""
    return (f'<route src="{src}" dst="{dst}"{sym}>'
            + "".join(f'<link_ctn id="{x}"/>' for x in links) + "</route>")


def _flat(routing: str, routes: str, hosts: int = 6, extra: str = "") -> str:
    body = "".join(f'<host id="h{i}" speed="1Gf"/>' for i in range(hosts))
    return (f'{HEAD}<zone id="w" routing="{routing}">{MASTER}{body}{extra}{LINKS}{routes}'
            '</zone></platform>\n')


def _world(routing: str, inner: str, routes: str, master_routing: str = "Full") -> str:
    return (f'{HEAD}<zone id="w" routing="{routing}"><zone id="zm" routing="{master_routing}">'
            f'{MASTER}{LINKS if master_routing == "Full" else ""}'
            f'{LOOP if master_routing == "Full" else ""}</zone>'
            f'{inner}{LINKS if master_routing != "Full" else ""}{routes}</zone></platform>\n')


TO_MASTER = _zr("c", "zm", "cc_router", "master_host", "l1")
#: name -> platform the binary aborts on (checked: "No route", "Bad gateways", "There can't be
#: route in an Empty zone", a segmentation fault)
REFUSED = {
    "None zone": _flat("None", ""),
    "Floyd, a host without route": _flat("Floyd", "".join(
        _route(f"h{i}", "master_host", "l1") for i in range(5))),
    "Floyd, the route only towards the host": _flat("Floyd", "".join(
        _route(f"h{i}", "master_host", "l1") for i in range(5))
        + _route("master_host", "h5", "l2", sym="NO")),
    "Dijkstra, a host in no route": _flat("Dijkstra", _route("h0", "master_host", "l1")),
    "DijkstraCache, a host in no route": _flat("DijkstraCache", _route("h0", "master_host", "l1")),
    "Full, no zoneRoute": _world("Full", _cluster("c", "0-5", "10us"), ""),
    "Floyd, no zoneRoute": _world("Floyd", _cluster("c", "0-5", "10us"), ""),
    "Full, zoneRoute only towards the cluster": _world(
        "Full", _cluster("c", "0-5", "10us"), _zr("zm", "c", "master_host", "cc_router", "l1",
                                                  "NO")),
    "master in a None zone": _world("Full", _cluster("c", "0-5", "10us"), TO_MASTER, "None"),
    "hosts in a None zone": _world(
        "Full", '<zone id="zn" routing="None">' + "".join(
            f'<host id="h{i}" speed="1Gf"/>' for i in range(6)) + "</zone>",
        _zr("zn", "zm", "h0", "master_host", "l1")),
    "cluster in a sub-zone without zoneRoute": _world(
        "Floyd", '<zone id="za" routing="Full">' + _cluster("c", "0-5", "10us") + "</zone>", ""),
}
#: name -> platform the binary runs, with message latencies hdrm now reads
ROUTED = {
    "Full, zoneRoute": _world("Full", _cluster("c", "0-5", "10us"), TO_MASTER),
    "Full, zoneRoute towards the master only": _world(
        "Full", _cluster("c", "0-5", "10us"), _zr("c", "zm", "cc_router", "master_host", "l2",
                                                  "NO")),
    "Floyd, a chain of zoneRoutes": _world(
        "Floyd", _cluster("c", "0-2", "10us") + _cluster("d", "0-2", "40us"),
        TO_MASTER + _zr("d", "c", "dd_router", "cc_router", "l2")),
    "a cluster in a Floyd sub-zone": _world(
        "Full", '<zone id="za" routing="Floyd">' + _cluster("c", "0-5", "10us") + "</zone>",
        _zr("za", "zm", "cc_router", "master_host", "l2")),
    "Full, hosts without a route": _flat("Full", LOOP + "".join(
        _route(f"h{i}", "master_host", "l1") for i in range(0, 6, 2))),
    "Floyd, through a router": _flat("Floyd", LOOP_NO + _route("rt", "master_host", "l1") + "".join(
        _route(f"h{i}", "rt", "l2") for i in range(6)), extra='<router id="rt"/>'),
    "Dijkstra": _flat("Dijkstra", LOOP_NO + "".join(
        _route(f"h{i}", "master_host", "l1" if i % 2 else "l2") for i in range(6))),
}


def _run_one_job_per_host(platform: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    names = [f"h{i}" for i in range(6)]
    jobs = [{"id": str(j), "subtime": j * 10.0, "res": 1, "walltime": 5, "profile": "p"}
            for j in range(len(names))]
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"nb_res": 6, "jobs": jobs, "profiles": {
        "p": {"type": "delay", "delay": 1}}}))

    def reply(doc: dict) -> str:
        out = [{"timestamp": doc["now"], "type": "EXECUTE_JOB",
                "data": {"job_id": e["data"]["job_id"], "alloc": e["data"]["job_id"].split("!")[1]}}
               for e in doc["events"] if e["type"] == "JOB_SUBMITTED"]
        return json.dumps({"now": doc["now"], "events": out})

    return binary_run(BATSIM, reply, platform, workload, tmp_path / "out")


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_binary_aborts_and_hdrm_refuses(name, tmp_path):
    platform = tmp_path / "platform.xml"
    platform.write_text(REFUSED[name])
    done = _run_one_job_per_host(platform, tmp_path)
    assert done.returncode != 0, done.stderr[-2000:]
    assert any(words in done.stderr for words in (
        "No route", "Bad gateways", "There can't be route", "does not accept new routes",
        "Segmentation fault")) or done.returncode == -11, done.stderr[-2000:]
    with pytest.raises(PlatformError, match="has no route to the master host 'master_host'"):
        load_hosts(platform)


def _spaced_workload(path: Path) -> Path:
    """One 1-second job per host, 10 s apart: no two events of the session are near each other."""
    jobs = [{"id": str(j), "subtime": j * 10.0, "res": 1, "walltime": -1, "profile": "d"}
            for j in range(6)]
    path.write_text(json.dumps({"nb_res": 6, "jobs": jobs,
                                "profiles": {"d": {"type": "delay", "delay": 1}}}))
    return path


@pytest.mark.parametrize("name", sorted(ROUTED))
def test_message_times_as_the_binary_on_routed_zones(name, tmp_path):
    """Jobs far apart: every message at the binary's time to 1 ns, with the route latencies hdrm
    now reads (before: "cannot read" them, a warning and latency 0)."""
    platform = tmp_path / "platform.xml"
    platform.write_text(ROUTED[name])
    latencies = route_latencies(platform, load_hosts(platform))
    assert not latencies.zero
    workload = [_spaced_workload(tmp_path / "w.json")]
    theirs = timed(_session(platform, workload, tmp_path / "real", True, calls=False))
    ours = timed(_session(platform, workload, tmp_path / "ours", False, calls=False))
    assert [[e[:2] for e in events] for _, events in ours] == \
        [[e[:2] for e in events] for _, events in theirs]
    for (now, events), (ref_now, ref_events) in zip(ours, theirs):
        assert now == pytest.approx(ref_now, abs=1e-9)
        assert [e[2] for e in events] == pytest.approx([e[2] for e in ref_events], abs=1e-9)


@pytest.mark.parametrize("name", sorted(ROUTED))
def test_same_messages_as_the_binary_on_routed_zones(name, tmp_path):
    """Every message and row the same (times to 1 us), on two seeded workloads full of ties.

    Where a job's end and a message's arrival fall at one instant, the binary orders them by
    the message's byte after its latency (under 1 ns, bounded by TCP-gamma): hdrm serve's actor
    model sends it so ("Full, zoneRoute", "Full, hosts without a route", "Floyd, through a
    router" differed under the delayed model, which leaves the byte out)."""
    platform = tmp_path / "platform.xml"
    platform.write_text(ROUTED[name])
    workloads = [seeded_workload(tmp_path / f"w{i}.json", seed) for i, seed in enumerate((1, 2))]
    theirs = _session(platform, workloads, tmp_path / "real", True)
    ours = _session(platform, workloads, tmp_path / "ours", False)
    _assert_same(tmp_path, ours, theirs)
