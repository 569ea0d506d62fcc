"""SimGrid XML export: structure, speeds, wattage_per_state, host order, links, round trips."""

from __future__ import annotations

from pathlib import Path

import defusedxml.ElementTree as SafeET
import pytest

from hdrm.errors import PlatformError
from hdrm.platform import power
from hdrm.platform.loader import load_platform
from hdrm.platform.simgrid_routes import RouteTable
from hdrm.platform.simgrid import (
    MASTER_HOST,
    core_host_name,
    platform_from_simgrid,
    platform_to_xml,
    read_simgrid_hosts,
    write_simgrid_xml,
)

PLATFORMS = Path(__file__).resolve().parents[2] / "platforms"
ALL_FILES = sorted(PLATFORMS.glob("*.json"))


@pytest.fixture(scope="module")
def tiny_hetero():
    return load_platform(PLATFORMS / "tiny_hetero.json")


def _parse(xml: bytes):
    return SafeET.fromstring(xml)


def test_header_doctype_and_single_star_zone(tiny_hetero):
    xml = platform_to_xml(tiny_hetero)
    assert xml.startswith(b"<?xml version='1.0' encoding='UTF-8'?>\n")
    assert b'<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">' in xml
    root = _parse(xml)
    assert root.tag == "platform" and root.get("version") == "4.1"
    zones = root.findall("zone")
    assert len(zones) == 1 and zones[0].get("routing") == "Cluster"  # SimGrid's star zone
    all_pairs = _parse(platform_to_xml(tiny_hetero, all_pairs=True)).findall("zone")
    assert len(all_pairs) == 1 and all_pairs[0].get("routing") == "Full"


def test_one_host_per_core_plus_master(tiny_hetero):
    zone = _parse(platform_to_xml(tiny_hetero)).find("zone")
    hosts = zone.findall("host")
    assert len(hosts) == tiny_hetero.nb_cores + 1
    master = hosts[0]
    assert master.get("id") == MASTER_HOST
    assert "role" not in {p.get("id") for p in master.findall("prop")}  # Batsim aborts on it
    names = [h.get("id") for h in hosts[1:]]
    assert names == [f"core_000{i}" for i in range(8)]
    assert names == sorted(names)  # Batsim numbers hosts by name: resource i is core i


def _props(host):
    return {p.get("id"): p.get("value") for p in host.findall("prop")}


def test_speeds_pstates_and_watts_by_hand(tiny_hetero):
    hosts = {h.get("id"): h for h in _parse(platform_to_xml(tiny_hetero)).iter("host")}
    fast, slow = hosts["core_0000"], hosts["core_0007"]
    assert fast.get("speed") == "48Gf, 36Gf, 0.001f, 0.001f"  # 3.0 GHz x 16, 0.75 of it
    assert slow.get("speed") == "16Gf, 12Gf, 0.001f, 0.001f"
    assert fast.get("pstate") == slow.get("pstate") == "0"  # nominal: stock schedulers run at full speed
    # 20 W per fast core (80 W / 4): running, contended, idle (0.3), sleeping (0.05)
    assert _props(fast)["wattage_per_state"] == "20:20, 20:20, 6:6, 1:1"
    assert _props(slow)["wattage_per_state"] == "15:15, 15:15, 4.5:4.5, 0.75:0.75"
    assert _props(slow)["wattage_off"] == "0"
    assert _props(slow)["node"] == "c0-n1" and _props(slow)["processor"] == "2"
    assert "watt_per_state" not in _props(fast)  # the old name SimGrid 3.32 ignores


def test_one_link_per_node_with_network_figures(tiny_hetero):
    zone = _parse(platform_to_xml(tiny_hetero)).find("zone")
    control, loopback, *links = zone.findall("link")
    assert loopback.get("id") == "loopback"  # the master's route to itself (see below)
    assert [link.get("id") for link in links] == ["link_c0-n0", "link_c0-n1"]
    assert links[0].get("bandwidth") == "3.125GBps"  # ethernet_25g: 25 Gbit/s / 8
    assert links[0].get("latency") == "5us"
    # Batsim's own messages (a job's end, to the server on the master) take no simulated time
    assert (control.get("id"), control.get("latency"), control.get("bandwidth")) == (
        "control", "0s", "1000TBps")


def test_every_host_joins_the_star_over_the_control_link(tiny_hetero):
    zone = _parse(platform_to_xml(tiny_hetero)).find("zone")
    host_links = zone.findall("host_link")
    hosts = [h.get("id") for h in zone.findall("host")]
    assert [h.get("id") for h in host_links] == hosts  # master_host first, then core order
    assert hosts[0] == MASTER_HOST and len(hosts) == tiny_hetero.nb_cores + 1
    for link in host_links:  # up the source's link, down the destination's: control once
        assert (link.get("up"), link.get("down")) == ("control", "control")
    # no route table (SimGrid's memory stays linear) but the master's own loopback, whose
    # link has the figures of SimGrid's implicit one (10 GBps, latency 0, FATPIPE)
    (route,) = zone.findall("route")
    assert (route.get("src"), route.get("dst")) == (MASTER_HOST, MASTER_HOST)
    assert [c.get("id") for c in route] == ["loopback"]
    loopback = [e for e in zone.findall("link") if e.get("id") == "loopback"]
    assert [(e.get("bandwidth"), e.get("latency"), e.get("sharing_policy")) for e in loopback] == [
        ("10GBps", "0s", "FATPIPE")]


