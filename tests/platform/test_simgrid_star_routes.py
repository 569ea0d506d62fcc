"""Routes of a ``<zone routing="Cluster">`` (SimGrid 3.32's StarZone) as
hdrm.platform.simgrid_routes reads them: a host's route to itself (its own ``<route>``, else up
and down its ``<host_link>``), routes between hosts (up the source's links, the backbone, down
the destination's; each link once) and what SimGrid refuses. Each route below is derived by
hand from StarZone.cpp and sg_platf.cpp (v3.32); the slow
tests/batsim/test_real_batsim_star_routes.py runs the binary on such platforms.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from builders import write_platform

from hdrm.batsim.hosts import load_hosts
from hdrm.batsim.latency import RouteLatencies, route_latencies
from hdrm.errors import PlatformError
from hdrm.platform.loader import load_platform
from hdrm.platform.simgrid import MASTER_HOST, platform_to_xml
from hdrm.platform.simgrid_routes import NoRoute, RouteTable
from star_platforms import BACKBONE, CTL, PLATFORMS_DIR, SELF, SPLIT, star

M = MASTER_HOST


def _table(text: str) -> RouteTable:
    return RouteTable(ET.fromstring(text.split("\n", 2)[2]))


def _names(table: RouteTable, src: str, dst: str) -> tuple[list[str], float]:
    route = table.route(src, dst)
    assert route.exact
    return [link.name for link in route.links], round(route.latency_s, 12)


MASTER_CTL = '<host_link id="master_host" up="ctl" down="ctl"/>'


@pytest.mark.parametrize(("text", "master", "h0_to_master", "master_to_h0"), [
    # the master's own route: lo (7 ms), nothing else; other routes: ctl, once (1 ms)
    (star(CTL, MASTER_CTL, SELF), (["lo"], 0.007), (["ctl"], 0.001), (["ctl"], 0.001)),
    # no route to itself: up and down its host_link, ctl counted once
    (star(CTL, MASTER_CTL), (["ctl"], 0.001), (["ctl"], 0.001), (["ctl"], 0.001)),
    # a route without links is no loopback (StarZone::has_loopback): the same as none
    (star(CTL, MASTER_CTL, f'<route src="{M}" dst="{M}"></route>'), (["ctl"], 0.001),
     (["ctl"], 0.001), (["ctl"], 0.001)),
    # a backbone: between hosts up, backbone (20 us), down; the master's own route stays lo
    (star(CTL, MASTER_CTL, SELF, BACKBONE), (["lo"], 0.007), (["ctl", "bb"], 0.00102),
     (["ctl", "bb"], 0.00102)),
    # no route to itself, a backbone, the master up mu (5 ms) and down sd_DOWN (3 ms)
    (star(CTL + SPLIT, '<host_link id="master_host" up="mu" down="sd_DOWN"/>', "", BACKBONE),
     (["mu", "bb", "sd_DOWN"], 0.00802), (["ctl", "bb", "sd_DOWN"], 0.00402),
     (["mu", "bb", "ctl"], 0.00602)),
    # a split-duplex direction as written (not reversed), lo named twice but crossed once
    (star(CTL + SPLIT, MASTER_CTL, f'<route src="{M}" dst="{M}"><link_ctn id="sd" '
          'direction="DOWN"/><link_ctn id="lo"/><link_ctn id="lo"/></route>'),
     (["sd_DOWN", "lo"], 0.01), (["ctl"], 0.001), (["ctl"], 0.001)),
    # two routes to itself: the last one holds
    (star(CTL, MASTER_CTL, SELF + f'<route src="{M}" dst="{M}"><link_ctn id="ctl"/>'
          '<link_ctn id="lo"/></route>'), (["ctl", "lo"], 0.008), (["ctl"], 0.001),
     (["ctl"], 0.001)),
    # a master without host_link or route: no link at all; h0 goes up ctl only
    (star(CTL, ""), ([], 0.0), (["ctl"], 0.001), (["ctl"], 0.001)),
], ids=["self-route", "no-self-route", "empty-self-route", "backbone", "split-host-links",
        "split-self-route", "two-self-routes", "no-master-host-link"])
def test_star_zone_routes_by_hand(text, master, h0_to_master, master_to_h0):
    table = _table(text)
    assert _names(table, M, M) == master
    assert _names(table, "h0", M) == h0_to_master
    assert _names(table, M, "h0") == master_to_h0


def test_a_host_s_own_route_is_its_own(tmp_path):
    # h0's route to itself changes nothing of h0's route to the master
    table = _table(star(CTL, MASTER_CTL, '<route src="h0" dst="h0"><link_ctn id="lo"/></route>'))
    assert _names(table, "h0", "h0") == (["lo"], 0.007)
    assert _names(table, "h0", M) == (["ctl"], 0.001)
    assert _names(table, "h1", "h1") == (["ctl"], 0.001)


def test_latencies_of_a_slow_self_route(tmp_path):
    """hdrm serve's message delays: before, the master's own messages took ctl's 1 ms."""
    path = write_platform(tmp_path, star(CTL, MASTER_CTL, SELF))
    assert route_latencies(path, load_hosts(path)) == RouteLatencies(0.007, (0.001,) * 6)


