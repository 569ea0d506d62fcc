"""Platform JSON files: read, validate and build a :class:`~hdrm.platform.model.Platform`.

A platform file is one JSON object::

    {
      "name": "hetero",                          optional; default: the file name without .json
      "description": "what it is for",           optional, free text
      "processor_types": {"my_cpu": {...}},      optional; extend or replace library types
      "node_types": {"my_node": {...}},          optional; same
      "network_types": {"my_net": {...}},        optional; same
      "clusters": [                              required, at least one
        {"name": "c0",                           unique; letters, digits and '_.+-'
         "network": "infiniband_edr",            a network type
         "nodes": [{"type": "dell_r640_gold6148", "count": 16}, ...]}
      ]
    }

The three type sections have the fields of the shipped type library (see
:mod:`hdrm.platform.library`); a type defined in the file replaces the library type of that name.
Nodes are created in file order, ``count`` times per entry, and named ``<cluster>-n<i>`` with ``i``
counting from 0 inside each cluster. Clusters, nodes, processors and cores get global integer ids in
hierarchy order; core ids are the Batsim resource ids.

Derived figures: a core runs at ``clock_ghz * flops_per_cycle`` GFLOP/s and draws
``tdp_w / cores`` W at full speed; a node has ``memory_gb * 1024`` MB; a processor's cores share its
``mem_bw_gbps``.

Every defect is a :class:`~hdrm.errors.PlatformError` naming the file and the JSON path, e.g.
``platforms/x.json: clusters[1].nodes[0].type: unknown node type 'dell_r64'; did you mean ...``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from hdrm.platform.library import (
    NAME,
    NON_EMPTY_LIST,
    OBJECT,
    POSITIVE_INT,
    SECTIONS,
    STRING,
    JsonPath,
    TypeLibrary,
    check_object,
    default_library,
    read_json_file,
    types_from_json,
)
from hdrm.platform.model import (
    Cluster,
    CoreTable,
    NetworkType,
    Node,
    NodeType,
    Platform,
    Processor,
    ProcessorType,
    check_size,
    max_cores,
)

logger = logging.getLogger(__name__)

_TOP_REQUIRED = {"clusters": NON_EMPTY_LIST}
_TOP_OPTIONAL = {
    "name": STRING,
    "description": STRING,
    "processor_types": OBJECT,
    "node_types": OBJECT,
    "network_types": OBJECT,
}
_CLUSTER_REQUIRED = {"name": NAME, "network": STRING, "nodes": NON_EMPTY_LIST}
_CLUSTER_OPTIONAL = {"description": STRING}
_NODES_REQUIRED = {"type": STRING, "count": POSITIVE_INT}

#: A parsed cluster: name, network type and (node type, count) groups.
_ClusterSpec = tuple[str, NetworkType, list[tuple[NodeType, int]]]


def load_platform(path: str | Path, library: TypeLibrary | None = None) -> Platform:
    """Read and validate a platform JSON file.

    Args:
        path: the platform file.
        library: the type library to resolve names against (default: the shipped one).

    Raises:
        PlatformError: the file is missing, not JSON, or breaks a rule of the format; the message
            names the file and the JSON path.
    """
    data = read_json_file(path, what="platform")
    platform = platform_from_dict(data, source=str(path), library=library)
    logger.info("loaded platform %r from %s: %d cores", platform.name, path, platform.nb_cores)
    return platform


def platform_from_dict(
    data: Any, source: str = "<dict>", library: TypeLibrary | None = None
) -> Platform:
    """Validate a platform description (the parsed JSON) and build the Platform.

    Args:
        data: the JSON document, as ``json.load`` returns it.
        source: the file name (or a label) used in error messages and ``Platform.source``.
        library: the type library to resolve names against (default: the shipped one).

    Raises:
        PlatformError: the description breaks a rule of the format (see the module docstring).
    """
    at = JsonPath(source)
    doc = check_object(data, at, _TOP_REQUIRED, _TOP_OPTIONAL)
    types = _file_library(doc, at, library or default_library())
    clusters = _parse_clusters(doc["clusters"], at.key("clusters"), types)
    _check_size(clusters, types, at)
    name = doc.get("name") or _default_name(source)  # an empty name falls back too
    return _build(name, clusters, types, source)


def _default_name(source: str) -> str:
    return "platform" if source.startswith("<") else Path(source).stem


def _file_library(doc: dict[str, Any], at: JsonPath, library: TypeLibrary) -> TypeLibrary:
    """The library extended with the file's own types, with their references checked."""
    inline = {
        section: types_from_json(section, doc[section], at.key(section))
        for section in SECTIONS
        if section in doc
    }
    types = library.extended(**inline)
    for name, node_type in inline.get("node_types", {}).items():
        types.check_node_type(node_type, at.key("node_types").key(name))
    return types


