"""The bandwidth of Batsim's internal messages, for :class:`~hdrm.batsim.actors.ActorSimulation`.

On a platform without latency a message between Batsim's actors still takes time: it is a
1-byte transfer, ``1 / bandwidth`` seconds with the smallest bandwidth of its route (SimGrid's
``ptask_L07`` model applies no factor); from the master host to itself, without a route, it
crosses SimGrid's loopback (``network/loopback-bw``, 10 GBps); from a host with no ``<route>``
to the master host, the route is empty (SimGrid 3.32's Full routing): the message has nothing to
cross and ends at the next solver step, 0 s later (an infinite bandwidth here).
:func:`message_bandwidths` reads them for what :class:`ActorSimulation` covers: one zone of
``Full`` routing with compute ``<host>`` elements, and a workload of ``delay`` jobs and
``parallel_homogeneous`` jobs without communication. On a platform with latencies
(:mod:`hdrm.batsim.latency`) it covers one zone of ``Full`` routing too (each route's slowest
link); a platform whose master host is a node of a flat ``<cluster>`` whose node links are the
slowest of the platform (every message crosses the master's); and any platform whose links
(and ``<cluster>`` links and backbones) all have one bandwidth and a latency above 0 and whose
master host is a ``<host>``: a route with latency then crosses links of that bandwidth, a route
of latency 0 is empty.
"""

from __future__ import annotations

import logging
import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from hdrm.batsim.jobs import JobTable
from hdrm.batsim.latency import RouteLatencies, master_name, roles
from hdrm.platform.simgrid import MASTER_HOST, HostSpec, parse_radical, read_platform_root
from hdrm.platform.simgrid_routes import parse_seconds

logger = logging.getLogger(__name__)

#: SimGrid's default ``network/loopback-bw`` in bytes per second.
LOOPBACK_BPS = 10e9

_RATE_RE = re.compile(r"^\s*([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*([kKMGTPE]i?)?(Bps|bps)?\s*$")
_PREFIX = {None: 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
           "ki": 2.0 ** 10, "Ki": 2.0 ** 10, "Mi": 2.0 ** 20, "Gi": 2.0 ** 30, "Ti": 2.0 ** 40,
           "Pi": 2.0 ** 50, "Ei": 2.0 ** 60}


@dataclass(frozen=True)
class MessageBandwidths:
    """Bytes per second of a message to the master host (``math.inf``: an empty route).

    Attributes:
        master_bps: from the master host to itself.
        host_bps: from each compute host, in resource order.
        latencies: the routes' latencies in seconds (None: all 0).
    """

    master_bps: float
    host_bps: tuple[float, ...]
    latencies: RouteLatencies | None = None

    def of(self, host: int) -> float:
        """The bandwidth from compute host ``host`` (-1: the master host)."""
        return self.master_bps if host < 0 else self.host_bps[host]

    def latency(self, host: int) -> float:
        """The latency from compute host ``host`` (-1: the master host), in seconds."""
        if self.latencies is None:
            return 0.0
        return self.latencies.master_s if host < 0 else self.latencies.host_s[host]


def parse_bandwidth(text: str) -> float | None:
    """A SimGrid bandwidth (``"10GBps"``, ``"1Gbps"``, ``"125MBps"``) in bytes per second, or
    None when it is not one."""
    match = _RATE_RE.match(text)
    if match is None or match.group(2) not in _PREFIX:
        return None
    value = float(match.group(1)) * _PREFIX[match.group(2)]
    return value / 8 if match.group(3) == "bps" else value


def message_bandwidths(path: str | Path, hosts: Sequence[HostSpec], table: JobTable,
                       latencies: RouteLatencies | None = None) -> MessageBandwidths | None:
    """The message bandwidths of a platform file, or None when :class:`ActorSimulation` does not
    cover the session (then the instant model runs it, or the delayed one where ``latencies``,
    from :func:`hdrm.batsim.latency.route_latencies`, are not all 0)."""
    path = Path(path)
    if path.suffix.lower() != ".xml" or not table.jobs:
        return None
    if not all(_covered(table.profile_of(job)) for job in table.jobs):
        return None
    root = read_platform_root(path)
    found = _one_full_zone(root, hosts)
    if latencies is None or latencies.zero:
        return found
    if found is not None:
        return MessageBandwidths(found.master_bps, found.host_bps, latencies)
    return _with_latencies(root, latencies)


