"""What SimGrid 3.32 (Batsim 4.2.1's) refuses in a platform file before it makes any host.

hdrm reads the hosts of a SimGrid file itself (:mod:`hdrm.platform.simgrid`); a file that the
real Batsim would refuse must not run under hdrm, so :func:`check_platform_tree` applies the rules
of SimGrid's DTD (``simgrid.dtd``, version 4.1) that decide which hosts exist and how fast they are:

* the platform's ``version``: 4 or 4.1 (older files describe speeds as ``power``; SimGrid refuses
  them as too old, newer ones as "from the future");
* where hosts may be: a ``<host>`` only in a ``<zone>`` (or the old ``<AS>``), and a zone holds
  either hosts or zones and clusters, not both;
* the attributes of ``<host>``, ``<cluster>``, ``<cabinet>``, ``<peer>`` and ``<zone>``: an
  unknown one (a cluster has no ``pstate``) or a missing required one is refused;
* speed and availability profiles (``speed_file``, ``availability_file``, ``state_file``, a
  ``<trace_connect>`` of kind ``SPEED`` or ``HOST_AVAIL``): hdrm does not model hosts that change
  over time, so it refuses them rather than run at the wrong speed;
* ``<include>``, which SimGrid removed in 3.18;
* the order of a zone's elements (its DTD): ``<prop>`` elements first, routes last (a ``<link>``,
  ``<host>`` or ``<zone>`` after a route is refused by the binary), and ``<config>`` before the
  platform's zones;
* a ``<host_link>`` naming a SPLITDUPLEX link by its own id (SimGrid only has its two links
  ``<id>_UP`` and ``<id>_DOWN``: "Link '<id>' not found!"); a ``<link>`` in a Wifi zone (Batsim's
  ptask_L07 model has no wifi links; both checked against the binary);
* a torus, fat-tree or dragonfly ``<cluster>`` of ``bw`` 0 ("TorusZone: incorrect bandwidth for
  internode communication", checked against the binary); a bandwidth of 0 elsewhere is refused
  only on a route to the master host (:func:`hdrm.platform.simgrid_routes.check_routes`);
* the document type (:func:`check_doctype`): SimGrid's parser needs ``<!DOCTYPE platform SYSTEM
  "https://simgrid.org/simgrid.dtd">`` (or the former ``http://simgrid.gforge.inria.fr/simgrid/
  simgrid.dtd``) before ``<platform>``; a file without it, or with another, is refused with
  ``Unexpected character `<' in prolog`` or ``Bad declaration`` (checked against the binary).

Each refusal is one :class:`~hdrm.errors.PlatformError` line naming the file, the line, the
element and the fix.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from hdrm.errors import PlatformError

__all__ = ["SIMGRID_DTDS", "check_doctype", "check_platform_tree", "line_of",
           "zero_bandwidth_refusal"]

#: The system identifiers SimGrid 3.32's platform parser accepts in the document type.
SIMGRID_DTDS = ("https://simgrid.org/simgrid.dtd",
                "http://simgrid.gforge.inria.fr/simgrid/simgrid.dtd")
_DOCTYPE = re.compile(r"<!DOCTYPE\s+(\S+?)\s+SYSTEM\s+(?:\"([^\"]*)\"|'([^']*)')\s*>")
_PROLOG_SKIP = re.compile(r"\s+|<\?.*?\?>|<!--.*?-->", re.S)

#: Attributes of the elements that make hosts, or hold them: (required, optional), from the DTD.
_ATTRIBUTES: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "host": (frozenset({"id", "speed"}),
             frozenset({"core", "speed_file", "availability_file", "state_file", "coordinates",
                        "pstate"})),
    "cluster": (frozenset({"id", "prefix", "suffix", "radical", "speed", "bw", "lat"}),
                frozenset({"core", "sharing_policy", "topology", "topo_parameters", "bb_bw",
                           "bb_lat", "bb_sharing_policy", "router_id", "limiter_link",
                           "loopback_bw", "loopback_lat"})),
    "cabinet": (frozenset({"id", "prefix", "suffix", "radical", "speed", "bw", "lat"}),
                frozenset()),
    "peer": (frozenset({"id", "speed", "bw_in", "bw_out"}),
             frozenset({"lat", "coordinates", "speed_file", "availability_file", "state_file"})),
    "zone": (frozenset({"id", "routing"}), frozenset()),
    "AS": (frozenset({"id", "routing"}), frozenset()),
}
#: (required, allowed) of each element, for the usual element's quick test.
_REQUIRED_ALLOWED = {tag: (req, req | opt) for tag, (req, opt) in _ATTRIBUTES.items()}
#: Profiles that change a host over time (not modelled by hdrm).
_PROFILES = ("speed_file", "availability_file", "state_file")
#: Elements that make hosts, and the others the walk looks at.
_MAKERS = frozenset({"host", "cluster", "cabinet", "peer"})
_OTHERS = frozenset({"zone", "AS", "include", "trace_connect"})
#: trace_connect kinds that change a host (HOST_AVAIL is the DTD's default).
_HOST_TRACES = ("HOST_AVAIL", "SPEED")
#: Children that make a zone a leaf (hosts) or a zone of zones (clusters, zones, peers).
_LEAF = frozenset({"host", "router", "host_link", "storage", "storage_type"})
_INNER = frozenset({"zone", "AS", "cluster", "peer"})
#: a zone's routes: after them (SimGrid's DTD) only other routes and traces
_ROUTES = frozenset({"route", "zoneRoute", "ASroute", "bypassRoute", "bypassZoneRoute",
                     "bypassASroute"})
_ANYWHERE = frozenset({"trace", "trace_connect"})
#: SimGrid's zone of each ``<cluster topology=...>`` that refuses a bandwidth of 0 at load
_ZONE_NAMES = {"TORUS": "TorusZone", "FAT_TREE": "FatTreeZone", "DRAGONFLY": "DragonflyZone"}
_VERSION_RE = re.compile(r"\s*([0-9]+)(?:\.([0-9]+))?\s*")


def line_of(path: str | Path, tag: str, ident: str | None = None) -> int | None:
    """The line of the first ``<tag`` (with ``id="ident"`` when given) in the file, or None.

    Only used to word an error: the parser that read the tree keeps no line numbers.
    """
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    id_part = "" if ident is None else rf"[^>]*?\bid\s*=\s*[\"']{re.escape(ident)}[\"']"
    match = re.search(rf"<{re.escape(tag)}\b{id_part}", text)
    return None if match is None else text.count("\n", 0, match.start()) + 1


def _where(path: Path, element: ET.Element) -> str:
    ident = element.get("id")
    line = line_of(path, element.tag, ident)
    named = f"<{element.tag}>" if ident is None else f"<{element.tag} id={ident!r}>"
    return f"{path}:{line}: {named}" if line else f"{path}: {named}"


def check_doctype(text: str, path: Path) -> None:
    """Refuse a SimGrid file (its ``text``) whose prolog lacks the document type SimGrid needs.

    Raises:
        PlatformError: naming the file, the line and the line to write.
    """
    pos = 0
    while True:  # past the XML declaration, comments and blanks
        skipped = _PROLOG_SKIP.match(text, pos)
        if skipped is None or skipped.end() == pos:
            break
        pos = skipped.end()
    line = text.count("\n", 0, pos) + 1
    wanted = f'<!DOCTYPE platform SYSTEM "{SIMGRID_DTDS[0]}">'
    if not text.startswith("<!DOCTYPE", pos):
        raise PlatformError(f"{path}:{line}: no document type before <platform>; SimGrid (Batsim's "
                            "platform parser) refuses the file (\"Unexpected character `<' in "
                            f"prolog\"): add {wanted} after the <?xml ...?> line")
    declared = _DOCTYPE.match(text, pos)
    system = None if declared is None else declared.group(2) or declared.group(3) or ""
    if declared is None or declared.group(1) != "platform" or system not in SIMGRID_DTDS:
        found = text[pos:text.find(">", pos) + 1 or len(text)].splitlines()[0]
        raise PlatformError(f"{path}:{line}: {found}: SimGrid (Batsim's platform parser) accepts "
                            f"only {wanted} (or the former {SIMGRID_DTDS[1]!r} as its system "
                            "identifier) and refuses this one (\"Bad declaration\"); write "
                            f"{wanted}")


def check_platform_tree(root: ET.Element, path: Path) -> list[ET.Element]:
    """Refuse what SimGrid 3.32 refuses (see the module docstring) in the tree of ``path``.

    Returns:
        The elements that make hosts (``host``, ``cluster``, ``cabinet``, ``peer``), in file
        order: the one walk over the tree serves the reader too.

    Raises:
        PlatformError: naming the file, the line, the element and the fix.
    """
    _check_version(root, path)
    begun = False  # an element other than <config> or <random> came
    for child in root:
        if child.tag in _LEAF:
            raise PlatformError(
                f"{_where(path, child)}: a <{child.tag}> directly in <platform>, which SimGrid "
                "refuses; put it in a <zone id=... routing=\"Full\">"
            )
        if child.tag in ("config", "random") and begun:
            raise PlatformError(
                f"{_where(path, child)}: a <{child.tag}> after the platform's zones, which "
                f"SimGrid's DTD refuses (\"Starting tag <{child.tag}> is not allowed here\"); "
                "put it first in <platform>"
            )
        begun = begun or child.tag not in ("config", "random")
    makers: list[ET.Element] = []
    split: set[str] = set()  # SPLITDUPLEX link ids
    host_links: list[ET.Element] = []
    for element in root.iter():
        tag = element.tag
        if tag == "link" and element.get("sharing_policy", "").upper() == "SPLITDUPLEX":
            split.add(element.get("id", ""))
        elif tag == "host_link":
            host_links.append(element)
        elif tag in _MAKERS:
            keys = element.attrib.keys()
            required, allowed = _REQUIRED_ALLOWED[tag]
            if not (keys <= allowed and keys >= required) or not keys.isdisjoint(_PROFILES):
                _check_attributes(element, path)  # finds what is wrong (if anything), says it
            if tag == "cluster" and element.get("topology", "FLAT").upper() in _ZONE_NAMES:
                _check_topology_bandwidth(element, path)
            makers.append(element)
        elif tag in _OTHERS:
            _check_other(element, path)
    for element in host_links:
        _check_host_link(element, split, path)
    return makers


def _check_other(element: ET.Element, path: Path) -> None:
    """Zones (attributes, what they hold), <include> and host <trace_connect>s."""
    tag = element.tag
    if tag == "include":  # SimGrid: "<include> tag was removed in SimGrid v3.18"
        raise PlatformError(
            f"{_where(path, element)}: <include file={element.get('file')!r}>, which SimGrid "
            "refuses since 3.18; copy the included file's elements here"
        )
    if tag == "trace_connect":
        kind = element.get("kind", "HOST_AVAIL")
        if kind in _HOST_TRACES:
            raise PlatformError(
                f"{_where(path, element)}: <trace_connect kind={kind!r} "
                f"element={element.get('element')!r}> changes a host over time, which hdrm does "
                "not model (it would run the host at a constant speed); remove it"
            )
        return
    _check_attributes(element, path)
    _check_zone(element, path)


def _check_host_link(element: ET.Element, split: set[str], path: Path) -> None:
    """A ``<host_link>`` naming a SPLITDUPLEX link by its own id: SimGrid knows only its two
    links ``<id>_UP`` and ``<id>_DOWN``, and aborts ("Link '<id>' not found!")."""
    for side in ("up", "down"):
        name = element.get(side, "")
        if name in split:
            raise PlatformError(
                f"{_where(path, element)}: {side}={name!r} names a SPLITDUPLEX link, which "
                f"SimGrid makes two links, {name + '_UP'!r} and {name + '_DOWN'!r} (Batsim "
                f"aborts: \"Link '{name}' not found!\"); write {side}="
                f"{name + '_' + side.upper()!r}"
            )


def _check_version(root: ET.Element, path: Path) -> None:
    text = root.get("version", "")
    match = _VERSION_RE.fullmatch(text)
    major, minor = (int(match.group(1)), int(match.group(2) or 0)) if match else (0, 0)
    if major == 4 and minor in (0, 1):
        return
    line = line_of(path, "platform")
    where = f"{path}:{line}" if line else str(path)
    if not text:
        problem = "has no version, which SimGrid 3.32 reads as 0.0 and refuses as too old"
    elif major < 4:
        problem = (f"version {text!r} is SimGrid's format before 3.13 (speeds as 'power'), which "
                   "SimGrid 3.32 refuses as too old")
    else:
        problem = (f"version {text!r} is newer than SimGrid 3.32 (Batsim 4.2.1) reads; it refuses "
                   "it as from the future")
    raise PlatformError(
        f"{where}: <platform> {problem}; write version=\"4.1\" (an older file: convert it "
        "with SimGrid's simgrid_update_xml first)"
    )


def _check_attributes(element: ET.Element, path: Path) -> None:
    required, optional = _ATTRIBUTES[element.tag]
    given = set(element.attrib)
    unknown = sorted(given - required - optional)
    if unknown:
        valid = ", ".join(sorted(required | optional))
        raise PlatformError(
            f"{_where(path, element)}: attribute {unknown[0]!r} is not a <{element.tag}> "
            f"attribute, which SimGrid refuses; remove it (valid: {valid})"
        )
    missing = sorted(required - given)
    if missing:
        raise PlatformError(
            f"{_where(path, element)}: missing attribute {missing[0]!r}, which SimGrid "
            f"requires of a <{element.tag}>; add it"
        )
    profiles = [a for a in _PROFILES if element.get(a, "").strip()]
    if profiles:
        raise PlatformError(
            f"{_where(path, element)}: {profiles[0]}={element.get(profiles[0])!r} changes the "
            "host over time, which hdrm does not model (it would run the host at a constant "
            "speed); remove the attribute"
        )


def _check_zone(zone: ET.Element, path: Path) -> None:
    if zone.get("routing", "").lower() == "wifi":
        _check_wifi(zone, path)
    _check_order(zone, path)
    # find() looks among the children at C speed: a zone may hold thousands of hosts and routes
    leaf = sorted(t for t in _LEAF if zone.find(t) is not None)
    inner = sorted(t for t in _INNER if zone.find(t) is not None)
    if leaf and inner:
        raise PlatformError(
            f"{_where(path, zone)}: holds both <{leaf[0]}> and <{inner[0]}> elements, which "
            "SimGrid refuses (a zone holds either hosts or zones and clusters); put the hosts in "
            "a <zone> of their own, beside the clusters, joined by a <zoneRoute>"
        )


def _check_order(zone: ET.Element, path: Path) -> None:
    """The order SimGrid's DTD sets in a zone: its ``<prop>`` elements first, then what it declares
    (hosts, links, zones ...), then its routes; traces anywhere after the props. The binary
    refuses the rest ("Starting tag <link> is not allowed here", or, where a route came before
    the link or host it names, "Link not found" / "does name a node")."""
    routed = declared = False
    for child in zone:
        tag = child.tag
        if tag == "prop":
            if routed or declared:
                raise PlatformError(
                    f"{_where(path, child)} in zone {zone.get('id')!r}: a <prop> after the "
                    "zone's other elements, which SimGrid's DTD refuses (\"Starting tag <prop> "
                    "is not allowed here\"); put the zone's props first"
                )
        elif tag in _ROUTES:
            routed = True
        elif tag not in _ANYWHERE:
            declared = True
            if routed:
                raise PlatformError(
                    f"{_where(path, child)}: a <{tag}> after the routes of zone "
                    f"{zone.get('id')!r}, which SimGrid refuses (its DTD: \"Starting tag <{tag}> "
                    "is not allowed here\"); declare it before the zone's first route"
                )


def _check_wifi(zone: ET.Element, path: Path) -> None:
    """A Wifi zone's link (its wifi medium), which Batsim 4.2.1 cannot make: SimGrid aborts
    under its ptask_L07 host model ("create_wifi_link: Feature unimplemented yet")."""
    link = zone.find("link")
    if link is not None:
        raise PlatformError(
            f"{_where(path, link)}: a link in Wifi zone {zone.get('id')!r}, which Batsim 4.2.1 "
            "cannot simulate (SimGrid's ptask_L07 model, Batsim's, has no wifi links: "
            "\"create_wifi_link: Feature unimplemented yet\"); remove the link (the zone's "
            "routes then cross no link) or give the zone another routing"
        )


def _check_topology_bandwidth(cluster: ET.Element, path: Path) -> None:
    """A torus, fat-tree or dragonfly ``<cluster>`` of ``bw`` 0: SimGrid 3.32 refuses it when it
    loads the platform (a flat cluster's nodes get links of bandwidth 0 instead)."""
    from hdrm.platform.simgrid_routes import parse_bandwidth  # (it imports this module)

    if parse_bandwidth(cluster.get("bw", "")) != 0:
        return
    zone = _ZONE_NAMES[cluster.get("topology", "").upper()]
    raise PlatformError(
        f"{_where(path, cluster)}: bw={cluster.get('bw')!r}, which SimGrid 3.32 refuses when it "
        f"loads the platform (\"{zone}: incorrect bandwidth for internode communication, "
        "bw=0.000000\"): Batsim 4.2.1 aborts before it starts; give bw a bandwidth above 0"
    )


def zero_bandwidth_refusal(path: str | Path, origin: tuple[ET.Element, str] | None,
                           link: str, host: str, master: str) -> str:
    """The refusal of a route from ``host`` to the ``master`` host over ``link``, of bandwidth 0
    (``origin``: the element and attribute that made it, if known). SimGrid 3.32 never ends a
    transfer over it: the binary reports "Deadlock detected" and exits (status 0) without
    another event (checked by tests/batsim/test_real_batsim_zero_bandwidth.py)."""
    element, attribute = origin or (None, "")
    if element is None:
        return (f"{path}: link {link!r}, on the route of the messages from host {host!r} "
                f"to the master host {master!r}, has bandwidth 0 (SimGrid 3.32 never ends a "
                "transfer over it: Batsim 4.2.1 stops with \"Deadlock detected\"); give it a "
                "bandwidth above 0")
    line = line_of(path, element.tag, element.get("id"))
    given = element.get(attribute)
    what, fix = {
        "loopback_bw": ("each node a loopback of bandwidth 0", "give loopback_bw a bandwidth "
                        "above 0 (e.g. loopback_bw=\"10GBps\"), or remove loopback_lat"),
        "bb_bw": ("a backbone of bandwidth 0", "give bb_bw a bandwidth above 0, or remove bb_bw "
                  "and bb_lat (no backbone)"),
    }.get(attribute, ("each node a link of bandwidth 0" if attribute == "bw" else
                      "a link of bandwidth 0",
                      f"give {attribute} a bandwidth above 0 (e.g. {attribute}=\"1GBps\")"))
    said = f"{attribute}={given!r}" if given is not None else f"no {attribute}"
    if attribute in ("loopback_bw", "bb_bw"):
        lat = attribute.replace("_bw", "_lat")
        said += f" with {lat}={element.get(lat)!r}"
    when = ("after SIMULATION_BEGINS, before any job is submitted" if host == master
            else "when a job on that host ends")
    return (f"{path}{f':{line}' if line else ''}: <{element.tag} id={element.get('id')!r}>: "
            f"{said} gives {what}, on the route of the messages from host {host!r} to the master "
            f"host {master!r}; SimGrid 3.32 never ends a transfer over it, so Batsim 4.2.1 sends "
            f"no further event {when} (it reports \"Deadlock detected\" and exits, without "
            f"SIMULATION_ENDS); {fix}")
