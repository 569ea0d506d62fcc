"""SimGrid platform XML: export a Platform for Batsim 4.x, and read the hosts of any SimGrid file.

Export (:func:`platform_to_xml`, :func:`write_simgrid_xml`), SimGrid DTD version 4.1, one zone
``AS0`` with Full routing:

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
  ``watt_per_state`` is silently 0 W), ``wattage_off`` = 0 (hdrm never switches hosts off), and
  ``node`` / ``processor`` naming the core's node and processor id;
* a host ``master_host`` (Batsim recognises it by that name; it must carry no role property);
* one ``<link>`` per node, ``link_<node name>``, with the bandwidth (in ``GBps``, bytes) and latency
  of the cluster's network type, used by the core-to-core routes (``all_pairs``);
* one route from ``master_host`` to every core through the link ``control`` (latency 0, 1000 TBps,
  FATPIPE; routes are symmetrical, so every core reaches the master and back). Batsim's job actors
  report a job's end to the server on ``master_host`` over this route: through a node link, real
  Batsim saw every end one latency late, a decision point the built-in engine does not have.
  Core-to-core routes are written only with ``all_pairs=True`` (quadratic size; hdrm's profiles
  never communicate). The file grows linearly: about 0.4 kB per core (1 MB for 2,512 cores).

Reading (:func:`read_simgrid_hosts`) understands ``<host>`` elements and ``<cluster prefix radical
suffix speed>`` elements, speed lists with units (``"10Gf, 7.5Gf, 0.001f"``), ``pstate``,
``wattage_per_state`` or ``watt_per_state``, and ``wattage_off``. The master host (named
``master_host`` or with ``master`` in its ``role`` property) and storage hosts are left out; the
other hosts come sorted by name, i.e. in Batsim's resource order. XML input is parsed safely
(:mod:`hdrm.platform.safe_xml`: entity declarations are refused, as defusedxml does).
"""

from __future__ import annotations

import logging
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from hdrm.durable import replacing
from hdrm.errors import PlatformError
from hdrm.lazy import LazyModule
from hdrm.platform import power
from hdrm.platform.model import (
    Cluster,
    Core,
    CoreTable,
    NetworkType,
    Node,
    NodeType,
    Platform,
    Processor,
    ProcessorType,
)
from hdrm.platform.safe_xml import UnsafeXmlError, parse_xml_file
from hdrm.platform.simgrid_values import (  # noqa: F401  (parsers re-exported)
    parse_radical,
    parse_speeds_gflops,
    parse_wattage,
    speeds_of,
    wattage_of,
)

#: lxml's etree, imported when a platform is written (reading needs only the standard library).
etree = LazyModule("lxml.etree")

logger = logging.getLogger(__name__)

MASTER_HOST = "master_host"
DOCTYPE = '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">'
#: The link of every route between the master host and a core: Batsim's own messages only.
CONTROL_LINK = "control"
#: Its bandwidth: so large that a message takes no time at SimGrid's precision (with a node
#: link's 1.25 GBps, SimGrid 3.32's solver stalled on 1,024 hosts with latency 0).
CONTROL_BANDWIDTH = "1000TBps"
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


def _add_core_host(zone: etree._Element, platform: Platform, core: Core) -> None:
    speeds = power.state_speeds_gflops(core.gflops)
    speed_text = ", ".join(f"{_num(s)}Gf" if s > 0 else IDLE_SPEED for s in speeds)
    name = core_host_name(core.id, platform.nb_cores)
    host = etree.SubElement(zone, "host", id=name, speed=speed_text, pstate=str(power.RUNNING))
    watts = ", ".join(f"{_num(w)}:{_num(w)}" for w in power.state_power_w(core.power_w))
    _prop(host, "wattage_per_state", watts)
    _prop(host, "wattage_off", "0")
    _prop(host, "node", platform.nodes[core.node_id].name)
    _prop(host, "processor", str(core.processor_id))


def _add_links(zone: etree._Element, platform: Platform) -> None:
    etree.SubElement(zone, "link", id=CONTROL_LINK, bandwidth=CONTROL_BANDWIDTH, latency="0s",
                     sharing_policy="FATPIPE")
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


def _add_routes(zone: etree._Element, platform: Platform, all_pairs: bool) -> None:
    names = [core_host_name(c.id, platform.nb_cores) for c in platform.cores]
    links = [f"link_{platform.nodes[c.node_id].name}" for c in platform.cores]
    for core in platform.cores:
        _add_route(zone, MASTER_HOST, names[core.id], [CONTROL_LINK])
    if not all_pairs:
        return
    for a in platform.cores:
        for b in platform.cores[a.id + 1 :]:
            via = [links[a.id]] if a.node_id == b.node_id else [links[a.id], links[b.id]]
            _add_route(zone, names[a.id], names[b.id], via)


