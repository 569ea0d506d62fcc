"""Shapes of the platforms Batsim 4.2.1 and SimGrid 3.32 ship (benchmarks/platform_corpus.py)
that hdrm read differently from the binary, each in a small platform checked by hand.

* blanks or comments before the XML declaration (Batsim's platforms/cluster_energy_128.xml,
  properties_example.xml, energy_platform_homogeneous_no_net_*.xml begin with an empty line):
  SimGrid reads them, an XML parser refuses them; a UTF-8 byte-order mark SimGrid refuses;
* a ``<host_link>`` naming a SPLITDUPLEX link's two links ``<id>_UP`` and ``<id>_DOWN`` (SimGrid's
  examples/platforms/routing_cluster.xml), and one naming the link's own id, which SimGrid
  does not know;
* a Wifi zone: without a link its routes cross no link; with one Batsim aborts at load;
* the order of SimGrid's DTD (props first in a zone, routes last, ``<config>`` first), which
  hdrm did not check: the binary refuses a file out of it;
* bypass routes (SimGrid's examples/platforms/bypassRoute.xml): ``<bypassRoute>`` between two
  points of one zone, ``<bypassZoneRoute>`` between zones, one way only;
* a ``wattage_per_state`` of the wrong length (Batsim's platforms/energy_platform.xml), which
  only SimGrid's energy plugin reads (``-E``).

The binary's side of each is in tests/batsim/test_real_batsim_corpus_shapes.py.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from corpus_platforms import (
    IN_ORDER,
    OUT_OF_ORDER,
    bypass_floyd,
    bypass_zones,
    watts_out_of_count,
)

from hdrm.batsim.platform_hosts import load_hosts
from hdrm.errors import PlatformError
from hdrm.platform.safe_xml import declaration_first
from hdrm.platform.simgrid import platform_from_simgrid, read_simgrid_hosts
from hdrm.platform.simgrid_routes import RouteTable

DECL = "<?xml version='1.0'?>"
DOCTYPE = '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">'
HOSTS = ('<platform version="4.1"><zone id="z" routing="Full">'
         '<host id="master_host" speed="1Gf"/><host id="h0" speed="1Gf"/></zone></platform>\n')


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "p.xml"
    path.write_bytes(text.encode("utf-8"))
    return path


# ------------------------------------------------------------------ the prolog
@pytest.mark.parametrize("before", ["\n", "   ", "\t\n  ", "\r\n", "<!-- a note -->\n"])
def test_blanks_or_a_comment_before_the_declaration_are_read(tmp_path, before):
    path = _file(tmp_path, f"{before}{DECL}\n{DOCTYPE}\n{HOSTS}")
    assert [h.name for h in read_simgrid_hosts(path)] == ["h0"]


def test_the_declaration_moves_first_and_later_lines_keep_their_numbers(tmp_path):
    assert declaration_first(b"\n  <?xml version='1.0'?>\n<a/>") == \
        b"<?xml version='1.0'?>\n  \n<a/>"
    assert declaration_first(b"\xef\xbb\xbf\n<?xml version='1.0'?><a/>") == \
        b"\xef\xbb\xbf<?xml version='1.0'?>\n<a/>"
    assert declaration_first(b"<?xml version='1.0'?>\n<a/>") == b"<?xml version='1.0'?>\n<a/>"
    assert declaration_first(b"\n<a/>") == b"\n<a/>"  # no declaration: nothing to move
    # line 1 empty, 2 the declaration, 3 the doctype, 4 <platform>, 5 <zone>, 6 the bad tag
    text = f"\n{DECL}\n{DOCTYPE}\n<platform version=\"4.1\">\n<zone id=\"z\">\n<host id=\"h\">\n"
    with pytest.raises(PlatformError, match=r"p\.xml:7:0: invalid XML \(no element found"):
        read_simgrid_hosts(_file(tmp_path, text))


def test_a_utf8_byte_order_mark_is_refused_as_simgrid_refuses_it(tmp_path):
    path = _file(tmp_path, f"\ufeff{DECL}\n{DOCTYPE}\n{HOSTS}")
    with pytest.raises(PlatformError, match=r"p\.xml:1: the file begins with a UTF-8 byte-order "
                       r"mark, which SimGrid \(Batsim's platform parser\) refuses .*; save it "
                       r"without one$"):
        read_simgrid_hosts(path)


# ------------------------------------------------------------------ split-duplex host links
def _cluster_zone(h0_up: str, h0_down: str) -> str:
    return ('<platform version="4.1"><zone id="w" routing="Full"><zone id="c" routing="Cluster">'
            '<host id="master_host" speed="1Gf"/>'
            '<link id="lm" bandwidth="1GBps" latency="30us" sharing_policy="SPLITDUPLEX"/>'
            '<host_link id="master_host" up="lm_UP" down="lm_DOWN"/>'
            '<host id="h0" speed="1Gf"/>'
            '<link id="l0" bandwidth="100MBps" latency="100us" sharing_policy="SPLITDUPLEX"/>'
            f'<host_link id="h0" up="{h0_up}" down="{h0_down}"/>'
            '<backbone id="bb" bandwidth="2GBps" latency="500us"/></zone></zone></platform>')


def test_a_host_link_names_the_two_links_of_a_split_duplex_link():
    table = RouteTable(ET.fromstring(_cluster_zone("l0_UP", "l0_DOWN")))
    route = table.route("h0", "master_host")
    # up h0's l0_UP, the backbone, down the master's lm_DOWN: 100 us + 500 us + 30 us
    assert [(x.name, x.bps, x.policy) for x in route.links] == [
        ("l0_UP", 100e6, "SPLITDUPLEX"), ("bb", 2e9, "SHARED"), ("lm_DOWN", 1e9, "SPLITDUPLEX")]
    assert route.latency_s == pytest.approx(630e-6) and route.exact
    own = table.route("master_host", "master_host")  # up, backbone, down: each once
    assert [x.name for x in own.links] == ["lm_UP", "bb", "lm_DOWN"]
    assert own.latency_s == pytest.approx(560e-6) and own.exact


def test_a_route_may_name_a_direction_of_a_split_duplex_link_as_a_link():
    table = RouteTable(ET.fromstring(
        '<platform version="4.1"><zone id="w" routing="Full"><host id="master_host" speed="1Gf"/>'
        '<host id="h0" speed="1Gf"/><link id="d" bandwidth="1GBps" latency="7us" '
        'sharing_policy="SPLITDUPLEX"/><route src="h0" dst="master_host" symmetrical="NO">'
        '<link_ctn id="d_DOWN"/></route></zone></platform>'))
    route = table.route("h0", "master_host")
    assert [x.name for x in route.links] == ["d_DOWN"]
    assert route.latency_s == pytest.approx(7e-6) and route.exact


def test_a_host_link_naming_a_split_duplex_link_itself_is_refused(tmp_path):
    path = _file(tmp_path, f"{DECL}\n{DOCTYPE}\n{_cluster_zone('l0_UP', 'l0')}\n")
    with pytest.raises(PlatformError, match=r"p\.xml:3: <host_link id='h0'>: down='l0' names a "
                       r"SPLITDUPLEX link, which SimGrid makes two links, 'l0_UP' and 'l0_DOWN' "
                       r"\(Batsim aborts: \"Link 'l0' not found!\"\); write down='l0_DOWN'$"):
        read_simgrid_hosts(path)


# ------------------------------------------------------------------ Wifi zones
def _wifi(link: str = "") -> str:
    return ('<platform version="4.1"><zone id="w" routing="Floyd">'
            '<zone id="s1" routing="Wifi"><prop id="access_point" value="master_host"/>'
            '<host id="master_host" speed="1Gf"/><host id="a" speed="1Gf"/></zone>'
            f'<zone id="s2" routing="WIFI"><prop id="access_point" value="r2"/>{link}'
            '<router id="r2"/><host id="b" speed="1Gf"/></zone>'
            '<link id="wire" bandwidth="100MBps" latency="2ms"/>'
            '<zoneRoute src="s1" dst="s2" gw_src="master_host" gw_dst="r2">'
            '<link_ctn id="wire"/></zoneRoute></zone></platform>')


def test_a_wifi_zone_without_a_link_routes_over_no_link():
    table = RouteTable(ET.fromstring(_wifi()))
    far = table.route("b", "master_host")  # b -> r2 (none), r2 -> master_host (wire), none
    assert [x.name for x in far.links] == ["wire"]
    assert far.latency_s == pytest.approx(2e-3) and far.exact
    near = table.route("a", "master_host")
    assert near.links == () and near.latency_s == 0.0 and near.exact
    own = table.route("master_host", "master_host")  # no loopback in a Wifi zone
    assert own.links == () and own.exact


def test_a_wifi_zone_with_a_link_is_refused(tmp_path):
    link = '<link id="ap" bandwidth="54Mbps" latency="0ms" sharing_policy="WIFI"/>'
    path = _file(tmp_path, f"{DECL}\n{DOCTYPE}\n{_wifi(link)}\n")
    with pytest.raises(PlatformError, match=r"p\.xml:3: <link id='ap'>: a link in Wifi zone 's2', "
                       r"which Batsim 4\.2\.1 cannot simulate .*create_wifi_link: Feature "
                       r"unimplemented yet.*; remove the link"):
        read_simgrid_hosts(path)


# ------------------------------------------------------------------ watts of the wrong length
def test_watts_of_the_wrong_length_matter_only_where_power_is_modelled(tmp_path):
    body = HOSTS.replace('<host id="h0" speed="1Gf"/>',
                         '<host id="h0" speed="1Gf, 2Gf"><prop id="wattage_per_state" '
                         'value="1:2"/></host>')
    path = _file(tmp_path, f"{DECL}\n{DOCTYPE}\n{body}")
    (host,) = read_simgrid_hosts(path)  # Batsim runs it without -E: no watts read
    assert (host.speeds_gflops, host.wattage_per_state_w) == ((1.0, 2.0), ())
    assert [h.name for h in load_hosts(path)] == ["h0"]
    message = (r"p\.xml: host 'h0': 1 wattage_per_state entries for 2 speeds; give one "
               r"'idle:full' pair per power state$")
    with pytest.raises(PlatformError, match=message):
        load_hosts(path, energy=True)
    with pytest.raises(PlatformError, match=message):
        platform_from_simgrid(path)  # the built-in engine models power


# ------------------------------------------------------------------ bypass routes
def _route(table: RouteTable, src: str, dst: str) -> tuple[list[str], float]:
    found = table.route(src, dst)
    assert found.exact
    return [x.name for x in found.links], round(found.latency_s * 1e6, 6)


def test_a_bypass_route_replaces_the_route_one_way_only():
    table = RouteTable(ET.fromstring(bypass_floyd(3)))
    assert _route(table, "h1", "master_host") == (["b"], 5000.0)  # not l1, l: 1.2 ms
    assert _route(table, "master_host", "h1") == (["l", "l1"], 1200.0)  # the way back: none
    assert _route(table, "master_host", "h2") == (["b", "l2"], 5300.0)
    assert _route(table, "h2", "master_host") == (["l2", "l"], 1300.0)
    assert _route(table, "h0", "master_host") == (["l0", "l"], 1100.0)


def test_a_bypass_zone_route_goes_through_its_gateways():
    table = RouteTable(ET.fromstring(bypass_zones(2)))
    # h1 -> g2 (l1), the bypass (y), then g2's gw_dst master_host to itself (SimGrid's loopback)
    assert _route(table, "h1", "master_host") == (["l1", "y", "__loopback__"], 3200.0)
    # the other way has no bypass: g1 <- m, x, l1 (the zone route taken backwards)
    assert _route(table, "master_host", "h1") == (["m", "x", "l1"], 1400.0)


@pytest.mark.parametrize(("master_speed", "named"), [("1Gf", "hb': 1 wattage_per_state entries "
                                                      "for 3 speeds"),
                                                     ("1Gf, 2Gf", "master_host': 1 wattage")])
def test_with_energy_the_first_host_in_file_order_is_named_the_master_too(tmp_path,
                                                                          master_speed, named):
    path = _file(tmp_path, f"{DECL}\n{DOCTYPE}\n{watts_out_of_count(master_speed)}")
    assert [h.name for h in load_hosts(path)] == ["ha", "hb"]  # without -E: read
    with pytest.raises(PlatformError, match=rf"p\.xml: host '{named}"):
        load_hosts(path, energy=True)


# ------------------------------------------------------------------ the DTD's order
@pytest.mark.parametrize("name", sorted(OUT_OF_ORDER))
def test_elements_out_of_the_dtd_order_are_refused(tmp_path, name):
    body, words = OUT_OF_ORDER[name]
    path = _file(tmp_path, f'{DECL}\n{DOCTYPE}\n<platform version="4.1">\n{body}</platform>\n')
    with pytest.raises(PlatformError, match=rf"p\.xml:4: {re.escape(words)}.*SimGrid.*"
                       r"\"Starting tag <\w+> is not allowed here\"\); "):
        read_simgrid_hosts(path)


@pytest.mark.parametrize("name", sorted(IN_ORDER))
def test_elements_in_the_dtd_order_are_read(tmp_path, name):
    path = _file(tmp_path, f'{DECL}\n{DOCTYPE}\n<platform version="4.1">\n{IN_ORDER[name]}'
                 '</platform>\n')
    assert [h.name for h in read_simgrid_hosts(path)] == ["h0"]
