"""Helpers for tests: small platforms, jobs and workloads built in code, and runs of the engine.

Platforms are built directly from the model's dataclasses so that every figure (speed, power,
memory, bandwidth) is chosen by the test and can be checked by hand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from hdrm.platform.model import (
    Cluster,
    Core,
    NetworkType,
    Node,
    NodeType,
    Platform,
    Processor,
    ProcessorType,
)
from hdrm.sim.engine import Outcome, Simulation, SimulationConfig, SimulationResult
from hdrm.workload.job import PROFILE_DELAY, PROFILE_PARALLEL_HOMOGENEOUS, Job, Workload


@dataclass(frozen=True)
class Proc:
    """A processor of a test platform.

    Attributes:
        cores: number of cores.
        gflops: speed of each core in GFLOP/s.
        power_w: full power of each core in W (the type's TDP is ``cores * power_w``).
        mem_bw_gbps: memory bandwidth shared by the cores.
        name: processor type name (processors with equal names must have equal figures).
    """

    cores: int
    gflops: float = 1.0
    power_w: float = 100.0
    mem_bw_gbps: float = math.inf
    name: str = ""

    def ptype(self) -> ProcessorType:
        """The :class:`ProcessorType` of this processor."""
        name = self.name or f"p{self.cores}x{self.gflops:g}g{self.power_w:g}w{self.mem_bw_gbps:g}bw"
        return ProcessorType(name, self.cores, self.gflops, 1.0, self.mem_bw_gbps,
                             self.power_w * self.cores)


def make_platform(nodes: Sequence[tuple[float, Sequence[Proc]]], name: str = "test") -> Platform:
    """A one-cluster platform from ``[(memory_mb, [Proc, ...]), ...]`` (one entry per node).

    Core, processor and node ids follow the order given, as the loader numbers them.
    """
    cores: list[Core] = []
    procs: list[Processor] = []
    built_nodes: list[Node] = []
    for node_id, (memory_mb, node_procs) in enumerate(nodes):
        proc_ids: list[int] = []
        node_cores: list[int] = []
        for spec in node_procs:
            ptype = spec.ptype()
            pid = len(procs)
            ids = tuple(range(len(cores), len(cores) + spec.cores))
            for c in ids:
                cores.append(Core(c, pid, node_id, 0, spec.gflops, spec.power_w))
            procs.append(Processor(pid, node_id, 0, ptype, ids))
            proc_ids.append(pid)
            node_cores.extend(ids)
        ntype = NodeType(f"n{node_id}", tuple((p.ptype().name, 1) for p in node_procs),
                         memory_mb / 1024.0)
        built_nodes.append(Node(node_id, 0, f"node{node_id}", ntype, memory_mb, tuple(proc_ids),
                                tuple(node_cores)))
    cluster = Cluster(0, "c0", NetworkType("net", 10.0), tuple(range(len(built_nodes))))
    return Platform(name, (cluster,), tuple(built_nodes), tuple(procs), tuple(cores))


def one_node(cores: int, gflops: float = 1.0, power_w: float = 100.0,
             mem_bw_gbps: float = math.inf, memory_mb: float = math.inf) -> Platform:
    """One node with one processor of ``cores`` identical cores."""
    return make_platform([(memory_mb, [Proc(cores, gflops, power_w, mem_bw_gbps)])])


def hetero_two_nodes(memory_mb: tuple[float, float] = (math.inf, math.inf),
                     mem_bw_gbps: tuple[float, float] = (math.inf, math.inf)) -> Platform:
    """Two nodes: node 0 has one processor of 2 fast cores (4 GFLOP/s, 200 W each); node 1 one
    processor of 2 slow cores (1 GFLOP/s, 50 W each). Cores 0-1 are fast, 2-3 slow."""
    return make_platform([
        (memory_mb[0], [Proc(2, 4.0, 200.0, mem_bw_gbps[0], "fast")]),
        (memory_mb[1], [Proc(2, 1.0, 50.0, mem_bw_gbps[1], "slow")]),
    ])


def job(idx: int, submit_s: float = 0.0, res: int = 1, walltime_s: float = 10.0,
        run_time_s: float | None = None, *, mem_mb: float = 0.0, mem_bw_gbps: float = 0.0,
        ops_gflop: float | None = None, trace_submit_s: float = 0.0, id: object = None,
        user_id: int = -1) -> Job:
    """A job; a ``delay`` job lasting ``run_time_s`` (default: its walltime), or a
    ``parallel_homogeneous`` one when ``ops_gflop`` is given."""
    run = walltime_s if run_time_s is None else run_time_s
    kind = PROFILE_DELAY if ops_gflop is None else PROFILE_PARALLEL_HOMOGENEOUS
    return Job(idx, idx if id is None else id, float(submit_s), res, float(walltime_s), float(run),
               mem_mb=mem_mb, mem_bw_gbps=mem_bw_gbps, ops_gflop=ops_gflop or 0.0,
               trace_submit_s=trace_submit_s, profile=kind, profile_type=kind, user_id=user_id)


def workload(jobs: Iterable[Job], name: str = "test") -> Workload:
    """A workload of ``jobs`` sorted by submission time (stable), with ``idx`` renumbered."""
    ordered = sorted(jobs, key=lambda j: j.submit_s)
    for i, j in enumerate(ordered):
        j.idx = i
    return Workload(ordered, name=name)


def simulate(platform: Platform, jobs: Iterable[Job] | Workload, policy: str = "fcfs",
             **config: object) -> SimulationResult:
    """Run the built-in engine with ``policy`` and :class:`SimulationConfig` fields ``config``."""
    load = jobs if isinstance(jobs, Workload) else workload(jobs)
    return Simulation(platform, load, SimulationConfig(**config)).run(policy)


def by_id(result: SimulationResult) -> dict[object, Outcome]:
    """The outcomes of a run keyed by job id."""
    return {o.job.id: o for o in result.outcomes}


def starts(result: SimulationResult) -> dict[object, float]:
    """Start time of every job, keyed by job id."""
    return {o.job.id: o.start_s for o in result.outcomes}


#: The head of a SimGrid platform file as SimGrid 3.32 asks for it.
SIMGRID_HEAD = ("<?xml version='1.0'?>\n"
                "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n")


#: Prologs of a SimGrid file (before ``<platform>``) that SimGrid 3.32 reads, and those it
#: refuses with the error it prints (checked against the binary: test_real_batsim_doctype.py).
SIMGRID_PROLOGS_READ = {
    "simgrid.org": SIMGRID_HEAD,
    "gforge, no XML declaration": '<!DOCTYPE platform SYSTEM '
                                  '"http://simgrid.gforge.inria.fr/simgrid/simgrid.dtd">\n',
    "single quotes and a comment": "<?xml version='1.0'?>\n<!-- made by hand -->\n"
                                   "<!DOCTYPE  platform  SYSTEM 'https://simgrid.org/simgrid.dtd' >\n",
}
SIMGRID_PROLOGS_REFUSED = {
    "no document type": ("<?xml version='1.0'?>\n", "Unexpected character"),
    "another system id": ("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"simgrid.dtd\">\n",
                          "Bad declaration"),
    "http simgrid.org": ('<!DOCTYPE platform SYSTEM "http://simgrid.org/simgrid.dtd">\n',
                         "Bad declaration"),
    "another root name": ('<!DOCTYPE plat SYSTEM "https://simgrid.org/simgrid.dtd">\n',
                          "Bad declaration"),
    "no system id": ("<?xml version='1.0'?>\n<!DOCTYPE platform>\n", "Bad declaration"),
    "a public id": ('<!DOCTYPE platform PUBLIC "-//x" "https://simgrid.org/simgrid.dtd">\n',
                    "Bad declaration"),
}


def write_platform(folder: Path, text: str) -> Path:
    """``text`` written to ``folder/platform.xml``; its path."""
    path = folder / "platform.xml"
    path.write_text(text)
    return path


def simgrid_zone(body: str) -> str:
    """A SimGrid 4.1 platform of one Full zone: ``master_host`` and ``body`` (hosts, routes)."""
    return (f'{SIMGRID_HEAD}<platform version="4.1"><zone id="z" routing="Full">\n'
            f'<host id="master_host" speed="1Gf"/>\n{body}\n</zone></platform>\n')


def wattage(text: str) -> str:
    """A host's ``wattage_per_state`` property (``"95:200, 93:170"``)."""
    return f'<prop id="wattage_per_state" value="{text}"/>'
