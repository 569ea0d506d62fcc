"""The links of a route, as SimGrid 3.32 builds them (hdrm.platform.simgrid_routes.RouteTable).

Each route below is worked out by hand from SimGrid's rules: a ``<route>``'s links in order (a
split-duplex link's direction, swapped on the way back of a symmetrical route); a ``<cluster>``'s
star route up the source node's link and backbone, down the backbone and the destination's link,
each link once (so a node's own route over a SHARED or FATPIPE node link crosses it once); a
node's loopback when ``loopback_bw`` or ``loopback_lat`` is above 0; SimGrid's loopback for a
point of a zone of hosts without a route to itself; zone routes through their gateways. The
binary's times on such clusters are checked in tests/batsim/test_actor_routes.py.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from hdrm.platform.simgrid_routes import LOOPBACK, Link, RouteTable, parse_bandwidth

HEAD = '<platform version="4.1">'
MASTER = '<host id="master_host" speed="1Gf"/>'


def _table(body: str) -> RouteTable:
    return RouteTable(ET.fromstring(f"{HEAD}{body}</platform>"))


def _names(table: RouteTable, src: str, dst: str) -> list[str]:
    return [link.name for link in table.route(src, dst).links]


FLAT = ('<zone id="w" routing="Full">' + MASTER + '<host id="h0" speed="1Gf"/>'
        '<host id="h1" speed="1Gf"/>'
        '<link id="a" bandwidth="1GBps" latency="1ms"/>'
        '<link id="f" bandwidth="125MBps" latency="20us" sharing_policy="FATPIPE"/>'
        '<link id="d" bandwidth="10Gbps" latency="5us" sharing_policy="SPLITDUPLEX"/>'
        '<route src="h0" dst="master_host"><link_ctn id="a"/><link_ctn id="d" direction="UP"/>'
        '<link_ctn id="f"/></route>'
        '<route src="h1" dst="master_host"><link_ctn id="d"/></route></zone>')


def test_a_route_s_links_in_order_with_bandwidth_latency_and_policy():
    table = _table(FLAT)
    route = table.route("h0", "master_host")
    # times as SimGrid reads them: the number times its unit ("5us": 5 x 1e-6)
    assert route.links == (Link("a", 1e9, 1e-3, "SHARED"),
                           Link("d_UP", 1.25e9, 5 * 1e-6, "SPLITDUPLEX"),
                           Link("f", 1.25e8, 20 * 1e-6, "FATPIPE"))
    assert route.exact and route.latency_s == pytest.approx(1.025e-3, abs=1e-15)
    assert table.latency("h0", "master_host") == (route.latency_s, True)


def test_the_way_back_of_a_symmetrical_route_crosses_the_other_direction():
    table = _table(FLAT)
    assert _names(table, "master_host", "h0") == ["f", "d_DOWN", "a"]


def test_a_split_duplex_link_without_direction_is_not_exact():
    """SimGrid refuses it ("must be UP or DOWN"): not a route to model."""
    assert not _table(FLAT).route("h1", "master_host").exact


def test_a_host_without_a_route_to_itself_crosses_simgrid_s_loopback():
    route = _table(FLAT).route("master_host", "master_host")
    assert route.links == (LOOPBACK,) and LOOPBACK == Link("__loopback__", 1e10, 0.0, "FATPIPE")
    assert route.latency_s == 0.0 and route.exact


def _cluster(policy: str = "", extra: str = "") -> str:
    policy = f' sharing_policy="{policy}"' if policy else ""
    return ('<zone id="w" routing="Full">'
            f'<cluster id="c" prefix="n" suffix="" radical="0-2" speed="1Gf" bw="125MBps" '
            f'lat="50us" bb_bw="2.25GBps" bb_lat="500us"{policy}{extra}/></zone>')


def test_a_cluster_with_split_duplex_node_links_by_default():
    table = _table(_cluster())
    assert _names(table, "n0", "n2") == ["c_link_0_UP", "c_backbone", "c_link_2_DOWN"]
    own = table.route("n1", "n1")  # up its link, down again: two links
    assert [link.name for link in own.links] == ["c_link_1_UP", "c_backbone", "c_link_1_DOWN"]
    assert own.latency_s == pytest.approx(6e-4, abs=1e-15)
    assert own.links[1] == Link("c_backbone", 2.25e9, 5e-4, "SHARED")
    assert _names(table, "n0", "nc_router") == ["c_link_0_UP", "c_backbone"]


@pytest.mark.parametrize("policy", ["SHARED", "FATPIPE"])
def test_a_node_s_own_route_crosses_a_shared_node_link_once(policy):
    """StarZone adds each link once: up n1's link, the backbone, and not the link again."""
    own = _table(_cluster(policy)).route("n1", "n1")
    assert own.links == (Link("c_link_1", 1.25e8, 50 * 1e-6, policy),
                         Link("c_backbone", 2.25e9, 5e-4, "SHARED"))
    assert own.latency_s == pytest.approx(5.5e-4, abs=1e-15)


