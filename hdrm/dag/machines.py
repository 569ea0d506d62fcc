"""Processors for DAG scheduling taken from an hdrm platform (``platforms/*.json``).

Every core of the platform is one processor (it runs one task at a time), named
``NODE/cCORE`` (``c0-n1/c2``: the node's name and the core's index in the node). Its speed is its
GFLOP/s over the platform's reference speed (the mean core's, as for trace run times), so a task
recorded at ``r`` seconds takes ``r / speed`` there. Transfers between two cores:

* of the same node: through memory, at the lower memory bandwidth of their two processors
  (GB/s x 1000 = MB/s), no latency;
* of two nodes of one cluster: at the cluster network's bandwidth (Gbit/s x 1000 / 8 = MB/s)
  with its latency;
* of two clusters: at the lower of the two networks' bandwidths, with the sum of their latencies.

The network is a full matrix, so platforms are limited to :data:`MAX_PROCESSORS` cores.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from hdrm.dag.model import Network
from hdrm.errors import ConfigError
from hdrm.platform.loader import load_platform
from hdrm.platform.model import Platform

logger = logging.getLogger(__name__)

#: The largest platform, in cores, that DAG scheduling takes (its network is a full matrix).
MAX_PROCESSORS = 1024


@dataclass(frozen=True)
class Machines:
    """Processors for DAG scheduling: a network and a relative speed per processor.

    Attributes:
        network: the processors and the links between them.
        speeds: per processor, its speed relative to the reference machine.
    """

    network: Network
    speeds: tuple[float, ...]


def machines_from_platform(platform: Platform) -> Machines:
    """One processor per core of ``platform`` (see the module's description)."""
    n = platform.nb_cores
    if n > MAX_PROCESSORS:
        raise ConfigError(f"platform {platform.name!r}: {n} cores; DAG scheduling takes at most "
                          f"{MAX_PROCESSORS} (one processor per core): use a smaller platform")
    node_of, proc_of = platform.core_node, platform.core_processor
    link = [_cluster_link(platform, c) for c in range(len(platform.clusters))]
    names, first = [], {}
    for core in range(n):
        node = platform.nodes[node_of[core]]
        first.setdefault(node.id, core)
        names.append(f"{node.name}/c{core - first[node.id]}")
    memory = [bw * 1000.0 for bw in platform.processor_mem_bw_gbps]
    cluster_of = [platform.nodes[node_of[c]].cluster_id for c in range(n)]
    bandwidth, latency = [], []
    for a in range(n):
        row_bw, row_lat = [], []
        for b in range(n):
            if node_of[a] == node_of[b]:
                row_bw.append(min(memory[proc_of[a]], memory[proc_of[b]]))
                row_lat.append(0.0)
            else:
                (bw_a, lat_a), (bw_b, lat_b) = link[cluster_of[a]], link[cluster_of[b]]
                same = cluster_of[a] == cluster_of[b]
                row_bw.append(bw_a if same else min(bw_a, bw_b))
                row_lat.append(lat_a if same else lat_a + lat_b)
        bandwidth.append(tuple(row_bw))
        latency.append(tuple(row_lat))
    reference = platform.reference_gflops
    speeds = tuple(g / reference for g in platform.core_gflops)
    return Machines(Network(tuple(names), tuple(bandwidth), tuple(latency)), speeds)


def _cluster_link(platform: Platform, cluster: int) -> tuple[float, float]:
    """(MB/s, s) of a cluster's network."""
    net = platform.clusters[cluster].network
    return net.bandwidth_gbps * 1000.0 / 8.0, net.latency_us / 1e6


def load_machines(path: str | Path) -> Machines:
    """Read an hdrm platform JSON file and make its cores DAG processors."""
    return machines_from_platform(load_platform(path))