def test_a_self_route_without_host_link_leaves_no_other_route(tmp_path):
    text = star(CTL, "", SELF)
    table = _table(text)
    assert _names(table, M, M) == (["lo"], 0.007)
    with pytest.raises(NoRoute, match=r"StarZone routing \(h0 - master_host\): no link DOWN to "
                       "destination node"):
        table.route("h0", M)
    with pytest.raises(NoRoute, match=r"StarZone routing \(master_host - h0\): no link UP from "
                       "source node"):
        table.route(M, "h0")
    path = write_platform(tmp_path, text)
    with pytest.raises(PlatformError) as info:
        load_hosts(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{path}: host 'h0' (zones 'zc')")
    assert "Batsim 4.2.1 aborts when a job on that host ends" in message
    assert "give 'master_host' a <host_link id=\"master_host\" up=... down=...> in zone 'zc'" \
        in message


@pytest.mark.parametrize(("routes", "extra", "words"), [
    ('<route src="h0" dst="master_host"><link_ctn id="lo"/></route>', "",
     "<route src='h0' dst='master_host'> in zone 'zc': a route between two points of a Cluster "
     "zone (SimGrid 3.32: \"Cannot add route from h0 to master_host."),
    (SELF.replace('"lo"', '"bb"'), BACKBONE,
     "<route src='master_host' dst='master_host'> in zone 'zc': it names backbone 'bb', which "
     "SimGrid 3.32 makes only at the end of zone 'zc' (\"Link not found: bb\")"),
    ('<route src="k0" dst="k0"><link_ctn id="lo"/></route>',
     '<cabinet id="cb" prefix="k" suffix="" radical="0-1" speed="1Gf" bw="1GBps" lat="50us"/>',
     "<route src='k0' dst='k0'> in zone 'zc': 'k0' is a host of a <cabinet>, which SimGrid 3.32 "
     "makes only at the end of zone 'zc' (\"Route src='k0' does name a node\")"),
], ids=["between-hosts", "names-the-backbone", "cabinet-host"])
def test_routes_simgrid_refuses_at_load(routes, extra, words, tmp_path):
    path = write_platform(tmp_path, star(CTL + extra, MASTER_CTL, routes))
    with pytest.raises(PlatformError) as info:
        load_hosts(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    assert words in message
    assert message.endswith("Batsim 4.2.1 aborts before it starts)")


def test_hdrm_s_export_sends_the_master_s_messages_over_its_loopback():
    table = RouteTable(ET.fromstring(platform_to_xml(load_platform(
        PLATFORMS_DIR / "tiny_hetero.json"))))
    assert _names(table, M, M) == (["loopback"], 0.0)
    assert _names(table, "core_0000", M) == (["control"], 0.0)
    assert table.route(M, M).links[0].bps == 10e9
