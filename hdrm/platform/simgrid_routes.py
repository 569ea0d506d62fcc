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
  host of theirs (their latencies are not modelled here).

:class:`RouteTable` resolves a route and its latency; :func:`check_routes` refuses a platform
whose compute hosts cannot reach the master host. Bypass routes, routes between Vivaldi zones
and Wifi zones are not modelled: such platforms are not refused.
"""

from __future__ import annotations

import heapq
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from hdrm.errors import PlatformError
from hdrm.platform.simgrid_values import parse_radical

__all__ = ["NoRoute", "RouteTable", "Unmodelled", "check_routes", "parse_seconds"]

_TIME_RE = re.compile(r"^\s*([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*(ps|ns|us|ms|s|m|h|d|w)?\s*$")
_TIME_UNIT = {"ps": 1e-12, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, None: 1.0,
              "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
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


@dataclass(frozen=True)
class _Entry:
    """One route of a zone: its gateways (zone routes) and links."""

    gw_src: str | None
    gw_dst: str | None
    links: tuple[str, ...]


@dataclass(eq=False)
class _Zone:
    """A zone (or a ``<cluster>``'s star zone): its points in file order and its routes."""

    zid: str
    routing: str  # lower case; "star" for a <cluster>, "topology" for torus/fat-tree/dragonfly
    parent: _Zone | None
    points: list[str] = field(default_factory=list)
    children: set[str] = field(default_factory=set)  # the points that are zones
    entries: dict[tuple[str, str], _Entry] = field(default_factory=dict)
    star: tuple[float, float, float | None] = (0.0, 0.0, None)  # link, backbone, loopback (s)
    router: str = ""  # a <cluster>'s router
    exact: bool = True  # latencies known

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
    """The zones, points and routes of one platform tree.

    Raises:
        Unmodelled: the platform has bypass routes.
    """

    def __init__(self, root: ET.Element) -> None:
        self.links: dict[str, float | None] = {}
        self.zone_of: dict[str, _Zone] = {}
        self._cache: dict[tuple[str, str], tuple[float, bool]] = {}
        self.load_error: str | None = None  # the first route SimGrid refuses at load
        self._active: set[tuple[str, str]] = set()  # routes being resolved (a gateway loop)
        for element in root:
            self._walk(element, None)

    # ------------------------------------------------------------------ reading
    def _walk(self, element: ET.Element, zone: _Zone | None) -> None:
        tag = element.tag
        if tag in _BYPASS:
            raise Unmodelled(f"<{tag}> (bypass routes) not modelled")
        if tag in _ZONES:
            routing = element.get("routing", "").lower()
            self._enter(_Zone(element.get("id", "?"), routing, zone), element)
        elif tag == "cluster":
            self._cluster(element, zone)
        elif zone is None:
            return
        elif tag in ("host", "router", "peer"):
            self._point(zone, element.get("id", "?"))
            if element.get("coordinates", "0 0 0").split() not in ([], ["0"] * 3, ["0.0"] * 3):
                zone.exact = False
        elif tag == "cabinet":
            for i in parse_radical(element.get("radical", ""), f"cabinet {element.get('id')!r}"):
                self._point(zone, f"{element.get('prefix', '')}{i}{element.get('suffix', '')}")
        elif tag in ("link", "backbone"):
            self.links[element.get("id", "?")] = parse_seconds(element.get("latency", "0"))
        elif tag in ("route", "zoneRoute", "ASroute"):
            self._route(zone, element)

    def _enter(self, zone: _Zone, element: ET.Element) -> None:
        if zone.parent is not None:
            self._point(zone.parent, zone.zid)
            zone.parent.children.add(zone.zid)
        if zone.routing not in _ROUTED + ("none",):
            zone.exact = False
        for child in element:
            self._walk(child, zone)

    def _point(self, zone: _Zone, name: str) -> None:
        zone.points.append(name)
        self.zone_of[name] = zone

    def _cluster(self, element: ET.Element, parent: _Zone | None) -> None:
        cid = element.get("id", "?")
        flat = element.get("topology", "FLAT").upper() == "FLAT"
        zone = _Zone(cid, "star" if flat else "topology", parent, exact=flat)
        if parent is not None:
            self._point(parent, cid)
            parent.children.add(cid)
        prefix, suffix = element.get("prefix", ""), element.get("suffix", "")
        for i in parse_radical(element.get("radical", ""), f"cluster {cid!r}"):
            self._point(zone, f"{prefix}{i}{suffix}")
        zone.router = element.get("router_id") or f"{prefix}{cid}_router{suffix}"
        self._point(zone, zone.router)
        values = [parse_seconds(element.get(k, "0")) for k in ("lat", "bb_lat", "loopback_lat")]
        if None in values:
            zone.exact = False
            return
        loopback = values[2] if "loopback_lat" in element.attrib else None
        zone.star = (values[0], values[1], loopback)

    def _route(self, zone: _Zone, element: ET.Element) -> None:
        links = tuple(c.get("id", "") for c in element if c.tag == "link_ctn")
        src, dst = element.get("src", ""), element.get("dst", "")
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
        zone.entries[(dst, src)] = _Entry(gw_dst, gw_src, links[::-1])

    def _refuse(self, zone: _Zone, element: ET.Element, text: str) -> None:
        """Remember the first route SimGrid refuses when it loads the platform."""
        if self.load_error is None and zone.routing in _ROUTED:
            named = (f"<{element.tag} src={element.get('src')!r} dst={element.get('dst')!r}> in "
                     f"zone {zone.zid!r}")
            self.load_error = (f"{named}: {text} (SimGrid 3.32 refuses it when it loads the "
                               "platform: Batsim 4.2.1 aborts before it starts)")

    # ------------------------------------------------------------------ resolving
    def latency(self, src: str, dst: str) -> tuple[float, bool]:
        """The summed link latencies from ``src`` to ``dst`` and whether they are exact.

        Raises:
            NoRoute: SimGrid finds no route (Batsim aborts on a message over it).
            Unmodelled: a point is unknown, or the route needs what is not modelled.
        """
        return self._route_between(src, dst)

    def _route_between(self, src: str, dst: str) -> tuple[float, bool]:
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

    def _resolve(self, src: str, dst: str) -> tuple[float, bool]:
        if src not in self.zone_of or dst not in self.zone_of:
            raise Unmodelled(f"no point {src!r} or {dst!r} in a zone")
        zs, zd = self.zone_of[src], self.zone_of[dst]
        if zs is zd:
            lat, exact, _, _ = self._local(zs, src, dst)
            return lat, exact
        up_s, up_d, common = zs.chain(), zd.chain(), None
        while len(up_s) > 1 and len(up_d) > 1 and up_s[-1] is up_d[-1]:
            common = up_s.pop()
            up_d.pop()
        if up_s[-1] is up_d[-1] or common is None:
            raise Unmodelled(f"{src!r} and {dst!r} in nested zones of one another")
        lat, exact, gw_src, gw_dst = self._local(common, up_s[-1].zid, up_d[-1].zid)
        if gw_src is None or gw_dst is None:
            raise NoRoute(f"Bad gateways for route from '{src}' to '{dst}'", common,
                          up_s[-1].zid, up_d[-1].zid)
        for a, b in ((src, gw_src), (gw_dst, dst)):
            if a != b:
                more, known = self._route_between(a, b)
                lat, exact = lat + more, exact and known
        return lat, exact

    def _local(self, zone: _Zone, a: str, b: str) -> tuple[float, bool, str | None, str | None]:
        """Latency, exactness and gateways of zone's local route from a to b."""
        if zone.routing == "none":
            raise NoRoute("There can't be route in an Empty zone", zone, a, b)
        if zone.routing == "star":
            return self._star(zone, a, b)
        if zone.routing not in _ROUTED:
            if not zone.base:
                raise Unmodelled(f"routes between the zones of {zone.routing!r} zone {zone.zid!r}")
            return 0.0, False, None, None
        entry = zone.entries.get((a, b))
        if zone.routing != "floyd" and zone.routing != "full":
            nodes = {p for pair in zone.entries for p in pair}
            for point in (a, b):
                if point not in nodes:
                    raise NoRoute(f"'{point}' is in no route of Dijkstra zone '{zone.zid}'", zone,
                                  a, b, crash=True)
        if entry is not None and (a == b or zone.routing == "full"):
            return self._sum(entry.links) + (entry.gw_src, entry.gw_dst)
        if a == b and zone.base:
            return 0.0, True, None, None  # SimGrid's loopback (network/loopback-lat 0)
        if zone.routing == "full":  # an empty route: between zones, without gateways
            return 0.0, True, None, None
        return self._shortest(zone, a, b)

    @staticmethod
    def _star(zone: _Zone, a: str, b: str) -> tuple[float, bool, str | None, str | None]:
        """A <cluster>: up a node's link and the backbone, down the other's (its router: none)."""
        link, backbone, loopback = zone.star
        if a == b:
            if loopback is not None:
                return loopback, zone.exact, None, None
            return (0.0 if a == zone.router else 2 * link + backbone), zone.exact, None, None
        nodes = (a != zone.router) + (b != zone.router)
        return nodes * link + backbone, zone.exact, None, None

    def _sum(self, links: Sequence[str]) -> tuple[float, bool]:
        values = [self.links.get(name) for name in links]
        if any(v is None for v in values):
            return 0.0, False
        return float(sum(values)), True  # type: ignore[arg-type]

    def _shortest(self, zone: _Zone, a: str, b: str) -> tuple[float, bool, str | None, str | None]:
        """Floyd's and Dijkstra's route: the fewest links; exact when all such chains agree."""
        graph: dict[str, list[tuple[str, _Entry]]] = {}
        for (s, d), entry in zone.entries.items():
            graph.setdefault(s, []).append((d, entry))
        cost, paths = {a: 0}, {a: [[]]}
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
                    paths[nxt].extend(p + [entry] for p in paths[node][:4])
        if b not in paths or a == b:
            raise NoRoute(f"No route from '{a}' to '{b}'", zone, a, b)
        sums = {self._chain(zone, p) for p in paths[b]}
        (lat, exact), chain = sorted(sums)[0], paths[b][0]
        return lat, exact and len(sums) == 1, chain[0].gw_src, chain[-1].gw_dst

    def _chain(self, zone: _Zone, chain: list[_Entry]) -> tuple[float, bool]:
        lat, exact = 0.0, True
        for before, entry in zip([None, *chain], chain):
            if not zone.base and before is not None and before.gw_dst != entry.gw_src:
                more, known = self._route_between(str(before.gw_dst), str(entry.gw_src))
                lat, exact = lat + more, exact and known
            more, known = self._sum(entry.links)
            lat, exact = lat + more, exact and known
        return round(lat, 12), exact


def _zones_of(table: RouteTable, name: str) -> str:
    return " > ".join(repr(z.zid) for z in reversed(table.zone_of[name].chain()))


def check_routes(root: ET.Element, path: str | Path, master: str, hosts: Sequence[str]) -> None:
    """Refuse a platform where the master host or a compute host has no route to the master,
    or with a route SimGrid refuses at load (declared twice, or symmetrical over an existing one).

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
            table.latency(host, master)
        except Unmodelled:
            continue
        except NoRoute as exc:
            raise PlatformError(_refusal(table, path, host, master, exc)) from None


def _refusal(table: RouteTable, path: str | Path, host: str, master: str, exc: NoRoute) -> str:
    zone = exc.zone
    when = ("at its start (the master host's messages to itself)" if host == master
            else "when a job on that host ends")
    if exc.crash:
        when = "at its start (segmentation fault)"
    if zone.routing == "none":
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
