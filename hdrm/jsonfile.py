"""Reading JSON files for hdrm: every failure a one-line error naming the file (and the line and
column of a syntax error), repeated keys refused or recorded.

:mod:`hdrm.typedjson` validates what this reads; the two are kept apart so each stays small.
Layer L0: standard library only.
"""

from __future__ import annotations

import json
import os
from itertools import chain
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hdrm.errors import ConfigError, HdrmError


def read_json(
    path: str | os.PathLike[str],
    what: str = "JSON file",
    error: type[HdrmError] = ConfigError,
    pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
    missing_hint: str = "check the path",
) -> Any:
    """Read a JSON file, turning every failure into a one-line error.

    Args:
        path: the file.
        what: what the file is, for messages (``"options file"``).
        error: the error class raised (``ConfigError``, ``PlatformError`` ...).
        pairs_hook: ``object_pairs_hook`` for :func:`json.loads`; by default a key given twice
            in one object is an error.
        missing_hint: the advice given when the file does not exist.

    Raises:
        error: the file is missing or unreadable, is not valid JSON (the message gives the line
            and column) or, with the default ``pairs_hook``, repeats a key within one object.
    """
    source = os.fspath(path)
    try:
        text = Path(source).read_text(encoding="utf-8-sig")  # a byte order mark is dropped
    except FileNotFoundError:
        raise error(f"{source}: no such {what}; {missing_hint}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{source}: cannot read the {what}: {exc}") from None
    try:
        if pairs_hook is None:
            data = json.loads(text)
            if _pairs(data, text.count("{") + text.count("[")) == text.count(":"):
                return data  # no key repeated (see _pairs)
            pairs_hook = lambda pairs: _no_duplicates(pairs, source, error)  # noqa: E731
        return json.loads(text, object_pairs_hook=pairs_hook)
    except json.JSONDecodeError as exc:
        raise error(
            f"{source}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}; fix the syntax there"
        ) from None


class JsonObject(dict):
    """A JSON object that remembers the keys its text repeated (``json`` keeps only the last).

    :func:`convert_block` refuses them, naming the object's JSON path.
    """

    duplicate_keys: tuple[str, ...] = ()


def keep_duplicates(pairs: list[tuple[str, Any]]) -> JsonObject:
    """``pairs_hook`` for :func:`read_json` that records repeated keys instead of failing."""
    obj = JsonObject(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        obj.duplicate_keys = tuple(k for k, _ in pairs if k in seen or seen.add(k))
    return obj


def _pairs(data: Any, brackets: int) -> int:
    """The number of key-value pairs in the objects of parsed JSON.

    A JSON text's colons outside strings are its pairs' separators, so ``text.count(":")`` is
    its pairs plus the colons inside its strings; the parse keeps every pair but repeated keys.
    When the two counts are equal, no key was repeated (and no string holds a colon): the
    objects need not be built pair by pair in Python to refuse repeated keys.

    Args:
        data: the parsed JSON.
        brackets: the text's ``{`` and ``[`` (``text.count("{") + text.count("[")``). Each
            object and array opens with one outside strings, so once that many have been met,
            none is left below: the walk stops before the scalars of the last level.
    """
    count, level, met = 0, [data], 0
    while level:  # level by level, in C-level passes (no Python step per value)
        kinds = set(map(type, level))
        dicts = lists = ()
        if dict in kinds:
            dicts = level if len(kinds) == 1 else [v for v in level if type(v) is dict]
            count += sum(map(len, dicts))
        if list in kinds:
            lists = level if len(kinds) == 1 else [v for v in level if type(v) is list]
        met += len(dicts) + len(lists)
        if met >= brackets:  # every object and array met: only scalars below
            break
        below: list[Any] = []
        below.extend(chain.from_iterable(map(dict.values, dicts)))
        below.extend(chain.from_iterable(lists))
        level = below
    return count


def _no_duplicates(pairs: list[tuple[str, Any]], source: str,
                   error: type[HdrmError] = ConfigError) -> dict[str, Any]:
    """JSON object hook that refuses a key given twice in one object (the first repeated)."""
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise error(f"{source}: key {key!r} is given twice in one object; keep one")
    return result