def platform_to_xml(platform: Platform, *, all_pairs: bool = False) -> bytes:
    """The SimGrid XML of ``platform`` (see the module docstring), as UTF-8 bytes.

    Args:
        platform: the platform to export.
        all_pairs: also write a route between every two cores (quadratic in the core count).
    """
    root = etree.Element("platform", version="4.1")
    zone = etree.SubElement(root, "zone", id="AS0", routing="Full")
    master = etree.SubElement(zone, "host", id=MASTER_HOST, speed="1Gf")
    _prop(master, "wattage_per_state", "0:0")
    _prop(master, "wattage_off", "0")
    for core in platform.cores:
        _add_core_host(zone, platform, core)
    _add_links(zone, platform)
    _add_routes(zone, platform, all_pairs)
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


@dataclass(frozen=True)
class HostSpec:
    """One compute host of a SimGrid platform, as Batsim sees it.

    Attributes:
        name: the host id.
        speeds_gflops: speed of each power state in GFLOP/s.
        pstate: the power state the host starts in.
        wattage_per_state_w: per power state, (idle, fully loaded) power in watts; empty when
            the file gives none.
        wattage_off_w: power when switched off, or None.
        properties: every ``<prop>`` of the host (for a cluster, the cluster's).
        cores: its ``core`` attribute (1 by default): Batsim still sees one resource, whose
            parallel tasks use one core, which SimGrid's energy plugin counts as a part load.
    """

    name: str
    speeds_gflops: tuple[float, ...]
    pstate: int = 0
    wattage_per_state_w: tuple[tuple[float, float], ...] = ()
    wattage_off_w: float | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    cores: int = 1

    @property
    def gflops(self) -> float:
        """Full speed: the speed of power state 0."""
        return self.speeds_gflops[0]

    @property
    def power_w(self) -> float:
        """Power when fully loaded in power state 0 (0 when the file gives no power)."""
        return self.wattage_per_state_w[0][1] if self.wattage_per_state_w else 0.0


def _props(element: ET.Element) -> dict[str, str]:
    # the <prop> children (as findall("prop"), without its path machinery: one per host)
    return {p.get("id", ""): p.get("value", "") for p in element if p.tag == "prop"}


def _host_spec(name: str, speed: str, pstate: str, props: dict[str, str], where: str,
               memo: dict[tuple, tuple], cores: str = "1") -> HostSpec:
    """The host ``name``; its speeds, power state, power and cores are read (and checked) once
    per distinct set of texts in ``memo``: hosts repeat theirs."""
    watts_text = props.get("wattage_per_state", props.get("watt_per_state"))
    key = (speed, pstate, watts_text, props.get("wattage_off"), cores)
    values = memo.get(key)
    if values is None:
        values = memo[key] = (*_host_values(speed, pstate, watts_text, key[3], where),
                              _cores(cores, where))
    return HostSpec(name, *values[:4], props, values[4])


def _cores(text: str, where: str) -> int:
    try:
        cores = int(text)
    except ValueError:
        cores = 0
    if cores < 1:
        raise PlatformError(f"{where}: core {text!r} must be an integer >= 1; fix the attribute")
    return cores


def _host_values(speed: str, pstate: str, watts_text: str | None, off_text: str | None,
                 where: str) -> tuple[tuple[float, ...], int, tuple, float | None]:
    """(speeds, power state, wattage per state, wattage off) of a host, checked."""
    speeds = speeds_of(speed, where)
    watts = wattage_of(watts_text, where) if watts_text else ()
    try:
        state = int(pstate)
        off = float(off_text) if off_text is not None else None
    except ValueError:
        raise PlatformError(f"{where}: pstate and wattage_off must be numbers") from None
    if not 0 <= state < len(speeds):
        raise PlatformError(
            f"{where}: pstate {state} out of range; the host has {len(speeds)} speeds, "
            f"so use 0 to {len(speeds) - 1}"
        )
    return speeds, state, watts, off


def _required(element: ET.Element, attr: str, where: str) -> str:
    value = element.get(attr)
    if value is None:
        raise PlatformError(f"{where}: missing attribute {attr!r}; add it")
    return value


def _element_hosts(element: ET.Element, source: str, memo: dict[tuple, tuple]) -> list[HostSpec]:
    if element.tag == "host":
        name = _required(element, "id", f"{source}: <host>")
        where = f"{source}: host {name!r}"
        speed = _required(element, "speed", where)
        return [_host_spec(name, speed, element.get("pstate", "0"), _props(element), where, memo,
                           element.get("core", "1"))]
    cluster_id = element.get("id", "?")
    where = f"{source}: cluster {cluster_id!r}"
    prefix = _required(element, "prefix", where)
    suffix = element.get("suffix", "")
    speed = _required(element, "speed", where)
    props = _props(element)
    cores = element.get("core", "1")
    return [
        _host_spec(f"{prefix}{i}{suffix}", speed, element.get("pstate", "0"), props, where, memo,
                   cores)
        for i in parse_radical(_required(element, "radical", where), where)
    ]


