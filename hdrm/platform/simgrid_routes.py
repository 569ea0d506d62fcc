"""Routes of a SimGrid platform as SimGrid 3.32 (Batsim 4.2.1) resolves them.

Batsim's job executors send a message to its server on the master host when a job ends, and its
submitters send theirs from the master host to itself. SimGrid finds a route between two hosts
through the tree of zones (``NetZoneImpl::get_global_route``):

* two points of one zone take that zone's local route;
* otherwise the first zone holding both (their common ancestor) gives the local route between the
  two child zones on the way; that route must name gateways (a ``<zoneRoute>``'s ``gw_src`` and
  ``gw_dst``), and the route continues from the source to ``gw_src`` and from ``gw_dst`` to the
  destination. Without gateways SimGrid aborts: "Bad gateways for route from ...".

A zone's local route, by its ``routing``:

* ``Full``: the ``<route>``/``<zoneRoute>`` from a to b (routes are symmetrical unless
  ``symmetrical="NO"``; a point reaches itself over SimGrid's loopback). A missing route between
  two hosts is an empty route (no links, latency 0: Batsim runs); between two zones it has no
  gateways (Batsim aborts);
* ``Floyd``, ``Dijkstra``, ``DijkstraCache``: the shortest chain of routes (by number of links);
  none is "No route from a to b" (Batsim aborts; with Dijkstra a point in no route crashes it);
* ``None``: no route at all, "There can't be route in an Empty zone" (Batsim aborts, even for
  the master host's messages to itself);
* a ``<cluster>`` (SimGrid's star zone): up the node's link, over the backbone, down the other's;
  ``routing="Cluster"``, ``Vivaldi`` and the torus, fat-tree and dragonfly clusters route every
  host of theirs as :mod:`hdrm.platform.simgrid_topology` computes it (a zone's ``topology``,
  asked for its local routes: links and, in a Vivaldi zone, the coordinates' distance);
* ``routing="Cluster"`` (``StarZone``) and its ``<route>``\\ s: a point's route to itself, when it
  has one with links, is those links (each once, as written: no default loopback in a star
  zone); without one, the point goes up and down its ``<host_link>`` (each link once). A
  ``<route>`` between two points, one naming the zone's ``<backbone>`` or a ``<cabinet>``'s
  host (both made at the zone's end) make SimGrid abort at load, and a point with a route to
  itself but no ``<host_link>`` has no other route ("no link UP from source node"): refused
  (checked with the binary: tests/batsim/test_real_batsim_star_routes.py).

:class:`RouteTable` resolves a route: its links (:class:`Link`: name, bandwidth, latency and
sharing policy, as SimGrid creates them) and its latency; :func:`check_routes` refuses a platform
whose compute hosts cannot reach the master host, or reach it over a link of bandwidth 0 (a
``<link>``, a ``<cluster>``'s ``bw``, ``bb_bw`` with ``bb_lat`` above 0, a loopback made by
``loopback_lat`` without ``loopback_bw``, a ``<peer>``'s ``bw_out`` or the master's ``bw_in``):
SimGrid never ends a transfer there, and Batsim stops with "Deadlock detected" and no further
event (a bandwidth of 0 that no message to the master crosses is read). A ``<cluster>``'s star
route adds each link once: a node's own message goes up its link and down again over two links
when the link is SPLITDUPLEX (the default: ``<id>_link_<i>_UP``, ``_DOWN``), over one when it
is SHARED or FATPIPE (checked with the binary: a master node's message to itself takes
``lat + bb_lat`` there, ``2 lat + bb_lat`` with split-duplex links). Bypass routes are taken as
SimGrid takes them (:class:`RouteTable`); routes between Vivaldi zones are not modelled (such
platforms are not refused), a Wifi zone's routes cross no link (one with a link is refused).
"""

from __future__ import annotations

import heapq
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from hdrm.errors import PlatformError
from hdrm.platform.simgrid_checks import zero_bandwidth_refusal
from hdrm.platform.simgrid_topology import Topology, TopologyUnmodelled, zone_topology
from hdrm.platform.simgrid_values import parse_radical

__all__ = ["LOOPBACK", "Link", "NoRoute", "Route", "RouteTable", "Unmodelled", "check_routes",
           "parse_bandwidth", "parse_seconds"]

