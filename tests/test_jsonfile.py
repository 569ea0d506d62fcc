"""hdrm.jsonfile.read_json: repeated keys refused, however the text is parsed."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm import jsonfile
from hdrm.errors import ConfigError, WorkloadError
from hdrm.jsonfile import keep_duplicates, read_json


@pytest.mark.parametrize("text, key", [
    ('{"a": 1, "a": 2}', "a"),
    ('{"x": [{"b": 1, "c": {"d": 1, "d": 2}}]}', "d"),
    ('{"a": "1:2", "b": [{"k": "x:y", "k": 3}]}', "k"),  # colons in strings too
    ('{"s": "{[", "b": [{"k": 1, "k": 2}]}', "k"),  # brackets in strings: the walk goes on
    ('[[[{"k": 1, "k": 2}]]]', "k"),
])
def test_repeated_keys_are_refused(tmp_path, text, key):
    path = tmp_path / "f.json"
    path.write_text(text)
    with pytest.raises(WorkloadError, match=rf"f\.json: key '{key}' is given twice in one "
                                            r"object; keep one$"):
        read_json(path, error=WorkloadError)


def test_colons_in_strings_read_as_usual(tmp_path):
    path = tmp_path / "f.json"
    path.write_text('{"t": "12:30", "u": [{"p:1": {"v": ":"}}], "w": []}')
    assert read_json(path) == {"t": "12:30", "u": [{"p:1": {"v": ":"}}], "w": []}
    assert read_json(path, pairs_hook=keep_duplicates).duplicate_keys == ()


_text = st.text(alphabet="ab:{}[]", max_size=4)  # strings may hold colons and brackets
_json = st.recursive(st.none() | st.booleans() | st.integers() | _text,
                     lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(_text, inner, max_size=4), max_leaves=20)


@settings(deadline=None)
@given(_json)
def test_pairs_counts_every_key_value_pair(value):
    text = json.dumps(value)
    pairs = text.count(":") - sum(s.count(":") for s in _strings(value))
    assert jsonfile._pairs(json.loads(text), text.count("{") + text.count("[")) == pairs
    assert jsonfile._pairs(json.loads(text), 10**9) == pairs  # the whole walk


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def test_bad_syntax_names_line_and_column(tmp_path):
    path = tmp_path / "f.json"
    path.write_text('{\n "a": 1,\n}')
    with pytest.raises(ConfigError, match=r"f\.json:3:1: invalid JSON"):
        read_json(path)


def test_a_byte_order_mark_is_dropped(tmp_path):
    # Windows Notepad saves UTF-8 with one: "f.json:1:1: invalid JSON: Unexpected UTF-8 BOM"
    path = tmp_path / "f.json"
    path.write_bytes('\ufeff{"a": "b: c", "d": [1, {"e": 2}]}'.encode("utf-8"))
    assert read_json(path) == {"a": "b: c", "d": [1, {"e": 2}]}
    path.write_bytes('\ufeff{"a": 1, "a": 2}'.encode("utf-8"))
    with pytest.raises(ConfigError, match=r"f\.json: key 'a' is given twice in one object"):
        read_json(path)
