"""Routes SimGrid 3.32 computes (torus, fat-tree, dragonfly clusters; Cluster and Vivaldi zones),
hand-checked; hdrm serve's resources and latencies on them. The same platforms run against the
binary in tests/batsim/test_real_batsim_topology.py."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from topology_platforms import (
    CLUSTER_CABINETS,
    CLUSTER_HOST_LINKS,
    DRAGONFLY,
    FAT_TREE,
    FAT_TREE_3,
    HEAD,
    REFUSED,
    TORUS,
    TORUS_LIMITED,
    VIVALDI_HOSTS,
    VIVALDI_PEERS,
    VIVALDI_ZONES,
)

from hdrm.batsim.latency import route_latencies
from hdrm.batsim.platform_hosts import load_hosts
from hdrm.batsim.zone_properties import resource_properties
from hdrm.errors import PlatformError
from hdrm.platform.simgrid import read_platform_root
from hdrm.platform.simgrid_routes import RouteTable
from hdrm.platform.simgrid_topology import Dragonfly, FatTree, Torus, zone_topology

US = 1e-6


def _write(tmp: Path, text: str) -> Path:
    path = tmp / "platform.xml"
    path.write_text(text)
    return path


def _topology(text: str):
    return zone_topology(ET.fromstring(text.split("\n", 2)[2]).find(".//cluster"))


def _local(topology, a: str, b: str) -> tuple[list[str], float]:
    links, extra, gw_src, gw_dst = topology.local(a, b)
    assert (extra, gw_src, gw_dst) == (0.0, None, None)  # no gateway: no router in a topology
    return [link[0] for link in links], round(sum(link[2] for link in links) / US, 9)


def test_a_torus_routes_dimension_by_dimension():
    torus = _topology(TORUS)
    assert isinstance(torus, Torus) and torus.points[:3] == ["t-0", "t-1", "t-2"]
    # 5 = (x1, y2, z0) to 7 = (x1, y0, z1): y 2 -> 0 to the right (wrapping), then z 0 -> 1
    assert _local(torus, "t-5", "t-7") == (["t_link_from_5_to_1_UP", "t_link_from_1_to_7_UP"],
                                           20.0)
    # 0 -> 4 (y 0 -> 2) to the left: node 4's link towards 0, crossed down
    assert _local(torus, "t-0", "t-4") == (["t_link_from_4_to_0_DOWN"], 10.0)
    assert _local(torus, "t-7", "t-7") == ([], 0.0)  # no loopback: an empty route


def test_a_torus_s_limiters_and_loopbacks():
    torus = _topology(TORUS_LIMITED)  # 4 x 3, SHARED links of 7 us, loopbacks of 3 us
    assert _local(torus, "t-5", "t-5") == (["t_link_5_loopback"], 3.0)
    assert _local(torus, "t-0", "t-5") == (
        ["t_link_0_limiter", "t_link_from_0_to_1", "t_link_1_limiter", "t_link_from_1_to_5",
         "t_link_5_limiter"], 14.0)


def test_a_fat_tree_goes_up_to_the_first_common_switch():
    tree = _topology(FAT_TREE)  # 2 levels of 4 children: leaf p has digits (p % 4, p // 4)
    assert isinstance(tree, FatTree)
    assert _local(tree, "f5", "f0")[1] == 40.0  # digits (1, 1) and (0, 0): up 2, down 2
    assert _local(tree, "f5", "f4")[1] == 20.0  # (1, 1) and (0, 1): one switch up
    names, lat = _local(tree, "f5", "f5")  # no loopback: up to the switch and back
    assert lat == 20.0 and names[0].endswith("_UP") and names[1].endswith("_DOWN")
    assert _local(_topology(FAT_TREE_3), "f0", "f0") == (["t_link_0_loopback"], 1.0)


@pytest.mark.parametrize(("src", "hops"), [("d0", 4), ("d2", 3), ("d5", 5), ("d9", 2)])
def test_a_dragonfly_s_minimal_routes(src, hops):
    # groups of 2 chassis x 2 routers x 2 nodes; d9 is group 1, chassis 0, router 0, node 1.
    # d0: node, green to router 1, blue to group 1, node; d2 (router 1): no green; d5 (chassis
    # 1): green and black to chassis 0 first; d9 to itself: up to its router and down
    dragonfly = _topology(DRAGONFLY)
    assert isinstance(dragonfly, Dragonfly)
    names, lat = _local(dragonfly, src, "d9")
    assert (len(names), lat) == (hops, 10.0 * hops)
    assert names[0].startswith("local_link_from_router_") and names[-1].endswith("_DOWN")


def test_a_topology_cluster_s_route_continues_over_the_zone_route(tmp_path):
    table = RouteTable(read_platform_root(_write(tmp_path, TORUS)))
    route = table.route("t-5", "master_host")
    assert [link.name for link in route.links] == [
        "t_link_from_5_to_1_UP", "t_link_from_1_to_7_UP", "l1"]
    assert route.exact and route.latency_s == pytest.approx(120 * US, abs=1e-15)
    assert route.links[0].bps == 1e9 and route.links[0].policy == "SPLITDUPLEX"


def test_latencies_of_a_torus_behind_a_zone_route(tmp_path):
    path = _write(tmp_path, TORUS)
    hosts = load_hosts(path)
    latencies = route_latencies(path, hosts)
    found = {h.name: round(s / US, 9) for h, s in zip(hosts, latencies.host_s)}
    assert latencies.master_s == 0.0
    assert (found["t-7"], found["t-5"], found["t-0"]) == (100.0, 120.0, 120.0)  # t-7: gateway


@pytest.mark.parametrize("text", [VIVALDI_HOSTS, VIVALDI_PEERS], ids=["hosts", "peers"])
def test_vivaldi_latency_is_the_distance_in_ms(tmp_path, text):
    path = _write(tmp_path, text)
    hosts = load_hosts(path)
    latencies = route_latencies(path, hosts)
    assert latencies.master_s == pytest.approx(1e-3)  # 2 x |0.5| ms
    # (3 4 0.1) to (0 0 0.5): 5 + 0.1 + 0.5 ms; (-1.5 2 0.2): 2.5 + 0.2 + 0.5 ms
    assert latencies.host_s[:2] == pytest.approx((5.6e-3, 3.2e-3))


def test_a_peer_s_links_are_its_bandwidths_without_latency(tmp_path):
    table = RouteTable(read_platform_root(_write(tmp_path, VIVALDI_PEERS)))
    route = table.route("p1", "master_host")
    assert [(x.name, x.bps, x.latency_s) for x in route.links] == [
        ("link_p1_UP", 1e8, 0.0), ("link_master_host_DOWN", 1e9, 0.0)]  # bw_out, then bw_in
    assert route.latency_s == pytest.approx(3.2e-3)  # its lat="1ms" is ignored


def test_a_cluster_zone_crosses_its_backbone_once(tmp_path):
    path = _write(tmp_path, CLUSTER_CABINETS)
    latencies = route_latencies(path, load_hosts(path))
    assert latencies.master_s == 0.0  # the master: a host without links
    assert [round(s / US, 9) for s in latencies.host_s] == [70.0] * 4 + [100.0] * 2
    path = _write(tmp_path, CLUSTER_HOST_LINKS)
    hosts = load_hosts(path)
    latencies = route_latencies(path, hosts)
    assert latencies.master_s == pytest.approx(28 * US)  # um + backbone + dm: 3 + 20 + 5
    found = {h.name: round(s / US, 9) for h, s in zip(hosts, latencies.host_s)}
    assert found == {"c0": 75.0, "c1": 75.0, "c2": 75.0, "c3": 75.0, "h0": 36.0, "h1": 25.0}


def test_a_topology_cluster_s_props_are_no_zone_props(tmp_path):
    path = _write(tmp_path, TORUS)
    host = load_hosts(path)[0]
    assert host.zone_properties == {}  # SimGrid gives the torus zone no props
    assert resource_properties(dict(host.properties)) == {"role": "", "tp": "1"}


def test_a_repeated_prop_keeps_its_first_value(tmp_path):
    text = (f'{HEAD}<zone id="w" routing="Full"><prop id="a" value="1"/><prop id="b" value="x"/>'
            '<prop id="a" value="2"/><host id="master_host" speed="1Gf"/>'
            '<host id="h0" speed="1Gf"><prop id="k" value="1"/><prop id="m" value="0"/>'
            '<prop id="k" value="2"/></host></zone></platform>\n')
    (host,) = load_hosts(_write(tmp_path, text))
    assert resource_properties(dict(host.properties)) == {"role": "", "k": "1", "m": "0"}
    assert dict(host.zone_properties) == {"b": "x", "a": "1"}  # the binary's values and order


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_hosts_batsim_aborts_on_or_leaves_out_are_refused(tmp_path, name):
    text, says = REFUSED[name]
    with pytest.raises(PlatformError, match=r"platform\.xml:\d+: <(peer|cluster|cabinet) id=.*"
                       + says.replace("(", r"\(").replace("'", "'")):
        load_hosts(_write(tmp_path, text))


def test_a_vivaldi_host_without_coordinates_is_refused(tmp_path):
    text = VIVALDI_HOSTS.replace(' coordinates="10 0 0"', "")
    with pytest.raises(PlatformError, match=r"<host id='h2'>: no coordinates in a Vivaldi zone, "
                       r"which Batsim 4\.2\.1 aborts on"):
        load_hosts(_write(tmp_path, text))


def test_the_master_and_a_host_in_two_zones_of_a_vivaldi_zone_are_refused(tmp_path):
    with pytest.raises(PlatformError, match=r"platform\.xml:\d+: host 'h0' \(zone 'zh'\) and the "
                       r"master host 'master_host' \(zone 'zm'\) are in two zones of Vivaldi zone "
                       r"'v', which Batsim 4\.2\.1 aborts on when a job on that host ends"):
        load_hosts(_write(tmp_path, VIVALDI_ZONES))
    # all in one zone of the Vivaldi zone: no route crosses it (not refused)
    text = VIVALDI_ZONES.replace('<router id="router_zm" coordinates="0 0 0.1"/></zone>'
                                 '<zone id="zh" routing="Full">', "")
    assert [h.name for h in load_hosts(_write(tmp_path, text))] == [f"h{i}" for i in range(6)]
