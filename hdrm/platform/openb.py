"""A platform JSON document from an openb node list (``hdrm platform from-openb``).

openb gives each node's CPU in milli-cores, its memory in MiB and its GPUs (count and model), not
its processor model. Each distinct (CPU, memory, GPUs, model) shape becomes a node type and each
CPU count a processor type ``openb_cpu<N>`` of N cores whose speed, bandwidth and power are
stated assumptions (2.5 GHz, 16 flops per cycle, 4 GB/s and 4 W per core: a 2019 server core);
GPUs are accelerators of the library's models (K80 ... G3, A100 ... MI300X; a model named as
traces and cluster tools name it, ``NVIDIA A100-SXM4-80GB``, through the alias table
:data:`hdrm.platform.accelerators.ALIASES`, becomes the library's key, ``A100M80``), or of the
models of a user file (:func:`library_with_accelerator_types`, ``--accelerator-types``; such
models, and any that differs from the shipped one, are written into the document's own
``accelerator_types``, so the document stands alone). Consecutive nodes of one shape form one
node group, so the nodes keep the file's order, and each group lists its nodes' names as the
trace gives them (``openb-node-0042``), so the platform and every output name nodes as the trace
does. Names must be unique and plain (letters, digits and ``_.+-``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping, Sequence

from hdrm.errors import PlatformError
from hdrm.platform.accelerators import (
    AcceleratorType, load_accelerator_types, resolve_model, unknown_model)
from hdrm.platform.library import TypeLibrary, check_name, default_library
from hdrm.workload.openb import OpenbNode

#: Assumed figures of one openb CPU core (the trace does not name the processors).
CORE_CLOCK_GHZ = 2.5
CORE_FLOPS_PER_CYCLE = 16
CORE_MEM_BW_GBPS = 4.0
CORE_TDP_W = 4.0


def _shape_name(node: OpenbNode, model: str) -> str:
    """The node type's name: cores, memory and GPUs. Memory is in GiB when it is whole GiB and in
    MiB otherwise, so that two shapes never share a name (one type per shape: a node list with
    1,025 and 1,024 MiB nodes made both of the first's 1,025 MiB when the name was in whole
    GiB)."""
    gpus = f"_{node.gpus}x{model}" if node.gpus else ""
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


def _model(name: str, models: Mapping[str, AcceleratorType], where: str) -> str:
    """The library key of a node's GPU model (itself, or its alias's key).

    Raises:
        PlatformError: an unknown model, in one line: the known models and the two ways to add
            one (a file of types, or the model's key where the trace has a spelling of it).
    """
    key = resolve_model(name, models)
    if key is None:
        raise PlatformError(
            f"{where}: {unknown_model(name, models, column=' (column model)')}; give its "
            "figures with --accelerator-types FILE.json (the shape of "
            "hdrm/platform/data/accelerators.json) or write a known model's name")
    return key


def library_with_accelerator_types(path: str | Path | None) -> TypeLibrary:
    """The shipped library with the accelerator types of the file at ``path`` added (a type of
    a library name replaces it); the shipped library when ``path`` is None.

    Raises:
        PlatformError: the file is missing or malformed (see
            :func:`~hdrm.platform.accelerators.load_accelerator_types`).
    """
    if path is None:
        return default_library()
    return default_library().extended(accelerator_types=load_accelerator_types(path))


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
        PlatformError: a node's CPU is not whole cores, its GPU model is neither a library
            key nor an alias of one (the message names the node, the known models and
            ``--accelerator-types``), or its name is not plain or repeats an earlier node's.
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
        model = _model(node.model, models, where) if node.gpus else ""
        cores = node.cpu_milli // 1000
        ptype = f"openb_cpu{cores}"
        processor_types.setdefault(ptype, _processor_type(cores))
        shape = _shape_name(node, model)
        spec: dict[str, Any] = {"processors": [{"type": ptype, "count": 1}],
                                "memory_gb": node.memory_mib / 1024}
        if node.gpus:
            spec["accelerators"] = [{"type": model, "count": node.gpus}]
        node_types.setdefault(shape, spec)
        if groups and groups[-1]["type"] == shape:
            groups[-1]["count"] += 1
            groups[-1]["names"].append(node.name)
        else:
            groups.append({"type": shape, "count": 1, "names": [node.name]})
    doc = {
        "name": name,
        "description": f"openb GPU cluster from {Path(source).name}: {len(nodes)} nodes",
        "processor_types": processor_types,
        "node_types": node_types,
        "clusters": [{"name": "openb", "network": "ethernet_25g", "nodes": groups}],
    }
    own = _own_types(node_types, models)
    if own:
        doc["accelerator_types"] = own
    return doc


def _own_types(node_types: dict[str, Any], models: Mapping[str, AcceleratorType]
               ) -> dict[str, Any]:
    """The models the nodes use that the shipped library lacks or defines otherwise (a user
    file's), as the platform document's own ``accelerator_types``: the document stands alone."""
    shipped = default_library().accelerator_types
    used = sorted({a["type"] for spec in node_types.values() for a in spec.get("accelerators", ())})
    own = {}
    for key in used:
        if shipped.get(key) != models[key]:
            fields = dataclasses.asdict(models[key])
            del fields["name"]
            own[key] = fields
    return own
