"""The zones whose routes SimGrid 3.32 (Batsim 4.2.1's) computes rather than reads from
``<route>``\\ s: what :mod:`hdrm.platform.simgrid_routes` asks for their local routes.

* ``<cluster topology="TORUS" topo_parameters="d1,d2,...">`` (:class:`Torus`): one link per
  node and dimension towards the next node (wrapping); a route goes dimension by dimension,
  first dimension first, in the direction SimGrid's test picks;
* ``<cluster topology="FAT_TREE" topo_parameters="L;down...;up...;ports...">``
  (:class:`FatTree`): up from the node to the first switch whose sub-tree holds the destination
  (d-mod-k), then down;
* ``<cluster topology="DRAGONFLY" topo_parameters="g,blue;c,black;r,green;n">``
  (:class:`Dragonfly`): node, router, green, black and blue hops, router, node (minimal);
* ``<zone routing="Cluster">`` (:class:`StarRoutes`) and ``<zone routing="Vivaldi">``
  (:class:`Vivaldi`): :mod:`hdrm.platform.simgrid_star`.

The clusters are in :mod:`hdrm.platform.simgrid_clusters`. A cluster of a topology has no router
(a ``<zoneRoute>`` names one of its nodes as gateway) and gives its zone no props (its nodes
list the enclosing zones' only). Measured with the binary (``runs/s26q/probe.py``: a torus
``2,3,2`` and ``4,3`` with limiters and loopbacks, fat trees of 2 and 3 levels, dragonflies
``3,1;2,1;2,1;2`` and ``2,2;3,1;2,1;2`` with limiters, Vivaldi zones of hosts and of peers,
Cluster zones of cabinets and host_links, each behind a ``<zoneRoute>`` or holding the master;
5 seeded workloads each): every message and out_jobs.csv row as the binary's.

:func:`check_topology_hosts` refuses what makes Batsim abort, or list other hosts than the file
declares: a ``<peer>`` outside a Vivaldi zone, a ``<cabinet>`` outside a ``routing="Cluster"``
zone (SimGrid makes no host of it), a topology cluster whose ``radical`` does not give exactly
its topology's number of nodes, a Vivaldi host or peer without three coordinates;
:func:`check_vivaldi_zones`, a compute host and the master host in two zones of a Vivaldi zone.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Sequence

from hdrm.errors import PlatformError
from hdrm.platform.simgrid_checks import line_of
from hdrm.platform.simgrid_clusters import ClusterLinks, Dragonfly, FatTree, Torus
from hdrm.platform.simgrid_star import (
    LinkSpec,
    StarRoutes,
    Topology,
    TopologyUnmodelled,
    Vivaldi,
    WifiRoutes,
    coordinates,
    star_links,
)
from hdrm.platform.simgrid_values import parse_radical

__all__ = ["TOPOLOGIES", "Dragonfly", "FatTree", "LinkSpec", "StarRoutes", "Topology",
           "TopologyUnmodelled", "Torus", "Vivaldi", "check_topology_hosts",
           "check_vivaldi_zones", "zone_topology"]

#: The ``topology`` of a ``<cluster>`` whose routes SimGrid computes (FLAT: a star).
TOPOLOGIES = ("TORUS", "FAT_TREE", "DRAGONFLY")


# ---------------------------------------------------------------------- building
def topology_size(element: ET.Element) -> int:
    """The number of nodes a topology cluster's ``topo_parameters`` make.

    Raises:
        ValueError: the parameters are not SimGrid's form for the topology.
    """
    kind, text = element.get("topology", "FLAT"), element.get("topo_parameters", "")
    if kind == "TORUS":
        return math.prod(_ints(text.split(",")))
    if kind == "FAT_TREE":
        parts = text.split(";")
        return math.prod(_ints(parts[1].split(","))) if len(parts) == 4 else _bad(text)
    parts = text.split(";")
    if len(parts) != 4 or any(len(p.split(",")) != 2 for p in parts[:3]):
        return _bad(text)
    return math.prod(_ints([p.split(",")[0] for p in parts[:3]] + [parts[3]]))


def _ints(texts: list[str]) -> list[int]:
    values = [int(t) for t in texts]
    if not values or min(values) <= 0:
        raise ValueError("each value must be > 0")
    return values


def _bad(text: str) -> int:
    raise ValueError(f"{text!r} is not SimGrid's form")


def zone_topology(element: ET.Element, links: dict[str, LinkSpec] | None = None
                  ) -> Topology | None:
    """The topology of a ``<cluster>`` (torus, fat tree, dragonfly) or of a ``<zone>`` with
    ``Cluster``, ``Vivaldi`` or (without a link) ``Wifi`` routing; None for any other element.

    Args:
        links: the platform's ``<link>``\\ s and ``<backbone>``\\ s read so far, by id (a
            ``Cluster`` zone's ``<host_link>`` and ``<backbone>`` name them).

    Raises:
        TopologyUnmodelled: parameters SimGrid would refuse, or a link not known.
    """
    if element.tag in ("zone", "AS"):
        routing = element.get("routing", "").lower()
        if routing == "cluster":
            return StarRoutes(element, star_links(element, links or {}))
        if routing == "vivaldi":
            return Vivaldi(element, star_links(element, links or {}))
        if routing == "wifi":
            return WifiRoutes(element)
        return None
    kind = element.get("topology", "FLAT")
    if element.tag != "cluster" or kind not in TOPOLOGIES:
        return None
    text = element.get("topo_parameters", "")
    try:
        base = ClusterLinks.read(element, topology_size(element))
        parts = text.split(";")
        if kind == "TORUS":
            return Torus(base, _ints(text.split(",")))
        if kind == "FAT_TREE":
            lists = [_ints(p.split(",")) for p in parts[1:]]
            if any(len(x) != int(parts[0]) for x in lists):
                raise ValueError("three lists of one value per level")
            return FatTree(base, int(parts[0]), *lists)
        pairs = [tuple(_ints(p.split(","))) for p in parts[:3]]
        return Dragonfly(base, *pairs, _ints([parts[3]])[0])  # type: ignore[arg-type]
    except (ValueError, IndexError) as exc:
        raise TopologyUnmodelled(f"cluster {element.get('id')!r}: topo_parameters {text!r} "
                                 f"({exc})") from None


# ---------------------------------------------------------------------- refusals
def check_topology_hosts(root: ET.Element, path: str | Path) -> None:
    """Refuse the hosts Batsim 4.2.1 aborts on or makes otherwise than the file says (see the
    module docstring; measured with the binary).

    Raises:
        PlatformError: one line naming the file, the line, the element and the fix.
    """
    def where(element: ET.Element) -> str:
        line = line_of(path, element.tag, element.get("id"))
        return f"{path}{f':{line}' if line else ''}: <{element.tag} id={element.get('id')!r}>"

    for zone in root.iter():
        if zone.tag not in ("zone", "AS", "platform"):
            continue
        routing = zone.get("routing", "").lower()
        for child in zone:
            if child.tag == "peer" and routing != "vivaldi":
                raise PlatformError(
                    f"{where(child)}: a <peer> outside a Vivaldi zone, which Batsim 4.2.1 aborts "
                    "on (SimGrid 3.32: \"<peer> tag can only be used in Vivaldi netzones\"); put "
                    "it in a <zone routing=\"Vivaldi\">, or write it as a <host>")
            if child.tag == "cabinet" and routing != "cluster":
                raise PlatformError(
                    f"{where(child)}: a <cabinet> outside a <zone routing=\"Cluster\">, where "
                    "SimGrid 3.32 makes none of its hosts (Batsim 4.2.1 leaves them out without "
                    "a word); put it in a zone of routing=\"Cluster\", or write a <cluster>")
            if child.tag in ("host", "peer") and routing == "vivaldi" \
                    and coordinates(child.get("coordinates", "")) is None:
                text = child.get("coordinates")
                found = "no coordinates" if text is None else f"coordinates {text!r}"
                raise PlatformError(
                    f"{where(child)}: {found} in a Vivaldi zone, which Batsim 4.2.1 aborts on "
                    "at its first message (SimGrid 3.32: \"Please specify the Vivaldi "
                    "coordinates\"); give three numbers 'x y h' separated by single spaces")
            if child.tag == "cluster" and child.get("topology", "FLAT") in TOPOLOGIES:
                _check_size(child, where(child))


def check_vivaldi_zones(root: ET.Element, path: str | Path, master: str,
                        hosts: Sequence[str]) -> None:
    """Refuse a compute host and the master host in two zones of one Vivaldi zone: SimGrid 3.32
    routes between them from the zones' coordinates, which a file cannot give, so Batsim 4.2.1
    aborts when a job on that host ends ("Please specify the Vivaldi coordinates of Netzone";
    measured, with and without ``router_<zone>`` routers).

    Raises:
        PlatformError: one line naming the file, the host, the zones and the fix.
    """
    for zone in root.iter():
        if zone.tag not in ("zone", "AS") or zone.get("routing", "").lower() != "vivaldi":
            continue
        side = {name: child.get("id", "?") for child in zone
                if child.tag in ("zone", "AS", "cluster") for name in _names(child)}
        if master not in side:
            continue
        for host in hosts:
            if host in side and side[host] != side[master]:
                line = line_of(path, "host", host) or line_of(path, "zone", side[host])
                raise PlatformError(
                    f"{path}{f':{line}' if line else ''}: host {host!r} (zone {side[host]!r}) "
                    f"and the master host {master!r} (zone {side[master]!r}) are in two zones "
                    f"of Vivaldi zone "
                    f"{zone.get('id', '?')!r}, which Batsim 4.2.1 aborts on when a job on that "
                    "host ends (SimGrid 3.32: \"Please specify the Vivaldi coordinates of "
                    f"Netzone {side[host]}\": a zone has none); put them in one zone, or give "
                    f"zone {zone.get('id', '?')!r} Full routing and <zoneRoute>s")


def _names(element: ET.Element) -> list[str]:
    """The hosts an element declares (its own, its clusters', cabinets' and peers')."""
    names = []
    for item in element.iter():
        if item.tag in ("host", "peer"):
            names.append(item.get("id", "?"))
        elif item.tag in ("cluster", "cabinet"):
            radicals = parse_radical(item.get("radical", ""), f"{item.tag} {item.get('id')!r}")
            names += [f"{item.get('prefix', '')}{r}{item.get('suffix', '')}" for r in radicals]
    return names


def _check_size(cluster: ET.Element, where: str) -> None:
    text = cluster.get("topo_parameters", "")
    try:
        size = topology_size(cluster)
    except (ValueError, IndexError) as exc:
        raise PlatformError(f"{where}: topo_parameters {text!r} of a {cluster.get('topology')} "
                            f"cluster ({exc}), which SimGrid 3.32 refuses; see SimGrid's "
                            "documentation of <cluster topology=...>") from None
    found = len(parse_radical(cluster.get("radical", ""), where))
    if found != size:
        raise PlatformError(
            f"{where}: radical {cluster.get('radical')!r} gives {found} hosts, but "
            f"{cluster.get('topology')} {text!r} has {size} nodes: SimGrid 3.32 "
            + ("aborts (\"Insufficient number of radicals\")" if found < size else
               f"makes only the first {size} (Batsim 4.2.1 leaves the others out)")
            + f"; give exactly {size} radicals")
