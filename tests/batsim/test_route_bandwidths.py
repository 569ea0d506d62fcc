"""The rate and latency of each message to the master host, from its route's links
(hdrm.batsim.bandwidth.route_bps and message_bandwidths; no binary needed).

A message is one byte in SimGrid's ptask_L07 model: the solver puts it on each link of its route
once per crossing (``expand_add``), except on a FATPIPE link (once), so a link crossed twice
gives it half its bandwidth; its rate is the smallest over the links (then bounded by TCP-gamma,
:mod:`hdrm.batsim.maestro`). The binary's sessions on these platforms are compared in the slow
tests/batsim/test_actor_routes.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from test_actor_routes import TWICE, role
from test_real_batsim_routes import ROUTED

from hdrm.batsim.actors import ActorSimulation
from hdrm.batsim.bandwidth import message_bandwidths, route_bps
from hdrm.batsim.hosts import load_hosts
from hdrm.batsim.jobs import read_job_table
from hdrm.batsim.latency import route_latencies
from hdrm.batsim.server import BatsimServer
from hdrm.platform.simgrid_routes import Link

A = Link("a", 1e9, 1e-3)
F = Link("f", 1e9, 1e-3, "FATPIPE")


@pytest.mark.parametrize(("links", "bps"), [
    ((), math.inf),  # an empty route: nothing to cross
    ((A,), 1e9), ((A, A), 5e8), ((A, Link("b", 2e8, 0.0), A), 2e8), ((A, Link("b", 8e8, 0.0), A),
                                                                       5e8),
    ((F, F), 1e9),  # a FATPIPE link is crossed once however often it is listed
    ((Link("d_UP", 1e9, 0.0, "SPLITDUPLEX"), Link("d_DOWN", 1e9, 0.0, "SPLITDUPLEX")), 1e9),
    ((A, Link("w", 1e9, 0.0, "WIFI")), None), ((A, Link("n", None, 0.0)), None),
    ((Link("z", 0.0, 0.0),), None)])
def test_a_message_s_rate_on_its_route(links, bps):
    assert route_bps(links) == bps


def _found(tmp_path: Path, text: str):
    platform = tmp_path / "platform.xml"
    platform.write_text(text)
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"nb_res": 6, "jobs": [
        {"id": "1", "subtime": 1, "res": 1, "walltime": -1, "profile": "d"}],
        "profiles": {"d": {"type": "delay", "delay": 2}}}))
    hosts = load_hosts(platform)
    found = message_bandwidths(platform, hosts, read_job_table(workload),
                               route_latencies(platform, hosts))
    return found, BatsimServer(platform, workload).simulation


def test_routes_crossing_a_link_twice(tmp_path):
    """h0 ls twice, h1 lf (FATPIPE) twice, h2 l1 then l2, h3 lsd up then down, h4 lsd up twice,
    h5 ls, l1, ls; the master lo twice: all 1 GBps, 1 ms (lo 30 us)."""
    found, simulation = _found(tmp_path, TWICE)
    assert found.host_bps == (5e8, 1e9, 1e9, 1e9, 5e8, 5e8) and found.master_bps == 5e8
    assert found.latencies.host_s == (2e-3, 2e-3, 2e-3, 2e-3, 2e-3, 3e-3)
    assert found.latency(-1) == 30 * 1e-6 + 30 * 1e-6
    assert type(simulation) is ActorSimulation


def test_a_master_host_named_by_role(tmp_path):
    """'Floyd, through a router' with its master host called boss (role master): every host
    reaches it over l2 to rt (2 ms) and l1 (1 ms), boss itself over lo (30 us)."""
    found, simulation = _found(tmp_path, role(ROUTED["Floyd, through a router"]))
    assert found.host_bps == (1e10,) * 6 and found.latencies.host_s == (3e-3,) * 6
    assert (found.master_bps, found.latency(-1)) == (1e10, 30 * 1e-6)
    assert type(simulation) is ActorSimulation


def test_mixed_bandwidths_through_zones(tmp_path):
    """'Full, zoneRoute' with 1.25 GBps node links, l1 at 1 GBps, lo at 100 MBps: a node goes up
    its link (10 us) and the backbone (10 GBps, 5 us), then l1 (1 ms): 1 GBps; the master over
    its loop lo."""
    text = (ROUTED["Full, zoneRoute"].replace('"l1" bandwidth="10GBps"', '"l1" bandwidth="1GBps"')
            .replace('"lo" bandwidth="10GBps"', '"lo" bandwidth="100MBps"')
            .replace('bw="10GBps" lat=', 'bw="1.25GBps" lat='))
    found, simulation = _found(tmp_path, text)
    assert found.host_bps == (1e9,) * 6 and found.master_bps == 1e8
    assert found.latencies.host_s == pytest.approx((1.015e-3,) * 6, abs=1e-15)
    assert type(simulation) is ActorSimulation
