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
from hdrm.jsonfile import read_json
from hdrm.typedjson import (
    Context,
    convert_block,
    convert_tagged,
    describe_type,
    freeze,
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


@dataclass(frozen=True)
class Circle:
    """A tagged-union member: ``kind`` picks it."""

    kind: Literal["circle"]
    radius: float = field(metadata={"gt": 0})


@dataclass(frozen=True)
class Square:
    """Another member, with a raw object and list taken as they are."""

    kind: Literal["square"]
    side: float
    style: dict = field(default_factory=dict)
    points: list = field(default_factory=list)


@dataclass(frozen=True)
class Drawing:
    """A list of tagged shapes."""

    shapes: tuple[Circle | Square, ...] = field(default=(), metadata={"tag": "kind"})
    layer: str = field(default="0", metadata={"describe": "a layer name like \"top\"",
                                              "check": lambda v: "" if v else "empty layer name"})


def test_tagged_union_picks_the_member_its_tag_names():
    style = {"colour": [1, 2]}
    out = convert_block({"shapes": [{"kind": "square", "side": 2, "style": style},
                                    {"kind": "circle", "radius": 1}]}, Drawing, "", CTX)
    assert out.shapes == (Square("square", 2.0, style), Circle("circle", 1.0))
    assert out.shapes[0].style is style  # dict and list hints keep the value as it is


@pytest.mark.parametrize("data, message", [
    ({"shapes": [{"kind": "circle", "radius": 0}]},
     "f.json: shapes[0].radius: expected a number > 0, got 0"),
    ({"shapes": [{"kind": "squar", "side": 1}]},
     "f.json: shapes[0].kind: unknown value \"squar\"; did you mean 'square'? "
     "valid values: circle, square"),
    ({"shapes": [{"side": 1}]},
     "f.json: shapes[0].kind: missing required key; add it, one of: circle, square"),
    ({"shapes": [3]}, "f.json: shapes[0]: expected an object, got 3"),
    ({"shapes": [{"kind": "square", "side": 1, "style": []}]},
     "f.json: shapes[0].style: expected an object, got []"),
    ({"layer": 3}, 'f.json: layer: expected a layer name like "top", got 3'),
    ({"layer": ""}, "f.json: layer: empty layer name"),
    ({"shapes": [{"kind": "circle", "radius": 1, "radus": 2}]},
     "f.json: shapes[0].radus: unknown key; did you mean 'radius'? valid keys: kind, radius"),
])
def test_tagged_union_errors_name_the_path(data, message):
    with pytest.raises(ConfigError, match="^" + re.escape(message) + "$"):
        convert_block(data, Drawing, "", CTX)


def test_convert_tagged_with_the_tag_beside_the_object():
    """A tag kept outside the object (Batsim's events: ``type`` beside ``data``)."""
    variants = {"circle": Inner, "outer": Outer}
    assert convert_tagged({"colour": "red"}, "circle", variants, "data", CTX, "type") == Inner()
    message = 'f.json: type: unknown value "outr"; did you mean \'outer\'? valid values: circle, outer'
    with pytest.raises(ConfigError, match=re.escape(message)):
        convert_tagged({}, "outr", variants, "data", CTX, "type")
    with pytest.raises(ConfigError, match=re.escape("f.json: data.name: missing required key")):
        convert_tagged({}, "outer", variants, "data", CTX, "type")


def test_extra_keys_are_ignored_only_when_the_context_allows_them():
    data = {"name": "a", "later_key": 1, "inner": {"colour": "red", "new": True}}
    fails(data, "f.json: later_key: unknown key; valid keys: anything, counts, inner, name, pair")
    out = convert_block(data, Outer, "", Context("f.json", extra_keys=True))
    assert out == Outer("a")
    with pytest.raises(ConfigError, match=re.escape("f: counts[0]: expected an integer >= 0")):
        convert_block({"name": "a", "counts": [-1], "x": 0}, Outer, "", Context("f", extra_keys=True))


def test_lazy_source_is_only_made_text_on_errors():
    """A Context's source may be any object whose str() is the text: built only on an error."""
    made = []

    class Source:
        def __str__(self) -> str:
            made.append(1)
            return "event 3"

    ctx = Context(Source())
    assert convert_block({"name": "a"}, Outer, "", ctx) == Outer("a")
    assert not made
    with pytest.raises(ConfigError, match=re.escape("event 3: name: expected a string, got 1")):
        convert_block({"name": 1}, Outer, "", ctx)
    assert made == [1]
