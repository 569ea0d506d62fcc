"""SimGrid platform XML: read the hosts of any SimGrid file (and export a Platform for Batsim).

Export (:func:`platform_to_xml`, :func:`write_simgrid_xml`, re-exported here) lives in
:mod:`hdrm.platform.simgrid_export`.

Reading (:func:`read_simgrid_hosts`) understands the elements that make hosts: ``<host>``,
``<cluster prefix radical suffix speed>``, the old ``<cabinet>`` and the Vivaldi ``<peer>``; speed
lists with SimGrid 3.32's units (``"10Gf, 7.5Gf, 0.001f"``, ``"2gigaflops"``), ``pstate``,
``wattage_per_state`` or ``watt_per_state``, and ``wattage_off``. What SimGrid refuses before
making hosts (platform version, hosts outside zones, unknown attributes, ...) is refused here too
(:mod:`hdrm.platform.simgrid_checks`), and so is a compute host of non-positive speed, as Batsim
does. The master host (named ``master_host`` or with ``master`` in its ``role`` property) and
storage hosts are left out; the other hosts come sorted by name, i.e. in Batsim's resource order.
XML input is parsed safely (:mod:`hdrm.platform.safe_xml`: entity declarations are refused, as
defusedxml does).
"""

from __future__ import annotations

import logging
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from hdrm.errors import PlatformError
from hdrm.platform.model import (
    Cluster,
    CoreTable,
    NetworkType,
    Node,
    NodeType,
    Platform,
    Processor,
    ProcessorType,
)
from hdrm.platform.safe_xml import UnsafeXmlError, parse_xml_file
from hdrm.platform.simgrid_checks import check_doctype, check_platform_tree, line_of
from hdrm.platform.simgrid_config import check_declared
from hdrm.platform.simgrid_roles import HostRoles, apply_roles, is_master
from hdrm.platform.simgrid_routes import check_routes
from hdrm.platform.simgrid_topology import check_topology_hosts, check_vivaldi_zones
from hdrm.platform.simgrid_export import (  # noqa: F401  (the writer, re-exported)
    CONTROL_BANDWIDTH,
    CONTROL_LINK,
    DOCTYPE,
    IDLE_SPEED,
    MASTER_HOST,
    core_host_name,
    platform_to_xml,
    write_simgrid_xml,
)
from hdrm.platform.simgrid_values import (  # noqa: F401  (parsers re-exported)
    parse_radical,
    parse_speeds_gflops,
    parse_wattage,
    speeds_of,
    wattage_of,
)

logger = logging.getLogger(__name__)

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
        zone_properties: the ``<prop>``\\ s of the zones holding it, as Batsim lists them in
            SIMULATION_BEGINS (set by :func:`hdrm.batsim.platform_hosts.load_hosts`; empty from
            the readers here).
    """

    name: str
    speeds_gflops: tuple[float, ...]
    pstate: int = 0
    wattage_per_state_w: tuple[tuple[float, float], ...] = ()
    wattage_off_w: float | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    cores: int = 1
    zone_properties: Mapping[str, str] = field(default_factory=dict)

    @property
    def gflops(self) -> float:
        """Full speed: the speed of power state 0."""
        return self.speeds_gflops[0]

    @property
    def power_w(self) -> float:
        """Power when fully loaded in power state 0 (0 when the file gives no power)."""
        return self.wattage_per_state_w[0][1] if self.wattage_per_state_w else 0.0


def element_props(element: ET.Element) -> dict[str, str]:
    """The ``<prop>`` children of a host, zone or cluster, in file order; a repeated id keeps its
    first value, as SimGrid 3.32 (measured with Batsim 4.2.1: hosts, zones and clusters)."""
    props: dict[str, str] = {}
    for child in element:  # as findall("prop"), without its path machinery: one per host
        if child.tag == "prop":
            props.setdefault(child.get("id", ""), child.get("value", ""))
    return props


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
    state = _pstate(pstate, where)
    try:
        off = float(off_text) if off_text is not None else None
    except ValueError:
        raise PlatformError(f"{where}: wattage_off {off_text!r} is not a number of watts; "
                            "fix the property") from None
    if not state < len(speeds):
        raise PlatformError(
            f"{where}: pstate {state} out of range; the host has {len(speeds)} speeds, "
            f"so use 0 to {len(speeds) - 1}"
        )
    if watts and len(watts) != len(speeds):  # read by SimGrid's energy plugin only (-E):
        watts = ()  # check_wattage_count refuses it where power is modelled
    return speeds, state, watts, off


def check_wattage_count(host: HostSpec, where: str) -> None:
    """Refuse a host whose ``wattage_per_state`` does not give one pair per speed.

    Only SimGrid's energy plugin reads the property, so Batsim 4.2.1 runs such a host without
    energy accounting and aborts with it ("Found 6 energetic profiles for 7 pstates"); the
    reader keeps the host without watts, and this check is made where power is modelled (the
    built-in engine, ``hdrm serve -E``).

    Raises:
        PlatformError: naming ``where`` (the file and host), the counts and the fix.
    """
    text = host.properties.get("wattage_per_state", host.properties.get("watt_per_state"))
    if not text or host.wattage_per_state_w:
        return
    watts = wattage_of(text, where)
    if len(watts) != len(host.speeds_gflops):
        raise PlatformError(
            f"{where}: {len(watts)} wattage_per_state entries for {len(host.speeds_gflops)} "
            "speeds; give one 'idle:full' pair per power state"
        )


def _pstate(text: str, where: str) -> int:
    """A host's ``pstate`` (SimGrid reads a number: "1" and "1.0" are state 1)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value >= 0 and value.is_integer()):
        raise PlatformError(f"{where}: pstate {text!r} is not a power state number (0, 1, ...); "
                            "fix the attribute")
    return int(value)


