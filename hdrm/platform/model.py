"""In-memory model of a platform: clusters > nodes > processors > cores.

The model is immutable once built. Cores, processors, nodes and clusters get global integer ids in
hierarchy order (cluster by cluster, node by node, processor by processor); core ids are the resource
ids Batsim uses. Flat tuples (``core_gflops``, ``core_processor`` ...) give the hot paths of the
decision core O(1) access without walking objects.

Size: a core is not an object. ``Platform.cores`` is a :class:`CoreTable` that makes each
:class:`Core` on demand from the flat tuples (a few pointers per core); the loader gives the core
ids of a processor or node, like the node ids of a cluster, as ``range`` objects; nodes and
processors are slotted objects. A platform larger than
:func:`max_cores` cores is refused before anything proportional to it is allocated
(:func:`check_size`): replaying on it would take more memory than a workstation has.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

from hdrm.errors import PlatformError

if TYPE_CHECKING:  # a CPU platform never loads the accelerator types
    from hdrm.platform.accelerators import Accelerator

#: Default largest platform, in cores (2**20): over 11 times the largest machine of the archive
#: traces hdrm is checked on (CEA Curie, 93,312 cores); a replay on it takes about 0.4 GB as a
#: platform file, 0.2 GB as one-core nodes, 1.2 GB as a SimGrid file (the estimates below).
DEFAULT_MAX_CORES = 1_048_576

#: Environment variable that raises (or lowers) the limit.
MAX_CORES_ENV = "HDRM_MAX_CORES"

#: Memory a replay takes per core where no finer estimate is known (SimGrid XML platforms,
#: whose hosts are objects: the parsed XML, a host, node, processor and core object each): the
#: platform, the decision core's per-core state and the engine (a finished job's record costs
#: its runs of cores, not its cores). A radical of 2**19 hosts replays 50 jobs in 566 MB
#: (~1,080 bytes a host, the interpreter included).
REPLAY_BYTES_PER_CORE = 1_100
#: The same for a platform file (JSON): its per-core tables are runs (one entry per processor
#: or node) and jobs without memory are taken and freed processor by processor, so a replay of
#: 50 jobs on 10^6 cores as 25,000 nodes of 40 cores peaks at ~210 MB with HDeepRM's bandwidth
#: draws (``benchmarks/bench_scale.py --cells nodes50@1000000``; 510 MB before); the worst case
#: is jobs that all charge memory (the core-by-core rules, ~360 MB), which this covers.
#: ``tests/sim/test_scale_memory.py`` holds the first to it.
PLATFORM_FILE_REPLAY_BYTES_PER_CORE = 400
#: The same for a homogeneous platform of one-core nodes (``--homogeneous-procs``), whose
#: tables, nodes and free cores take nothing per core: ~85 MB measured at 2**20 cores, the
#: interpreter included (``tests/sim/test_scale_memory.py`` holds it to this estimate).
ONE_CORE_REPLAY_BYTES_PER_CORE = 200


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
    #: accelerator type names and counts (:mod:`hdrm.platform.accelerators`); none by default
    accelerators: tuple[tuple[str, int], ...] = ()


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


def max_cores() -> int:
    """The largest platform accepted, in cores: ``$HDRM_MAX_CORES``, else
    :data:`DEFAULT_MAX_CORES`.

    Raises:
        PlatformError: ``$HDRM_MAX_CORES`` is not a positive integer.
    """
    text = os.environ.get(MAX_CORES_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_CORES
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        value = 0
    if value < 1:
        raise PlatformError(f"${MAX_CORES_ENV}: expected a positive number of cores, got {text!r}")
    return value


def check_size(nb_cores: int, what: str, fix: str,
               bytes_per_core: int = REPLAY_BYTES_PER_CORE) -> None:
    """Refuse a platform of more than :func:`max_cores` cores, with the memory it would take.

    Args:
        nb_cores: the platform's cores, counted without building it.
        what: the platform and how its count was reached (``"p.json: clusters[0]...: 10^12
            nodes x 40 cores"``).
        fix: how to shrink it.
        bytes_per_core: what a replay takes per core on this kind of platform (the estimate
            quoted).

    Raises:
        PlatformError: the platform is too large; one line with the estimate and both fixes.
    """
    limit = max_cores()
    if nb_cores <= limit:
        return
    raise PlatformError(
        f"{what} = {nb_cores:,} cores, beyond the limit of {limit:,} cores (a replay takes about "
        f"{bytes_per_core:,} bytes per core: {_gb(nb_cores, bytes_per_core)} here, "
        f"{_gb(limit, bytes_per_core)} at the limit); {fix}, or raise the limit with "
        f"${MAX_CORES_ENV} if you have the memory"
    )


def _gb(nb_cores: int, bytes_per_core: int) -> str:
    gb = nb_cores * bytes_per_core / 1e9
    return f"about {gb:,.0f} GB" if gb >= 10 else f"about {gb:.1f} GB"


@dataclass(frozen=True, slots=True)
class Processor:
    """One processor of a node; its cores share its memory bandwidth."""

    id: int
    node_id: int
    cluster_id: int
    type: ProcessorType
    core_ids: Sequence[int]

    @property
    def mem_bw_gbps(self) -> float:
        """Memory bandwidth in GB/s shared by the processor's cores."""
        return self.type.mem_bw_gbps


@dataclass(frozen=True, slots=True)
class Node:
    """One node; its processors share its memory capacity."""

    id: int
    cluster_id: int
    name: str
    type: NodeType
    memory_mb: float
    processor_ids: Sequence[int]
    core_ids: Sequence[int]
    #: global ids of the node's accelerators (``Platform.accelerators``); none by default
    accelerator_ids: Sequence[int] = ()


@dataclass(frozen=True)
class Cluster:
    """A group of nodes joined by one network."""

    id: int
    name: str
    network: NetworkType
    node_ids: Sequence[int]


class _MadeOnDemand(Sequence):
    """A read-only sequence whose items are made when asked for, from compact data.

    Indexing, slicing (a tuple), iteration, ``len``, and equality with any sequence of the same
    items, as a tuple of them would give; subclasses define ``__len__`` and ``_item(i)``.
    """

    __slots__ = ()

    def _item(self, i: int) -> Any:
        raise NotImplementedError

    def __getitem__(self, index):
        if type(index) is int and 0 <= index < len(self):  # the common case, first
            return self._item(index)
        if isinstance(index, slice):
            return tuple(self._item(i) for i in range(len(self))[index])
        return self._item(range(len(self))[index])  # negative indices, IndexError as a tuple

    def __iter__(self) -> Iterator:
        return (self._item(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} items)"


class CoreTable(_MadeOnDemand):
    """The cores of a platform as flat per-core tuples; ``table[i]`` makes core ``i`` on demand.

    Attributes:
        gflops, power_w, processor, node, cluster: per-core values, index = core id.
    """

    __slots__ = ("gflops", "power_w", "processor", "node", "cluster")

    def __init__(self, gflops: tuple[float, ...], power_w: tuple[float, ...],
                 processor: tuple[int, ...], node: tuple[int, ...],
                 cluster: tuple[int, ...]) -> None:
        self.gflops, self.power_w = gflops, power_w
        self.processor, self.node, self.cluster = processor, node, cluster

    @classmethod
    def of(cls, cores: Sequence[Core]) -> CoreTable:
        """The table of ``cores`` (core ``i`` at position ``i``)."""
        if isinstance(cores, CoreTable):
            return cores
        return cls(tuple(c.gflops for c in cores), tuple(c.power_w for c in cores),
                   tuple(c.processor_id for c in cores), tuple(c.node_id for c in cores),
                   tuple(c.cluster_id for c in cores))

    def __len__(self) -> int:
        return len(self.gflops)

    def _item(self, i: int) -> Core:
        return Core(i, self.processor[i], self.node[i], self.cluster[i], self.gflops[i],
                    self.power_w[i])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CoreTable):
            return (self.gflops, self.power_w, self.processor, self.node, self.cluster) == (
                other.gflops, other.power_w, other.processor, other.node, other.cluster)
        return super().__eq__(other)

    __hash__ = _MadeOnDemand.__hash__


