"""Figures that describe a platform at a glance, for ``hdrm platform`` and for reports.

:func:`summarize_platform` returns a frozen :class:`PlatformSummary`; ``dataclasses.asdict`` turns
it into plain JSON-ready data. Powers come from :mod:`hdrm.platform.power`: ``full_power_w`` with
every core running, ``idle_power_w`` with every core idle in an awake processor and
``sleep_power_w`` with every processor asleep.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from hdrm.platform import power
from hdrm.platform.model import Platform


@dataclass(frozen=True)
class ProcessorTypeSummary:
    """The share of one processor type in a platform."""

    name: str
    vendor: str
    model: str
    nb_processors: int
    nb_cores: int
    core_gflops: float
    total_gflops: float
    mem_bw_gbps: float
    full_power_w: float


@dataclass(frozen=True)
class ClusterSummary:
    """One cluster: its network and size."""

    name: str
    network: str
    nb_nodes: int
    nb_cores: int
    total_gflops: float
    memory_mb: float


@dataclass(frozen=True)
class PlatformSummary:
    """Counts and totals of a whole platform (units in the names)."""

    name: str
    source: str
    nb_clusters: int
    nb_nodes: int
    nb_processors: int
    nb_cores: int
    total_gflops: float
    reference_gflops: float
    total_memory_mb: float
    full_power_w: float
    idle_power_w: float
    sleep_power_w: float
    is_homogeneous: bool
    processor_types: tuple[ProcessorTypeSummary, ...]
    clusters: tuple[ClusterSummary, ...]


def _processor_types(platform: Platform) -> tuple[ProcessorTypeSummary, ...]:
    """One entry per processor type, in order of first appearance."""
    groups: dict[str, list] = {}
    for proc in platform.processors:
        groups.setdefault(proc.type.name, []).append(proc)
    rows = []
    for name, procs in groups.items():
        ptype = procs[0].type
        nb_cores = sum(len(p.core_ids) for p in procs)
        rows.append(
            ProcessorTypeSummary(
                name=name,
                vendor=ptype.vendor,
                model=ptype.model,
                nb_processors=len(procs),
                nb_cores=nb_cores,
                core_gflops=ptype.core_gflops,
                total_gflops=nb_cores * ptype.core_gflops,
                mem_bw_gbps=ptype.mem_bw_gbps,
                full_power_w=nb_cores * ptype.core_power_w,
            )
        )
    return tuple(rows)


def _clusters(platform: Platform) -> tuple[ClusterSummary, ...]:
    rows = []
    for cluster in platform.clusters:
        spans = _spans(platform.nodes[n].core_ids for n in cluster.node_ids)
        gflops = platform.core_gflops
        rows.append(
            ClusterSummary(
                name=cluster.name,
                network=cluster.network.name,
                nb_nodes=len(cluster.node_ids),
                nb_cores=sum(len(ids) for ids in spans),
                total_gflops=math.fsum(itertools.chain.from_iterable(
                    gflops[ids.start:ids.stop] if type(ids) is range else map(gflops.__getitem__, ids)
                    for ids in spans)),
                memory_mb=math.fsum(platform.node_memory_mb[n] for n in cluster.node_ids),
            )
        )
    return tuple(rows)


def _spans(groups: Iterable[Sequence[int]]) -> list[Sequence[int]]:
    """The cores of ``groups`` in order, consecutive ranges joined (a cluster of a platform
    file: one range); other groups as they are."""
    spans: list[Sequence[int]] = []
    for ids in groups:
        if type(ids) is range and ids.step == 1 and spans and type(spans[-1]) is range \
                and spans[-1].stop == ids.start:
            spans[-1] = range(spans[-1].start, ids.stop)
        elif type(ids) is range and ids.step != 1:
            spans.append(tuple(ids))
        else:
            spans.append(ids)
    return spans


def _state_power_w(platform: Platform, state: int) -> float:
    table = platform.core_power_w
    of = {w: power.state_power_w(w)[state] for w in set(table)}  # once per distinct power
    return math.fsum(map(of.__getitem__, table))


def summarize_platform(platform: Platform) -> PlatformSummary:
    """Count and total the resources of ``platform``."""
    return PlatformSummary(
        name=platform.name,
        source=platform.source,
        nb_clusters=len(platform.clusters),
        nb_nodes=len(platform.nodes),
        nb_processors=len(platform.processors),
        nb_cores=platform.nb_cores,
        total_gflops=platform.total_gflops,
        reference_gflops=platform.reference_gflops,
        total_memory_mb=platform.total_memory_mb,
        full_power_w=platform.total_power_w,
        idle_power_w=_state_power_w(platform, power.IDLE),
        sleep_power_w=_state_power_w(platform, power.SLEEPING),
        is_homogeneous=platform.is_homogeneous,
        processor_types=_processor_types(platform),
        clusters=_clusters(platform),
    )
