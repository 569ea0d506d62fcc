"""The type library: named processor, node and network types, and the JSON checks they share.

The library shipped with hdrm lives in ``hdrm/platform/data/``: ``processors.json``,
``nodes.json`` and ``networks.json``, each an object with an optional ``"description"`` and one
section (``"processor_types"``, ``"node_types"``, ``"network_types"``) mapping a type name to its
fields. A platform file uses the very same sections to define its own types, which extend the
library or replace a library type of the same name (see :mod:`hdrm.platform.loader`).

Fields (units in the names):

* processor type: ``cores`` (int), ``clock_ghz`` (base clock), ``flops_per_cycle`` (double
  precision, per core), ``mem_bw_gbps`` (GB/s shared by the processor's cores), ``tdp_w``;
  optional ``vendor``, ``model``, ``year``, ``notes``.
* node type: ``processors`` (a list of ``{"type": <processor type>, "count": n}``), ``memory_gb``;
  optional ``description``.
* network type: ``bandwidth_gbps`` (Gbit/s per node link), ``latency_us``; optional
  ``description``.
* accelerator type (``accelerators.json``, section ``"accelerator_types"``): ``memory_gb``,
  ``idle_w``, ``busy_w``, ``price_usd_per_hour``; optional ``milli_capacity`` (1,000),
  ``fp32_tflops``, ``vendor``, ``model``, ``year``, ``notes``, ``sources`` (see
  :mod:`hdrm.platform.accelerators`). A node type lists its devices as ``"accelerators":
  [{"type": <accelerator type>, "count": n}]`` (optional; none by default).

The JSON shape of each type is a dataclass (:class:`ProcessorTypeJson`, :class:`NodeTypeJson`,
:class:`NetworkTypeJson`) converted by :mod:`hdrm.typedjson`, the one JSON validation mechanism of
hdrm (options.json uses it too): every defect is a one-line :class:`~hdrm.errors.PlatformError`
naming the file, the JSON path, the bad value, what was expected and, for unknown names, the
closest valid ones.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from hdrm.errors import PlatformError
from hdrm.platform.accelerators import (
    AcceleratorCountJson, AcceleratorType, AcceleratorTypeJson, resolve_model, unknown_model)
from hdrm.platform.model import NetworkType, NodeType, ProcessorType
from hdrm.registry import suggest
from hdrm.jsonfile import keep_duplicates, read_json
from hdrm.typedjson import Context, convert_block, join_path

logger = logging.getLogger(__name__)

#: Folder of the shipped library.
DATA_DIR = Path(__file__).parent / "data"
#: Names of types and clusters: they end up in SimGrid ids, so keep them plain.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
#: What a name may hold, for messages.
NAME_RULE = "a name of letters, digits and '_.+-' (not starting with '.', '+' or '-')"

_POSITIVE = {"gt": 0}


def check_name(value: str) -> str:
    """The ``check`` of a name field: an error text, or "" for a plain name."""
    return "" if NAME_PATTERN.match(value) else f"expected {NAME_RULE}, got {value!r}"


def check_type_name(key: str) -> str:
    """The ``key_check`` of a type section: an error text, or "" for a plain name."""
    return "" if NAME_PATTERN.match(key) else f"bad type name {key!r}; expected {NAME_RULE}"


#: Metadata of a type section (a JSON object of types by name).
TYPE_SECTION = {"key_check": check_type_name}


@dataclass(frozen=True)
class ProcessorTypeJson:
    """A processor type as written in JSON (its name is its key)."""

    cores: int = field(metadata=_POSITIVE)
    clock_ghz: float = field(metadata=_POSITIVE)
    flops_per_cycle: float = field(metadata=_POSITIVE)
    mem_bw_gbps: float = field(metadata=_POSITIVE)
    tdp_w: float = field(metadata=_POSITIVE)
    vendor: str = ""
    model: str = ""
    year: int = field(default=0, metadata={"ge": 0})
    notes: str = ""

    def build(self, name: str) -> ProcessorType:
        """The model type of this name."""
        return ProcessorType(name, self.cores, self.clock_ghz, self.flops_per_cycle,
                             self.mem_bw_gbps, self.tdp_w, self.vendor, self.model, self.year)


@dataclass(frozen=True)
class ProcessorCountJson:
    """``{"type": <processor type>, "count": n}`` in a node type."""

    type: str
    count: int = field(metadata=_POSITIVE)


@dataclass(frozen=True)
class NodeTypeJson:
    """A node type as written in JSON; processor type names are checked against the library."""

    processors: tuple[ProcessorCountJson, ...] = field(metadata={"nonempty": True})
    memory_gb: float = field(metadata=_POSITIVE)
    description: str = ""
    accelerators: tuple[AcceleratorCountJson, ...] = ()

    def build(self, name: str) -> NodeType:
        """The model type of this name."""
        pairs = tuple((p.type, p.count) for p in self.processors)
        devices = tuple((a.type, a.count) for a in self.accelerators)
        return NodeType(name, pairs, self.memory_gb, self.description, devices)


@dataclass(frozen=True)
class NetworkTypeJson:
    """A network type as written in JSON."""

    bandwidth_gbps: float = field(metadata=_POSITIVE)
    latency_us: float = field(default=NetworkType.latency_us, metadata={"ge": 0})
    description: str = ""

    def build(self, name: str) -> NetworkType:
        """The model type of this name."""
        return NetworkType(name, self.bandwidth_gbps, self.latency_us, self.description)


@dataclass(frozen=True)
class ProcessorsFile:
    """``processors.json`` of a type library."""

    processor_types: Mapping[str, ProcessorTypeJson] = field(metadata=TYPE_SECTION)
    description: str = ""


@dataclass(frozen=True)
class NodesFile:
    """``nodes.json`` of a type library."""

    node_types: Mapping[str, NodeTypeJson] = field(metadata=TYPE_SECTION)
    description: str = ""


@dataclass(frozen=True)
class AcceleratorsFile:
    """``accelerators.json`` of a type library."""

    accelerator_types: Mapping[str, AcceleratorTypeJson] = field(metadata=TYPE_SECTION)
    description: str = ""


@dataclass(frozen=True)
class NetworksFile:
    """``networks.json`` of a type library."""

    network_types: Mapping[str, NetworkTypeJson] = field(metadata=TYPE_SECTION)
    description: str = ""


def build_types(section: Mapping[str, Any]) -> dict[str, Any]:
    """The model types of a converted type section, by name."""
    return {name: spec.build(name) for name, spec in section.items()}


def read_json_file(path: str | Path, what: str = "platform") -> Any:
    """Parse a JSON file, keeping track of repeated keys (reported by the conversion, with their
    JSON path).

    Raises:
        PlatformError: the file is missing (close file names suggested) or unreadable, or not
            valid JSON (with line and column).
    """
    path = Path(path)
    hint = ""
    if not path.exists() and path.parent.is_dir():
        hint = suggest(path.name, sorted(p.name for p in path.parent.glob("*.json")))
    return read_json(path, f"{what} file", PlatformError, keep_duplicates,
                     f"{hint}give the path of an existing {what} JSON file")


@dataclass(frozen=True)
class TypeLibrary:
    """Processor, node, network and accelerator types by name (read-only mappings)."""

    processor_types: Mapping[str, ProcessorType]
    node_types: Mapping[str, NodeType]
    network_types: Mapping[str, NetworkType]
    accelerator_types: Mapping[str, AcceleratorType] = field(
        default_factory=lambda: MappingProxyType({}))

    def extended(
        self,
        processor_types: Mapping[str, ProcessorType] = {},
        node_types: Mapping[str, NodeType] = {},
        network_types: Mapping[str, NetworkType] = {},
        accelerator_types: Mapping[str, AcceleratorType] = {},
    ) -> "TypeLibrary":
        """A new library with these types added; a type of an existing name replaces it."""
        for kind, new, old in (
            ("processor", processor_types, self.processor_types),
            ("node", node_types, self.node_types),
            ("network", network_types, self.network_types),
            ("accelerator", accelerator_types, self.accelerator_types),
        ):
            for name in sorted(set(new) & set(old)):
                logger.info("%s type %r overrides the library type", kind, name)
        return TypeLibrary(
            MappingProxyType({**self.processor_types, **processor_types}),
            MappingProxyType({**self.node_types, **node_types}),
            MappingProxyType({**self.network_types, **network_types}),
            MappingProxyType({**self.accelerator_types, **accelerator_types}),
        )

    def processor_type(self, name: str, ctx: Context, path: str) -> ProcessorType:
        """Look up a processor type; an unknown name is a PlatformError at ``path``."""
        return _lookup(self.processor_types, "processor type", name, ctx, path)

    def node_type(self, name: str, ctx: Context, path: str) -> NodeType:
        """Look up a node type; an unknown name is a PlatformError at ``path``."""
        return _lookup(self.node_types, "node type", name, ctx, path)

    def network_type(self, name: str, ctx: Context, path: str) -> NetworkType:
        """Look up a network type; an unknown name is a PlatformError at ``path``."""
        return _lookup(self.network_types, "network type", name, ctx, path)

    def accelerator_type(self, name: str, ctx: Context, path: str) -> AcceleratorType:
        """Look up an accelerator type by its key or a spelling of its model
        (:func:`~hdrm.platform.accelerators.resolve_model`: ``NVIDIA A100-SXM4-80GB`` is
        ``A100M80``); an unknown name is a PlatformError at ``path`` suggesting the closest."""
        key = resolve_model(name, self.accelerator_types)
        if key is None:
            raise ctx.fail(path, unknown_model(name, self.accelerator_types, "accelerator type")
                           + " (or define it in the file's accelerator_types)")
        return self.accelerator_types[key]

    def resolve_node_type(self, node_type: NodeType, ctx: Context, path: str) -> NodeType:
        """``node_type`` with its processor and accelerator types checked (``path``: the node
        type) and its accelerators named by their library keys (a spelling such as
        ``nvidia.com/gpu.product``'s ``NVIDIA-H100-80GB-HBM3`` becomes ``H100``)."""
        for i, (ptype, _) in enumerate(node_type.processors):
            self.processor_type(ptype, ctx, f"{join_path(path, 'processors')}[{i}].type")
        devices = tuple(
            (self.accelerator_type(atype, ctx,
                                   f"{join_path(path, 'accelerators')}[{i}].type").name, count)
            for i, (atype, count) in enumerate(node_type.accelerators))
        if devices == node_type.accelerators:
            return node_type
        return dataclasses.replace(node_type, accelerators=devices)

    def check_node_type(self, node_type: NodeType, ctx: Context, path: str) -> None:
        """Check that every processor and accelerator type a node type names exists (``path``:
        the node type)."""
        self.resolve_node_type(node_type, ctx, path)


def _lookup(types: Mapping[str, Any], kind: str, name: str, ctx: Context, path: str) -> Any:
    try:
        return types[name]
    except KeyError:
        choices = sorted(types)
        raise ctx.fail(
            path, f"unknown {kind} {name!r}; {suggest(name, choices)}choose one of: "
            f"{', '.join(choices)} (or define it in the file)"
        ) from None


_LIBRARY_FILES = (
    ("processor_types", "processors.json", ProcessorsFile),
    ("node_types", "nodes.json", NodesFile),
    ("network_types", "networks.json", NetworksFile),
)


#: The optional file of a type library: a library without it has no accelerator types.
_ACCELERATORS_FILE = ("accelerator_types", "accelerators.json", AcceleratorsFile)


def load_library(directory: str | Path = DATA_DIR) -> TypeLibrary:
    """Read a type library from ``processors.json``, ``nodes.json``, ``networks.json`` and,
    when present, ``accelerators.json``.

    Raises:
        PlatformError: a file is missing or malformed, or a node type names an unknown processor
            or accelerator type.
    """
    sections: dict[str, dict[str, Any]] = {"accelerator_types": {}}
    contexts: dict[str, Context] = {}
    files = _LIBRARY_FILES
    if (Path(directory) / _ACCELERATORS_FILE[1]).exists():
        files = files + (_ACCELERATORS_FILE,)
    for section, filename, cls in files:
        path = Path(directory) / filename
        contexts[section] = Context(str(path), error=PlatformError)
        doc = convert_block(read_json_file(path, what="type library"), cls, "", contexts[section])
        sections[section] = build_types(getattr(doc, section))
    library = TypeLibrary(
        MappingProxyType(sections["processor_types"]),
        MappingProxyType(sections["node_types"]),
        MappingProxyType(sections["network_types"]),
        MappingProxyType(sections["accelerator_types"]),
    )
    resolved = {name: library.resolve_node_type(node_type, contexts["node_types"],
                                                join_path("node_types", name))
                for name, node_type in library.node_types.items()}
    return dataclasses.replace(library, node_types=MappingProxyType(resolved))


@functools.lru_cache(maxsize=1)
def default_library() -> TypeLibrary:
    """The library shipped with hdrm (read once, then cached; the result is read-only)."""
    return load_library(DATA_DIR)