def test_hdrm_reads_the_star_routes_as_simgrid_resolves_them(tiny_hetero):
    table = RouteTable(_parse(platform_to_xml(tiny_hetero)))
    for core in ("core_0000", "core_0007"):  # a job's end reaches the server at once
        for route in (table.route(core, MASTER_HOST), table.route(MASTER_HOST, core)):
            assert [link.name for link in route.links] == ["control"]
            assert route.latency_s == 0.0 and route.exact


def test_all_pairs_keeps_the_full_zone_routes(tiny_hetero):
    zone = _parse(platform_to_xml(tiny_hetero, all_pairs=True)).find("zone")
    assert zone.findall("host_link") == []
    routes = zone.findall("route")
    for core, route in zip(tiny_hetero.cores, routes):
        assert route.get("src") == MASTER_HOST
        assert route.get("dst") == core_host_name(core.id, tiny_hetero.nb_cores)
        assert [c.get("id") for c in route.findall("link_ctn")] == ["control"]


def test_all_pairs_routes(tiny_hetero):
    zone = _parse(platform_to_xml(tiny_hetero, all_pairs=True)).find("zone")
    routes = zone.findall("route")
    assert len(routes) == 8 + 8 * 7 // 2
    by_pair = {(r.get("src"), r.get("dst")): [c.get("id") for c in r] for r in routes}
    assert by_pair[("core_0000", "core_0001")] == ["link_c0-n0"]  # same node
    assert by_pair[("core_0000", "core_0004")] == ["link_c0-n0", "link_c0-n1"]


@pytest.mark.parametrize("all_pairs", [False, True])
def test_elements_come_in_dtd_order(tiny_hetero, all_pairs):
    tags = [e.tag for e in _parse(platform_to_xml(tiny_hetero, all_pairs=all_pairs)).find("zone")]
    last_host = max(i for i, t in enumerate(tags) if t == "host")
    first_link = tags.index("link")
    last_link = max(i for i, t in enumerate(tags) if t == "link")
    tail = ["route"] if all_pairs else ["host_link", "route"]  # the DTD's order
    assert last_host < first_link and last_link < tags.index(tail[0])
    rest = tags[tags.index(tail[0]):]
    assert set(rest) == set(tail) and rest == sorted(rest, key=tail.index)


@pytest.mark.parametrize(
    "core_id, nb_cores, name",
    [(0, 4, "core_0000"), (5, 10, "core_0005"), (9999, 10000, "core_9999"),
     (123, 10001, "core_00123"), (0, 1, "core_0000")],
)
def test_core_host_names_are_zero_padded(core_id, nb_cores, name):
    assert core_host_name(core_id, nb_cores) == name


def test_names_sort_in_core_order_beyond_four_digits():
    names = [core_host_name(i, 12000) for i in range(12000)]
    assert sorted(names) == names


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name)
def test_round_trip_of_every_platform(path, tmp_path):
    platform = load_platform(path)
    out = write_simgrid_xml(platform, tmp_path / "p.xml")
    hosts = read_simgrid_hosts(out)
    assert [h.name for h in hosts] == [core_host_name(c.id, platform.nb_cores)
                                       for c in platform.cores]
    for core, host in zip(platform.cores, hosts):
        full, contended, _, _ = power.state_speeds_gflops(core.gflops)
        assert host.speeds_gflops == pytest.approx((full, contended, 1e-12, 1e-12), rel=1e-11)
        watts = power.state_power_w(core.power_w)
        assert [w for w, _ in host.wattage_per_state_w] == pytest.approx(watts, rel=1e-11)
        assert [w for _, w in host.wattage_per_state_w] == pytest.approx(watts, rel=1e-11)
        assert host.pstate == power.RUNNING and host.wattage_off_w == 0.0
    again, _ = platform_from_simgrid(out)
    assert again.core_gflops == pytest.approx(platform.core_gflops, rel=1e-11)
    assert again.core_power_w == pytest.approx(platform.core_power_w, rel=1e-11)


def test_large_export_stays_small():
    platform = load_platform(PLATFORMS / "large.json")
    xml = platform_to_xml(platform)
    assert len(xml) / platform.nb_cores < 500  # bytes per core: linear, no all-pairs routes
    assert xml.count(b"<route ") == 1  # the master's loopback
    assert xml.count(b"<host_link ") == platform.nb_cores + 1


def test_write_into_a_missing_folder_is_a_platform_error(tiny_hetero, tmp_path):
    with pytest.raises(PlatformError, match=r"no_dir/p\.xml: cannot write the SimGrid platform "
                       r"\(No such file or directory\); check that the folder exists"):
        write_simgrid_xml(tiny_hetero, tmp_path / "no_dir" / "p.xml")
