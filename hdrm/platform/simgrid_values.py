"""Text forms of SimGrid host values: speed lists, power states and cluster radicals.

Read by :mod:`hdrm.platform.simgrid` (which re-exports the parsers) and the Batsim engine; each
failure is a one-line :class:`~hdrm.errors.PlatformError` prefixed with where the text was.
"""

from __future__ import annotations

import re

from hdrm.errors import PlatformError
from hdrm.platform.model import check_size

#: SI prefix -> power of 1000 (or of 1024 with an "i": "Gif").
_PREFIX_POWER = {"": 0, "k": 1, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
_SPEED_RE = re.compile(r"^\s*([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*(?:([kKMGTPE]?)(i?)f)?\s*$")


def parse_speeds_gflops(text: str, where: str) -> tuple[float, ...]:
    """Parse a SimGrid speed list (``"10Gf, 7.5Gf, 0.001f"``) into GFLOP/s.

    Raises:
        PlatformError: a speed is not a number with a flops unit (``where`` prefixes the message).
    """
    speeds = []
    for part in text.split(","):
        match = _SPEED_RE.match(part)
        if not match:
            raise PlatformError(
                f"{where}: bad speed {part.strip()!r}; write a number with a unit among "
                "f, kf, Mf, Gf, Tf, Pf, Ef (or Kif, Mif, ... for powers of 1024)"
            )
        value, prefix, binary = match.groups()
        scale = (1024.0 if binary else 1000.0) ** _PREFIX_POWER[prefix or ""]
        speeds.append(float(value) * scale / 1e9)
    return tuple(speeds)


def parse_wattage(text: str, where: str) -> tuple[tuple[float, float], ...]:
    """Parse ``"idle:full, idle:full, ..."`` (or ``idle:one_core:full``) into (idle, full) pairs.

    Raises:
        PlatformError: a value is not a number (``where`` prefixes the message).
    """
    pairs = []
    for part in text.split(","):
        try:
            values = [float(v) for v in part.split(":")]
        except ValueError:
            raise PlatformError(
                f"{where}: bad power state {part.strip()!r}; write 'idle:full' watts per state, "
                "separated by commas"
            ) from None
        pairs.append((values[0], values[-1]))
    return tuple(pairs)


def parse_radical(text: str, where: str) -> list[int]:
    """Expand a SimGrid cluster radical (``"0-255"``, ``"0-3,7,9-10"``) into integers."""
    ranges: list[range] = []
    try:
        for part in text.split(","):
            first, _, last = part.partition("-")
            ranges.append(range(int(first), int(last or first) + 1))
    except ValueError:
        raise PlatformError(
            f"{where}: bad radical {text!r}; write ranges like '0-255' or '0-3,7'"
        ) from None
    # counted before expanding: a radical such as 0-999999999999 must not fill the memory
    check_size(sum(map(len, ranges)), f"{where}: radical {text!r}: {sum(map(len, ranges)):,} "
               "hosts of one core", "give a shorter radical")
    return [i for r in ranges for i in r]


#: Speed and wattage texts parsed so far (a bounded memo: platforms have few distinct texts).
_PARSED: dict[tuple[str, str], tuple] = {}


def speeds_of(text: str, where: str) -> tuple[float, ...]:
    """:func:`parse_speeds_gflops`, each distinct text parsed once (hosts repeat theirs)."""
    found = _PARSED.get(("speed", text))
    if found is None:
        found = _remember("speed", text, parse_speeds_gflops(text, where))
    return found


def wattage_of(text: str, where: str) -> tuple[tuple[float, float], ...]:
    """:func:`parse_wattage`, each distinct text parsed once (hosts repeat theirs)."""
    found = _PARSED.get(("watts", text))
    if found is None:
        found = _remember("watts", text, parse_wattage(text, where))
    return found


def _remember(kind: str, text: str, value: tuple) -> tuple:
    if len(_PARSED) >= 1024:
        _PARSED.clear()
    _PARSED[kind, text] = value
    return value
