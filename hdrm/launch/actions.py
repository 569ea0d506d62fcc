"""Checking the actions an agent returns, before the environment sees them.

The rule is the environment's own mask (``info["action_mask"]``, the same array as
:meth:`hdrm.env.SchedulingEnv.action_masks`): an action is valid when it is an integer (a Python
``int``, a numpy integer, or a one-element integer array or tensor), lies in ``0 .. n-1`` and the
mask allows it. The environment itself is lenient, as Gymnasium environments are with masks (a
masked job pick waits, a masked void becomes the first valid action); the launcher is strict,
because an agent that breaks the mask is a bug the user wants to hear about, not a silent repair.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

#: Most valid-action ranges an error message lists before "...".
RANGES_SHOWN = 8


class ActionProblem(ValueError):
    """An action that is not valid; the message says why (type, range or mask)."""


def valid_action(action: Any, mask: np.ndarray) -> int:
    """``action`` as an int when it is valid under ``mask``.

    Raises:
        ActionProblem: a wrong type (a float such as 1.7, a bool, a string, an array of several
            values), an index outside ``0 .. len(mask)-1``, or an action the mask rules out.
    """
    n = len(mask)
    try:
        index = _as_index(action, n)
        if not 0 <= index < n:
            raise ActionProblem(f"out of range 0..{n - 1}")
        if not mask[index]:
            raise ActionProblem("masked out")
    except ActionProblem as exc:
        raise ActionProblem(f"{exc}; the mask allows {describe_mask(mask)}") from None
    return index


def _as_index(action: Any, n: int) -> int:
    value = action
    if hasattr(value, "numel") and hasattr(value, "item"):  # a torch tensor, without importing torch
        if value.numel() != 1:
            raise ActionProblem(f"a tensor of {value.numel()} values, expected one int in 0..{n - 1}")
        value = value.item()
    elif isinstance(value, np.ndarray):
        if value.size != 1:
            raise ActionProblem(f"an array of {value.size} values, expected one int in 0..{n - 1}")
        value = value.reshape(-1)[0]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ActionProblem(f"of type {type(action).__name__}, expected an int in 0..{n - 1}")
    return int(value)


def describe_mask(mask: np.ndarray) -> str:
    """The valid actions of ``mask`` as ranges, e.g. ``"0-3, 7 (5 of 36 actions)"``."""
    valid = np.flatnonzero(np.asarray(mask, dtype=bool))
    ranges: list[str] = []
    start = prev = None
    for index in (int(i) for i in valid):
        if prev is not None and index == prev + 1:
            prev = index
            continue
        if start is not None:
            ranges.append(_span(start, prev))
        start = prev = index
    if start is not None:
        ranges.append(_span(start, prev))
    shown = ", ".join(ranges[:RANGES_SHOWN]) + (", ..." if len(ranges) > RANGES_SHOWN else "")
    return f"{shown or 'nothing'} ({len(valid)} of {len(mask)} actions)"


def _span(start: int, end: int | None) -> str:
    return str(start) if end == start else f"{start}-{end}"


__all__ = ["ActionProblem", "RANGES_SHOWN", "describe_mask", "valid_action"]
