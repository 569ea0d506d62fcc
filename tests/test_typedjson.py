"""Tests of hdrm.typedjson: the annotation-driven JSON to frozen dataclass conversion."""

from __future__ import annotations

import dataclasses
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hdrm.errors import ConfigError
from hdrm.typedjson import (
    Context,
    convert_block,
    describe_type,
    freeze,
    read_json,
    resolve_path,
    thaw,
)


def _positive_sum(value: tuple[int, ...]) -> str:
    return "" if sum(value) > 0 else f"expected a positive sum, got {sum(value)}"


@dataclass(frozen=True)
class Inner:
    """A nested block."""

    colour: Literal["red", "Green"] = "red"
    weights: Mapping[str, float] = field(
        default_factory=lambda: types.MappingProxyType({}), metadata={"gt": 0}
    )


@dataclass(frozen=True)
class Outer:
    """A block with every supported kind of field."""

    name: str
    counts: tuple[int, ...] = field(default=(1,), metadata={"check": _positive_sum, "ge": 0})
    pair: tuple[float, str] | None = None
    inner: Inner = field(default_factory=Inner)
    anything: Any = None
    note: str = field(default="", metadata={"internal": True})


CTX = Context("f.json")


def fails(data: Any, message: str) -> None:
    with pytest.raises(ConfigError, match="^" + re.escape(message) + "$"):
        convert_block(data, Outer, "", CTX)


def test_convert_a_full_block():
    out = convert_block(
        {
            "name": "a",
            "counts": [0, 2],
            "pair": [1, "x"],
            "inner": {"colour": "GREEN", "weights": {"w": 2}},
            "anything": {"k": [1]},
        },
        Outer,
        "",
        CTX,
    )
    assert out == Outer(
        "a",
        (0, 2),
        (1.0, "x"),
        Inner("Green", types.MappingProxyType({"w": 2.0})),
        types.MappingProxyType({"k": (1,)}),
    )
    assert thaw(out) == {
        "name": "a",
        "counts": [0, 2],
        "pair": [1.0, "x"],
        "inner": {"colour": "Green", "weights": {"w": 2.0}},
        "anything": {"k": [1]},
    }


def test_conversion_errors_name_the_path():
    fails({"name": "a", "counts": [0, 0]}, "f.json: counts: expected a positive sum, got 0")
    fails({"name": "a", "counts": [2, -1]}, "f.json: counts[1]: expected an integer >= 0, got -1")
    fails({"name": "a", "pair": [1, 2]}, "f.json: pair[1]: expected a string, got 2")
    fails(
        {"name": "a", "inner": {"weights": {"w": 0}}},
        "f.json: inner.weights.w: expected a number > 0, got 0",
    )
    fails(
        {"name": "a", "inner": {"colour": "blue"}},
        'f.json: inner.colour: unknown value "blue"; valid choices: red, Green',
    )
    fails(
        {"name": "a", "note": "x"},
        "f.json: note: unknown key; did you mean 'name'? valid keys: anything, "
        "counts, inner, name, pair",
    )
    fails({}, "f.json: name: missing required key (a string); add it")


def test_describe_type():
    assert describe_type(tuple[float, str] | None) == "a list of 2 numbers or null"
    assert describe_type(int, {"ge": 0, "le": 9}) == "an integer in [0, 9]"
    assert describe_type(float, {"le": 1}) == "a number <= 1"
    assert describe_type(Literal["x"]) == '"x"'
    assert describe_type(Mapping[str, int]) == "an object"
    assert describe_type(Any) == "any JSON value"


def test_resolve_path():
    assert resolve_path("a/b.json", "file", "/base") == "/base/a/b.json"
    assert resolve_path("../b.json", "file", "/base/x") == "/base/b.json"
    assert resolve_path("/abs.json", "file", "/base") == "/abs.json"
    assert resolve_path("b.json", "file", None) == "b.json"
    assert resolve_path("tool", "command", "/base") == "tool"
    assert resolve_path("./tool", "command", "/base") == "/base/tool"


def test_read_json(tmp_path):
    path = tmp_path / "p.json"
    path.write_text('{"a": [1, 2]}')
    assert read_json(path) == {"a": [1, 2]}
    path.write_text('{"a": [1, 2}')
    with pytest.raises(
        ConfigError, match=re.escape(f"{path}:1:12: invalid JSON: ") + ".*; fix the syntax there$"
    ):
        read_json(path, "platform file")
    with pytest.raises(
        ConfigError,
        match=re.escape(f"{tmp_path / 'q.json'}: no such platform file; check the path"),
    ):
        read_json(tmp_path / "q.json", "platform file")
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(ConfigError, match=re.escape(f"{path}: cannot read the JSON file")):
        read_json(path)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20,
)


@given(JSON)
def test_freeze_then_thaw_is_identity_and_frozen_is_immutable(value):
    frozen = freeze(value)
    assert thaw(frozen) == value
    stack = [frozen]
    while stack:
        item = stack.pop()
        assert not isinstance(item, (list, dict))
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, tuple):
            stack.extend(item)


def test_internal_fields_are_not_thawed():
    assert "note" not in thaw(dataclasses.replace(Outer("a"), note="x"))