def _parse_clusters(items: list[Any], at: JsonPath, types: TypeLibrary) -> list[_ClusterSpec]:
    specs: list[_ClusterSpec] = []
    first_seen: dict[str, int] = {}
    for i, item in enumerate(items):
        where = at.index(i)
        cluster = check_object(item, where, _CLUSTER_REQUIRED, _CLUSTER_OPTIONAL)
        name = cluster["name"]
        if name in first_seen:
            raise where.key("name").error(
                f"duplicate cluster name {name!r} (also {at.index(first_seen[name])}.name); "
                "give each cluster a unique name"
            )
        first_seen[name] = i
        network = types.network_type(cluster["network"], where.key("network"))
        groups = _parse_node_groups(cluster["nodes"], where.key("nodes"), types)
        specs.append((name, network, groups))
    return specs


def _parse_node_groups(
    items: list[Any], at: JsonPath, types: TypeLibrary
) -> list[tuple[NodeType, int]]:
    groups = []
    for i, item in enumerate(items):
        group = check_object(item, at.index(i), _NODES_REQUIRED)
        node_type = types.node_type(group["type"], at.index(i).key("type"))
        groups.append((node_type, group["count"]))
    return groups


def _check_size(clusters: list[_ClusterSpec], types: TypeLibrary, at: JsonPath) -> None:
    """Refuse a platform beyond :func:`~hdrm.platform.model.max_cores` from its node counts,
    before any node or core is made."""
    groups = [(i, j, node_type, count)
              for i, (_, _, spec) in enumerate(clusters) for j, (node_type, count) in enumerate(spec)]
    sizes = [_cores_per_node(node_type, types) * count for _, _, node_type, count in groups]
    total = sum(sizes)
    if total <= max_cores():
        return
    i, j, node_type, count = groups[sizes.index(max(sizes))]
    where = at.key("clusters").index(i).key("nodes").index(j).key("count")
    what = f"{at.source}: {where}: {count:,} nodes x {_cores_per_node(node_type, types):,} cores"
    if len(groups) > 1:
        what += f" and {len(groups) - 1} other node groups"
    check_size(total, what, "give fewer nodes")


def _cores_per_node(node_type: NodeType, types: TypeLibrary) -> int:
    return sum(types.processor_types[name].cores * count for name, count in node_type.processors)


class _Builder:
    """Accumulates the hierarchy, handing out global ids in creation order.

    Cores are not objects: each processor adds its values to the flat per-core lists once for all
    its cores, and id sets are ``range`` objects.
    """

    def __init__(self, types: TypeLibrary) -> None:
        self.types = types
        self.clusters: list[Cluster] = []
        self.nodes: list[Node] = []
        self.processors: list[Processor] = []
        self.gflops: list[float] = []
        self.power_w: list[float] = []
        self.core_processor: list[int] = []
        self.core_node: list[int] = []
        self.core_cluster: list[int] = []

    def add_cluster(
        self, name: str, network: NetworkType, groups: list[tuple[NodeType, int]]
    ) -> None:
        cluster_id = len(self.clusters)
        first_node = len(self.nodes)
        local = 0
        for node_type, count in groups:
            for _ in range(count):
                self.add_node(cluster_id, f"{name}-n{local}", node_type)
                local += 1
        node_ids = range(first_node, len(self.nodes))
        self.clusters.append(Cluster(cluster_id, name, network, node_ids))

    def add_node(self, cluster_id: int, name: str, node_type: NodeType) -> None:
        node_id = len(self.nodes)
        first_proc, first_core = len(self.processors), len(self.gflops)
        for type_name, count in node_type.processors:
            ptype = self.types.processor_types[type_name]
            for _ in range(count):
                self.add_processor(node_id, cluster_id, ptype)
        self.nodes.append(
            Node(
                id=node_id,
                cluster_id=cluster_id,
                name=name,
                type=node_type,
                memory_mb=node_type.memory_gb * 1024.0,
                processor_ids=range(first_proc, len(self.processors)),
                core_ids=range(first_core, len(self.gflops)),
            )
        )

    def add_processor(self, node_id: int, cluster_id: int, ptype: ProcessorType) -> None:
        proc_id = len(self.processors)
        first_core, n = len(self.gflops), ptype.cores
        self.gflops.extend([ptype.core_gflops] * n)
        self.power_w.extend([ptype.core_power_w] * n)
        self.core_processor.extend([proc_id] * n)
        self.core_node.extend([node_id] * n)
        self.core_cluster.extend([cluster_id] * n)
        self.processors.append(
            Processor(proc_id, node_id, cluster_id, ptype, range(first_core, first_core + n))
        )

    def core_table(self) -> CoreTable:
        """The cores added so far."""
        return CoreTable(tuple(self.gflops), tuple(self.power_w), tuple(self.core_processor),
                         tuple(self.core_node), tuple(self.core_cluster))


def _build(
    name: str, clusters: list[_ClusterSpec], types: TypeLibrary, source: str
) -> Platform:
    builder = _Builder(types)
    for cluster_name, network, groups in clusters:
        builder.add_cluster(cluster_name, network, groups)
    return Platform(
        name=name,
        clusters=tuple(builder.clusters),
        nodes=tuple(builder.nodes),
        processors=tuple(builder.processors),
        cores=builder.core_table(),
        source=source,
    )
