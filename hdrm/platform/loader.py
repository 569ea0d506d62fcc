"""Platform JSON files: read, validate and build a :class:`~hdrm.platform.model.Platform`.

A platform file is one JSON object::

    {
      "name": "hetero",                          optional; default: the file name without .json
      "description": "what it is for",           optional, free text
      "processor_types": {"my_cpu": {...}},      optional; extend or replace library types
      "node_types": {"my_node": {...}},          optional; same
      "network_types": {"my_net": {...}},        optional; same
      "accelerator_types": {"my_gpu": {...}},    optional; same (GPU models)
      "clusters": [                              required, at least one
        {"name": "c0",                           unique; letters, digits and '_.+-'
         "network": "infiniband_edr",            a network type
         "nodes": [{"type": "dell_r640_gold6148", "count": 16}, ...]}     (+ "names", optional)
      ]
    }

The three type sections have the fields of the shipped type library (see
:mod:`hdrm.platform.library`); a type defined in the file replaces the library type of that name.
Nodes are created in file order, ``count`` times per entry, and named ``<cluster>-n<i>`` with ``i``
counting from 0 inside each cluster, unless the entry lists its nodes' ``names`` (one per node, as
a trace names them; every node name of the platform must then be unique). Clusters, nodes,
processors and cores get global integer ids in
hierarchy order; core ids are the Batsim resource ids.

A node type may list accelerators (``"accelerators": [{"type": "T4", "count": 2}]``): each
device becomes an :class:`~hdrm.platform.accelerators.Accelerator` with a global id, node by
node, in ``Platform.accelerators``; ``Node.accelerator_ids`` names a node's devices. A platform
without them is built exactly as before.

Derived figures: a core runs at ``clock_ghz * flops_per_cycle`` GFLOP/s and draws
``tdp_w / cores`` W at full speed; a node has ``memory_gb * 1024`` MB; a processor's cores share its
``mem_bw_gbps``.

Every defect is a :class:`~hdrm.errors.PlatformError` naming the file and the JSON path, e.g.
``platforms/x.json: clusters[1].nodes[0].type: unknown node type 'dell_r64'; did you mean ...``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from hdrm.errors import PlatformError
from hdrm.platform.accelerators import Accelerator, AcceleratorTypeJson, node_devices
from hdrm.platform.library import (
    TYPE_SECTION,
    NetworkTypeJson,
    NodeTypeJson,
    ProcessorTypeJson,
    TypeLibrary,
    build_types,
    check_name,
    default_library,
    read_json_file,
)
from hdrm.platform.model import (
    PLATFORM_FILE_REPLAY_BYTES_PER_CORE,
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
from hdrm.platform.run_table import RunTable
from hdrm.typedjson import Context, convert_block, join_path

logger = logging.getLogger(__name__)


def _check_names(names: tuple[str, ...]) -> str:
    """The ``check`` of a list of node names: an error text, or "" when each is a plain name."""
    for k, name in enumerate(names):
        message = check_name(name)
        if message:
            return f"[{k}]: {message}"
    return ""


@dataclass(frozen=True)
class NodeGroupJson:
    """``{"type": <node type>, "count": n}`` in a cluster, with its nodes' ``names`` or not."""

    type: str
    count: int = field(metadata={"gt": 0})
    names: tuple[str, ...] = field(default=(), metadata={"check": _check_names})


@dataclass(frozen=True)
class ClusterJson:
    """A cluster as written in JSON."""

    name: str = field(metadata={"check": check_name})
    network: str
    nodes: tuple[NodeGroupJson, ...] = field(metadata={"nonempty": True})
    description: str = ""


def _no_types() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True)
class PlatformJson:
    """A platform file (see the module docstring)."""

    clusters: tuple[ClusterJson, ...] = field(metadata={"nonempty": True})
    name: str = ""
    description: str = ""
    processor_types: Mapping[str, ProcessorTypeJson] = field(
        default_factory=_no_types, metadata=TYPE_SECTION)
    node_types: Mapping[str, NodeTypeJson] = field(
        default_factory=_no_types, metadata=TYPE_SECTION)
    network_types: Mapping[str, NetworkTypeJson] = field(
        default_factory=_no_types, metadata=TYPE_SECTION)
    accelerator_types: Mapping[str, AcceleratorTypeJson] = field(
        default_factory=_no_types, metadata=TYPE_SECTION)


