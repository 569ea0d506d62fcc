"""Route latencies between Batsim's master host and the compute hosts of a SimGrid platform.

Every message between Batsim's actors is a 1-byte SimGrid transfer to the server's mailbox on the
master host; it takes the *sum* of the latencies of the links on its route (the bandwidth term of
one byte is negligible, and Batsim's network model applies no latency factor). ``hdrm serve``
needs two kinds of route (:class:`RouteLatencies`):

* master host to master host: the decisions of a reply, SCHED_READY, the submitter's batches,
  requested calls;
* each compute host to the master host: a job's end (its executor runs on the job's first host).

Routes are read as SimGrid builds them, for the platforms Batsim is given in practice:

* ``<host>`` elements with ``<route src dst>`` lists of ``<link_ctn>`` (symmetrical unless
  ``symmetrical="NO"``); a host without a route to itself uses SimGrid's loopback (latency 0);
* ``<cluster>`` elements: a node reaches another node of its cluster up its own link (``lat``),
  over the backbone (``bb_lat``, when the cluster has one) and down the other's link; itself
  over its loopback when ``loopback_bw`` or ``loopback_lat`` is above 0, else up and down its
  link, which counts once unless the link is split-duplex (the default sharing_policy: SimGrid
  adds each link of a cluster's route once); nodes of two clusters add both clusters' backbones
  and the links of the ``<zoneRoute>`` between them.

Other platforms (nested zones, a Full zone missing a route, chains of Floyd or Dijkstra routes,
bypass routes, ``Cluster``, ``Vivaldi`` and link-less ``Wifi`` zones, torus, fat-tree and
dragonfly clusters) are resolved as SimGrid 3.32 resolves them through its zones
(:mod:`hdrm.platform.simgrid_routes`, :mod:`hdrm.platform.simgrid_topology`); where that model
cannot give exact latencies (routes of equal length and different latencies, a master outside a
Vivaldi zone whose hosts are in its sub-zones) the platform keeps latency 0 with a warning: times
then lack the message delays (a compute host and the master in two zones of one Vivaldi zone are
refused, :func:`hdrm.platform.simgrid_topology.check_vivaldi_zones`).
Platforms with no route from a compute host to the master host are refused when their hosts are
read. hdrm's exported platforms route every master-to-core message over a ``control`` link of
latency 0, so they have none.
"""

from __future__ import annotations

import logging
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from hdrm.platform.simgrid import MASTER_HOST, HostSpec, parse_radical, read_platform_root
from hdrm.platform.simgrid_routes import NoRoute, RouteTable, Unmodelled, parse_bandwidth

logger = logging.getLogger(__name__)

