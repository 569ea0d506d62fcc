"""Star zones of SimGrid 3.32 (Batsim 4.2.1): ``<zone routing="Cluster">`` and Vivaldi zones,
and what every computed route shares (:mod:`hdrm.platform.simgrid_topology` has the clusters of
a topology).

* ``<zone routing="Cluster">`` (:class:`StarRoutes`, SimGrid's ``StarZone``): a point's links
  up, then the destination's links down, each link once: a ``<host_link>``'s ``up`` and the
  zone's ``<backbone>``, the backbone and its ``down``; a ``<cabinet>``'s nodes get
  ``link_<host>_UP`` and ``_DOWN`` of the cabinet's ``bw`` and ``lat`` (made when the zone is
  sealed); a host without a ``<host_link>`` and a router have no link (measured with the binary:
  a master with a host_link sends to itself over its up link, the backbone and its down link);
* ``<zone routing="Wifi">`` without a ``<link>`` (:class:`WifiRoutes`): no link, latency 0
  (SimGrid's WifiZone crosses its wifi link only; the binary runs such a zone, and aborts on
  one with a link: Batsim's ptask_L07 model has no wifi links);
* ``<zone routing="Vivaldi">`` (:class:`Vivaldi`): a ``<peer>``'s ``link_<id>_UP`` (``bw_out``)
  and ``_DOWN`` (``bw_in``) of latency 0 (a peer's ``lat`` is ignored, with a warning), plus the
  distance of the coordinates ``x y h``: ``(sqrt(dx^2 + dy^2) + |h_src| + |h_dst|) / 1000`` s,
  so the master's message to itself takes ``2 |h| / 1000`` s (measured: 1 ms for ``h`` 0.5).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

from hdrm.platform.simgrid_values import parse_radical

__all__ = ["LinkSpec", "Local", "StarRoutes", "Topology", "TopologyUnmodelled", "Vivaldi",
           "WifiRoutes", "bps", "coordinates", "seconds", "star_links"]

#: A link as SimGrid creates it: (name, bytes per second, latency in seconds, sharing policy), the
#: fields of :class:`hdrm.platform.simgrid_routes.Link` (None: not read).
LinkSpec = tuple[str, "float | None", "float | None", str]
#: A local route: its links in SimGrid's order, latency not carried by links (Vivaldi), gateways.
Local = tuple[list[LinkSpec], float, "str | None", "str | None"]


class TopologyUnmodelled(Exception):
    """A route of a topology zone that this module cannot give."""


def seconds(text: str, where: str) -> float:
    from hdrm.platform.simgrid_routes import parse_seconds  # (it imports this module)

    value = parse_seconds(text)
    if value is None:
        raise TopologyUnmodelled(f"{where}: latency {text!r} is not a time")
    return value


def bps(text: str) -> float | None:
    from hdrm.platform.simgrid_routes import parse_bandwidth

    return parse_bandwidth(text)


class Topology:
    """A zone whose local routes SimGrid computes.

    Attributes:
        points: the hosts and routers it routes, in SimGrid's id order within the zone.
    """

    points: list[str]

    def local(self, src: str, dst: str) -> Local:
        """The local route from ``src`` to ``dst`` (points of this zone).

        Raises:
            TopologyUnmodelled: the route needs what is not modelled.
        """
        raise NotImplementedError



class StarRoutes(Topology):
    """SimGrid's ``StarZone`` as a ``<zone routing="Cluster">``: each point's links up and down;
    a route is the source's up links and the destination's down links, each link once."""

    def __init__(self, element: ET.Element, links: dict[str, LinkSpec]) -> None:
        self.points, self.up, self.down = [], {}, {}
        backbone = next((c for c in element if c.tag == "backbone"), None)
        bb = [] if backbone is None else [links[backbone.get("id", "?")]]
        cabinets = []
        for child in element:
            if child.tag in ("host", "router"):
                self.points.append(child.get("id", "?"))
            elif child.tag == "host_link":
                host = child.get("id", "?")
                up, down = links.get(child.get("up", "")), links.get(child.get("down", ""))
                if up is None or down is None:
                    raise TopologyUnmodelled(f"host_link of {host!r}: unknown link")
                self.up[host], self.down[host] = [up, *bb], [*bb, down]
            elif child.tag == "cabinet":
                cabinets.append(child)
        for cabinet in cabinets:  # SimGrid makes them when it seals the zone
            where = f"cabinet {cabinet.get('id', '?')!r}"
            lat = seconds(cabinet.get("lat", "0"), where)
            bw = bps(cabinet.get("bw", ""))
            for r in parse_radical(cabinet.get("radical", ""), where):
                host = f"{cabinet.get('prefix', '')}{r}{cabinet.get('suffix', '')}"
                self.points.append(host)
                self.up[host] = [(f"link_{host}_UP", bw, lat, "SHARED"), *bb]
                self.down[host] = [*bb, (f"link_{host}_DOWN", bw, lat, "SHARED")]

    def local(self, src: str, dst: str) -> Local:
        return _once(self.up.get(src, []) + self.down.get(dst, [])), 0.0, None, None


class WifiRoutes(Topology):
    """SimGrid's ``WifiZone`` without its wifi link: every local route is empty (no link,
    latency 0; its access point is a gateway like any other point). A Wifi zone with a link is
    refused before (:mod:`hdrm.platform.simgrid_checks`: Batsim's ptask_L07 model has none)."""

    def __init__(self, element: ET.Element) -> None:
        self.points = [c.get("id", "?") for c in element if c.tag in ("host", "router")]

    def local(self, src: str, dst: str) -> Local:
        return [], 0.0, None, None


def _once(links: list[LinkSpec]) -> list[LinkSpec]:
    """The links in order, each once (StarZone::add_links_to_route)."""
    seen: set[str] = set()
    out = []
    for link in links:
        if link[0] not in seen:
            seen.add(link[0])
            out.append(link)
    return out


class Vivaldi(StarRoutes):
    """SimGrid's ``VivaldiZone``: peers' links, and the distance of the coordinates."""

    def __init__(self, element: ET.Element, links: dict[str, LinkSpec]) -> None:
        super().__init__(element, links)
        self.coords: dict[str, tuple[float, float, float] | None] = {}
        for child in element:
            if child.tag in ("host", "router", "peer"):
                self.coords[child.get("id", "?")] = coordinates(child.get("coordinates", ""))
            if child.tag == "peer":
                peer = child.get("id", "?")
                self.points.append(peer)
                self.up[peer] = [(f"link_{peer}_UP", bps(child.get("bw_out", "")), 0.0,
                                  "SHARED")]
                self.down[peer] = [(f"link_{peer}_DOWN", bps(child.get("bw_in", "")), 0.0,
                                    "SHARED")]

    def local(self, src: str, dst: str) -> Local:
        if src not in self.coords or dst not in self.coords:
            raise TopologyUnmodelled(f"a route between the zones of a Vivaldi zone ({src!r}, "
                                     f"{dst!r})")
        a, b = self.coords[src], self.coords[dst]
        if a is None or b is None:
            raise TopologyUnmodelled(f"no Vivaldi coordinates for {src if a is None else dst!r}")
        distance = math.hypot(a[0] - b[0], a[1] - b[1]) + abs(a[2]) + abs(b[2])
        links, _, _, _ = super().local(src, dst)
        return links, distance / 1000.0, None, None


def coordinates(text: str) -> tuple[float, float, float] | None:
    """Vivaldi coordinates ``"x y h"`` (split at single spaces, as SimGrid), or None."""
    parts = text.split(" ")
    if len(parts) != 3:
        return None
    try:
        x, y, h = (float(p) for p in parts)
    except ValueError:
        return None
    return x, y, h


def star_links(element: ET.Element, links: dict[str, LinkSpec]) -> dict[str, LinkSpec]:
    """``links`` and the ``<link>``\\ s and ``<backbone>`` the zone ``element`` declares; a
    SPLITDUPLEX link gives SimGrid's two links ``<id>_UP`` and ``<id>_DOWN`` (which a
    ``<host_link>`` names; SimGrid knows no link ``<id>`` then: "Link 'id' not found!")."""
    out = dict(links)
    for child in element:
        if child.tag in ("link", "backbone"):
            lid = child.get("id", "?")
            policy = child.get("sharing_policy", "SHARED").upper()
            rate = bps(child.get("bandwidth", ""))
            latency = seconds(child.get("latency", "0"), f"link {lid!r}")
            if policy == "SPLITDUPLEX":
                for way in ("UP", "DOWN"):
                    out[f"{lid}_{way}"] = (f"{lid}_{way}", rate, latency, policy)
            out[lid] = (lid, rate, latency, policy)
    return out