_TIME_RE = re.compile(r"^\s*([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*(ps|ns|us|ms|s|m|h|d|w)?\s*$")
_TIME_UNIT = {"ps": 1e-12, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, None: 1.0,
              "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_RATE_RE = re.compile(r"^\s*([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*([kKMGTPE]i?)?(Bps|bps)?\s*$")
_PREFIX = {None: 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
           "ki": 2.0 ** 10, "Ki": 2.0 ** 10, "Mi": 2.0 ** 20, "Gi": 2.0 ** 30, "Ti": 2.0 ** 40,
           "Pi": 2.0 ** 50, "Ei": 2.0 ** 60}
_ZONES = ("zone", "AS")
_ROUTED = ("full", "floyd", "dijkstra", "dijkstracache")
_BYPASS = ("bypassRoute", "bypassZoneRoute", "bypassASroute")


class Unmodelled(Exception):
    """A route this module cannot resolve (not a reason to refuse the platform)."""


class NoRoute(Exception):
    """SimGrid finds no route: Batsim aborts on the first message that needs it.

    Attributes:
        reason: what SimGrid says. zone: the zone whose local route fails. src, dst: its ends
            there. crash: Batsim crashes at its start (Dijkstra), not at the first message.
    """

    def __init__(self, reason: str, zone: _Zone, src: str, dst: str, crash: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.zone, self.src, self.dst = reason, zone, src, dst
        self.crash = crash  # Batsim crashes at its start rather than at the first message


def parse_seconds(text: str) -> float | None:
    """A SimGrid time (``"50us"``, ``"1.46ms"``, ``"0"``) in seconds, or None if it is not one."""
    match = _TIME_RE.match(text)
    return None if match is None else float(match.group(1)) * _TIME_UNIT[match.group(2)]


def parse_bandwidth(text: str) -> float | None:
    """A SimGrid bandwidth (``"10GBps"``, ``"1Gbps"``, ``"125MBps"``) in bytes per second, or
    None when it is not one."""
    match = _RATE_RE.match(text)
    if match is None or match.group(2) not in _PREFIX:
        return None
    value = float(match.group(1)) * _PREFIX[match.group(2)]
    return value / 8 if match.group(3) == "bps" else value


@dataclass(frozen=True)
class Link:
    """A link as SimGrid creates it.

    Attributes:
        name: SimGrid's name: a split-duplex link's direction ends in ``_UP`` or ``_DOWN``; a
            ``<cluster>``'s are ``<id>_link_<i>``, ``<id>_backbone``, ``<id>_link_<i>_loopback``.
        bps: bandwidth in bytes per second (None: not read).
        latency_s: latency in seconds (None: not read).
        policy: SHARED, FATPIPE, SPLITDUPLEX (one direction of one), WIFI.
    """

    name: str
    bps: float | None
    latency_s: float | None
    policy: str = "SHARED"


#: SimGrid's loopback (``network/loopback-bw`` 10 GBps, ``network/loopback-lat`` 0, FATPIPE)
LOOPBACK = Link("__loopback__", 10e9, 0.0, "FATPIPE")


@dataclass(frozen=True)
class Route:
    """A route as SimGrid resolves it: its links in order, its latency summed in SimGrid's order
    (the common zone's route, then the source's side, then the destination's), and whether all
    of it is known (False: a link or latency not read, a zone not modelled, chains of equal
    length that differ)."""

    links: tuple[Link, ...]
    latency_s: float
    exact: bool


@dataclass(frozen=True)
class _Entry:
    """One route of a zone: its gateways (zone routes) and links."""

    gw_src: str | None
    gw_dst: str | None
    links: tuple[tuple[str, str], ...]  # (link id, direction: "", "UP", "DOWN")


@dataclass(eq=False)
class _Zone:
    """A zone (or a ``<cluster>``'s star zone): its points in file order and its routes."""

    zid: str
    routing: str  # lower case; "star" for a <cluster>, "topology" for torus/fat-tree/dragonfly
    parent: _Zone | None
    points: list[str] = field(default_factory=list)
    children: set[str] = field(default_factory=set)  # the points that are zones
    entries: dict[tuple[str, str], _Entry] = field(default_factory=dict)
    bypass: dict[tuple[str, str], _Entry] = field(default_factory=dict)  # one way each
    up: dict[str, tuple[Link, ...]] = field(default_factory=dict)  # a <cluster>'s node: its links
    down: dict[str, tuple[Link, ...]] = field(default_factory=dict)  # up and down, its loopback
    loopback: dict[str, Link] = field(default_factory=dict)
    router: str = ""  # a <cluster>'s router
    exact: bool = True  # latencies known
    topology: Topology | None = None  # routes SimGrid computes (simgrid_topology)
    #: what SimGrid makes at the end of a Cluster zone, after its routes: backbone, cabinet hosts
    sealed: set[str] = field(default_factory=set)

    @property
    def base(self) -> bool:
        """True when the zone holds hosts or routers, not zones (SimGrid adds loopbacks then)."""
        return not self.children

    def chain(self) -> list[_Zone]:
        """This zone and its ancestors, up to the platform's zone."""
        out, zone = [], self
        while zone is not None:
            out.append(zone)
            zone = zone.parent
        return out


class RouteTable:
    """The zones, points, links and routes of one platform tree.

    Bypass routes are kept by the zone that declares them and taken as SimGrid 3.32 takes them
    (``NetZoneImpl::get_bypass_route``): one way only; a ``<bypassRoute>`` between two points of
    the zone where both are; a ``<bypassZoneRoute>`` between zones on the way from each point
    up to the first zone holding both, the nearest pair first, completed by the routes to its
    ``gw_src`` and from its ``gw_dst``.
    """

    def __init__(self, root: ET.Element) -> None:
        self.links: dict[str, Link] = {}
        #: a SPLITDUPLEX link's two links, ``<id>_UP`` and ``<id>_DOWN``, which SimGrid names
        #: (a ``<host_link>`` or a ``<link_ctn>`` without direction may name them)
        self.directions: dict[str, Link] = {}
        self.zone_of: dict[str, _Zone] = {}
        self._cache: dict[tuple[str, str], Route] = {}
        self.load_error: str | None = None  # the first route SimGrid refuses at load
        self.origins: dict[str, tuple[ET.Element, str]] = {}  # link name: element, attribute
        self.clusters: dict[str, ET.Element] = {}  # <cluster> id: element (its links' origin)
        self._active: set[tuple[str, str]] = set()  # routes being resolved (a gateway loop)
        for element in root:
            self._walk(element, None)

    # ------------------------------------------------------------------ reading
    def _walk(self, element: ET.Element, zone: _Zone | None) -> None:
        tag = element.tag
        if tag in _BYPASS:
            if zone is not None:
                self._bypass(zone, element)
            return
        if tag in _ZONES:
            routing = element.get("routing", "").lower()
            self._enter(_Zone(element.get("id", "?"), routing, zone), element)
        elif tag == "cluster":
            self._cluster(element, zone)
        elif zone is None:
            return
        elif tag in ("host", "router", "peer"):
            self._point(zone, element.get("id", "?"))
            if tag == "peer":  # its links to and from the zone (simgrid_star.Vivaldi)
                self.origins[f"link_{element.get('id')}_UP"] = (element, "bw_out")
                self.origins[f"link_{element.get('id')}_DOWN"] = (element, "bw_in")
            if zone.topology is None and element.get("coordinates", "0 0 0").split() not in (
                    [], ["0"] * 3, ["0.0"] * 3):
                zone.exact = False
        elif tag == "cabinet":
            for i in parse_radical(element.get("radical", ""), f"cabinet {element.get('id')!r}"):
                self._point(zone, f"{element.get('prefix', '')}{i}{element.get('suffix', '')}")
                zone.sealed.add(zone.points[-1])
        elif tag in ("link", "backbone"):
            self._link(element)
            if tag == "backbone":
                zone.sealed.add(element.get("id", "?"))
        elif tag in ("route", "zoneRoute", "ASroute"):
            self._route(zone, element)

    def _link(self, element: ET.Element) -> None:
        """A ``<link>``: its bandwidth, latency and policy (None where a profile may change
        them: bandwidth_file, latency_file, state_file, several bandwidths)."""
        lid = element.get("id", "?")
        profiled = {"bandwidth_file", "latency_file", "state_file"} & set(element.attrib)
        bps = None if profiled else parse_bandwidth(element.get("bandwidth", ""))
        latency = None if profiled else parse_seconds(element.get("latency", "0"))
        policy = element.get("sharing_policy", "SHARED").upper()
        self.links[lid] = Link(lid, bps, latency, policy)
        self.origins[lid] = (element, "bandwidth")
        if policy == "SPLITDUPLEX":
            for way in ("UP", "DOWN"):
                self.directions[f"{lid}_{way}"] = Link(f"{lid}_{way}", bps, latency, policy)

    def _enter(self, zone: _Zone, element: ET.Element) -> None:
        if zone.parent is not None:
            self._point(zone.parent, zone.zid)
            zone.parent.children.add(zone.zid)
        if zone.routing not in _ROUTED + ("none",):
            zone.topology = self._topology(element)  # Cluster and Vivaldi zones
            zone.exact = zone.topology is not None
        for child in element:
            self._walk(child, zone)

    def _topology(self, element: ET.Element) -> Topology | None:
        """The routes of a topology zone (None: not modelled, the zone is inexact)."""
        known = {lid: (x.name, x.bps, x.latency_s, x.policy)
                 for lid, x in [*self.directions.items(), *self.links.items()]}
        try:
            return zone_topology(element, known)
        except TopologyUnmodelled:
            return None

    def _point(self, zone: _Zone, name: str) -> None:
        zone.points.append(name)
        self.zone_of[name] = zone

    def _cluster(self, element: ET.Element, parent: _Zone | None) -> None:
        """A flat ``<cluster>`` (SimGrid's star zone): each node's link (split duplex unless
        sharing_policy says SHARED or FATPIPE) and the backbone, its loopback if it has one."""
        cid, attrib = element.get("id", "?"), element.attrib
        flat = element.get("topology", "FLAT").upper() == "FLAT"
        zone = _Zone(cid, "star" if flat else "topology", parent, exact=flat)
        self.clusters[cid] = element
        if parent is not None:
            self._point(parent, cid)
            parent.children.add(cid)
        if not flat:  # a torus, fat tree or dragonfly: no router
            zone.topology = self._topology(element)
            zone.exact = zone.topology is not None
            for name in zone.topology.points if zone.topology is not None else ():
                self._point(zone, name)
            return
        prefix, suffix = element.get("prefix", ""), element.get("suffix", "")
        policy = element.get("sharing_policy", "SPLITDUPLEX").upper()
        bw, lat = parse_bandwidth(element.get("bw", "")), parse_seconds(element.get("lat", "0"))
        bb_bw, bb_lat = (parse_bandwidth(element.get("bb_bw", "0")),
                         parse_seconds(element.get("bb_lat", "0")))
        backbone = ((Link(f"{cid}_backbone", bb_bw, bb_lat,
                          element.get("bb_sharing_policy", "SHARED").upper()),)
                    if bb_bw is None or bb_lat is None or bb_bw > 0 or bb_lat > 0 else ())
        loop_bw, loop_lat = (parse_bandwidth(element.get("loopback_bw", "0")),
                             parse_seconds(element.get("loopback_lat", "0")))
        if None in (bw, lat, loop_bw, loop_lat) or "limiter_link" in attrib:
            zone.exact = False
        for i in parse_radical(element.get("radical", ""), f"cluster {cid!r}"):
            name, link = f"{prefix}{i}{suffix}", f"{cid}_link_{i}"
            self._point(zone, name)
            if policy == "SPLITDUPLEX":
                up = Link(f"{link}_UP", bw, lat, policy)
                down = Link(f"{link}_DOWN", bw, lat, policy)
            else:
                up = down = Link(link, bw, lat, policy)
            zone.up[name], zone.down[name] = (up, *backbone), (*backbone, down)
            if loop_bw is None or loop_lat is None or loop_bw > 0 or loop_lat > 0:
                zone.loopback[name] = Link(f"{link}_loopback", loop_bw, loop_lat, "FATPIPE")
        zone.router = element.get("router_id") or f"{prefix}{cid}_router{suffix}"
        self._point(zone, zone.router)

    def _route(self, zone: _Zone, element: ET.Element) -> None:
        links = tuple((c.get("id", ""), c.get("direction", "").upper())
                      for c in element if c.tag == "link_ctn")
        src, dst = element.get("src", ""), element.get("dst", "")
        if zone.routing == "cluster":
            self._star_route(zone, element, src, dst, links)
            return
        gw_src, gw_dst = element.get("gw_src"), element.get("gw_dst")
        if (src, dst) in zone.entries:
            self._refuse(zone, element, f"the route between {src!r} and {dst!r} already exists "
                         "(routes are symmetrical by default); remove one, or write "
                         "symmetrical=\"NO\" on each direction")
        zone.entries[(src, dst)] = _Entry(gw_src, gw_dst, links)
        if element.get("symmetrical", "YES").upper() == "NO" or (
                src == dst and zone.routing == "full"):
            return
        if (dst, src) in zone.entries:
            self._refuse(zone, element, f"the route between {dst!r} and {src!r} already exists, "
                         "so this one must not be symmetrical; write symmetrical=\"NO\" on it")
        back = {"UP": "DOWN", "DOWN": "UP", "": ""}  # the way back crosses the other direction
        zone.entries[(dst, src)] = _Entry(gw_dst, gw_src, tuple(
            (lid, back.get(way, way)) for lid, way in links[::-1]))

    def _star_route(self, zone: _Zone, element: ET.Element, src: str, dst: str,
                    links: tuple[tuple[str, str], ...]) -> None:
        """A ``<route>`` of a ``<zone routing="Cluster">`` (``StarZone::add_route``): only a
        point's route to itself, its loopback, kept as written (the last one); its links must
        exist when it is read, which a ``<backbone>`` does not (SimGrid makes it at the zone's
        end)."""
        if src != dst:
            self._refuse(zone, element, "a route between two points of a Cluster zone (SimGrid "
                         f"3.32: \"Cannot add route from {src} to {dst}. In a StarZone, route "
                         "must be: ... iii) loopback, same source and destination\"); join each "
                         "host by a <host_link>, and keep <route>s from a host to itself")
        if src in zone.sealed:
            self._refuse(zone, element, f"{src!r} is a host of a <cabinet>, which SimGrid 3.32 "
                         f"makes only at the end of zone {zone.zid!r} (\"Route src='{src}' does "
                         "name a node\"); remove the route (a cabinet's host has its own links)")
        late = next((lid for lid, _ in links if lid in zone.sealed), None)
        if late is not None:
            self._refuse(zone, element, f"it names backbone {late!r}, which SimGrid 3.32 makes "
                         f"only at the end of zone {zone.zid!r} (\"Link not found: {late}\"); "
                         "name a <link> of the zone instead")
        zone.entries[(src, dst)] = _Entry(None, None, links)

    def _bypass(self, zone: _Zone, element: ET.Element) -> None:
        links = tuple((c.get("id", ""), c.get("direction", "").upper())
                      for c in element if c.tag == "link_ctn")
        key = (element.get("src", ""), element.get("dst", ""))
        if key in zone.bypass or not links:
            self._refuse(zone, element, "a bypass route repeated or without links")
        zone.bypass[key] = _Entry(element.get("gw_src"), element.get("gw_dst"), links)

    def _refuse(self, zone: _Zone, element: ET.Element, text: str) -> None:
        """Remember the first route SimGrid refuses when it loads the platform."""
        if self.load_error is None and zone.routing in (*_ROUTED, "cluster"):
            named = (f"<{element.tag} src={element.get('src')!r} dst={element.get('dst')!r}> in "
                     f"zone {zone.zid!r}")
            self.load_error = (f"{named}: {text} (SimGrid 3.32 refuses it when it loads the "
                               "platform: Batsim 4.2.1 aborts before it starts)")

    def origin(self, link: str) -> tuple[ET.Element, str] | None:
        """The element and attribute that made ``link`` (its bandwidth), None if not known."""
        found = self.origins.get(link) or self.origins.get(link.rsplit("_", 1)[0])  # _UP, _DOWN
        if found is not None:
            return found
        for cid, element in self.clusters.items():
            if link == f"{cid}_backbone":
                return element, "bb_bw"
            if link.startswith(f"{cid}_link_"):
                return element, "loopback_bw" if link.endswith("_loopback") else "bw"
        return None

    # ------------------------------------------------------------------ resolving
    def latency(self, src: str, dst: str) -> tuple[float, bool]:
        """The summed link latencies from ``src`` to ``dst`` and whether they are exact.

        Raises:
            NoRoute: SimGrid finds no route (Batsim aborts on a message over it).
            Unmodelled: a point is unknown, or the route needs what is not modelled.
        """
        found = self.route(src, dst)
        return found.latency_s, found.exact

    def route(self, src: str, dst: str) -> Route:
        """The route from ``src`` to ``dst``: its links, latency and exactness.

        Raises:
            NoRoute: SimGrid finds no route (Batsim aborts on a message over it).
            Unmodelled: a point is unknown, or the route needs what is not modelled.
        """
        key = (src, dst)
        if key not in self._cache:
            if key in self._active:
                raise Unmodelled(f"gateways loop between {src!r} and {dst!r}")
            self._active.add(key)
            try:
                self._cache[key] = self._resolve(src, dst)
            finally:
                self._active.discard(key)
        return self._cache[key]

    def _resolve(self, src: str, dst: str) -> Route:
        if src not in self.zone_of or dst not in self.zone_of:
            raise Unmodelled(f"no point {src!r} or {dst!r} in a zone")
        zs, zd = self.zone_of[src], self.zone_of[dst]
        if zs is zd:
            if (src, dst) in zs.bypass:
                return self._links(zs.bypass[src, dst].links)
            return self._local(zs, src, dst)[0]
        up_s, up_d, common = zs.chain(), zd.chain(), None
        while len(up_s) > 1 and len(up_d) > 1 and up_s[-1] is up_d[-1]:
            common = up_s.pop()
            up_d.pop()
        if up_s[-1] is up_d[-1] or common is None:
            raise Unmodelled(f"{src!r} and {dst!r} in nested zones of one another")
        bypassed = self._bypassed(common, src, dst, up_s, up_d)
        if bypassed is not None:
            return bypassed
        middle, gw_src, gw_dst = self._local(common, up_s[-1].zid, up_d[-1].zid)
        if gw_src is None or gw_dst is None:
            raise NoRoute(f"Bad gateways for route from '{src}' to '{dst}'", common,
                          up_s[-1].zid, up_d[-1].zid)
        head = self.route(src, gw_src) if src != gw_src else Route((), 0.0, True)
        tail = self.route(gw_dst, dst) if gw_dst != dst else Route((), 0.0, True)
        return Route(head.links + middle.links + tail.links,
                     middle.latency_s + head.latency_s + tail.latency_s,
                     middle.exact and head.exact and tail.exact)

    def _bypassed(self, common: _Zone, src: str, dst: str, up_s: list[_Zone],
                  up_d: list[_Zone]) -> Route | None:
        """The bypass route of ``common`` between the zones on the way up from ``src`` and
        ``dst`` (``up_s``, ``up_d``: from each point's zone to the child of ``common``), the
        nearest pair first as SimGrid tries them, completed to ``src`` and ``dst``; None if none."""
        if not common.bypass:
            return None
        found = None
        for top in range(max(len(up_s), len(up_d))):
            pairs = [p for i in range(top) for p in ((i, top), (top, i))] + [(top, top)]
            for i, j in pairs:
                if i < len(up_s) and j < len(up_d):
                    found = common.bypass.get((up_s[i].zid, up_d[j].zid))
                    if found is not None:
                        break
            if found is not None:
                break
        if found is None:
            return None
        if found.gw_src is None or found.gw_dst is None:
            raise Unmodelled(f"a bypass route between zones without gateways ({src!r}, {dst!r})")
        middle = self._links(found.links)
        head = self.route(src, found.gw_src)  # even to itself: SimGrid compares with the zone
        tail = self.route(found.gw_dst, dst)
        return Route(head.links + middle.links + tail.links,
                     head.latency_s + middle.latency_s + tail.latency_s,
                     head.exact and middle.exact and tail.exact)

    def _local(self, zone: _Zone, a: str, b: str) -> tuple[Route, str | None, str | None]:
        """Zone's local route from a to b and its gateways."""
        if zone.routing == "none":
            raise NoRoute("There can't be route in an Empty zone", zone, a, b)
        if zone.routing == "star":
            return self._star(zone, a, b), None, None
        if zone.routing == "cluster" and zone.topology is not None:
            return self._star_zone(zone, a, b), None, None
        if zone.topology is not None:
            return self._computed(zone, a, b)
        if zone.routing not in _ROUTED:
            if not zone.base:
                raise Unmodelled(f"routes between the zones of {zone.routing!r} zone {zone.zid!r}")
            return Route((), 0.0, False), None, None
        entry = zone.entries.get((a, b))
        if zone.routing != "floyd" and zone.routing != "full":
            nodes = {p for pair in zone.entries for p in pair}
            for point in (a, b):
                if point not in nodes:
                    raise NoRoute(f"'{point}' is in no route of Dijkstra zone '{zone.zid}'", zone,
                                  a, b, crash=True)
        if entry is not None and (a == b or zone.routing == "full"):
            return self._links(entry.links), entry.gw_src, entry.gw_dst
        if a == b and zone.base:
            return Route((LOOPBACK,), 0.0, True), None, None  # network/loopback-lat 0
        if zone.routing == "full":  # an empty route: between zones, without gateways
            return Route((), 0.0, True), None, None
        return self._shortest(zone, a, b)

    @staticmethod
    def _star(zone: _Zone, a: str, b: str) -> Route:
        """A <cluster>: a node's loopback to itself if it has one, else up a's links and down
        b's (the router has none), each link once (StarZone::get_local_route)."""
        if a == b and a in zone.loopback:
            links: tuple[Link, ...] = (zone.loopback[a],)
        else:
            links = tuple(dict.fromkeys(zone.up.get(a, ()) + zone.down.get(b, ())))
        return _summed(links, zone.exact)

    def _star_zone(self, zone: _Zone, a: str, b: str) -> Route:
        """A ``<zone routing="Cluster">``'s route (``StarZone::get_local_route``): a point's
        route to itself when it has one with links; else the source's links up and the
        destination's down (:class:`~hdrm.platform.simgrid_star.StarRoutes`). A point with a
        route to itself has no other link unless a ``<host_link>`` gives it some: SimGrid
        aborts (a point without either has none: an empty route)."""
        entry = zone.entries.get((a, b)) if a == b else None
        if entry is not None and entry.links:  # each link once (StarZone::add_links_to_route)
            return self._links(list(dict.fromkeys(entry.links)))
        for point, way in ((a, "UP from source"), (b, "DOWN to destination")):
            if _unjoined(zone, point):
                raise NoRoute(f"StarZone routing ({a} - {b}): no link {way} node. Did you use "
                              "add_route() to set it?", zone, a, b)
        return self._computed(zone, a, b)[0]

    @staticmethod
    def _computed(zone: _Zone, a: str, b: str) -> tuple[Route, str | None, str | None]:
        """A topology zone's route (simgrid_topology), Vivaldi's distance added last."""
        try:
            links, extra_s, gw_src, gw_dst = zone.topology.local(a, b)  # type: ignore[union-attr]
        except TopologyUnmodelled as exc:
            raise Unmodelled(str(exc)) from None
        found = _summed(tuple(Link(*link) for link in links), zone.exact)
        return Route(found.links, found.latency_s + extra_s, found.exact), gw_src, gw_dst

    def _links(self, ids: Sequence[tuple[str, str]]) -> Route:
        """The links a route names: a split-duplex link's direction, which it must give."""
        links, exact = [], True
        for lid, way in ids:
            link = self.links.get(lid)
            if link is None and lid in self.directions and not way:  # <link_ctn id="l_UP"/>
                link = self.directions[lid]
            elif link is None:
                return Route((), 0.0, False)
            elif link.policy == "SPLITDUPLEX":
                exact = exact and way in ("UP", "DOWN")
                link = Link(f"{lid}_{way}", link.bps, link.latency_s, link.policy)
            links.append(link)
        return _summed(tuple(links), exact)

    def _shortest(self, zone: _Zone, a: str, b: str) -> tuple[Route, str | None, str | None]:
        """Floyd's and Dijkstra's route: the fewest links; exact when all such chains cross
        links alike (bandwidth, latency, policy, how often)."""
        graph: dict[str, list[tuple[str, _Entry]]] = {}
        for (s, d), entry in zone.entries.items():
            graph.setdefault(s, []).append((d, entry))
        cost, paths, cut = {a: 0}, {a: [[]]}, False
        heap = [(0, a)]
        while heap:
            c, node = heapq.heappop(heap)
            if c > cost.get(node, c) or node == b:
                continue
            for nxt, entry in graph.get(node, []):
                step = c + len(entry.links)
                if step < cost.get(nxt, step + 1):
                    cost[nxt], paths[nxt] = step, []
                    heapq.heappush(heap, (step, nxt))
                if step == cost[nxt]:
                    cut = cut or len(paths[node]) > 4
                    paths[nxt].extend(p + [entry] for p in paths[node][:4])
        if b not in paths or a == b:
            raise NoRoute(f"No route from '{a}' to '{b}'", zone, a, b)
        chains = [self._chain(zone, p) for p in paths[b]]
        alike = len({_signature(r) for r in chains}) == 1 and not cut
        first = chains[0]
        return (Route(first.links, first.latency_s, first.exact and alike),
                paths[b][0][0].gw_src, paths[b][0][-1].gw_dst)

    def _chain(self, zone: _Zone, chain: list[_Entry]) -> Route:
        links: tuple[Link, ...] = ()
        lat, exact = 0.0, True
        for before, entry in zip([None, *chain], chain):
            parts = [self._links(entry.links)]
            if not zone.base and before is not None and before.gw_dst != entry.gw_src:
                parts.insert(0, self.route(str(before.gw_dst), str(entry.gw_src)))
            for part in parts:
                links, lat, exact = links + part.links, lat + part.latency_s, exact and part.exact
        return Route(links, lat, exact)


def _unjoined(zone: _Zone, point: str) -> bool:
    """True for a point of a Cluster zone with a route to itself and no ``<host_link>``: SimGrid
    3.32 gives it no link up or down (its default empty links go to points without routes)."""
    return (point, point) in zone.entries and point not in getattr(zone.topology, "up", {})


def _summed(links: tuple[Link, ...], exact: bool) -> Route:
    """A route over ``links``, their latencies summed in order."""
    lat = 0.0
    for link in links:
        if link.latency_s is None:
            return Route(links, 0.0, False)
        lat += link.latency_s
    return Route(links, lat, exact)


def _signature(route: Route) -> tuple:
    """What a message sees of a route: its rounded latency and the links it crosses (bandwidth,
    latency, policy, how many times), not their names."""
    counts: dict[str, int] = {}
    for link in route.links:
        counts[link.name] = counts.get(link.name, 0) + 1
    seen = {link.name: link for link in route.links}
    return (round(route.latency_s, 12), route.exact, tuple(sorted(
        (str(seen[n].bps), str(seen[n].latency_s), seen[n].policy, k) for n, k in counts.items())))


def _zones_of(table: RouteTable, name: str) -> str:
    return " > ".join(repr(z.zid) for z in reversed(table.zone_of[name].chain()))


def check_routes(root: ET.Element, path: str | Path, master: str, hosts: Sequence[str]) -> None:
    """Refuse a platform where the master host or a compute host has no route to the master,
    or one over a link of bandwidth 0 (SimGrid never ends a message there), or with a route
    SimGrid refuses at load (declared twice, or symmetrical over an existing one).

    Args:
        root: the ``<platform>`` element. master: the master host's name.
        hosts: the compute hosts' names.

    Raises:
        PlatformError: one line naming the file, the host, its zones, SimGrid's words and the fix.
    """
    try:
        table = RouteTable(root)
    except Unmodelled:
        return
    if table.load_error is not None:
        raise PlatformError(f"{path}: {table.load_error}")
    for host in [master, *hosts]:
        try:
            route = table.route(host, master)
        except Unmodelled:
            continue
        except NoRoute as exc:
            raise PlatformError(_refusal(table, path, host, master, exc)) from None
        zero = next((link for link in route.links if link.bps == 0), None)
        if zero is not None and route.exact:  # not a Floyd/Dijkstra tie SimGrid may break else
            raise PlatformError(zero_bandwidth_refusal(path, table.origin(zero.name), zero.name,
                                                       host, master))


def _refusal(table: RouteTable, path: str | Path, host: str, master: str, exc: NoRoute) -> str:
    zone = exc.zone
    when = ("at its start (the master host's messages to itself)" if host == master
            else "when a job on that host ends")
    if exc.crash:
        when = "at its start (segmentation fault)"
    point = next((p for p in (exc.src, exc.dst) if _unjoined(zone, p)), None)
    if zone.routing == "cluster" and point is not None:
        fix = (f"give {point!r} a <host_link id=\"{point}\" up=... down=...> in zone "
               f"{zone.zid!r} (its <route> to itself gives it no other link)")
    elif zone.routing == "none":
        fix = (f"give zone {zone.zid!r} a routing with routes (routing=\"Full\" and <route>s), "
               "or put the host in a routed zone")
    elif zone.base:
        fix = f"add <route src=\"{exc.src}\" dst=\"{exc.dst}\"> in zone {zone.zid!r}"
    else:
        fix = (f"add <zoneRoute src=\"{exc.src}\" dst=\"{exc.dst}\" gw_src=... gw_dst=...> in zone "
               f"{zone.zid!r}, or put the host in a routed zone")
    return (f"{path}: host {host!r} (zones {_zones_of(table, host)}) has no route to the master "
            f"host {master!r} (zones {_zones_of(table, master)}) (SimGrid 3.32: "
            f"\"{exc.reason}\"), so Batsim 4.2.1 aborts {when}; {fix}")
