"""``overutilizations.json``: where and when the cluster ran short or was oversubscribed.

The built-in engine writes::

    {"core_shortage":   [{"time": t, "job_id": "...", "requested": n, "available": m}],
     "memory_shortage": [{"time": t, "job_id": "...", "node_id": k,
                          "requested_mb": x, "available_mb": y}],
     "bandwidth":       [{"processor_id": p, "node_id": k, "start": t0, "end": t1,
                          "max_demand_gbps": d, "capacity_gbps": c, "cores": "8-15"}]}

(``cores``, the processor's cores as an interval set, is optional when reading.)

Times in seconds. A span still open when the file was written has ``"end": null`` (read back as
``math.inf``). A missing section reads as empty; an unknown one is logged and ignored, so newer
files stay readable.
"""

from __future__ import annotations

import json
import json.encoder
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from hdrm.durable import replacing
from hdrm.errors import ConfigError
from hdrm.registry import suggest
from hdrm.jsonfile import read_json

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class CoreShortage:
    """A job that could not start: it asked for more cores than were free."""

    time_s: float
    job_id: str
    requested: int
    available: int


@dataclass(slots=True)
class MemoryShortage:
    """A job that could not be placed on a node for lack of memory (MB)."""

    time_s: float
    job_id: str
    node_id: int
    requested_mb: float
    available_mb: float


@dataclass(slots=True)
class BandwidthSpan:
    """A span during which a processor's memory-bandwidth demand exceeded its capacity."""

    processor_id: int
    node_id: int
    start_s: float
    end_s: float
    max_demand_gbps: float
    capacity_gbps: float
    cores: str = ""
    """The processor's cores as an interval set (``"8-15"``); empty in files that lack it."""

    def end_or(self, horizon_s: float) -> float:
        """The span's end, or ``horizon_s`` when the span never closed (``end_s`` is inf)."""
        return self.end_s if math.isfinite(self.end_s) else horizon_s

    @property
    def oversubscription(self) -> float:
        """Peak demand over capacity (> 1 when oversubscribed; inf for zero capacity)."""
        if self.capacity_gbps <= 0:
            return math.inf
        return self.max_demand_gbps / self.capacity_gbps


@dataclass
class Overutilizations:
    """The three kinds of events of overutilizations.json."""

    core_shortage: list[CoreShortage] = field(default_factory=list)
    memory_shortage: list[MemoryShortage] = field(default_factory=list)
    bandwidth: list[BandwidthSpan] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.core_shortage) + len(self.memory_shortage) + len(self.bandwidth)


#: JSON key -> (attribute, type) for each section, in the order written.
_SCHEMAS: dict[str, tuple[type, tuple[tuple[str, str, Callable[[Any], Any]], ...]]] = {
    "core_shortage": (
        CoreShortage,
        (("time", "time_s", float), ("job_id", "job_id", str),
         ("requested", "requested", int), ("available", "available", int)),
    ),
    "memory_shortage": (
        MemoryShortage,
        (("time", "time_s", float), ("job_id", "job_id", str), ("node_id", "node_id", int),
         ("requested_mb", "requested_mb", float), ("available_mb", "available_mb", float)),
    ),
    "bandwidth": (
        BandwidthSpan,
        (("processor_id", "processor_id", int), ("node_id", "node_id", int),
         ("start", "start_s", float), ("end", "end_s", float),
         ("max_demand_gbps", "max_demand_gbps", float), ("capacity_gbps", "capacity_gbps", float),
         ("cores", "cores", str)),
    ),
}


def read_overutilizations(path: str | Path) -> Overutilizations:
    """Read overutilizations.json.

    Raises:
        ConfigError: the file is missing or not JSON, or an entry lacks a key or holds a bad
            value; the message names the file and the JSON path (``$.bandwidth[2].end``).
    """
    path = Path(path)
    data = read_json(path, "overutilizations file")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: $: expected an object with keys {', '.join(_SCHEMAS)}")
    for key in data:
        if key not in _SCHEMAS:
            logger.warning("%s: $.%s: unknown section ignored; %sknown: %s",
                           path, key, suggest(key, list(_SCHEMAS)), ", ".join(_SCHEMAS))
    sections = {name: _read_section(path, name, data.get(name, [])) for name in _SCHEMAS}
    return Overutilizations(**sections)


