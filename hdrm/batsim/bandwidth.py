"""The bandwidth of Batsim's internal messages, for :class:`~hdrm.batsim.actors.ActorSimulation`.

On a platform without latency a message between Batsim's actors still takes time: it is a
1-byte transfer, ``1 / bandwidth`` seconds with the smallest bandwidth of its route (SimGrid's
``ptask_L07`` model applies no factor); from the master host to itself, without a route, it
crosses SimGrid's loopback (``network/loopback-bw``, 10 GBps); from a host with no ``<route>``
to the master host, the route is empty (SimGrid 3.32's Full routing): the message has nothing to
cross and ends at the next solver step, 0 s later (an infinite bandwidth here).
:func:`message_bandwidths` reads them for what :class:`ActorSimulation` covers: a workload of
``delay`` jobs and ``parallel_homogeneous`` jobs without communication, on any platform, with
or without latencies, whose routes to the master host
:class:`~hdrm.platform.simgrid_routes.RouteTable` resolves
exactly (nested zones, zone routes, Floyd and Dijkstra chains through routers, ``<cluster>``
elements, the master a ``<host>`` or a node, named by role or ``master_host``; zones of
``Cluster`` or ``Vivaldi`` routing, torus, fat-tree and dragonfly clusters, whose routes
:mod:`hdrm.platform.simgrid_topology` computes; not Wifi zones): each message's
latency is its route's, its rate the smallest of ``bandwidth / crossings`` over the route's
links (:func:`route_bps`: ptask_L07 puts the byte on a link once per crossing, a FATPIPE link
once), then bounded by TCP-gamma in :mod:`hdrm.batsim.maestro`. Batsim's server takes one
message at a time, so no two messages share a link; where jobs communicate (``com`` > 0), the
routes themselves are kept (:attr:`MessageBandwidths.routes`, :attr:`MessageBandwidths.between`)
so that messages and jobs share the links in SimGrid's lmm system (:mod:`hdrm.batsim.ptask`),
and a session the actor model cannot run is refused, naming the jobs and the real batsim.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from hdrm.batsim.jobs import JobTable, network_need
from hdrm.batsim.latency import RouteLatencies, master_name
from hdrm.platform.simgrid import HostSpec, read_platform_root
from hdrm.errors import WorkloadError
from hdrm.platform.simgrid_routes import (Link, NoRoute, Route, RouteTable, Unmodelled,
                                          parse_bandwidth)

logger = logging.getLogger(__name__)

__all__ = ["LOOPBACK_BPS", "MessageBandwidths", "message_bandwidths", "parse_bandwidth",
           "route_bps"]

#: SimGrid's default ``network/loopback-bw`` in bytes per second.
LOOPBACK_BPS = 10e9
#: link sharing policies whose rate :func:`route_bps` knows (a SPLITDUPLEX link: one direction)
_POLICIES = ("SHARED", "FATPIPE", "SPLITDUPLEX")


@dataclass(frozen=True)
class MessageBandwidths:
    """Bytes per second of a message to the master host (``math.inf``: an empty route).

    Attributes:
        master_bps: from the master host to itself.
        host_bps: from each compute host, in resource order.
        latencies: the routes' latencies in seconds (None: all 0).
        routes: where jobs communicate (else empty), the routes to the master host: the
            master's own, then each compute host's.
        between: where jobs communicate, the route from compute host ``i`` to ``j``.
        platform: where jobs communicate, the platform file the routes come from (for errors).
    """

    master_bps: float
    host_bps: tuple[float, ...]
    latencies: RouteLatencies | None = None
    routes: tuple[Route, ...] = ()
    between: Callable[[int, int], Route] | None = None
    platform: str = ""

    def links(self, host: int) -> tuple[Link, ...]:
        """The links of the route from compute host ``host`` (-1: the master) to the master
        (empty where jobs do not communicate)."""
        return self.routes[host + 1].links if self.routes else ()

    def of(self, host: int) -> float:
        """The bandwidth from compute host ``host`` (-1: the master host)."""
        return self.master_bps if host < 0 else self.host_bps[host]

    def latency(self, host: int) -> float:
        """The latency from compute host ``host`` (-1: the master host), in seconds."""
        if self.latencies is None:
            return 0.0
        return self.latencies.master_s if host < 0 else self.latencies.host_s[host]


def message_bandwidths(path: str | Path, hosts: Sequence[HostSpec], table: JobTable,
                       latencies: RouteLatencies | None = None,
                       master: str | None = None) -> MessageBandwidths | None:
    """The message bandwidths of a platform file, or None when :class:`ActorSimulation` does not
    cover the session (then the instant model runs it, or the delayed one where ``latencies``,
    from :func:`hdrm.batsim.latency.route_latencies`, are not all 0). ``master``: the master
    host's name when ``hdrm serve -m/-r`` sets it (default: the file's, ``master_name``)."""
    path = Path(path)
    talking = communicating(table)
    if path.suffix.lower() != ".xml":
        _refuse(table, talking, f"{path} is not a SimGrid XML platform")
        return None
    uncovered = [job for job in table.jobs if not (
        network_need(table.profile_sets[job.workload_id], job.profile_name) != "other"
        if talking else _covered(table.profile_of(job)))]
    if uncovered:
        _refuse(table, talking, f"job {uncovered[0].job.id!r} has profile "
                f"{uncovered[0].profile_name!r}, which the actor model does not run")
        return None
    root = read_platform_root(path)
    found = _routed(root, hosts, bool(talking), master)
    if found is None:
        _refuse(table, talking, f"the routes of {path} are not all known exactly")
    elif talking:
        return dataclasses.replace(found, platform=str(path))
    if latencies is None or latencies.zero:  # the same rates, without latencies
        return None if found is None else MessageBandwidths(found.master_bps, found.host_bps)
    return found


def communicating(table: JobTable) -> list:
    """The jobs that need SimGrid's network model (``com`` > 0, a ``parallel`` profile, a
    sequence with such a part), in submission order."""
    return [job for job in table.jobs
            if network_need(table.profile_sets[job.workload_id], job.profile_name) == "network"]


def _com(profile: dict) -> float:
    com = profile.get("com", 0) if isinstance(profile, dict) else 0
    return float(com) if isinstance(com, (int, float)) else 0.0


def _refuse(table: JobTable, talking: list, why: str) -> None:
    """Refuse a session whose jobs communicate where the actor model does not apply."""
    if not talking:
        return
    first = talking[0]
    ids = ", ".join(repr(j.job.id) for j in talking[:3]) + (", ..." if len(talking) > 3 else "")
    raise WorkloadError(
        f"{table.path}: {len(talking)} job{'s' if len(talking) > 1 else ''} ({ids}) "
        f"{'have' if len(talking) > 1 else 'has'} a "
        f"'{table.profile_of(first)['type']}' profile that communicates (com > 0, a "
        "'parallel' profile or a sequence with one), which needs SimGrid's "
        f"network model; hdrm serve simulates it in its actor model only, and {why}: run this "
        "workload with the real batsim, or give those jobs com 0")


def route_bps(links: Sequence[Link]) -> float | None:
    """The rate of a 1-byte message alone on ``links`` (``math.inf``: no link), or None when a
    link's bandwidth is not read or its policy not modelled: the smallest ``bandwidth / n`` of
    a link crossed ``n`` times (a FATPIPE link: once), as ptask_L07's solver gives it."""
    crossings: dict[str, int] = {}
    for link in links:
        if link.bps is None or link.bps <= 0 or link.policy not in _POLICIES:
            return None
        crossings[link.name] = 1 if link.policy == "FATPIPE" else crossings.get(link.name, 0) + 1
    return min((link.bps / crossings[link.name] for link in links), default=math.inf)