_TIME_RE = re.compile(r"^\s*([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*(ps|ns|us|ms|s|m|h|d|w)?\s*$")
_TIME_UNIT = {"ps": 1e-12, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, None: 1.0,
              "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


@dataclass(frozen=True)
class RouteLatencies:
    """How long a message to the master host takes, in seconds.

    Attributes:
        master_s: from the master host to itself.
        host_s: from each compute host, in resource order.
    """

    master_s: float
    host_s: tuple[float, ...]

    @property
    def zero(self) -> bool:
        """True when no message takes any time (hdrm's exported platforms)."""
        return self.master_s == 0.0 and not any(self.host_s)


class _Unsupported(Exception):
    """A route this module cannot compute (internal)."""


def parse_latency(text: str, where: str) -> float:
    """A SimGrid time (``"50us"``, ``"1.46ms"``, ``"0"``) in seconds.

    Raises:
        _Unsupported: the text is not a time.
    """
    match = _TIME_RE.match(text)
    if match is None:
        raise _Unsupported(f"{where}: latency {text!r} is not a time like '50us'")
    return float(match.group(1)) * _TIME_UNIT[match.group(2)]


@dataclass
class _Cluster:
    """A ``<cluster>``: its node links, backbone and loopback latencies, in seconds."""

    cid: str
    link_s: float
    backbone_s: float
    loopback_s: float | None
    split: bool = True  # a split-duplex node link: up and down are two links


class _Routes:
    """The routes of one platform file (internal)."""

    def __init__(self, root: ET.Element, source: str, master: str | None = None) -> None:
        self.links: dict[str, float] = {}
        self.routes: dict[tuple[str, str], list[str]] = {}
        self.zone_routes: dict[tuple[str, str], list[str]] = {}
        self.cluster_of: dict[str, _Cluster] = {}
        self.master = MASTER_HOST
        for element in root.iter():
            self._read(element, source)
        if master is not None:  # hdrm serve -m/-r
            self.master = master

    def _read(self, element: ET.Element, source: str) -> None:
        tag = element.tag
        if tag == "link":
            lid = element.get("id", "?")
            self.links[lid] = parse_latency(element.get("latency", "0"), f"{source}: link {lid!r}")
        elif tag in ("route", "zoneRoute"):
            names = [c.get("id", "") for c in element if c.tag == "link_ctn"]
            table = self.routes if tag == "route" else self.zone_routes
            src, dst = element.get("src", ""), element.get("dst", "")
            table[(src, dst)] = names
            if element.get("symmetrical", "YES").upper() != "NO":
                table.setdefault((dst, src), names[::-1])
        elif tag == "host" and "master" in roles(element):
            self.master = element.get("id", MASTER_HOST)
        elif tag == "cluster":
            self._read_cluster(element, source)

    def _read_cluster(self, element: ET.Element, source: str) -> None:
        cid = element.get("id", "?")
        where = f"{source}: cluster {cid!r}"
        if element.get("topology", "FLAT").upper() != "FLAT":  # RouteTable routes it
            raise _Unsupported(f"{where}: a {element.get('topology')} cluster")
        loopback = parse_latency(element.get("loopback_lat", "0"), where)
        looped = loopback > 0 or (parse_bandwidth(element.get("loopback_bw", "0")) or 0.0) > 0
        cluster = _Cluster(cid, parse_latency(element.get("lat", "0"), where),
                           parse_latency(element.get("bb_lat", "0"), where),
                           loopback if looped else None,
                           element.get("sharing_policy", "SPLITDUPLEX").upper() == "SPLITDUPLEX")
        prefix, suffix = element.get("prefix", ""), element.get("suffix", "")
        names = [f"{prefix}{i}{suffix}" for i in parse_radical(element.get("radical", ""), where)]
        for name in names:
            self.cluster_of[name] = cluster
        if "master" in roles(element) and names:
            self.master = names[0]

    def latency(self, src: str, dst: str) -> float:
        """The summed latencies of the route from ``src`` to ``dst``."""
        a, b = self.cluster_of.get(src), self.cluster_of.get(dst)
        if a is None and b is None:
            if (src, dst) in self.routes:
                return self._sum(self.routes[(src, dst)], f"route {src} -> {dst}")
            if src == dst:
                return 0.0  # SimGrid's loopback
            raise _Unsupported(f"no <route> from {src!r} to {dst!r}")
        if a is None or b is None:
            raise _Unsupported(f"a route between a <host> ({src!r} or {dst!r}) and a <cluster>")
        if a is b:
            if src == dst and a.loopback_s is not None:
                return a.loopback_s
            if src == dst and not a.split:
                return a.link_s + a.backbone_s  # one link, crossed once
            return 2 * a.link_s + a.backbone_s
        between = self.zone_routes.get((a.cid, b.cid))
        if between is None:
            raise _Unsupported(f"no <zoneRoute> from cluster {a.cid!r} to {b.cid!r}")
        return a.link_s + a.backbone_s + self._sum(between, f"zoneRoute {a.cid} -> {b.cid}") \
            + b.backbone_s + b.link_s

    def _sum(self, names: list[str], what: str) -> float:
        missing = [n for n in names if n not in self.links]
        if missing:
            raise _Unsupported(f"{what} names unknown link {missing[0]!r}")
        return sum(self.links[n] for n in names)


def roles(element: ET.Element) -> set[str]:
    """The roles an element's ``role`` property gives it (``master``, ``storage``)."""
    props = {p.get("id"): p.get("value", "") for p in element if p.tag == "prop"}
    return {r.strip() for r in props.get("role", "").split(",")}


def route_latencies(path: str | Path, hosts: Sequence[HostSpec],
                    master: str | None = None) -> RouteLatencies:
    """The message latencies of a platform file towards its master host.

    Args:
        path: the platform given to ``hdrm serve``; an hdrm JSON platform has none (its export
            routes Batsim's messages over a link of latency 0).
        hosts: its compute hosts in resource order (:func:`hdrm.batsim.platform_hosts.load_hosts`).
        master: the master host's name where ``hdrm serve -m/-r`` gives it
            (:func:`hdrm.batsim.platform_hosts.master_of`); None: the file's (:func:`master_name`).

    Raises:
        PlatformError: the file cannot be read (as when loading its hosts).
    """
    path = Path(path)
    zero = RouteLatencies(0.0, (0.0,) * len(hosts))
    if path.suffix.lower() != ".xml":
        return zero
    root = read_platform_root(path)
    try:
        if _nested(root):
            raise _Unsupported("nested <zone> elements")
        routes = _Routes(root, str(path), master)
        to_itself = _round(routes.latency(routes.master, routes.master))
        return RouteLatencies(to_itself, tuple(_round(routes.latency(h.name, routes.master))
                                               for h in hosts))
    except _Unsupported as exc:
        found = _zone_latencies(root, hosts, master)
        if isinstance(found, RouteLatencies):
            return found
        logger.warning("%s: %s%s; hdrm serve models Batsim's messages as instantaneous (latency 0)",
                       path, exc, found)
        return zero


def _zone_latencies(root: ET.Element, hosts: Sequence[HostSpec],
                    master: str | None = None) -> RouteLatencies | str:
    """The latencies as SimGrid resolves routes through its zones (nested zones, a missing route
    of a Full zone, chains of Floyd or Dijkstra routes), or why not (to add to the warning)."""
    try:
        table = RouteTable(root)
        master = master or master_name(root)
        found = [table.latency(name, master) for name in [master, *(h.name for h in hosts)]]
    except (Unmodelled, NoRoute) as exc:
        return f" ({exc})"
    if not all(exact for _, exact in found):
        return " (latencies of routes of equal length, or of a link or zone not read)"
    seconds = [_round(s) for s, _ in found]
    return RouteLatencies(seconds[0], tuple(seconds[1:]))


def master_name(root: ET.Element) -> str:
    """The master host: the host (or first node of the cluster) with role=master, else
    ``master_host``."""
    for element in root.iter():
        if element.tag in ("host", "cluster") and "master" in roles(element):
            if element.tag == "host":
                return element.get("id", MASTER_HOST)
            first = parse_radical(element.get("radical", ""), "cluster")
            return f"{element.get('prefix', '')}{first[0]}{element.get('suffix', '')}"
    return MASTER_HOST


def _round(seconds: float) -> float:
    """A sum of latencies to the picosecond (``50us + 500us + 50us`` is 0.0006, not 0.0006000000000000001)."""
    return round(seconds, 12)


def _nested(root: ET.Element) -> bool:
    """True when a zone holds another zone (routing between zones is not modelled)."""
    return any(child.tag == "zone" for zone in root.iter("zone") for child in zone)