def _is_compute(host: HostSpec) -> bool:
    if "role" not in host.properties:  # the usual host
        return host.name != MASTER_HOST
    roles = {r.strip() for r in host.properties["role"].split(",")}
    return host.name != MASTER_HOST and not roles & {"master", "storage"}


def _parse_xml(path: Path) -> ET.Element:
    try:
        root = parse_xml_file(path)
    except FileNotFoundError:
        raise PlatformError(f"{path}: no such SimGrid platform file; check the path") from None
    except ET.ParseError as exc:
        line, column = exc.position
        raise PlatformError(
            f"{path}:{line}:{column}: invalid XML ({exc}); fix the syntax there"
        ) from None
    except UnsafeXmlError as exc:
        raise PlatformError(
            f"{path}: refused unsafe XML ({exc}); remove the entity definitions"
        ) from None
    if root.tag != "platform":
        raise PlatformError(f"{path}: root element is <{root.tag}>, expected <platform>")
    return root


def read_platform_root(path: str | Path) -> ET.Element:
    """The ``<platform>`` element of a SimGrid file (for reading its links and routes).

    Raises:
        PlatformError: the file is missing, not valid XML, or not a platform.
    """
    return _parse_xml(Path(path))


def read_simgrid_hosts(path: str | Path) -> list[HostSpec]:
    """The compute hosts of a SimGrid platform file, in Batsim's resource order (by name).

    Raises:
        PlatformError: the file is missing or not valid XML, or a host is malformed.
    """
    return compute_hosts(read_simgrid_all_hosts(path))


def compute_hosts(hosts: list[HostSpec]) -> list[HostSpec]:
    """The compute hosts among ``hosts`` (not the master, not storage), sorted by name."""
    return sorted((h for h in hosts if _is_compute(h)), key=lambda h: h.name)


def has_role(host: HostSpec, role: str) -> bool:
    """Whether the host's ``role`` property (comma-separated roles) names ``role``."""
    return role in {r.strip() for r in host.properties.get("role", "").split(",")}


def read_simgrid_all_hosts(path: str | Path) -> list[HostSpec]:
    """Every host of a SimGrid platform file (master and storage hosts too), in file order.

    Raises:
        PlatformError: the file is missing or not valid XML, a host is malformed or declared twice.
    """
    path = Path(path)
    root = _parse_xml(path)
    hosts: list[HostSpec] = []
    source, memo = str(path), {}
    for element in root.iter():
        if element.tag in ("host", "cluster"):
            hosts.extend(_element_hosts(element, source, memo))
    names = [h.name for h in hosts]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})[0]
        raise PlatformError(f"{path}: host {dup!r} is declared twice; host names must be unique")
    return hosts


def platform_from_simgrid(path: str | Path) -> tuple[Platform, list[HostSpec]]:
    """A Platform with one node, processor and core per compute host of a SimGrid file.

    Memory and memory bandwidth are unbounded; a core's speed and power are those of power
    state 0 (power 0 W when the file gives none). Core ``i`` is Batsim resource ``i``.

    Raises:
        PlatformError: the file cannot be read or has no compute host.
    """
    hosts = read_simgrid_hosts(path)
    if not hosts:
        raise PlatformError(f"{path}: no compute host (only a master or storage host); add hosts")
    keys = [(host.gflops, host.power_w) for host in hosts]  # (speed, power) of each host
    ptypes: dict[tuple[float, float], ProcessorType] = {}
    for gflops, power_w in keys:
        if (gflops, power_w) not in ptypes:
            name = f"simgrid_{len(ptypes)}"
            model = f"host of {gflops:.6g} GFLOP/s"
            ptypes[gflops, power_w] = ProcessorType(
                name, 1, gflops, 1.0, math.inf, power_w, "SimGrid", model
            )
    ntypes = {k: NodeType(p.name, ((p.name, 1),), math.inf) for k, p in ptypes.items()}
    procs = tuple(Processor(i, i, 0, ptypes[key], (i,)) for i, key in enumerate(keys))
    nodes = tuple(Node(i, 0, host.name, ntypes[key], math.inf, (i,), (i,))
                  for i, (host, key) in enumerate(zip(hosts, keys)))
    ids = tuple(range(len(hosts)))  # core i is on processor i of node i
    cores = CoreTable(tuple(k[0] for k in keys), tuple(k[1] for k in keys), ids, ids,
                      (0,) * len(hosts))
    network = NetworkType("simgrid", math.inf, 0.0, "links of the SimGrid file (not modelled)")
    cluster = Cluster(0, "simgrid", network, tuple(range(len(hosts))))
    platform = Platform(Path(path).stem, (cluster,), nodes, procs, cores, source=str(path))
    return platform, hosts
