"""SimGrid platform XML for Batsim 4.x, written from a :class:`~hdrm.platform.model.Platform`.

Export (:func:`platform_to_xml`, :func:`write_simgrid_xml`), SimGrid DTD version 4.1, one zone
``AS0`` with ``Cluster`` routing (SimGrid 3.32's star zone), whose memory grows with the hosts, not
with their square (``all_pairs=True`` writes the older ``Full`` zone instead, see below):

* one ``<host>`` per core, named ``core_<id>`` with the id zero-padded to a fixed width (at least 4
  digits) so that sorting by name gives core-id order: Batsim numbers compute resources in the order
  SimGrid lists hosts, which is by name (SimGrid keeps hosts in a map sorted by name; Batsim 4.2.1's
  own numeric-aware sort works on a copy and has no effect). Batsim resource ``i`` is core ``i``.
* four speeds per host, one per power state of :mod:`hdrm.platform.power`: full, contended, and a
  tiny non-zero speed (``0.001f``) for the two idle states, since Batsim rejects computation
  states of zero speed; ``pstate="0"``: every core starts in the nominal state, so a stock
  PyBatsim scheduler, which never switches power states, runs jobs at full speed (hdrm's own
  decision process puts idle cores to sleep itself, at time 0, under both engines);
* property ``wattage_per_state`` = ``"w0:w0, w1:w1, w2:w2, w3:w3"`` from
  :func:`~hdrm.platform.power.state_power_w` (SimGrid 3.32 reads this name; the old
  ``watt_per_state`` is silently 0 W); for a platform read from SimGrid XML, the idle watts
  of the power state the core's host starts in instead: ``idle[:epsilon]:w0`` twice (a host
  with no job or a ``delay`` job draws ``idle``, a computing one ``w0``, the model's running
  power) and ``idle:idle`` for the idle and sleep states, as Batsim on the user's file charges
  a host it never switches (what the built-in engine's
  :class:`~hdrm.sim.simgrid_machine.SimgridMachine` charges too); ``wattage_off`` = 0 (hdrm
  never switches hosts off), and
  ``node`` / ``processor`` naming the core's node and processor id;
* a host ``master_host`` (Batsim recognises it by that name; it must carry no role property);
* one ``<link>`` per node, ``link_<node name>``, with the bandwidth (in ``GBps``, bytes) and latency
  of the cluster's network type, used by the core-to-core routes (``all_pairs``);
* every host (``master_host`` and each core) joined to the star by a ``<host_link>`` whose up
  and down links are both ``control`` (latency 0, 1000 TBps, FATPIPE). A star route goes up the
  source's links and down the destination's, each link once (``StarZone::get_local_route``), so
  a core reaches the master over the one link ``control``. Batsim's job actors report a job's
  end to the server on ``master_host`` over this route: through a node link, real Batsim saw
  every end one latency late, a decision point the built-in engine does not have. The node
  links are written but no route crosses them: hdrm's profiles on this export never communicate
  (the batsim engine refuses ``com`` > 0 up front).
* a link ``loopback`` (10 GBps, latency 0, FATPIPE) and the master host's route to itself over
  it: SimGrid's implicit loopback (``network/loopback-bw``), which a Full zone gives every host
  and a star zone none. Batsim's submitters send their 1-byte messages to the server on the
  master host: over ``control`` they took 1e-15 s instead of 1e-10 s, and consumed energies
  moved in their last printed digit (``hdrm replay --engine batsim``, 150 SDSC-SP2 jobs on
  ``hetero.json``, sjf with EASY backfilling).
* ``all_pairs=True``: one ``Full`` zone instead, with a ``<route>`` from ``master_host`` to every
  core over ``control`` and one between every two cores (over their node's link, or both nodes'
  links). SimGrid sizes a Full zone's route table hosts x hosts (8 bytes a cell, 70 GB for
  93,313 hosts) and the file grows with the square too, so this is for small platforms whose
  jobs communicate.

The star export grows linearly: about 0.4 kB of file per core (35 MB for a CEA-Curie-sized
platform of 93,312 cores), and Batsim 4.2.1 about 7 kB of memory per core host (peak RSS 0.12 GB
for 11,664 hosts, 0.21 GB for 23,328, 0.72 GB for 93,312; the Full zone needed 1.19 GB and
4.50 GB for the first two and was refused for the last).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from hdrm.durable import replacing
from hdrm.errors import PlatformError
from hdrm.lazy import LazyModule
from hdrm.platform import power
from hdrm.platform.model import Core, Platform

if TYPE_CHECKING:
    from hdrm.platform.simgrid import HostSpec

#: lxml's etree, imported when a platform is written (reading needs only the standard library).
etree = LazyModule("lxml.etree")

logger = logging.getLogger(__name__)

#: The host Batsim takes as its master by this name (the reader leaves it out of the compute hosts).
MASTER_HOST = "master_host"
DOCTYPE = '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">'
#: The link of every route between the master host and a core: Batsim's own messages only.
CONTROL_LINK = "control"
#: Its bandwidth: so large that a message takes no time at SimGrid's precision (with a node
#: link's 1.25 GBps, SimGrid 3.32's solver stalled on 1,024 hosts with latency 0).
CONTROL_BANDWIDTH = "1000TBps"
#: The link of the master host's route to itself in the star export (Batsim's submitters and
#: server talk on the master): SimGrid's implicit loopback, which a Full zone gives every host
#: (``network/loopback-bw`` 10 GBps, ``-lat`` 0, FATPIPE) but a star zone does not, written out.
LOOPBACK_LINK = "loopback"
LOOPBACK_BANDWIDTH = "10GBps"
#: Speed of the idle states: tiny but positive, as Batsim requires.
IDLE_SPEED = "0.001f"


def core_host_name(core_id: int, nb_cores: int) -> str:
    """The SimGrid host name of a core: ``core_`` and the id zero-padded (>= 4 digits)."""
    width = max(4, len(str(max(nb_cores - 1, 0))))
    return f"core_{core_id:0{width}d}"


def _num(value: float) -> str:
    return f"{value:.12g}"


def _prop(host: etree._Element, name: str, value: str) -> None:
    etree.SubElement(host, "prop", id=name, value=value)


def _wattage_text(core: Core, xml_watts: tuple[float, float] | None) -> str:
    """The ``wattage_per_state`` of a core's host: hdrm's power table (``w:w`` per state), or,
    with ``xml_watts`` = (idle, epsilon) of the SimGrid host the core comes from, that host's
    idle watts in every state and its running watts (``core.power_w``) when loaded."""
    if xml_watts is None:
        return ", ".join(f"{_num(w)}:{_num(w)}" for w in power.state_power_w(core.power_w))
    idle, epsilon = xml_watts
    loaded = f"{_num(idle)}:{_num(epsilon)}:{_num(core.power_w)}" if epsilon != idle else (
        f"{_num(idle)}:{_num(core.power_w)}")
    resting = f"{_num(idle)}:{_num(idle)}"
    return ", ".join((loaded, loaded, resting, resting))


def _simgrid_watts(platform: Platform) -> list[tuple[float, float]] | None:
    """Per core, the (idle, epsilon) watts of the power state its SimGrid host starts in, for a
    platform read from SimGrid XML (:func:`hdrm.platform.simgrid.platform_from_simgrid`); None
    for any other platform, or when its file is gone (then hdrm's power table, as the built-in
    engine, and a warning).

    Raises:
        PlatformError: the file no longer describes the platform (hosts or speeds changed).
    """
    if not platform.source.lower().endswith(".xml") or platform.accelerators:
        return None
    from hdrm.platform.simgrid import read_simgrid_hosts  # simgrid re-exports this module

    path = platform.source
    if not Path(path).is_file():
        logger.warning("%s: cannot read the SimGrid file again; the export charges hdrm's power "
                       "table, not the file's idle watts", path)
        return None
    hosts = read_simgrid_hosts(path)
    if [h.name for h in hosts] != [n.name for n in platform.nodes] or any(
            h.speeds_gflops[h.pstate] != g for h, g in zip(hosts, platform.core_gflops)):
        raise PlatformError(f"{path}: the SimGrid file no longer describes the platform read "
                            "from it (hosts or speeds changed); read it again")
    return [_idle_epsilon(h) for h in hosts]


def _idle_epsilon(host: HostSpec) -> tuple[float, float]:
    """(idle, epsilon) watts of the power state ``host`` starts in; (0, 0) without wattages.
    ``idle:full`` has epsilon = idle, as in SimGrid 3.32's energy plugin."""
    if not host.wattage_per_state_w:
        return 0.0, 0.0
    idle = host.wattage_per_state_w[host.pstate][0]
    text = host.properties.get("wattage_per_state", host.properties.get("watt_per_state", ""))
    values = text.split(",")[host.pstate].split(":")
    return idle, (float(values[1]) if len(values) == 3 else idle)