#: zone routings whose messages were compared with the binary in the actor model (Cluster and
#: Vivaldi zones, and clusters of any topology: tests/batsim/test_real_batsim_topology.py; a
#: Wifi zone without a link: its routes are empty, engineer T's platform corpus, wifi_ns3.xml)
_CHECKED_ROUTINGS = ("full", "floyd", "dijkstra", "dijkstracache", "none", "cluster", "vivaldi",
                     "wifi")


def _routed(root: ET.Element, hosts: Sequence[HostSpec],
            talking: bool = False, master: str | None = None) -> MessageBandwidths | None:
    """Every route to the master host as :class:`RouteTable` resolves it, when all are exact and
    their links' bandwidths known: each one's rate and latency. Zones of other routings keep
    the delayed model until their messages are compared with the binary."""
    if any(z.get("routing", "").lower() not in _CHECKED_ROUTINGS
           for z in [*root.iter("zone"), *root.iter("AS")]):
        return None
    master = master or master_name(root)
    try:
        table = RouteTable(root)
        routes = [table.route(name, master) for name in [master, *(h.name for h in hosts)]]
    except (Unmodelled, NoRoute) as exc:
        logger.debug("routes to %r not modelled: %s", master, exc)
        return None
    rates = [route_bps(r.links) for r in routes]
    if not all(r.exact for r in routes) or None in rates:
        return None
    seconds = [r.latency_s for r in routes]
    names = [h.name for h in hosts]
    return MessageBandwidths(rates[0], tuple(rates[1:]),  # type: ignore[arg-type]
                             RouteLatencies(seconds[0], tuple(seconds[1:])),
                             tuple(routes) if talking else (),
                             (lambda i, j: table.route(names[i], names[j])) if talking else None)


def _covered(profile: dict) -> bool:
    """A ``delay`` profile, or a ``parallel_homogeneous`` one that only computes."""
    kind = profile.get("type")
    if kind == "delay":
        return True
    return (kind == "parallel_homogeneous" and _com(profile) == 0
            and float(profile.get("cpu", 0)) > 0)