def _one_full_zone(root: ET.Element, hosts: Sequence[HostSpec]) -> MessageBandwidths | None:
    """One zone of Full routing (every route is listed): each route's slowest link."""
    zones = list(root.iter("zone")) + list(root.iter("AS"))
    if len(zones) != 1 or zones[0].get("routing", "") != "Full" or any(
            e.tag in ("cluster", "cabinet", "peer", "router", "zoneRoute", "ASroute", "bypassRoute")
            for e in root.iter()):
        return None
    links, routes = _links_and_routes(root)
    if links is None:
        return None
    master = MASTER_HOST
    master_bps = _route_bps(routes.get((master, master)), links) \
        if (master, master) in routes else LOOPBACK_BPS
    host_bps = [_route_bps(routes[(h.name, master)], links) if (h.name, master) in routes
                else math.inf for h in hosts]  # no route listed: an empty one
    if master_bps is None or any(b is None for b in host_bps):
        return None
    return MessageBandwidths(master_bps, tuple(host_bps))


def _with_latencies(root: ET.Element, latencies: RouteLatencies) -> MessageBandwidths | None:
    """One bandwidth on every link, every latency above 0, the master a ``<host>``: a route of
    latency 0 is empty (the master's own: SimGrid's loopback, where its zone holds no zone)."""
    rates, delays = [], []
    for element in root.iter():
        if element.tag in ("link", "backbone"):
            rates.append(element.get("bandwidth", ""))
            delays.append(element.get("latency", "0"))
        elif element.tag == "cluster":
            rates += [element.get("bw", "")] + ([element.get("bb_bw", "")]
                                                if "bb_bw" in element.attrib else [])
            delays += [element.get("lat", "0")] + ([element.get("bb_lat", "0")]
                                                   if "bb_bw" in element.attrib else [])
            if {"loopback_bw", "loopback_lat", "limiter_link"} & set(element.attrib):
                return None  # links of other bandwidths, or a loopback route
        elif element.tag in ("bypassRoute", "bypassASroute", "bypassZoneRoute", "peer"):
            return None
    slowest = _master_node_link(root, rates)
    if slowest is not None:  # every message crosses the master's node link, the slowest one
        return MessageBandwidths(slowest, (slowest,) * len(latencies.host_s), latencies)
    bps = {parse_bandwidth(r) for r in rates}
    seconds = [parse_seconds(d) for d in delays]
    if len(bps) != 1 or None in bps or not all(s is not None and s > 0 for s in seconds):
        return None
    rate: float = bps.pop()  # type: ignore[assignment]
    master = next((e for e in root.iter("host") if e.get("id") == MASTER_HOST), None)
    zone = next((z for z in root.iter("zone") if master is not None and master in list(z)), None)
    if zone is None:
        return None
    if latencies.master_s > 0:
        master_bps = rate
    elif not any(child.tag in ("zone", "AS", "cluster") for child in zone):
        master_bps = LOOPBACK_BPS
    else:
        return None
    return MessageBandwidths(master_bps, tuple(rate if s > 0 else math.inf
                                               for s in latencies.host_s), latencies)


def _master_node_link(root: ET.Element, rates: list[str]) -> float | None:
    """The bandwidth of the master host's node link, when the master is a node of a flat
    ``<cluster>`` (role ``master``) whose node links are the platform's slowest links: every
    message, the master's to itself too (up its link, down again), crosses one."""
    master = master_name(root)
    for element in root.iter("cluster"):
        if "master" not in roles(element):
            continue
        first = parse_radical(element.get("radical", ""), "cluster")[0]
        if (f"{element.get('prefix', '')}{first}{element.get('suffix', '')}" != master
                or element.get("topology", "FLAT").upper() != "FLAT"):
            return None
        bps = [parse_bandwidth(r) for r in rates]
        node = parse_bandwidth(element.get("bw", ""))
        if node is None or None in bps or node > min(bps):  # type: ignore[type-var]
            return None
        return node
    return None


def _covered(profile: dict) -> bool:
    """A ``delay`` profile, or a ``parallel_homogeneous`` one that only computes."""
    kind = profile.get("type")
    if kind == "delay":
        return True
    return (kind == "parallel_homogeneous" and float(profile.get("com", 0)) == 0
            and float(profile.get("cpu", 0)) > 0)


def _links_and_routes(root: ET.Element) -> tuple[dict[str, float] | None, dict]:
    links: dict[str, float] = {}
    routes: dict[tuple[str, str], list[str]] = {}
    for element in root.iter():
        if element.tag == "link":
            bps = parse_bandwidth(element.get("bandwidth", ""))
            if bps is None or bps <= 0:
                logger.debug("link %r: bandwidth %r not read", element.get("id"),
                             element.get("bandwidth"))
                return None, routes
            links[element.get("id", "")] = bps
        elif element.tag == "route":
            names = [c.get("id", "") for c in element if c.tag == "link_ctn"]
            src, dst = element.get("src", ""), element.get("dst", "")
            routes[(src, dst)] = names
            if element.get("symmetrical", "YES").upper() != "NO":
                routes.setdefault((dst, src), names[::-1])
    return links, routes


def _route_bps(names: list[str] | None, links: dict[str, float]) -> float | None:
    if not names or any(n not in links for n in names):
        return None
    return min(links[n] for n in names)