def _required(element: ET.Element, attr: str, where: str) -> str:
    value = element.get(attr)
    if value is None:
        raise PlatformError(f"{where}: missing attribute {attr!r}; add it")
    return value


def _element_hosts(element: ET.Element, source: str, memo: dict[tuple, tuple]) -> list[HostSpec]:
    if element.tag in ("host", "peer"):
        name = _required(element, "id", f"{source}: <{element.tag}>")
        where = f"{source}: {element.tag} {name!r}"
        speed = _required(element, "speed", where)
        pstate = element.get("pstate", "0") if element.tag == "host" else "0"
        props = element_props(element) if element.tag == "host" else {}
        return [_host_spec(name, speed, pstate, props, where, memo, element.get("core", "1"))]
    cluster_id = element.get("id", "?")
    where = f"{source}: {element.tag} {cluster_id!r}"
    prefix = _required(element, "prefix", where)
    suffix = element.get("suffix", "")
    speed = _required(element, "speed", where)
    props = element_props(element)  # a cabinet has none
    cores = element.get("core", "1")
    return [
        _host_spec(f"{prefix}{i}{suffix}", speed, "0", props, where, memo, cores)
        for i in parse_radical(_required(element, "radical", where), where)
    ]


#: The values of the ``role`` property Batsim 4.2.1 knows (one per host; no list, no spaces).
_BATSIM_ROLES = frozenset({"compute_node", "master", "storage"})


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
    text = path.read_text(encoding="utf-8", errors="replace")
    if text.startswith("\ufeff"):
        raise PlatformError(
            f"{path}:1: the file begins with a UTF-8 byte-order mark, which SimGrid (Batsim's "
            "platform parser) refuses (\"Unexpected character in prolog\"); save it without one"
        )
    check_doctype(text, path)  # what SimGrid's parser needs before <platform>
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


def compute_hosts(hosts: list[HostSpec], roles_applied: bool = False) -> list[HostSpec]:
    """The compute hosts among ``hosts`` (not the master, not storage), sorted by name.

    Args:
        roles_applied: ``hosts`` come from :func:`read_simgrid_all_hosts` with ``roles``, whose
            ``role`` properties alone tell (else the host named ``master_host`` is the master).
    """
    keep = _has_compute_role if roles_applied else _is_compute
    return sorted((h for h in hosts if keep(h)), key=lambda h: h.name)


def _has_compute_role(host: HostSpec) -> bool:
    return host.properties.get("role", "") in ("", "compute_node")


def has_role(host: HostSpec, role: str) -> bool:
    """Whether the host's ``role`` property (comma-separated roles) names ``role``."""
    return role in {r.strip() for r in host.properties.get("role", "").split(",")}


