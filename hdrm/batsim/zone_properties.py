"""The ``zone_properties`` and ``properties`` of each resource in SIMULATION_BEGINS, as Batsim
4.2.1 lists them.

Batsim lists, for each compute resource, the ``<prop>``\\ s of every zone that holds its host, from
the outermost ``<zone>`` (or ``<AS>``) to the innermost; a ``<cluster>`` is a zone too, so its
props are its nodes' zone properties (besides their own ``properties``), except a torus, fat-tree
or dragonfly cluster's (SimGrid 3.32 gives its zone none: measured, its nodes list the enclosing
zones' only). A key given at several levels takes the innermost value; a key repeated in one
element, its first value.

The order of the keys is that of libstdc++'s ``std::unordered_map`` walks (replayed by
:func:`hdrm.batsim.kept_profiles.map_order`), measured on the binary (nested zones, clusters,
20 props on one zone): each zone's props go, in file order, through two maps (SimGrid's parse
and the zone's own) and are walked; Batsim puts each zone's walk, outermost zone first, into one
more map, a key keeping the place of its first insertion and taking the last value; the resource
lists that map's walk. A resource's own ``properties`` are its host's props in the walk of two
maps (:func:`resource_properties`). Props are text: values are sent as written (``"2.50"``,
``"1e3"``).

An hdrm platform JSON file is exported with host props only: its resources list ``{}``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Sequence

from hdrm.batsim.kept_profiles import map_order
from hdrm.platform.simgrid import HostSpec, element_props, parse_radical, read_platform_root
from hdrm.platform.simgrid_topology import TOPOLOGIES

_ZONES = ("zone", "AS")
_NODES = ("cluster", "cabinet")  # hosts by prefix, radical and suffix; a cluster is a zone


def zone_props(element: ET.Element) -> dict[str, str]:
    """The ``<prop>`` children of a zone or cluster, in file order (a repeated key keeps its
    first place and its first value: :func:`hdrm.platform.simgrid.element_props`)."""
    return element_props(element)


def merge_zone_props(chain: Sequence[dict[str, str]]) -> dict[str, str]:
    """A resource's ``zone_properties`` from the props of its zones, outermost first, in Batsim's
    key order (see the module docstring)."""
    values: dict[str, str] = {}
    for props in chain:
        for key in map_order(map_order(list(props))):
            values[key] = props[key]  # a dict keeps the first insertion's place, as the map
    return {key: values[key] for key in map_order(list(values))}


def resource_properties(props: dict[str, str]) -> dict[str, str]:
    """A resource's ``properties`` in SIMULATION_BEGINS: its host's props (a cluster node's are
    the cluster's) in the walk of two maps, as a zone's, a ``role`` of ``""`` inserted into the
    second map last when the host has none (at the front of the walk unless its bucket is taken;
    measured: 15 props with and without a role, clusters of 3 and 19 props)."""
    keys = map_order(list(props))
    if "role" not in props:
        props, keys = {**props, "role": ""}, keys + ["role"]
    return {key: props[key] for key in map_order(keys)}


def zone_properties(path: str | Path, hosts: Sequence[HostSpec]) -> list[dict[str, str]]:
    """The ``zone_properties`` of ``hosts`` (the compute hosts of ``path``, in resource order).

    Raises:
        PlatformError: the file cannot be read
            (as :func:`hdrm.platform.simgrid.read_platform_root`).
    """
    if Path(path).suffix.lower() != ".xml":
        return [{} for _ in hosts]
    chains: dict[str, tuple[dict[str, str], ...]] = {}
    _visit(read_platform_root(path), (), chains)
    merged: dict[int, dict[str, str]] = {}  # one merge per chain (a cluster's nodes share it)
    out = []
    for host in hosts:
        chain = chains.get(host.name, ())
        if id(chain) not in merged:
            merged[id(chain)] = merge_zone_props(chain) if any(chain) else {}
        out.append(dict(merged[id(chain)]))
    return out


def _visit(element: ET.Element, chain: tuple[dict[str, str], ...],
           chains: dict[str, tuple[dict[str, str], ...]]) -> None:
    for child in element:
        tag = child.tag
        if tag in _ZONES:
            _visit(child, chain + (zone_props(child),), chains)
        elif tag in ("host", "peer"):
            chains[child.get("id", "")] = chain
        elif tag in _NODES:
            zone = tag == "cluster" and child.get("topology", "FLAT") not in TOPOLOGIES
            inner = chain + (zone_props(child),) if zone else chain
            where = f"{tag} {child.get('id', '?')!r}"
            prefix, suffix = child.get("prefix", ""), child.get("suffix", "")
            for i in parse_radical(child.get("radical", ""), where):
                chains[f"{prefix}{i}{suffix}"] = inner
