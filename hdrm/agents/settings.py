"""Reading an agent's options block: typed top-level keys and per-learner settings dataclasses.

The agent block of options.json (``pybatsim.agent``) is handed to the agent constructor as a read-only
mapping. Top-level keys shared by every learner (``hidden``, ``lr``, ``gamma``, ``greedy`` ...) are
read with :func:`read_number`, :func:`read_bool` and :func:`read_hidden`; the learner-specific
``params`` mapping is parsed into a frozen settings dataclass with :func:`parse_settings`. Every
problem is a :class:`~hdrm.errors.ConfigError` naming the JSON path, the bad value and the fix.

Settings dataclass fields may carry metadata: ``{"min": x}``, ``{"max": x}`` (inclusive bounds) and
``{"choices": (...)}`` (the valid strings) and ``{"check": function}`` (for strings: called as
``function(value, json_path)``, returns the value or raises :class:`~hdrm.errors.ConfigError`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping, Sequence, TypeVar

from hdrm.errors import ConfigError
from hdrm.registry import suggest

#: JSON path of the agent block in options.json, used in error messages.
AGENT_PATH = "pybatsim.agent"

S = TypeVar("S")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def read_number(
    config: Mapping[str, Any],
    key: str,
    default: float,
    *,
    where: str = AGENT_PATH,
    minimum: float | None = None,
    maximum: float | None = None,
    integer: bool = False,
) -> float:
    """Read a number from ``config[key]`` (``default`` when absent) and check its range.

    Args:
        config: the mapping to read.
        key: the key.
        default: value when the key is absent or null.
        where: JSON path of ``config``, for messages.
        minimum: smallest valid value (inclusive), or None.
        maximum: largest valid value (inclusive), or None.
        integer: the value must be a whole number; an ``int`` is returned.

    Raises:
        ConfigError: not a number, not whole when ``integer``, or out of range.
    """
    value = config.get(key, default)
    if value is None:
        value = default
    return check_number(value, f"{where}.{key}", minimum=minimum, maximum=maximum, integer=integer)


def check_number(
    value: Any,
    path: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    integer: bool = False,
) -> float:
    """Check that ``value`` (at JSON ``path``) is a finite number in range; see :func:`read_number`."""
    kind = "a whole number" if integer else "a number"
    if not _is_number(value) or not math.isfinite(value):
        raise ConfigError(f"{path}: expected {kind}, got {value!r}")
    if integer:
        if float(value) != int(value):
            raise ConfigError(f"{path}: expected a whole number, got {value!r}")
        value = int(value)
    if minimum is not None and value < minimum:
        raise ConfigError(f"{path}: {value!r} is too small; use a value >= {minimum}")
    if maximum is not None and value > maximum:
        raise ConfigError(f"{path}: {value!r} is too large; use a value <= {maximum}")
    return value


def read_bool(config: Mapping[str, Any], key: str, default: bool, *, where: str = AGENT_PATH) -> bool:
    """Read a boolean from ``config[key]`` (``default`` when absent).

    Raises:
        ConfigError: the value is not true or false.
    """
    value = config.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ConfigError(f"{where}.{key}: expected true or false, got {value!r}")
    return value


def read_hidden(
    config: Mapping[str, Any], default: Sequence[int] = (64, 64), *, where: str = AGENT_PATH
) -> tuple[int, ...]:
    """Read the hidden layer sizes: an int (two layers of that size) or a list of ints (one per layer).

    Args:
        config: the agent block.
        default: the sizes when ``hidden`` is absent or null.
        where: JSON path of ``config``, for messages.

    Raises:
        ConfigError: not a positive int or a non-empty list of positive ints.
    """
    value = config.get("hidden")
    if value is None:
        return tuple(int(v) for v in default)
    path = f"{where}.hidden"
    if _is_number(value):
        size = int(check_number(value, path, minimum=1, integer=True))
        return (size, size)
    if isinstance(value, (list, tuple)) and value:
        return tuple(
            int(check_number(v, f"{path}[{i}]", minimum=1, integer=True)) for i, v in enumerate(value)
        )
    raise ConfigError(f"{path}: expected a layer size like 64 or a list like [64, 64], got {value!r}")


def parse_settings(cls: type[S], params: Mapping[str, Any] | None, *, where: str) -> S:
    """Build the settings dataclass ``cls`` from the mapping ``params``.

    Each key must name a field of ``cls``; each value must have the type of the field's default
    (ints are accepted for float fields) and respect the field's ``min``/``max``/``choices`` metadata.

    Args:
        cls: a dataclass whose fields all have defaults.
        params: the user's mapping (None or empty gives the defaults).
        where: JSON path of ``params``, for messages (``"pybatsim.agent.params"``).

    Raises:
        ConfigError: ``params`` is not a mapping, a key is unknown (with "did you mean"), or a value
            has the wrong type or is out of range.
    """
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise ConfigError(f"{where}: expected an object of settings, got {params!r}")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    values = {}
    for key, value in params.items():
        if key not in fields:
            raise ConfigError(
                f"{where}: unknown setting {key!r}; {suggest(str(key), sorted(fields))}"
                f"choose among: {', '.join(sorted(fields))}"
            )
        values[key] = _check_field(fields[key], value, f"{where}.{key}")
    return cls(**values)


def _field_default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    raise TypeError(f"settings field {field.name!r} needs a default")


def _check_field(field: dataclasses.Field, value: Any, path: str) -> Any:
    default = _field_default(field)
    meta = field.metadata
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{path}: expected true or false, got {value!r}")
        return value
    if isinstance(default, (int, float)):
        return check_number(
            value,
            path,
            minimum=meta.get("min"),
            maximum=meta.get("max"),
            integer=isinstance(default, int),
        )
    if isinstance(default, str) and "check" in meta:
        return meta["check"](value, path)
    if isinstance(default, str):
        choices = meta.get("choices")
        if not isinstance(value, str) or (choices and value not in choices):
            hint = suggest(str(value), list(choices)) if choices else ""
            valid = f"choose one of: {', '.join(choices)}" if choices else "expected a string"
            raise ConfigError(f"{path}: invalid value {value!r}; {hint}{valid}")
        return value
    if isinstance(default, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{path}: expected a list, got {value!r}")
        return tuple(value)
    return value
