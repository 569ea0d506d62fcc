"""What a command-line script around hdrm (the benchmarks) needs to treat bad input as hdrm does.

* :func:`count`, :func:`seed` and :func:`positive`: ``argparse`` value types that refuse a
  number out of range in argparse's own one-line form (``prog: error: argument --repeat:
  expected an integer >= 1, got '0'``, exit 2) instead of letting it reach a ``range()``, a
  ``min()`` of nothing or numpy's seeding deep inside;
* :func:`json_object`: a JSON object option (``--agent-json``), refused in one line when it is
  not JSON or not an object;
* :func:`guarded`: runs a script's ``main`` and turns an :class:`~hdrm.errors.HdrmError` (bad
  input, already worded for the user) into ``prog: error: ...`` and exit 2, and Ctrl-C into one
  line and exit 130, instead of a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any, Callable

from hdrm.errors import ConfigError, HdrmError


def count(minimum: int = 1) -> Callable[[str], int]:
    """An ``argparse`` type: an integer of at least ``minimum``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


#: An ``argparse`` type for seeds: a non-negative integer (numpy refuses negative seeds).
seed = count(0)


def positive(text: str) -> float:
    """An ``argparse`` type: a finite number above zero."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def json_object(text: str, flag: str, example: str = '{"lr": 0.001}') -> dict[str, Any]:
    """A JSON object given on the command line (``--agent-json '{...}'``).

    Raises:
        ConfigError: not JSON (where it fails), or JSON but not an object; one line naming
            ``flag`` and showing ``example``.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{flag} {text!r}: not JSON ({exc.msg} at character {exc.pos}); give "
                          f"an object such as '{example}'") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{flag} {text!r}: expected a JSON object such as '{example}'")
    return value


def guarded(main: Callable[[], int | None], prog: str = "") -> int:
    """``main()``'s exit status; bad input (:class:`~hdrm.errors.HdrmError`) is one line
    ``prog: error: message`` on stderr and status 2, an interruption one line and status 130.

    Args:
        main: the script's entry point (reads ``sys.argv`` itself).
        prog: the script's name in the messages (default: ``sys.argv[0]``'s file name).
    """
    name = prog or Path(sys.argv[0]).name
    try:
        return int(main() or 0)
    except HdrmError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return 130
