"""Routes to the master host, as SimGrid 3.32 resolves them (hdrm.platform.simgrid_routes).

Each refused platform below made the real Batsim 4.2.1 abort (runs/s24h/probe_before.log: "No
route from ...", "Bad gateways for route from ...", "There can't be route in an Empty zone", a
segmentation fault, "The route between ... already exists"), and ran under hdrm before; the
slow tests/batsim/test_real_batsim_routes.py runs the binary on such platforms.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from builders import write_platform

from hdrm.batsim.hosts import load_hosts
from hdrm.batsim.latency import RouteLatencies, route_latencies
from hdrm.env import SchedulingEnv
from hdrm.errors import PlatformError
from hdrm.platform.simgrid import platform_from_simgrid, read_simgrid_hosts

REPO = Path(__file__).resolve().parents[2]
HEAD = ("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        "<platform version=\"4.1\">\n")
MASTER = '<host id="master_host" speed="1Gf"/>'
LINKS = ('<link id="l1" bandwidth="1GBps" latency="1ms"/>'
         '<link id="l2" bandwidth="1GBps" latency="2ms"/>')
CLUSTER = '<cluster id="c" prefix="c" suffix="" radical="0-1" speed="1Gf" bw="1GBps" lat="10us"/>'
TO_MASTER = ('<zoneRoute src="c" dst="zm" gw_src="cc_router" gw_dst="master_host">'
             '<link_ctn id="l1"/></zoneRoute>')


def _route(src: str, dst: str, link: str, sym: str = "") -> str:
    sym = f' symmetrical="{sym}"' if sym else ""
    return f'<route src="{src}" dst="{dst}"{sym}><link_ctn id="{link}"/></route>'


def flat(routing: str, routes: str = "", extra: str = "") -> str:
    return (f'{HEAD}<zone id="w" routing="{routing}">{MASTER}<host id="h0" speed="1Gf"/>'
            f'<host id="h1" speed="2Gf"/>{extra}{LINKS}{routes}</zone></platform>\n')


def world(routing: str, inner: str, routes: str = "", master_routing: str = "Full") -> str:
    return (f'{HEAD}<zone id="w" routing="{routing}"><zone id="zm" routing="{master_routing}">'
            f'{MASTER}</zone>{inner}{LINKS}{routes}</zone></platform>\n')


H0 = _route("h0", "master_host", "l1")
#: zone a's gateway r sits in a2, beside h0's zone a1: h0 -> r is a route of zone a, then x
GATEWAY_IN_SUBZONE = (
    f'{HEAD}<zone id="w" routing="Full"><zone id="zm" routing="Full">{MASTER}</zone>'
    '<zone id="a" routing="Full"><zone id="a1" routing="Full"><host id="h0" speed="1Gf"/></zone>'
    '<zone id="a2" routing="Full"><router id="r"/></zone>'
    '<link id="x" bandwidth="1GBps" latency="1ms"/>'
    '<zoneRoute src="a1" dst="a2" gw_src="h0" gw_dst="r"><link_ctn id="x"/></zoneRoute></zone>'
    '<zoneRoute src="a" dst="zm" gw_src="r" gw_dst="master_host"><link_ctn id="x"/></zoneRoute>'
    "</zone></platform>\n")
#: name -> (platform, the words the one-line refusal must hold)
REFUSED = {
    "None zone": (flat("None"), [
        "host 'master_host' (zones 'w') has no route to the master host 'master_host'",
        "\"There can't be route in an Empty zone\"", "aborts at its start",
        "give zone 'w' a routing with routes"]),
    "Floyd without the host's route": (flat("Floyd", H0), [
        "host 'h1' (zones 'w') has no route", "\"No route from 'h1' to 'master_host'\"",
        "when a job on that host ends", "add <route src=\"h1\" dst=\"master_host\"> in zone 'w'"]),
    "Floyd, the route towards the host only": (
        flat("Floyd", H0 + _route("master_host", "h1", "l2", "NO")),
        ["host 'h1'", "No route from 'h1' to 'master_host'"]),
    "Dijkstra, a host in no route": (flat("Dijkstra", H0), [
        "host 'h1'", "'h1' is in no route of Dijkstra zone 'w'", "at its start (segmentation"]),
    "DijkstraCache, a host in no route": (flat("DijkstraCache", H0), ["host 'h1'"]),
    "Full, zones without zoneRoute": (world("Full", CLUSTER), [
        "host 'c0' (zones 'w' > 'c') has no route to the master host 'master_host' (zones 'w' "
        "> 'zm')", "\"Bad gateways for route from 'c0' to 'master_host'\"",
        "add <zoneRoute src=\"c\" dst=\"zm\" gw_src=... gw_dst=...> in zone 'w', or put the host "
        "in a routed zone"]),
    "Floyd, zones without zoneRoute": (world("Floyd", CLUSTER), [
        "host 'c0'", "\"No route from 'c' to 'zm'\""]),
    "Full, zoneRoute towards the cluster only": (world("Full", CLUSTER, TO_MASTER.replace(
        'src="c" dst="zm" gw_src="cc_router" gw_dst="master_host"',
        'src="zm" dst="c" gw_src="master_host" gw_dst="cc_router" symmetrical="NO"')),
        ["host 'c0'", "Bad gateways"]),
    "cluster in a sub-zone without zoneRoute": (world(
        "Floyd", f'<zone id="za" routing="Full">{CLUSTER}</zone>'), [
        "host 'c0' (zones 'w' > 'za' > 'c')", "No route from 'za' to 'zm'"]),
    "master in a None zone": (world("Full", CLUSTER, TO_MASTER, "None"), [
        "host 'master_host' (zones 'w' > 'zm')", "aborts at its start",
        "give zone 'zm' a routing"]),
    "the second host of a None zone": (world(
        "Full", '<zone id="zn" routing="None"><host id="h0" speed="1Gf"/>'
        '<host id="h1" speed="1Gf"/></zone>', TO_MASTER.replace(
            'src="c" dst="zm" gw_src="cc_router"', 'src="zn" dst="zm" gw_src="h0"')), [
        "host 'h1' (zones 'w' > 'zn')", "Empty zone"]),
    "a gateway in a sibling zone without zoneRoute to it": (GATEWAY_IN_SUBZONE.replace(
        '<zoneRoute src="a1" dst="a2" gw_src="h0" gw_dst="r"><link_ctn id="x"/></zoneRoute>', ""),
        ["host 'h0' (zones 'w' > 'a' > 'a1')", "\"Bad gateways for route from 'h0' to 'r'\"",
         "add <zoneRoute src=\"a1\" dst=\"a2\" gw_src=... gw_dst=...> in zone 'a'"]),
    "a route declared twice": (flat("Full", H0 + _route("master_host", "h0", "l2")), [
        "<route src='master_host' dst='h0'> in zone 'w': the route between 'master_host' and "
        "'h0' already exists (routes are symmetrical by default)", "Batsim 4.2.1 aborts before"]),
    "a symmetrical route from a host to itself in Floyd": (flat("Floyd", H0 + _route(
        "h1", "master_host", "l1") + _route("master_host", "master_host", "l2")), [
        "the route between 'master_host' and 'master_host' already exists, so this one must not "
        "be symmetrical; write symmetrical=\"NO\" on it"]),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_platform_without_route_to_the_master_is_refused_in_one_line(name, tmp_path):
    text, words = REFUSED[name]
    path = write_platform(tmp_path, text)
    with pytest.raises(PlatformError) as info:
        read_simgrid_hosts(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    for part in words:
        assert part in message


@pytest.mark.parametrize("read", [
    platform_from_simgrid, load_hosts, lambda p: load_hosts(p, energy=True),
    lambda p: SchedulingEnv(platform_file=str(p),
                            workload_file=str(REPO / "workloads" / "sdsc_sp2_100_hetero.json"))],
    ids=["replay-engine-launch", "serve", "serve-E", "env"])
def test_every_reader_refuses_it(read, tmp_path):
    path = write_platform(tmp_path, REFUSED["Full, zones without zoneRoute"][0])
    with pytest.raises(PlatformError, match="has no route to the master host"):
        read(path)


#: platforms the binary runs (checked: runs/s24h/probe_before.log)
ACCEPTED = {
    "Full without any route (empty routes)": flat("Full"),
    "Full, the route towards the host only": flat("Full", _route("master_host", "h1", "l2", "NO")),
    "Floyd through a router": flat("Floyd", _route("h0", "rt", "l1") + _route("h1", "rt", "l2")
                                   + _route("rt", "master_host", "l2"), '<router id="rt"/>'),
    "Floyd, a self route not symmetrical": flat("Floyd", H0 + _route("h1", "master_host", "l1")
                                                + _route("master_host", "master_host", "l2", "NO")),
    "zoneRoute towards the master only": world("Full", CLUSTER, TO_MASTER.replace(
        'gw_dst="master_host"', 'gw_dst="master_host" symmetrical="NO"')),
    "a None zone of one host, its own gateway": world(
        "Full", '<zone id="zn" routing="None"><host id="h0" speed="1Gf"/></zone>',
        TO_MASTER.replace('src="c" dst="zm" gw_src="cc_router"', 'src="zn" dst="zm" gw_src="h0"')),
    "a Cluster zone with a gateway": world(
        "Full", '<zone id="cab" routing="Cluster"><cabinet id="cb" prefix="k" suffix="" '
        'radical="0-1" speed="1Gf" bw="125MBps" lat="50us"/><backbone id="cbb" '
        'bandwidth="1GBps" latency="0"/><router id="cab_gw"/></zone>',
        TO_MASTER.replace('src="c" dst="zm" gw_src="cc_router"', 'src="cab" dst="zm" '
                          'gw_src="cab_gw"')),
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_platforms_the_binary_runs_still_load(name, tmp_path):
    names = [h.name for h in load_hosts(write_platform(tmp_path, ACCEPTED[name]))]
    assert names in (["h0", "h1"], ["c0", "c1"], ["k0", "k1"], ["h0"])


def _latencies(path: Path) -> RouteLatencies:
    return route_latencies(path, load_hosts(path))


@pytest.mark.parametrize(("text", "master_s", "host_s"), [
    # c0 up its 10 us link to the cluster's router, then l1 (1 ms) to the master host
    (world("Full", CLUSTER, TO_MASTER), 0.0, (0.00101, 0.00101)),
    # a Floyd zone holding the cluster: its zoneRoute through l2
    (world("Full", f'<zone id="za" routing="Floyd">{CLUSTER}</zone>', TO_MASTER.replace(
        'src="c"', 'src="za"').replace('"l1"', '"l2"')), 0.0, (0.00201, 0.00201)),
    # d0 -> c (l2, 2 ms) -> zm (l1, 1 ms): a chain of zoneRoutes; c0 straight over l1
    (world("Floyd", CLUSTER + CLUSTER.replace('"c"', '"d"').replace('"10us"', '"20us"'),
           TO_MASTER + '<zoneRoute src="d" dst="c" gw_src="dd_router" gw_dst="cc_router">'
           '<link_ctn id="l2"/></zoneRoute>'), 0.0, (0.00101, 0.00101, 0.00302, 0.00302)),
    # a Full zone without h1's route: an empty route, no latency (Batsim runs it)
    (flat("Full", H0), 0.0, (0.001, 0.0)),
    # h0 -> rt -> master: 1 + 2 ms; h1: 2 + 2 ms; the master's own message: loopback, 0
    (flat("Floyd", _route("h0", "rt", "l1") + _route("h1", "rt", "l2")
          + _route("rt", "master_host", "l2"), '<router id="rt"/>'), 0.0, (0.003, 0.004)),
    (flat("Dijkstra", H0 + _route("h1", "master_host", "l2")
          + _route("master_host", "master_host", "l1", "NO")), 0.001, (0.001, 0.002)),
    # h0 -> r inside zone a (x, 1 ms), then a -> zm (x again, 1 ms)
    (GATEWAY_IN_SUBZONE, 0.0, (0.002,)),
], ids=["zoneRoute", "nested-zone", "zoneRoute-chain", "full-missing", "router", "dijkstra",
        "gateway-in-subzone"])
def test_latencies_through_zones(text, master_s, host_s, tmp_path, caplog):
    """Read as SimGrid resolves them (before: 'cannot read', a warning and latency 0)."""
    with caplog.at_level(logging.WARNING, logger="hdrm.batsim.latency"):
        assert _latencies(write_platform(tmp_path, text)) == RouteLatencies(master_s, host_s)
    assert caplog.text == ""


def test_a_cluster_zone_s_latencies_are_read(tmp_path, caplog):
    # k0 up its cabinet link (50 us) and the backbone (0) to the router cab_gw (no link), then
    # l1 (1 ms); before session 26: not read (latency 0, a warning)
    path = write_platform(tmp_path, ACCEPTED["a Cluster zone with a gateway"])
    with caplog.at_level(logging.WARNING, logger="hdrm.batsim.latency"):
        assert _latencies(path) == RouteLatencies(0.0, (0.00105, 0.00105))
    assert caplog.text == ""


def test_unmodelled_latencies_keep_zero_with_the_reason(tmp_path, caplog):
    # h0 reaches the master over two chains of two links, of 2 ms and 3 ms: which one Floyd
    # takes is not modelled
    path = write_platform(tmp_path, flat("Floyd", _route("h0", "r1", "l1") + _route("h0", "r2", "l2")
                                 + _route("r1", "master_host", "l1")
                                 + _route("r2", "master_host", "l1") + H0.replace("h0", "h1"),
                                 '<router id="r1"/><router id="r2"/>'))
    with caplog.at_level(logging.WARNING, logger="hdrm.batsim.latency"):
        assert _latencies(path).zero
    assert "latencies of routes of equal length, or of a link or zone not read" in caplog.text