#: A parsed cluster: name, network type and (node type, count, node names) groups.
_ClusterSpec = tuple[str, NetworkType, list[tuple[NodeType, int, tuple[str, ...]]]]


def load_platform(path: str | Path, library: TypeLibrary | None = None) -> Platform:
    """Read and validate a platform JSON file.

    Args:
        path: the platform file.
        library: the type library to resolve names against (default: the shipped one).

    Raises:
        PlatformError: the file is missing, not JSON, or breaks a rule of the format; the message
            names the file and the JSON path.
    """
    try:
        data = read_json_file(path, what="platform")
    except PlatformError:
        _refuse_simgrid_xml(path)  # a clearer reason than 'invalid JSON at 1:1'
        raise
    platform = platform_from_dict(data, source=str(path), library=library)
    logger.info("loaded platform %r from %s: %d cores", platform.name, path, platform.nb_cores)
    return platform


def _refuse_simgrid_xml(path: str | Path) -> None:
    """Raise a PlatformError when ``path`` holds XML (a SimGrid platform) rather than JSON."""
    try:
        with open(path, "rb") as file:
            head = file.read(256).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return
    if head.startswith(b"<"):
        raise PlatformError(
            f"{path}: a SimGrid XML platform, where this command takes an hdrm platform JSON file "
            "(clusters of nodes of processors; docs/platforms.rst); SimGrid XML is read by hdrm "
            "replay, hdeeprm-launch, hdrm/Scheduling-v0 and hdrm serve"
        )


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
    ctx = Context(source, error=PlatformError)
    doc = convert_block(data, PlatformJson, "", ctx)
    types = _file_library(doc, ctx, library or default_library())
    clusters = _resolve_clusters(doc.clusters, ctx, types)
    _check_size(clusters, types, ctx)
    name = doc.name or _default_name(source)  # an empty name falls back too
    return _build(name, clusters, types, source)


def _default_name(source: str) -> str:
    return "platform" if source.startswith("<") else Path(source).stem


def _file_library(doc: PlatformJson, ctx: Context, library: TypeLibrary) -> TypeLibrary:
    """The library extended with the file's own types, with their references checked and the
    GPU models of its node types named by their keys (a spelling of the alias table resolved)."""
    types = library.extended(build_types(doc.processor_types), {},
                             build_types(doc.network_types), build_types(doc.accelerator_types))
    node_types = {name: types.resolve_node_type(node_type, ctx, join_path("node_types", name))
                  for name, node_type in build_types(doc.node_types).items()}
    return types.extended(node_types=node_types)


def _resolve_clusters(
    clusters: tuple[ClusterJson, ...], ctx: Context, types: TypeLibrary
) -> list[_ClusterSpec]:
    """Each cluster with its network and node types looked up; cluster names must be unique."""
    specs: list[_ClusterSpec] = []
    first_seen: dict[str, int] = {}
    for i, cluster in enumerate(clusters):
        where = f"clusters[{i}]"
        if cluster.name in first_seen:
            raise ctx.fail(
                f"{where}.name", f"duplicate cluster name {cluster.name!r} (also "
                f"clusters[{first_seen[cluster.name]}].name); give each cluster a unique name"
            )
        first_seen[cluster.name] = i
        network = types.network_type(cluster.network, ctx, f"{where}.network")
        groups = [(types.node_type(g.type, ctx, f"{where}.nodes[{j}].type"), g.count, g.names)
                  for j, g in enumerate(cluster.nodes)]
        specs.append((cluster.name, network, groups))
    if any(g.names for cluster in clusters for g in cluster.nodes):
        _check_node_names(clusters, ctx)
    return specs


def _check_node_names(clusters: tuple[ClusterJson, ...], ctx: Context) -> None:
    """Given names: one per node, and no node name used twice (generated ones included)."""
    seen: dict[str, str] = {}
    for i, cluster in enumerate(clusters):
        local = 0
        for j, group in enumerate(cluster.nodes):
            where = f"clusters[{i}].nodes[{j}]"
            if group.names and len(group.names) != group.count:
                raise ctx.fail(f"{where}.names", f"{len(group.names)} names for count "
                               f"{group.count}; give one name per node, or none")
            for k in range(group.count):
                name = group.names[k] if group.names else f"{cluster.name}-n{local + k}"
                path = f"{where}.names[{k}]" if group.names else f"{where} (node {name})"
                if name in seen:
                    raise ctx.fail(path, f"node name {name!r} is used twice (also {seen[name]}); "
                                   "give each node a unique name")
                seen[name] = path
            local += group.count