def _add_core_host(zone: etree._Element, platform: Platform, core: Core,
                   xml_watts: tuple[float, float] | None) -> None:
    speeds = power.state_speeds_gflops(core.gflops)
    speed_text = ", ".join(f"{_num(s)}Gf" if s > 0 else IDLE_SPEED for s in speeds)
    name = core_host_name(core.id, platform.nb_cores)
    host = etree.SubElement(zone, "host", id=name, speed=speed_text, pstate=str(power.RUNNING))
    _prop(host, "wattage_per_state", _wattage_text(core, xml_watts))
    _prop(host, "wattage_off", "0")
    _prop(host, "node", platform.nodes[core.node_id].name)
    _prop(host, "processor", str(core.processor_id))


def _add_links(zone: etree._Element, platform: Platform, loopback: bool) -> None:
    etree.SubElement(zone, "link", id=CONTROL_LINK, bandwidth=CONTROL_BANDWIDTH, latency="0s",
                     sharing_policy="FATPIPE")
    if loopback:
        etree.SubElement(zone, "link", id=LOOPBACK_LINK, bandwidth=LOOPBACK_BANDWIDTH,
                         latency="0s", sharing_policy="FATPIPE")
    for node in platform.nodes:
        net = platform.clusters[node.cluster_id].network
        etree.SubElement(
            zone,
            "link",
            id=f"link_{node.name}",
            bandwidth=f"{_num(net.bandwidth_gbps / 8.0)}GBps",
            latency=f"{_num(net.latency_us)}us",
        )