def _read_section(path: Path, name: str, entries: Any) -> list[Any]:
    """The entries of one section, typed; ConfigError names the JSON path of a bad one."""
    if not isinstance(entries, list):
        raise ConfigError(f"{path}: $.{name}: expected a list, found {type(entries).__name__}")
    cls, schema = _SCHEMAS[name]
    items = []
    for index, entry in enumerate(entries):
        where = f"{path}: $.{name}[{index}]"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: expected an object, found {entry!r}")
        items.append(cls(**_typed_entry(where, entry, schema)))
    return items


def _typed_entry(where: str, entry: dict, schema: tuple) -> dict[str, Any]:
    """``{attribute: typed value}`` for one JSON entry, or a ConfigError naming the key."""
    kwargs = {}
    for key, attr, kind in schema:
        if key not in entry and key != "cores":
            keys = ", ".join(k for k, _, _ in schema)
            raise ConfigError(f"{where}: missing key {key!r} (an entry has: {keys})")
        if key == "cores" and key not in entry:
            continue  # optional: older files and other engines do not write it
        if key == "end" and entry[key] is None:
            kwargs[attr] = math.inf  # a span still open when the file was written
            continue
        try:
            kwargs[attr] = kind(entry[key])
        except (TypeError, ValueError):
            raise ConfigError(f"{where}.{key}: {entry[key]!r} is not a {kind.__name__}") from None
    return kwargs


def _json_value(value: Any) -> Any:
    """A value as standard JSON holds it: an infinite or nan float (an open span) is null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_overutilizations(over: Overutilizations, path: str | Path) -> Path:
    """Write overutilizations.json (all three sections, entries in the given order).

    Returns:
        The path written.
    """
    path = Path(path)
    try:  # whole or not at all (hdrm.durable.replacing)
        with replacing(path) as scratch, open(scratch, "w", encoding="utf-8", newline="") as out:
            _write_sections(over, out)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return path


def _write_sections(over: Overutilizations, out: Any) -> None:
    """The text of ``json.dumps(sections, indent=1, allow_nan=False)`` and a newline, written
    entry by entry: no list of entries nor the whole text is held (144,000 bandwidth spans
    made ~240 MB of them), and each value is encoded alone by the C encoder (an indented dump
    makes reference cycles of Python closures at each call)."""
    out.write("{")
    for i, (name, (_, schema)) in enumerate(_SCHEMAS.items()):
        out.write(f'{"," if i else ""}\n {_encode(name)}: ')
        items = getattr(over, name)
        if not items:
            out.write("[]")
            continue
        out.write("[")
        keys = [(key, attr, f"\n   {_encode(key)}: ") for key, attr, _ in schema]
        for k, item in enumerate(items):
            fields = [head + _encode(_json_value(getattr(item, attr)))
                      for key, attr, head in keys
                      if not (key == "cores" and not getattr(item, attr))]
            text = "{" + ",".join(fields) + "\n  }" if fields else "{}"
            out.write(f'{"," if k else ""}\n  {text}')
        out.write("\n ]")
    out.write("\n}\n")


def _encode(value: Any) -> str:
    """One value as ``json.dumps`` writes it (a finite float, an int, a string, null; other
    values through the encoder itself)."""
    kind = type(value)
    if kind is float and math.isfinite(value):
        return float.__repr__(value)
    if kind is int:
        return int.__repr__(value)
    if kind is str:
        return _ascii_string(value)
    if value is None:
        return "null"
    return _ENCODER(value)


_ascii_string = json.encoder.encode_basestring_ascii  # type: ignore[attr-defined]
_ENCODER = json.JSONEncoder(allow_nan=False).encode
