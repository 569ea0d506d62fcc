"""In-memory model of a platform: clusters > nodes > processors > cores.

The model is immutable once built. Cores, processors, nodes and clusters get global integer ids in
hierarchy order (cluster by cluster, node by node, processor by processor); core ids are the resource
ids Batsim uses. Flat tuples (``core_gflops``, ``core_processor`` ...) give the hot paths of the
decision core O(1) access without walking objects.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ProcessorType:
    """A processor model.

    Attributes:
        name: library key, e.g. ``"xeon_gold_6148"``.
        vendor: manufacturer.
        model: marketing name.
        year: year of launch.
        cores: physical cores.
        clock_ghz: base clock in GHz.
        flops_per_cycle: double-precision floating-point operations per cycle per core.
        mem_bw_gbps: peak memory bandwidth in GB/s, shared by all cores of the processor.
        tdp_w: thermal design power in watts.
    """

    name: str
    cores: int
    clock_ghz: float
    flops_per_cycle: float
    mem_bw_gbps: float
    tdp_w: float
    vendor: str = ""
    model: str = ""
    year: int = 0

    @property
    def core_gflops(self) -> float:
        """Peak double-precision GFLOP/s of one core: clock x flops per cycle."""
        return self.clock_ghz * self.flops_per_cycle

    @property
    def core_power_w(self) -> float:
        """Full power of one core in watts: TDP / cores."""
        return self.tdp_w / self.cores


@dataclass(frozen=True)
class NodeType:
    """A node model: processors (type name and count) and memory."""

    name: str
    processors: tuple[tuple[str, int], ...]
    memory_gb: float
    description: str = ""


@dataclass(frozen=True)
class NetworkType:
    """An interconnect model: bandwidth in Gbit/s and latency in microseconds."""

    name: str
    bandwidth_gbps: float
    latency_us: float = 1.0
    description: str = ""


@dataclass(frozen=True, slots=True)
class Core:
    """One core: the unit of allocation (a Batsim resource)."""

    id: int
    processor_id: int
    node_id: int
    cluster_id: int
    gflops: float
    power_w: float


@dataclass(frozen=True)
class Processor:
    """One processor of a node; its cores share its memory bandwidth."""

    id: int
    node_id: int
    cluster_id: int
    type: ProcessorType
    core_ids: tuple[int, ...]

    @property
    def mem_bw_gbps(self) -> float:
        """Memory bandwidth in GB/s shared by the processor's cores."""
        return self.type.mem_bw_gbps


@dataclass(frozen=True)
class Node:
    """One node; its processors share its memory capacity."""

    id: int
    cluster_id: int
    name: str
    type: NodeType
    memory_mb: float
    processor_ids: tuple[int, ...]
    core_ids: tuple[int, ...]


@dataclass(frozen=True)
class Cluster:
    """A group of nodes joined by one network."""

    id: int
    name: str
    network: NetworkType
    node_ids: tuple[int, ...]


@dataclass(frozen=True)
class Platform:
    """A whole platform with derived figures and flat per-core lookup tables.

    Build it with :func:`hdrm.platform.loader.load_platform` or :meth:`Platform.homogeneous`.
    """

    name: str
    clusters: tuple[Cluster, ...]
    nodes: tuple[Node, ...]
    processors: tuple[Processor, ...]
    cores: tuple[Core, ...]
    source: str = ""
    # Flat tables, filled in __post_init__ (index = core id / processor id).
    core_gflops: tuple[float, ...] = field(init=False, repr=False)
    core_power_w: tuple[float, ...] = field(init=False, repr=False)
    core_processor: tuple[int, ...] = field(init=False, repr=False)
    core_node: tuple[int, ...] = field(init=False, repr=False)
    processor_mem_bw_gbps: tuple[float, ...] = field(init=False, repr=False)
    node_memory_mb: tuple[float, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "core_gflops", tuple(c.gflops for c in self.cores))
        put(self, "core_power_w", tuple(c.power_w for c in self.cores))
        put(self, "core_processor", tuple(c.processor_id for c in self.cores))
        put(self, "core_node", tuple(c.node_id for c in self.cores))
        put(self, "processor_mem_bw_gbps", tuple(p.mem_bw_gbps for p in self.processors))
        put(self, "node_memory_mb", tuple(n.memory_mb for n in self.nodes))

    @property
    def nb_cores(self) -> int:
        """Number of cores (Batsim compute resources)."""
        return len(self.cores)

    @property
    def total_gflops(self) -> float:
        """Sum of the peak GFLOP/s of every core."""
        return math.fsum(self.core_gflops)

    @property
    def reference_gflops(self) -> float:
        """Reference speed: the mean core GFLOP/s. Trace run times are taken at this speed."""
        return self.total_gflops / self.nb_cores

    @property
    def total_memory_mb(self) -> float:
        """Sum of the memory of every node in MB."""
        return math.fsum(self.node_memory_mb)

    @property
    def total_power_w(self) -> float:
        """Power of the whole platform with every core running at full speed."""
        return math.fsum(self.core_power_w)

    @property
    def is_homogeneous(self) -> bool:
        """True when every core has the same speed and power."""
        return len(set(self.core_gflops)) <= 1 and len(set(self.core_power_w)) <= 1

    @classmethod
    def homogeneous(
        cls, nb_cores: int, gflops: float = 1.0, power_w: float = 100.0, name: str = ""
    ) -> "Platform":
        """N identical one-core resources with unbounded memory and bandwidth.

        The classic setting of the scheduling literature (``--homogeneous-procs N``): each resource
        is a node with one processor of one core, so memory and bandwidth never constrain.
        """
        if nb_cores <= 0:
            from hdrm.errors import PlatformError

            raise PlatformError(f"homogeneous platform: need at least 1 core, got {nb_cores}")
        ptype = ProcessorType("generic", 1, gflops, 1.0, math.inf, power_w, "generic", "generic")
        ntype = NodeType("generic", (("generic", 1),), math.inf)
        net = NetworkType("generic", 10.0, 1.0)
        cores = tuple(Core(i, i, i, 0, gflops, power_w) for i in range(nb_cores))
        procs = tuple(Processor(i, i, 0, ptype, (i,)) for i in range(nb_cores))
        nodes = tuple(
            Node(i, 0, f"n{i}", ntype, math.inf, (i,), (i,)) for i in range(nb_cores)
        )
        clusters = (Cluster(0, "homogeneous", net, tuple(range(nb_cores))),)
        return cls(name or f"homogeneous_{nb_cores}", clusters, nodes, procs, cores)