def read_simgrid_all_hosts(path: str | Path, roles: HostRoles | None = None) -> list[HostSpec]:
    """Every host of a SimGrid platform file (master and storage hosts too), in file order.

    Args:
        roles: Batsim's ``-m``/``-r`` options, merged into the hosts' ``role`` properties
            (:func:`hdrm.platform.simgrid_roles.apply_roles`; then exactly one master); None:
            the file's roles alone.

    Raises:
        PlatformError: the file is missing or not valid XML, a host is malformed or declared twice,
            a ``<config>`` key SimGrid 3.32 does not declare or a value it cannot parse
            (:func:`hdrm.platform.simgrid_config.check_declared`),
            or a compute host (or the master host itself) has no route to the master host, or
            one over a link of bandwidth 0 (:func:`hdrm.platform.simgrid_routes.check_routes`).
    """
    path = Path(path)
    root = _parse_xml(path)
    hosts: list[HostSpec] = []
    source, memo = str(path), {}
    check_declared(root, path)  # SimGrid aborts on an unknown <config> key
    for element in check_platform_tree(root, path):  # the elements that make hosts
        hosts.extend(_element_hosts(element, source, memo))
    check_topology_hosts(root, path)  # peers, cabinets, topology clusters
    names = [h.name for h in hosts]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})[0]
        raise PlatformError(f"{path}: host {dup!r} is declared twice; host names must be unique")
    for host in hosts:
        role = host.properties.get("role")
        if role is not None and role not in _BATSIM_ROLES:
            line = line_of(path, "host", host.name)
            raise PlatformError(
                f"{path}{f':{line}' if line else ''}: host {host.name!r}: role {role!r}, which "
                "Batsim 4 refuses ('Cannot create any role from string description'); give one "
                "role of compute_node, master and storage, written alone"
            )
        if not host.speeds_gflops[host.pstate] > 0 and _is_compute(host):
            line = line_of(path, "host", host.name)
            raise PlatformError(
                f"{path}{f':{line}' if line else ''}: host {host.name!r}: speed "
                f"{host.speeds_gflops[host.pstate] * 1e9:g} flop/s in its power state "
                f"{host.pstate}; Batsim refuses a compute host of non-positive speed; give a "
                "positive speed (or make it the master host)"
            )
    if roles is not None:
        hosts = apply_roles(hosts, roles, path)
        masters = [h.name for h in hosts if is_master(h)]
    else:
        masters = [h.name for h in hosts if h.name == MASTER_HOST or has_role(h, "master")]
    if len(masters) == 1:  # Batsim's messages go to its server on the master host
        computing = [h.name for h in compute_hosts(hosts, roles is not None)]
        check_routes(root, path, masters[0], computing)
        check_vivaldi_zones(root, path, masters[0], computing)
    return hosts


def _start_speed_power(host: HostSpec) -> tuple[float, float]:
    """Speed and running power of the power state a host starts in (Batsim runs it there).

    A job on a host of ``core="N"`` computes on one of its cores: SimGrid's energy plugin counts
    a load of 1/N, ``epsilon + (full - epsilon) / N`` watts (``epsilon`` is the middle value of
    ``idle:epsilon:full``, the idle one of ``idle:full``).
    """
    watts = host.wattage_per_state_w
    if not watts:
        return host.speeds_gflops[host.pstate], 0.0
    idle, full = watts[host.pstate]
    if host.cores == 1:
        return host.speeds_gflops[host.pstate], full
    text = host.properties.get("wattage_per_state", host.properties.get("watt_per_state", ""))
    values = text.split(",")[host.pstate].split(":")
    epsilon = float(values[1]) if len(values) == 3 else idle
    return host.speeds_gflops[host.pstate], epsilon + (full - epsilon) / host.cores


def platform_from_simgrid(path: str | Path) -> tuple[Platform, list[HostSpec]]:
    """A Platform with one node, processor and core per compute host of a SimGrid file.

    Memory and memory bandwidth are unbounded; a core's speed and power are those of the power
    state its host starts in (``pstate``, 0 by default; power 0 W when the file gives none), as
    Batsim runs it; on a host of ``core="N"`` a job loads one core of N, and its power is
    SimGrid's for that load (:func:`_start_speed_power`). Core ``i`` is Batsim resource ``i``.

    Raises:
        PlatformError: the file cannot be read or has no compute host.
    """
    hosts = read_simgrid_hosts(path)
    if not hosts:
        raise PlatformError(f"{path}: no compute host (only a master or storage host); add hosts")
    for host in hosts:
        check_wattage_count(host, f"{path}: host {host.name!r}")
    keys = [_start_speed_power(host) for host in hosts]  # (speed, power) of each host
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
