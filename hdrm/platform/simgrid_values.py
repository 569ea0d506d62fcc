"""Text forms of SimGrid host values: speed lists, power states and cluster radicals.

Read by :mod:`hdrm.platform.simgrid` (which re-exports the parsers) and the Batsim engine; each
failure is a one-line :class:`~hdrm.errors.PlatformError` prefixed with where the text was.
"""

from __future__ import annotations

import re

from hdrm.errors import PlatformError
from hdrm.platform.model import check_size

#: SimGrid 3.32's speed units (xbt_parse_get_speed): f or flops, with a decimal prefix, short
#: (kf ... Yf) or long (kiloflops ... yottaflops; SimGrid spells 10**21 "zeta"). No binary prefix.
_SPEED_UNITS = {"f": 1.0, "flops": 1.0}
for _power, (_short, _long) in enumerate(zip("kMGTPEZY", ("kilo", "mega", "giga", "tera", "peta",
                                                          "exa", "zeta", "yotta")), start=1):
    _SPEED_UNITS[_short + "f"] = _SPEED_UNITS[_long + "flops"] = 1000.0 ** _power
#: What strtod reads of a decimal number (after leading white space), then the rest: the unit.
_NUMBER_RE = re.compile(r"\s*([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)(.*)", re.S)
_UNITS_HELP = "f, kf, Mf, Gf, Tf, Pf, Ef, Zf, Yf (or flops, kiloflops, ..., yottaflops)"


def parse_speeds_gflops(text: str, where: str) -> tuple[float, ...]:
    """Parse a SimGrid speed list (``"10Gf, 7.5Gf, 0.001f"``) into GFLOP/s, as SimGrid 3.32 does.

    A list's items are stripped of white space; a single speed may start with white space but
    nothing may separate the number from its unit. A number without a unit is in flop/s.

    Raises:
        PlatformError: a speed is not a number with one of SimGrid's flops units, or is not
            finite (``where`` prefixes the message).
    """
    parts = [p.strip() for p in text.split(",")] if "," in text else [text]
    return tuple(_speed_gflops(part, where) for part in parts)


def _speed_gflops(part: str, where: str) -> float:
    match = _NUMBER_RE.fullmatch(part)
    unit = match.group(2) if match else None
    if match is None or (unit and unit not in _SPEED_UNITS):
        why = f"unknown unit {unit!r}" if match else "not a number"
        raise PlatformError(
            f"{where}: bad speed {part!r} ({why}); write a number and a unit among "
            f"{_UNITS_HELP}, with no space between them"
        )
    return float(match.group(1)) * _SPEED_UNITS[unit or "f"] / 1e9


def parse_wattage(text: str, where: str) -> tuple[tuple[float, float], ...]:
    """Parse ``"idle:full, idle:full, ..."`` (or ``idle:epsilon:full``) into (idle, full) pairs.

    Raises:
        PlatformError: a state is not two or three numbers, which SimGrid's energy plugin
            refuses (``where`` prefixes the message).
    """
    pairs = []
    for part in text.split(","):
        try:
            values = [float(v) for v in part.split(":")]
        except ValueError:
            values = []
        if len(values) not in (2, 3):
            raise PlatformError(
                f"{where}: bad power state {part.strip()!r} in wattage_per_state; write "
                "'idle:full' (or 'idle:epsilon:full') watts per power state, separated by commas"
            )
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
    empty = next((r for r in ranges if not r), None)
    if empty is not None:  # SimGrid makes no host of it, silently
        raise PlatformError(
            f"{where}: radical {text!r}: the range {empty.start}-{empty.stop - 1} is empty (its "
            f"first number is above its last), so it makes no host; write "
            f"'{empty.stop - 1}-{empty.start}'"
        )
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