@dataclass(frozen=True)
class Platform:
    """A whole platform with derived figures and flat per-core lookup tables.

    Build it with :func:`hdrm.platform.loader.load_platform` or :meth:`Platform.homogeneous`.
    """

    name: str
    clusters: tuple[Cluster, ...]
    nodes: tuple[Node, ...]
    processors: tuple[Processor, ...]
    cores: Sequence[Core]
    source: str = ""
    #: every accelerator (GPU) of the platform, id = position; empty for CPU-only platforms
    accelerators: tuple[Accelerator, ...] = ()
    # Flat tables, filled in __post_init__ (index = core id / processor id).
    core_gflops: tuple[float, ...] = field(init=False, repr=False)
    core_power_w: tuple[float, ...] = field(init=False, repr=False)
    core_processor: tuple[int, ...] = field(init=False, repr=False)
    core_node: tuple[int, ...] = field(init=False, repr=False)
    processor_mem_bw_gbps: tuple[float, ...] = field(init=False, repr=False)
    node_memory_mb: tuple[float, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        put = object.__setattr__
        table = CoreTable.of(self.cores)
        put(self, "cores", table)
        put(self, "core_gflops", table.gflops)
        put(self, "core_power_w", table.power_w)
        put(self, "core_processor", table.processor)
        put(self, "core_node", table.node)
        procs, nodes = self.processors, self.nodes
        one_type = getattr(procs, "one_core_type", None)  # made on demand: not walked
        if one_type is not None:
            from hdrm.platform.one_core import Same  # it uses this module

            put(self, "processor_mem_bw_gbps", Same(one_type.mem_bw_gbps, len(procs)))
        else:
            put(self, "processor_mem_bw_gbps", tuple(p.mem_bw_gbps for p in procs))
        if getattr(nodes, "one_core_type", None) is not None:
            from hdrm.platform.one_core import Same  # it uses this module

            put(self, "node_memory_mb", Same(math.inf, len(nodes)))
        else:
            put(self, "node_memory_mb", tuple(n.memory_mb for n in nodes))

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
            raise PlatformError(f"homogeneous platform: need at least 1 core, got {nb_cores}")
        check_size(nb_cores, f"homogeneous platform: {nb_cores:,} one-core nodes",
                   "give fewer homogeneous processors", ONE_CORE_REPLAY_BYTES_PER_CORE)
        ptype = ProcessorType("generic", 1, gflops, 1.0, math.inf, power_w, "generic", "generic")
        ntype = NodeType("generic", (("generic", 1),), math.inf)
        net = NetworkType("generic", 10.0, 1.0)
        # no core, processor or node object, nor any per-core table entry is kept: each is
        # made when asked for (memory follows the platform's few types, not its cores)
        from hdrm.platform.one_core import Ids, OneCoreNodes, OneCoreProcessors, Same

        ids = Ids(nb_cores)
        cores = CoreTable(Same(gflops, nb_cores), Same(power_w, nb_cores), ids, ids,
                          Same(0, nb_cores))

        procs = OneCoreProcessors(nb_cores, ptype)
        nodes = OneCoreNodes(nb_cores, ntype)
        clusters = (Cluster(0, "homogeneous", net, range(nb_cores)),)
        return cls(name or f"homogeneous_{nb_cores}", clusters, nodes, procs, cores)