def _add_route(zone: etree._Element, src: str, dst: str, links: list[str]) -> None:
    route = etree.SubElement(zone, "route", src=src, dst=dst)
    for link in links:
        etree.SubElement(route, "link_ctn", id=link)


def _add_full_routes(zone: etree._Element, platform: Platform) -> None:
    """The ``Full`` zone's routes: master to every core over ``control``, and every two cores
    over their node links (quadratic)."""
    names = [core_host_name(c.id, platform.nb_cores) for c in platform.cores]
    links = [f"link_{platform.nodes[c.node_id].name}" for c in platform.cores]
    for core in platform.cores:
        _add_route(zone, MASTER_HOST, names[core.id], [CONTROL_LINK])
    for a in platform.cores:
        for b in platform.cores[a.id + 1 :]:
            via = [links[a.id]] if a.node_id == b.node_id else [links[a.id], links[b.id]]
            _add_route(zone, names[a.id], names[b.id], via)


def _add_host_links(zone: etree._Element, platform: Platform) -> None:
    """The star zone's ``<host_link>``\\ s (every host goes up and down over ``control``) and
    the master host's route to itself (over ``loopback``, as in a Full zone)."""
    for name in [MASTER_HOST, *(core_host_name(c.id, platform.nb_cores)
                                for c in platform.cores)]:
        etree.SubElement(zone, "host_link", id=name, up=CONTROL_LINK, down=CONTROL_LINK)
    _add_route(zone, MASTER_HOST, MASTER_HOST, [LOOPBACK_LINK])


def platform_to_xml(platform: Platform, *, all_pairs: bool = False) -> bytes:
    """The SimGrid XML of ``platform`` (see the module docstring), as UTF-8 bytes.

    Args:
        platform: the platform to export.
        all_pairs: a ``Full`` zone with a route between every two cores (quadratic in the core
            count, file and SimGrid's memory); default: the star zone (linear).
    """
    root = etree.Element("platform", version="4.1")
    zone = etree.SubElement(root, "zone", id="AS0", routing="Full" if all_pairs else "Cluster")
    master = etree.SubElement(zone, "host", id=MASTER_HOST, speed="1Gf")
    _prop(master, "wattage_per_state", "0:0")
    _prop(master, "wattage_off", "0")
    xml_watts = _simgrid_watts(platform)
    for core in platform.cores:
        _add_core_host(zone, platform, core, None if xml_watts is None else xml_watts[core.id])
    _add_links(zone, platform, loopback=not all_pairs)
    if all_pairs:
        _add_full_routes(zone, platform)
    else:
        _add_host_links(zone, platform)
    return etree.tostring(
        root, xml_declaration=True, encoding="UTF-8", pretty_print=True, doctype=DOCTYPE
    )


def write_simgrid_xml(platform: Platform, path: str | Path, *, all_pairs: bool = False) -> Path:
    """Write the SimGrid XML of ``platform`` to ``path``, whole or not at all
    (:func:`hdrm.durable.replacing`); returns the path.

    Raises:
        PlatformError: the file cannot be written.
    """
    path = Path(path)
    try:
        with replacing(path) as scratch:
            scratch.write_bytes(platform_to_xml(platform, all_pairs=all_pairs))
    except OSError as exc:
        raise PlatformError(
            f"{path}: cannot write the SimGrid platform ({exc.strerror}); "
            "check that the folder exists and is writable"
        ) from None
    logger.info("wrote %s: %d hosts plus %s", path, platform.nb_cores, MASTER_HOST)
    return path
