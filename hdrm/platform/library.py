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

This module also holds the small JSON checking kit (:class:`JsonPath`, :func:`read_json_file`,
:func:`check_object`) that turns every defect into a one-line :class:`~hdrm.errors.PlatformError`
naming the file, the JSON path, the bad value and the fix.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping

from hdrm.errors import PlatformError
from hdrm.platform.model import NetworkType, NodeType, ProcessorType
from hdrm.registry import suggest
from hdrm.typedjson import read_json

logger = logging.getLogger(__name__)

#: Folder of the shipped library.
DATA_DIR = Path(__file__).parent / "data"
#: Names of types and clusters: they end up in SimGrid ids, so keep them plain.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


class JsonObject(dict):
    """A JSON object that remembers the keys the file repeated (``json`` keeps only the last)."""

    duplicate_keys: tuple[str, ...] = ()


def _object_pairs(pairs: list[tuple[str, Any]]) -> JsonObject:
    obj = JsonObject(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        repeated = []
        for key, _ in pairs:
            if key in seen:
                repeated.append(key)
            seen.add(key)
        obj.duplicate_keys = tuple(repeated)
    return obj


@dataclass(frozen=True)
class JsonPath:
    """Where a value sits: the file (``source``) and the JSON path inside it."""

    source: str
    path: str = ""

    def key(self, name: str) -> "JsonPath":
        """The path of member ``name`` of this object."""
        part = name if NAME_PATTERN.match(name) else json.dumps(name)
        return JsonPath(self.source, f"{self.path}.{part}" if self.path else part)

    def index(self, i: int) -> "JsonPath":
        """The path of item ``i`` of this list."""
        return JsonPath(self.source, f"{self.path}[{i}]")

    def error(self, problem: str) -> PlatformError:
        """A PlatformError ``"<file>: <path>: <problem>"``."""
        where = f"{self.source}: {self.path}" if self.path else self.source
        return PlatformError(f"{where}: {problem}")

    def __str__(self) -> str:
        return self.path or "(top level)"


def read_json_file(path: str | Path, what: str = "platform") -> Any:
    """Parse a JSON file, keeping track of repeated keys (:attr:`JsonObject.duplicate_keys`).

    Raises:
        PlatformError: the file is missing or unreadable, or not valid JSON (with line and column).
    """
    path = Path(path)
    hint = ""
    if not path.exists() and path.parent.is_dir():
        hint = suggest(path.name, sorted(p.name for p in path.parent.glob("*.json")))
    return read_json(path, f"{what} file", PlatformError, _object_pairs,
                     f"{hint}give the path of an existing {what} JSON file")


def json_type(value: Any) -> str:
    """The JSON name of a value's type, with an article ("a string", "an object", "null")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else type(value).__name__


def _shown(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


@dataclass(frozen=True)
class Kind:
    """What a field must hold: a description for messages and a test."""

    description: str
    test: Callable[[Any], bool] = field(repr=False)
    convert: Callable[[Any], Any] = field(default=lambda v: v, repr=False)

    def check(self, value: Any, at: JsonPath) -> Any:
        """Return ``value`` (numbers as float) if it passes; else raise a PlatformError."""
        if not self.test(value):
            raise at.error(f"expected {self.description}, got {_shown(value)} ({json_type(value)})")
        return self.convert(value)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


POSITIVE_INT = Kind("a positive integer", lambda v: _is_int(v) and v > 0)
POSITIVE_NUMBER = Kind("a positive number", lambda v: _is_number(v) and v > 0, float)
NON_NEGATIVE_NUMBER = Kind("a number >= 0", lambda v: _is_number(v) and v >= 0, float)
YEAR = Kind("a year (an integer >= 0)", lambda v: _is_int(v) and v >= 0)
STRING = Kind("a string", lambda v: isinstance(v, str))
NAME = Kind(
    "a name of letters, digits and '_.+-' (not starting with '.', '+' or '-')",
    lambda v: isinstance(v, str) and bool(NAME_PATTERN.match(v)),
)
OBJECT = Kind("an object", lambda v: isinstance(v, dict))
NON_EMPTY_LIST = Kind("a non-empty list", lambda v: isinstance(v, list) and len(v) > 0)


def check_object(
    value: Any, at: JsonPath, required: Mapping[str, Kind], optional: Mapping[str, Kind] = {}
) -> dict[str, Any]:
    """Check a JSON object's keys and field kinds; return its members.

    Raises:
        PlatformError: not an object, a repeated key, an unknown key (closest names suggested), a
            missing required field or a field of the wrong kind, each naming the JSON path.
    """
    OBJECT.check(value, at)
    for key in getattr(value, "duplicate_keys", ()):
        raise at.error(f"duplicate key {key!r}; each key may appear once in an object")
    valid = [*required, *optional]
    for key in value:
        if key not in valid:
            raise at.error(
                f"unknown key {key!r}; {suggest(key, valid)}valid keys: {', '.join(valid)}"
            )
    for key, kind in required.items():
        if key not in value:
            raise at.error(f"missing field {key!r} ({kind.description}); add it")
    members = dict(value)
    for key, kind in (*required.items(), *optional.items()):
        if key in members:
            members[key] = kind.check(members[key], at.key(key))
    return members


_PROCESSOR_FIELDS = {
    "cores": POSITIVE_INT,
    "clock_ghz": POSITIVE_NUMBER,
    "flops_per_cycle": POSITIVE_NUMBER,
    "mem_bw_gbps": POSITIVE_NUMBER,
    "tdp_w": POSITIVE_NUMBER,
}
_PROCESSOR_OPTIONAL = {"vendor": STRING, "model": STRING, "year": YEAR, "notes": STRING}


def processor_type_from_json(name: str, value: Any, at: JsonPath) -> ProcessorType:
    """Build a ProcessorType from its JSON object (see the module docstring for the fields)."""
    data = check_object(value, at, _PROCESSOR_FIELDS, _PROCESSOR_OPTIONAL)
    data.pop("notes", None)
    return ProcessorType(name=name, **data)


def node_type_from_json(name: str, value: Any, at: JsonPath) -> NodeType:
    """Build a NodeType from its JSON object; processor type names are checked later."""
    data = check_object(
        value,
        at,
        {"processors": NON_EMPTY_LIST, "memory_gb": POSITIVE_NUMBER},
        {"description": STRING},
    )
    pairs = []
    for i, item in enumerate(data["processors"]):
        entry = check_object(
            item, at.key("processors").index(i), {"type": STRING, "count": POSITIVE_INT}
        )
        pairs.append((entry["type"], entry["count"]))
    return NodeType(name, tuple(pairs), data["memory_gb"], data.get("description", ""))


def network_type_from_json(name: str, value: Any, at: JsonPath) -> NetworkType:
    """Build a NetworkType from its JSON object."""
    data = check_object(
        value,
        at,
        {"bandwidth_gbps": POSITIVE_NUMBER},
        {"latency_us": NON_NEGATIVE_NUMBER, "description": STRING},
    )
    return NetworkType(name, **data)


#: Section name -> (what it holds, builder).
SECTIONS: dict[str, tuple[str, Callable[[str, Any, JsonPath], Any]]] = {
    "processor_types": ("processor type", processor_type_from_json),
    "node_types": ("node type", node_type_from_json),
    "network_types": ("network type", network_type_from_json),
}


def types_from_json(section: str, value: Any, at: JsonPath) -> dict[str, Any]:
    """Build every type of one section (``"processor_types"``, ...) of a JSON document."""
    _, build = SECTIONS[section]
    OBJECT.check(value, at)
    for key in getattr(value, "duplicate_keys", ()):
        raise at.error(f"duplicate type name {key!r}; define each type once")
    types = {}
    for name, entry in value.items():
        if not NAME_PATTERN.match(name):
            raise at.key(name).error(f"bad type name {name!r}; expected {NAME.description}")
        types[name] = build(name, entry, at.key(name))
    return types


@dataclass(frozen=True)
class TypeLibrary:
    """Processor, node and network types by name (read-only mappings)."""

    processor_types: Mapping[str, ProcessorType]
    node_types: Mapping[str, NodeType]
    network_types: Mapping[str, NetworkType]

    def extended(
        self,
        processor_types: Mapping[str, ProcessorType] = {},
        node_types: Mapping[str, NodeType] = {},
        network_types: Mapping[str, NetworkType] = {},
    ) -> "TypeLibrary":
        """A new library with these types added; a type of an existing name replaces it."""
        for kind, new, old in (
            ("processor", processor_types, self.processor_types),
            ("node", node_types, self.node_types),
            ("network", network_types, self.network_types),
        ):
            for name in sorted(set(new) & set(old)):
                logger.info("%s type %r overrides the library type", kind, name)
        return TypeLibrary(
            MappingProxyType({**self.processor_types, **processor_types}),
            MappingProxyType({**self.node_types, **node_types}),
            MappingProxyType({**self.network_types, **network_types}),
        )

    def processor_type(self, name: Any, at: JsonPath) -> ProcessorType:
        """Look up a processor type; unknown names raise a PlatformError at ``at``."""
        return _lookup(self.processor_types, "processor type", name, at)

    def node_type(self, name: Any, at: JsonPath) -> NodeType:
        """Look up a node type; unknown names raise a PlatformError at ``at``."""
        return _lookup(self.node_types, "node type", name, at)

    def network_type(self, name: Any, at: JsonPath) -> NetworkType:
        """Look up a network type; unknown names raise a PlatformError at ``at``."""
        return _lookup(self.network_types, "network type", name, at)

    def check_node_type(self, node_type: NodeType, at: JsonPath) -> None:
        """Check that every processor type a node type names exists (``at``: the node type)."""
        for i, (ptype, _) in enumerate(node_type.processors):
            self.processor_type(ptype, at.key("processors").index(i).key("type"))


def _lookup(types: Mapping[str, Any], kind: str, name: Any, at: JsonPath) -> Any:
    STRING.check(name, at)
    try:
        return types[name]
    except KeyError:
        choices = sorted(types)
        raise at.error(
            f"unknown {kind} {name!r}; {suggest(name, choices)}choose one of: {', '.join(choices)}"
            " (or define it in the file)"
        ) from None


_LIBRARY_FILES = {
    "processor_types": "processors.json",
    "node_types": "nodes.json",
    "network_types": "networks.json",
}


def load_library(directory: str | Path = DATA_DIR) -> TypeLibrary:
    """Read a type library from ``processors.json``, ``nodes.json`` and ``networks.json``.

    Raises:
        PlatformError: a file is missing or malformed, or a node type names an unknown processor.
    """
    sections: dict[str, dict[str, Any]] = {}
    paths = {}
    for section, filename in _LIBRARY_FILES.items():
        paths[section] = Path(directory) / filename
        doc = read_json_file(paths[section], what="type library")
        at = JsonPath(str(paths[section]))
        check_object(doc, at, {section: OBJECT}, {"description": STRING})
        sections[section] = types_from_json(section, doc[section], at.key(section))
    library = TypeLibrary(
        MappingProxyType(sections["processor_types"]),
        MappingProxyType(sections["node_types"]),
        MappingProxyType(sections["network_types"]),
    )
    at = JsonPath(str(paths["node_types"]), "node_types")
    for name, node_type in library.node_types.items():
        library.check_node_type(node_type, at.key(name))
    return library


@functools.lru_cache(maxsize=1)
def default_library() -> TypeLibrary:
    """The library shipped with hdrm (read once, then cached; the result is read-only)."""
    return load_library(DATA_DIR)
