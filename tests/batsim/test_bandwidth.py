"""Which sessions hdrm serve runs with Batsim's actors, and their message bandwidths."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from test_serve_energy_order import write_platform, write_workload

from hdrm.batsim.actors import ActorSimulation
from hdrm.batsim.bandwidth import LOOPBACK_BPS, message_bandwidths, parse_bandwidth
from hdrm.batsim.hosts import load_hosts
from hdrm.batsim.jobs import read_job_table
from hdrm.batsim.server import BatsimServer
from hdrm.batsim.simulator import BatsimSimulation


@pytest.mark.parametrize("text, bps", [("10GBps", 1e10), ("1Gbps", 1.25e8), ("125MBps", 1.25e8),
                                       ("2KiBps", 2048.0), ("1e3", 1e3), (" 1.5kBps ", 1500.0)])
def test_parse_bandwidth(text, bps):
    assert parse_bandwidth(text) == bps


@pytest.mark.parametrize("text", ["fast", "10GFps", "", "10 G Bps"])
def test_parse_bandwidth_refuses_what_is_not_one(text):
    assert parse_bandwidth(text) is None


def _inputs(tmp_path: Path, profile: dict | None = None):
    platform = write_platform(tmp_path / "p.xml", 4)
    workload = write_workload(tmp_path / "w.json", [(0, 1, 2), (1, 2, 3)])
    if profile is not None:
        doc = json.loads(workload.read_text())
        doc["profiles"]["d3"] = profile
        workload.write_text(json.dumps(doc))
    return platform, workload


def test_a_delay_workload_on_routed_hosts_gets_its_bandwidths(tmp_path):
    platform, workload = _inputs(tmp_path)
    hosts = load_hosts(platform)
    bandwidths = message_bandwidths(platform, hosts, read_job_table(workload))
    assert bandwidths.master_bps == LOOPBACK_BPS  # no route from the master host to itself
    assert bandwidths.host_bps == (1e10,) * 4  # the 10GBps links
    assert bandwidths.of(-1) == LOOPBACK_BPS and bandwidths.of(2) == 1e10
    assert isinstance(BatsimServer(platform, workload).simulation, ActorSimulation)


def test_the_slowest_link_of_a_route_sets_its_bandwidth(tmp_path):
    platform, workload = _inputs(tmp_path)
    text = platform.read_text().replace(
        '<link_ctn id="l02"/></route>', '<link_ctn id="l02"/><link_ctn id="slow"/></route>')
    first = text.index("<route ")  # links before the zone's routes (SimGrid's DTD)
    platform.write_text(text[:first] + '<link id="slow" bandwidth="1Gbps"/>\n' + text[first:])
    bandwidths = message_bandwidths(platform, load_hosts(platform), read_job_table(workload))
    assert bandwidths.host_bps == (1e10, 1e10, 1.25e8, 1e10)


def test_other_sessions_keep_the_instant_model(tmp_path):
    """A parallel_homogeneous_total job is outside the actor model; a parallel_homogeneous job
    that only computes is in it."""
    platform, workload = _inputs(tmp_path, {"type": "parallel_homogeneous", "cpu": 3e9, "com": 0})
    assert message_bandwidths(platform, load_hosts(platform), read_job_table(workload)) is not None
    platform, workload = _inputs(tmp_path, {"type": "parallel_homogeneous_total", "cpu": 3e9,
                                                 "com": 0})
    assert message_bandwidths(platform, load_hosts(platform), read_job_table(workload)) is None
    assert type(BatsimServer(platform, workload).simulation) is BatsimSimulation


def test_a_host_without_a_route_to_the_master_has_an_empty_route(tmp_path):
    """In a Full zone a missing route is an empty one (no links, SimGrid 3.32; Batsim runs): a
    message over it sends nothing and ends at the next step (infinite bandwidth here)."""
    platform, workload = _inputs(tmp_path)
    text = platform.read_text()
    platform.write_text(text.replace('<route src="master_host" dst="h03"><link_ctn id="l03"/>'
                                     '</route>', ''))
    bandwidths = message_bandwidths(platform, load_hosts(platform), read_job_table(workload))
    assert bandwidths.host_bps == (1e10, 1e10, 1e10, math.inf)
    assert type(BatsimServer(platform, workload).simulation) is ActorSimulation


@pytest.mark.parametrize("routing", ["Floyd", "Dijkstra"])
def test_a_zone_that_computes_its_routes_runs_in_the_actor_model(tmp_path, routing):
    """Floyd or Dijkstra routing builds its routes out of the listed ones (RouteTable reads
    them): each host over its own link (h01's at 1 GBps), the master over SimGrid's loopback."""
    platform, workload = _inputs(tmp_path)
    platform.write_text(platform.read_text().replace('routing="Full"', f'routing="{routing}"')
                        .replace('<link id="l01" bandwidth="10GBps"',
                                 '<link id="l01" bandwidth="1GBps"'))
    bandwidths = message_bandwidths(platform, load_hosts(platform), read_job_table(workload))
    assert bandwidths.host_bps == (1e10, 1e9, 1e10, 1e10)
    assert bandwidths.master_bps == LOOPBACK_BPS
    assert type(BatsimServer(platform, workload).simulation) is ActorSimulation
