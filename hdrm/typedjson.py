"""Typed JSON: validate parsed JSON data into frozen dataclasses described by their annotations.

A dataclass field's annotation says what JSON value it accepts (``int``, ``float``, ``bool``,
``str``, ``Literal[...]`` for closed choices, ``tuple[X, ...]`` for lists, ``tuple[X, Y]`` for
fixed-length lists, ``Mapping[str, X]`` for objects, ``X | None``, nested dataclasses, ``Any``;
``dict`` and ``list`` for an object or list of any content, kept as it is, not copied) and its
metadata adds checks: number bounds ``ge``, ``gt``, ``le``; ``nonempty`` lists and objects;
``path`` (``"file"`` or ``"command"``) for paths resolved against a base folder; ``check``, a
callable returning an error text (empty when fine); ``key_check``, the same for each key of a
``Mapping``; ``describe``, the expected value in words for messages; ``internal`` for fields that
are not JSON keys; ``tag``, on a union of dataclasses, the key whose ``Literal`` value picks the
member (a tagged union; :func:`convert_tagged` does the same for a tag kept outside the object).
Unknown keys are errors unless the :class:`Context` allows ``extra_keys``.

Errors are one-line :class:`~hdrm.errors.ConfigError` (or the ``error`` class of the
:class:`Context`: the platform loader raises :class:`~hdrm.errors.PlatformError`) reading
``SOURCE: JSON.PATH: what is wrong``, with the bad value, the expected kind and, for unknown keys
and choices, the closest valid names. Lists become tuples and objects read-only mappings, so the
result is immutable. This is hdrm's one JSON validation mechanism: options.json
(:mod:`hdrm.options`), platform files and the type library (:mod:`hdrm.platform.library`) and the
Batsim protocol's events (:mod:`hdrm.batsim.protocol`) are all described by dataclasses and
converted here. Layer L0: standard library only.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import types
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple, Union, get_args, get_origin, get_type_hints

from hdrm.errors import ConfigError, HdrmError
from hdrm.registry import suggest

_NONE_TYPE = type(None)
_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


class Context(NamedTuple):
    """Where the data came from.

    Attributes:
        source: the file (or ``"<dict>"``) named at the start of every error message; any object
            whose ``str()`` gives it will do, and is only turned into text when an error is raised
            (for hot paths such as the Batsim protocol's events).
        base_dir: folder that relative paths resolve against; None leaves them as given.
        error: the error class raised (:class:`~hdrm.errors.ConfigError` by default).
        extra_keys: whether objects may hold keys their dataclass does not name (they are
            ignored); off by default, so that a misspelt key is an error.
    """

    source: str | object
    base_dir: str | None = None
    error: type[HdrmError] = ConfigError
    extra_keys: bool = False

    def fail(self, path: str, message: str) -> HdrmError:
        """Return (not raise) the error ``SOURCE: PATH: MESSAGE`` for a bad value at ``path``."""
        return self.error(f"{self.source}: {path or '(top level)'}: {message}")


def show(value: Any) -> str:
    """A short JSON rendering of a bad value (at most 60 characters)."""
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def join_path(path: str, key: str) -> str:
    """The JSON path of ``key`` inside the object at ``path`` (``""`` is the top level); a key
    that is not a plain name is quoted (``a."b c"``)."""
    part = key if _PLAIN_KEY.match(key) else json.dumps(key)
    return f"{path}.{part}" if path else part


def convert_block(data: Any, cls: type, path: str, ctx: Context) -> Any:
    """Convert a JSON object into an instance of the dataclass ``cls``.

    Args:
        data: the JSON object.
        cls: a dataclass whose annotations (and field metadata) describe the accepted values.
        path: JSON path of ``data`` (``""`` for the top level).
        ctx: source and base folder.

    Raises:
        ConfigError: an unknown or missing key, or a bad value.
    """
    if not isinstance(data, dict):
        raise ctx.fail(path, f"expected an object, got {show(data)}")
    for key in getattr(data, "duplicate_keys", ()):
        raise ctx.fail(path, f"duplicate key {key!r}; each key may appear once in an object")
    fields = _fields(cls)
    if not ctx.extra_keys:
        for key in data:
            if key not in fields:
                names = sorted(fields)
                hint = suggest(key, names)
                message = f"unknown key; {hint}valid keys: {', '.join(names)}"
                raise ctx.fail(join_path(path, key), message)
    kwargs = {}
    for name, (hint, meta, required, plain) in fields.items():
        if name in data:
            value = data[name]
            if type(value) is not plain:  # anything but a plain value of the right type
                value = convert(value, hint, join_path(path, name), meta, ctx)
            message = meta["check"](value) if "check" in meta else ""
            if message:
                raise ctx.fail(join_path(path, name), message)
            kwargs[name] = value
        elif required:
            kind = describe_type(hint, meta)
            raise ctx.fail(join_path(path, name), f"missing required key ({kind}); add it")
    return cls(**kwargs)


class _Field(NamedTuple):
    """What :func:`convert_block` needs of a dataclass field."""

    hint: Any
    meta: Mapping[str, Any]
    required: bool
    plain: type | None  # a value of exactly this type is taken as it is (no conversion to do)


_FIELDS: dict[type, dict[str, _Field]] = {}
_PLAIN = (str, bool, int, dict, list)
_CONVERTING_META = ("path", "ge", "gt", "le", "nonempty", "key_check")


def _fields(cls: type) -> dict[str, _Field]:
    """The JSON fields of a dataclass by name, computed once per class (this runs per message
    in the Batsim protocol)."""
    if cls not in _FIELDS:
        hints = get_type_hints(cls)
        _FIELDS[cls] = {
            f.name: _Field(
                hints[f.name], f.metadata,
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
                hints[f.name] if hints[f.name] in _PLAIN
                and not any(k in f.metadata for k in _CONVERTING_META) else None)
            for f in dataclasses.fields(cls) if not f.metadata.get("internal")
        }
    return _FIELDS[cls]


def convert_tagged(data: Any, tag: Any, variants: Mapping[str, type], path: str, ctx: Context,
                   tag_path: str) -> Any:
    """Convert ``data`` with the dataclass that its tag names (a tagged union).

    Args:
        data: the JSON object.
        tag: the tag's value (read from ``data`` itself or from beside it).
        variants: dataclass of each tag value.
        path: JSON path of ``data``.
        ctx: source and base folder.
        tag_path: JSON path of the tag, for the message on an unknown tag.

    Raises:
        ConfigError: an unknown tag (with the closest valid ones), or what :func:`convert_block`
            raises.
    """
    cls = variants.get(tag) if isinstance(tag, str) else None
    if cls is None:
        names = ", ".join(variants)
        if tag is None:
            raise ctx.fail(tag_path, f"missing required key; add it, one of: {names}")
        hint = suggest(str(tag), list(variants))
        raise ctx.fail(tag_path, f"unknown value {show(tag)}; {hint}valid values: {names}")
    return convert_block(data, cls, path, ctx)


def convert(value: Any, hint: Any, path: str, meta: Mapping[str, Any], ctx: Context) -> Any:
    """Convert one JSON value to the annotation ``hint``.

    Args:
        value: the JSON value.
        hint: the type annotation (see the module docstring for what is supported).
        path: JSON path of ``value``, for messages.
        meta: field metadata with the checks to apply (bounds apply to every number inside).
        ctx: source and base folder.

    Raises:
        ConfigError: the value does not match.
    """
    origin = get_origin(hint)
    if hint is Any:
        return freeze(value)
    if origin in (Union, types.UnionType):
        return _convert_union(value, hint, path, meta, ctx)
    if origin is Literal:
        return _convert_choice(value, get_args(hint), path, ctx)
    if dataclasses.is_dataclass(hint):
        return convert_block(value, hint, path, ctx)
    if origin is tuple:
        return _convert_list(value, hint, path, meta, ctx)
    if origin is Mapping:
        return _convert_mapping(value, hint, path, meta, ctx)
    if not _fits(value, hint):
        raise ctx.fail(path, f"expected {describe_type(hint, meta)}, got {show(value)}")
    if hint is float or hint is int:
        return _check_number(value, hint, path, meta, ctx)
    if hint is str and meta.get("path"):
        return resolve_path(value, meta["path"], ctx.base_dir)
    return value


def _fits(value: Any, hint: Any) -> bool:
    """Whether a JSON value has the right kind for ``hint`` (without checking its contents)."""
    origin = get_origin(hint)
    if hint is Any:
        return True
    if hint is str or origin is Literal:
        return isinstance(value, str)
    if hint is dict or hint is list:
        return isinstance(value, hint)
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if origin is tuple:
        return isinstance(value, list)
    return isinstance(value, dict) and (origin is Mapping or dataclasses.is_dataclass(hint))


def _convert_union(value: Any, hint: Any, path: str, meta: Mapping[str, Any], ctx: Context) -> Any:
    """Convert to the one member of a union whose kind matches the value."""
    args = get_args(hint)
    if value is None and _NONE_TYPE in args:
        return None
    if "tag" in meta:
        key = meta["tag"]
        variants = {get_args(_fields(a)[key].hint)[0]: a for a in args if a is not _NONE_TYPE}
        if not isinstance(value, dict):
            raise ctx.fail(path, f"expected an object, got {show(value)}")
        tag = value.get(key)
        return convert_tagged(value, tag, variants, path, ctx, join_path(path, key))
    candidates = [a for a in args if a is not _NONE_TYPE and _fits(value, a)]
    if not candidates:
        raise ctx.fail(path, f"expected {describe_type(hint, meta)}, got {show(value)}")
    return convert(value, candidates[0], path, meta, ctx)


def _convert_choice(value: Any, choices: tuple[str, ...], path: str, ctx: Context) -> str:
    """Match a closed choice case-insensitively; return its canonical spelling."""
    if not isinstance(value, str):
        raise ctx.fail(path, f"expected one of {', '.join(choices)}, got {show(value)}")
    for choice in choices:
        if value.lower() == choice.lower():
            return choice
    hint = suggest(value.lower(), [c.lower() for c in choices])
    raise ctx.fail(path, f"unknown value {show(value)}; {hint}valid choices: {', '.join(choices)}")


def _convert_list(value: Any, hint: Any, path: str, meta: Mapping[str, Any], ctx: Context) -> tuple:
    """Convert a JSON list to a tuple (of any length, or of a fixed length)."""
    args = get_args(hint)
    if not isinstance(value, list) or (args[-1] is not Ellipsis and len(value) != len(args)):
        raise ctx.fail(path, f"expected {describe_type(hint, meta)}, got {show(value)}")
    if meta.get("nonempty") and not value:
        raise ctx.fail(path, "expected a non-empty list, got []")
    items = args[:1] * len(value) if args[-1] is Ellipsis else args
    return tuple(
        convert(v, t, f"{path}[{i}]", meta, ctx) for i, (v, t) in enumerate(zip(value, items))
    )


def _convert_mapping(
    value: Any, hint: Any, path: str, meta: Mapping[str, Any], ctx: Context
) -> Any:
    """Convert a JSON object to a read-only mapping."""
    if not isinstance(value, dict):
        raise ctx.fail(path, f"expected an object, got {show(value)}")
    if meta.get("nonempty") and not value:
        raise ctx.fail(path, "expected a non-empty object, got {}")
    for key in getattr(value, "duplicate_keys", ()):
        raise ctx.fail(path, f"duplicate key {key!r}; each key may appear once in an object")
    for key in value:
        message = meta.get("key_check", lambda _: "")(key)
        if message:
            raise ctx.fail(join_path(path, key), message)
    item_hint = get_args(hint)[1]
    return types.MappingProxyType(
        {k: convert(v, item_hint, join_path(path, k), meta, ctx) for k, v in value.items()}
    )


def _check_number(value: Any, hint: type, path: str, meta: Mapping[str, Any], ctx: Context) -> Any:
    """Return ``value`` as ``hint``, checking it is finite and within the bounds of ``meta``."""
    try:
        number = hint(value)
    except OverflowError:
        number = math.nan
    ok = isinstance(number, int) or math.isfinite(number)
    ok = ok and number >= meta.get("ge", -math.inf) and number > meta.get("gt", -math.inf)
    ok = ok and number <= meta.get("le", math.inf)
    if not ok:
        raise ctx.fail(path, f"expected {describe_type(hint, meta)}, got {show(value)}")
    return number


def resolve_path(value: str, kind: str, base_dir: str | None) -> str:
    """Resolve a path from JSON against ``base_dir``.

    Args:
        value: the path as written (``~`` expands to the home folder).
        kind: ``"file"``, or ``"command"`` for an executable: a bare name (no ``/``) stays as it is
            so that it is looked up on PATH.
        base_dir: the folder of the JSON file; None leaves relative paths as they are.
    """
    value = os.path.expanduser(value)
    if base_dir is None or os.path.isabs(value) or (kind == "command" and os.sep not in value):
        return value
    return os.path.normpath(os.path.join(base_dir, value))


def freeze(value: Any) -> Any:
    """Deep read-only copy of free-form JSON data: objects become mappings, lists tuples."""
    if isinstance(value, dict):
        return types.MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Plain JSON data from converted values (dataclasses, mappings, tuples): parsing undone."""
    if dataclasses.is_dataclass(value):
        return {f.name: thaw(getattr(value, f.name)) for f in dataclasses.fields(value)
                if not f.metadata.get("internal")}
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


# --------------------------------------------------------------------------- describing


def describe_type(hint: Any, meta: Mapping[str, Any] | None = None) -> str:
    """The kind of JSON value a type annotation accepts, in words (``"an integer >= 1"``).

    Args:
        hint: a type annotation of an options field.
        meta: the field's metadata (bounds ``ge``, ``gt``, ``le``), if any.
    """
    meta = meta or {}
    if "describe" in meta:
        return meta["describe"]
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        parts = [describe_type(a, meta) for a in args]
        return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]
    if origin is Literal:
        quoted = [json.dumps(a) for a in args]
        return quoted[0] if len(quoted) == 1 else "one of " + ", ".join(quoted)
    if origin is tuple:
        count = "" if args[-1] is Ellipsis else f"{len(args)} "
        size = "non-empty " if meta.get("nonempty") else ""
        return f"a {size}list of {count}{_plural(args[0], meta)}"
    simple = {bool: "true or false", int: "an integer", float: "a number", str: "a string",
              _NONE_TYPE: "null", Any: "any JSON value", list: "a list"}
    if hint in simple:
        return simple[hint] + (_bounds(meta) if hint in (int, float) else "")
    return "an object"


def _plural(hint: Any, meta: Mapping[str, Any]) -> str:
    """Plural noun for the items of a list."""
    nouns = {int: "integers", float: "numbers", str: "strings"}
    if hint in nouns:
        return nouns[hint] + (_bounds(meta) if hint in (int, float) else "")
    return "objects" if get_origin(hint) is Mapping or dataclasses.is_dataclass(hint) else "values"


def _bounds(meta: Mapping[str, Any]) -> str:
    """The bounds of a number field in words."""
    low, high, above = meta.get("ge"), meta.get("le"), meta.get("gt")
    if low is not None and high is not None:
        return f" in [{low}, {high}]"
    if low is not None:
        return f" >= {low}"
    if above is not None:
        return f" > {above}"
    return f" <= {high}" if high is not None else ""


