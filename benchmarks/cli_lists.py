"""Comma-separated values of the benchmark scripts' options (``--seeds 0,1,2``, ``--starts ...``).

Every script reads its lists through :func:`ints` or :func:`floats`, so a bad value is the same
one-line :class:`~hdrm.errors.ConfigError` everywhere, naming the option, the text given and an
example, instead of a ``ValueError`` traceback from ``int()``. Empty items (``0,,1`` or a trailing
comma) are ignored; an empty list is refused.
"""

from __future__ import annotations

import math

from hdrm.errors import ConfigError


def items(text: str) -> list[str]:
    """The non-empty, stripped items of ``text``."""
    return [part.strip() for part in str(text).split(",") if part.strip()]


def _refuse(flag: str, text: str, what: str, example: str) -> ConfigError:
    return ConfigError(f"{flag} {text!r}: expected {what} separated by commas (e.g. {example})")


def ints(text: str, flag: str, example: str = "0,1,2", *, distinct: bool = False,
         minimum: int | None = None) -> list[int]:
    """``text`` as integers.

    Args:
        flag: the option, for the message (``--seeds``).
        example: a valid value, for the message.
        distinct: refuse a repeated value.
        minimum: refuse a value below it.

    Raises:
        ConfigError: empty, not an integer, repeated (``distinct``) or below ``minimum``.
    """
    sign = {None: "", 0: "non-negative ", 1: "positive "}.get(minimum)
    what = (("distinct " if distinct else "") + (sign if sign is not None else "") + "integers"
            + (f" of at least {minimum}" if sign is None else ""))
    try:
        values = [int(v) for v in items(text)]
    except ValueError:
        raise _refuse(flag, text, what, example) from None
    if (not values or (distinct and len(set(values)) != len(values))
            or (minimum is not None and min(values) < minimum)):
        raise _refuse(flag, text, what, example)
    return values


def floats(text: str, flag: str, example: str = "1,1.5", *, positive: bool = False
           ) -> list[float]:
    """``text`` as finite numbers (``positive``: each above zero).

    Raises:
        ConfigError: empty, not a number, infinite or NaN, or not positive (``positive``).
    """
    what = "positive numbers" if positive else "numbers"
    try:
        values = [float(v) for v in items(text)]
    except ValueError:
        raise _refuse(flag, text, what, example) from None
    if not values or not all(math.isfinite(v) and (v > 0 or not positive) for v in values):
        raise _refuse(flag, text, what, example)
    return values