@pytest.mark.parametrize(("extra", "loop"), [
    (' loopback_bw="1GBps"', Link("c_link_1_loopback", 1e9, 0.0, "FATPIPE")),
    (' loopback_lat="5us" loopback_bw="1GBps"', Link("c_link_1_loopback", 1e9, 5 * 1e-6, "FATPIPE")),
    (' loopback_lat="0"', None)])
def test_a_node_s_loopback_when_its_bandwidth_or_latency_is_above_0(extra, loop):
    own = _table(_cluster("", extra)).route("n1", "n1")
    if loop is None:  # both 0: no loopback, up and down the node's link
        assert len(own.links) == 3
    else:
        assert own.links == (loop,) and own.latency_s == loop.latency_s


def test_a_zone_route_through_its_gateways():
    """n0 up to the cluster's router (node link, backbone), l (1 ms), then master_host itself."""
    body = ('<zone id="w" routing="Full"><zone id="zm" routing="Full">' + MASTER + '</zone>'
            '<cluster id="c" prefix="n" suffix="" radical="0-1" speed="1Gf" bw="1GBps" lat="10us"'
            ' bb_bw="10GBps" bb_lat="5us"/><link id="l" bandwidth="100MBps" latency="1ms"/>'
            '<zoneRoute src="c" dst="zm" gw_src="nc_router" gw_dst="master_host">'
            '<link_ctn id="l"/></zoneRoute></zone>')
    table = _table(body)
    route = table.route("n1", "master_host")
    assert [link.name for link in route.links] == ["c_link_1_UP", "c_backbone", "l"]
    assert [link.bps for link in route.links] == [1e9, 1e10, 1e8]
    assert route.latency_s == pytest.approx(1.015e-3, abs=1e-15) and route.exact
    assert table.route("master_host", "master_host").links == (LOOPBACK,)


def test_a_gateway_route_inside_a_zone_crosses_a_link_twice():
    """h0 -> r inside zone a over x, then a -> zm over x again: x is in the route twice."""
    body = ('<zone id="w" routing="Full"><zone id="zm" routing="Full">' + MASTER + '</zone>'
            '<zone id="a" routing="Full"><zone id="a1" routing="Full"><host id="h0" speed="1Gf"/>'
            '</zone><zone id="a2" routing="Full"><router id="r"/></zone>'
            '<link id="x" bandwidth="1GBps" latency="1ms"/>'
            '<zoneRoute src="a1" dst="a2" gw_src="h0" gw_dst="r"><link_ctn id="x"/></zoneRoute>'
            '</zone><zoneRoute src="a" dst="zm" gw_src="r" gw_dst="master_host">'
            '<link_ctn id="x"/></zoneRoute></zone>')
    route = _table(body).route("h0", "master_host")
    assert [link.name for link in route.links] == ["x", "x"] and route.latency_s == 2e-3


def _floyd(second: str) -> str:
    """h0 reaches the master through r1 or r2: two chains of two links."""
    return ('<zone id="w" routing="Floyd">' + MASTER + '<host id="h0" speed="1Gf"/>'
            '<router id="r1"/><router id="r2"/>'
            '<link id="a" bandwidth="1GBps" latency="1ms"/><link id="b" bandwidth="1GBps" '
            'latency="1ms"/>' + second +
            '<route src="h0" dst="r1"><link_ctn id="a"/></route>'
            '<route src="r1" dst="master_host"><link_ctn id="b"/></route>'
            '<route src="h0" dst="r2"><link_ctn id="a"/></route>'
            '<route src="r2" dst="master_host"><link_ctn id="c"/></route></zone>')


@pytest.mark.parametrize(("link_c", "exact"), [
    ('<link id="c" bandwidth="1GBps" latency="1ms"/>', True),  # alike: either chain
    ('<link id="c" bandwidth="100MBps" latency="1ms"/>', False),  # same latency, not bandwidth
    ('<link id="c" bandwidth="1GBps" latency="1ms" sharing_policy="FATPIPE"/>', False)])
def test_chains_of_equal_length_are_exact_only_when_alike(link_c, exact):
    route = _table(_floyd(link_c)).route("h0", "master_host")
    assert route.latency_s == 2e-3 and route.exact is exact


def test_a_link_whose_values_a_file_changes_is_not_read():
    table = _table(FLAT.replace('<link id="a" bandwidth="1GBps" latency="1ms"/>',
                                '<link id="a" bandwidth="1GBps" latency="1ms" '
                                'bandwidth_file="bw.txt"/>'))
    route = table.route("h0", "master_host")
    assert route.links[0] == Link("a", None, None, "SHARED") and not route.exact


@pytest.mark.parametrize(("text", "bps"), [("10GBps", 1e10), ("1Gbps", 1.25e8), ("125MBps", 1.25e8),
                                           ("1KiBps", 1024.0), ("2e3", 2e3), ("fast", None)])
def test_bandwidths_in_bytes_per_second(text, bps):
    assert parse_bandwidth(text) == bps
