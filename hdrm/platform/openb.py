"""A platform JSON document from an openb node list (``hdrm platform from-openb``).

openb gives each node's CPU in milli-cores, its memory in MiB and its GPUs (count and model), not
its processor model. Each distinct (CPU, memory, GPUs, model) shape becomes a node type and each
CPU count a processor type ``openb_cpu<N>`` of N cores whose speed, bandwidth and power are
stated assumptions (2.5 GHz, 16 flops per cycle, 4 GB/s and 4 W per core: a 2019 server core);
GPUs are accelerators of the library's models (K80 ... G3). Consecutive nodes of one shape form
one node group, so the nodes keep the file's order, and each group lists its nodes' names as the
trace gives them (``openb-node-0042``), so the platform and every output name nodes as the trace
does. Names must be unique and plain (letters, digits and ``_.+-``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from hdrm.errors import PlatformError
from hdrm.platform.library import TypeLibrary, check_name, default_library
from hdrm.workload.openb import OpenbNode

#: Assumed figures of one openb CPU core (the trace does not name the processors).
CORE_CLOCK_GHZ = 2.5
CORE_FLOPS_PER_CYCLE = 16
CORE_MEM_BW_GBPS = 4.0
CORE_TDP_W = 4.0


def _shape_name(node: OpenbNode) -> str:
    """The node type's name: cores, memory and GPUs. Memory is in GiB when it is whole GiB and in
    MiB otherwise, so that two shapes never share a name (one type per shape: a node list with
    1,025 and 1,024 MiB nodes made both of the first's 1,025 MiB when the name was in whole
    GiB)."""
    gpus = f"_{node.gpus}x{node.model}" if node.gpus else ""
    mib = node.memory_mib
    memory = f"{mib // 1024}g" if mib % 1024 == 0 else f"{mib}m"
    return f"openb_c{node.cpu_milli // 1000}_m{memory}{gpus}"


def _check_node_name(name: str, i: int, first: dict[str, int], where: str) -> None:
    """Refuse a name that is not plain or that an earlier node (``first``) has; record it."""
    message = check_name(name)
    if message:
        raise PlatformError(f"{where}: node name (column sn): {message}; rename the node")
    if name in first:
        raise PlatformError(f"{where}: node name {name!r} (column sn) is also node "
                            f"{first[name]}'s; give each node a unique name")
    first[name] = i


def _processor_type(cores: int) -> dict[str, Any]:
    return {"cores": cores, "clock_ghz": CORE_CLOCK_GHZ, "flops_per_cycle": CORE_FLOPS_PER_CYCLE,
            "mem_bw_gbps": CORE_MEM_BW_GBPS * cores, "tdp_w": CORE_TDP_W * cores,
            "notes": "assumption: openb gives CPU counts only"}


def platform_json_from_openb(
    nodes: Sequence[OpenbNode], name: str, source: str = "<openb>",
    library: TypeLibrary | None = None,
) -> dict[str, Any]:
    """The platform document of these nodes: one cluster, node groups in file order.

    Raises:
        PlatformError: a node's CPU is not whole cores, its GPU model is not in the library
            (the message names the node and the known models), or its name is not plain or
            repeats an earlier node's.
    """
    models = (library or default_library()).accelerator_types
    processor_types: dict[str, Any] = {}
    node_types: dict[str, Any] = {}
    groups: list[dict[str, Any]] = []
    first: dict[str, int] = {}
    for i, node in enumerate(nodes):
        where = f"{source}: node {i} ({node.name})"
        _check_node_name(node.name, i, first, where)
        if node.cpu_milli % 1000:
            raise PlatformError(f"{where}: cpu_milli {node.cpu_milli} is not whole cores; "
                                "give node CPUs as multiples of 1000")
        if node.gpus and node.model not in models:
            raise PlatformError(f"{where}: unknown GPU model {node.model!r}; known: "
                                f"{', '.join(sorted(models))} (or add it to the type library)")
        cores = node.cpu_milli // 1000
        ptype = f"openb_cpu{cores}"
        processor_types.setdefault(ptype, _processor_type(cores))
        shape = _shape_name(node)
        spec: dict[str, Any] = {"processors": [{"type": ptype, "count": 1}],
                                "memory_gb": node.memory_mib / 1024}
        if node.gpus:
            spec["accelerators"] = [{"type": node.model, "count": node.gpus}]
        node_types.setdefault(shape, spec)
        if groups and groups[-1]["type"] == shape:
            groups[-1]["count"] += 1
            groups[-1]["names"].append(node.name)
        else:
            groups.append({"type": shape, "count": 1, "names": [node.name]})
    return {
        "name": name,
        "description": f"openb GPU cluster from {Path(source).name}: {len(nodes)} nodes",
        "processor_types": processor_types,
        "node_types": node_types,
        "clusters": [{"name": "openb", "network": "ethernet_25g", "nodes": groups}],
    }