def _check_size(clusters: list[_ClusterSpec], types: TypeLibrary, ctx: Context) -> None:
    """Refuse a platform beyond :func:`~hdrm.platform.model.max_cores` from its node counts,
    before any node or core is made."""
    groups = [(i, j, node_type, count) for i, (_, _, spec) in enumerate(clusters)
              for j, (node_type, count, _) in enumerate(spec)]
    sizes = [_cores_per_node(node_type, types) * count for _, _, node_type, count in groups]
    total = sum(sizes)
    if total <= max_cores():
        return
    i, j, node_type, count = groups[sizes.index(max(sizes))]
    what = (f"{ctx.source}: clusters[{i}].nodes[{j}].count: {count:,} nodes x "
            f"{_cores_per_node(node_type, types):,} cores")
    if len(groups) > 1:
        what += f" and {len(groups) - 1} other node groups"
    check_size(total, what, "give fewer nodes", PLATFORM_FILE_REPLAY_BYTES_PER_CORE)


def _cores_per_node(node_type: NodeType, types: TypeLibrary) -> int:
    return sum(types.processor_types[name].cores * count for name, count in node_type.processors)


class _Builder:
    """Accumulates the hierarchy, handing out global ids in creation order.

    Cores are not objects, nor table entries: each processor adds one run of its cores to the
    per-core tables (:class:`~hdrm.platform.run_table.RunTable`: its speed, power, processor,
    node and cluster over the run), and id sets are ``range`` objects.
    """

    def __init__(self, types: TypeLibrary) -> None:
        self.types = types
        self.clusters: list[Cluster] = []
        self.nodes: list[Node] = []
        self.processors: list[Processor] = []
        self.nb_cores = 0
        #: per processor: one past its last core, its core speed and power
        self.proc_end: list[int] = []
        self.gflops: list[float] = []
        self.power_w: list[float] = []
        self.proc_node: list[int] = []
        self.proc_cluster: list[int] = []
        self.accelerators: list[Accelerator] = []

    def add_cluster(
        self, name: str, network: NetworkType,
        groups: list[tuple[NodeType, int, tuple[str, ...]]]
    ) -> None:
        cluster_id = len(self.clusters)
        first_node = len(self.nodes)
        local = 0
        for node_type, count, names in groups:
            for k in range(count):
                self.add_node(cluster_id, names[k] if names else f"{name}-n{local}", node_type)
                local += 1
        node_ids = range(first_node, len(self.nodes))
        self.clusters.append(Cluster(cluster_id, name, network, node_ids))

    def add_node(self, cluster_id: int, name: str, node_type: NodeType) -> None:
        node_id = len(self.nodes)
        first_proc, first_core = len(self.processors), self.nb_cores
        for type_name, count in node_type.processors:
            ptype = self.types.processor_types[type_name]
            for _ in range(count):
                self.add_processor(node_id, cluster_id, ptype)
        first_device = len(self.accelerators)
        for atype in node_devices(node_type.accelerators, self.types.accelerator_types):
            self.accelerators.append(Accelerator(len(self.accelerators), node_id, cluster_id, atype))
        self.nodes.append(
            Node(
                id=node_id,
                cluster_id=cluster_id,
                name=name,
                type=node_type,
                memory_mb=node_type.memory_gb * 1024.0,
                processor_ids=range(first_proc, len(self.processors)),
                core_ids=range(first_core, self.nb_cores),
                accelerator_ids=range(first_device, len(self.accelerators)) or (),
            )
        )

    def add_processor(self, node_id: int, cluster_id: int, ptype: ProcessorType) -> None:
        proc_id = len(self.processors)
        first_core = self.nb_cores
        self.nb_cores += ptype.cores
        self.proc_end.append(self.nb_cores)
        self.gflops.append(ptype.core_gflops)
        self.power_w.append(ptype.core_power_w)
        self.proc_node.append(node_id)
        self.proc_cluster.append(cluster_id)
        self.processors.append(
            Processor(proc_id, node_id, cluster_id, ptype, range(first_core, self.nb_cores))
        )

    def core_table(self) -> CoreTable:
        """The cores added so far."""
        ends = self.proc_end
        return CoreTable(RunTable(self.gflops, ends), RunTable(self.power_w, ends),
                         RunTable(range(len(ends)), ends), RunTable(self.proc_node, ends),
                         RunTable(self.proc_cluster, ends))


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
        accelerators=tuple(builder.accelerators),
    )
