"""What a command-line script around hdrm (the benchmarks) needs to treat bad input as hdrm does.

* :func:`count`, :func:`seed` and :func:`positive`: ``argparse`` value types that refuse a
  number out of range in argparse's own one-line form (``prog: error: argument --repeat:
  expected an integer >= 1, got '0'``, exit 2) instead of letting it reach a ``range()``, a
  ``min()`` of nothing or numpy's seeding deep inside;
* :func:`json_object`: a JSON object option (``--agent-json``), refused in one line when it is
  not JSON or not an object;
* :func:`guarded`: runs a script's ``main`` and turns an :class:`~hdrm.errors.HdrmError` (bad
  input, already worded for the user) into ``prog: error: ...`` and exit 2, Ctrl-C into one
  line and exit 130 and SIGTERM into one line and exit 143, instead of a traceback (or, for
  SIGTERM, a death that skipped every clean-up); ``--traceback`` or ``HDRM_TRACEBACK=1``
  (:func:`traceback_wanted`) prints the full trace before the line;
* :func:`run_command`: runs a child command (a training of ``train_seeds.py``) so that an
  interruption of this process stops the child too, instead of leaving it running on.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
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


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, as Ctrl-C raises :class:`KeyboardInterrupt`: the
    same clean-up runs (``finally`` blocks, temporary files removed, worker pools shut down)."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`Terminated` (main thread, and only where
    SIGTERM has its default action: a handler of the program's own is left alone)."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        yield
        return
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


#: The environment variable that asks for full traces, as ``--traceback`` does (``1``).
TRACEBACK_ENV = "HDRM_TRACEBACK"
#: What a one-line error of code not hdrm's (a user's agent.py) ends with.
TRACEBACK_HINT = "(run with --traceback for the full trace)"


def traceback_wanted(flag: bool = False) -> bool:
    """Whether full traces are wanted: ``--traceback`` given (``flag``) or ``HDRM_TRACEBACK``
    set to anything but empty or ``0``."""
    return flag or os.environ.get(TRACEBACK_ENV, "") not in ("", "0")


def print_trace(exc: BaseException) -> None:
    """Print the full trace of ``exc`` on stderr: of the error it was made from, when it
    replaced one in one-line terms (``raise ... from None``)."""
    if exc.__suppress_context__ and exc.__context__ is not None and exc.__cause__ is None:
        exc = exc.__context__
    traceback.print_exception(exc, file=sys.stderr)


def guarded(main: Callable[[], int | None], prog: str = "", trace: bool = False) -> int:
    """``main()``'s exit status; bad input (:class:`~hdrm.errors.HdrmError`) is one line
    ``prog: error: message`` on stderr and status 2, an interruption one line and status 130
    (Ctrl-C) or 143 (SIGTERM, which stops the work as Ctrl-C does: :func:`sigterm_raises`).

    Args:
        main: the script's entry point (reads ``sys.argv`` itself).
        prog: the script's name in the messages (default: ``sys.argv[0]``'s file name).
        trace: ``--traceback``: the full trace of a bad-input error is printed before its line
            (also with ``HDRM_TRACEBACK=1``: :func:`traceback_wanted`).
    """
    name = prog or Path(sys.argv[0]).name
    try:
        with sigterm_raises():
            return int(main() or 0)
    except HdrmError as exc:
        if traceback_wanted(trace):
            print_trace(exc)
        print(f"{name}: error: {exc}", file=sys.stderr)
        return 2
    except Terminated:
        print(f"{name}: interrupted (SIGTERM)", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return 130


#: Seconds an interrupted child is given to stop on its own (after Ctrl-C, which a terminal sends
#: to the whole foreground process group, the child too; after SIGTERM, which ``kill -- -PGID``
#: sends to the group), then after SIGTERM, before SIGKILL.
CHILD_GRACE_S = {"ctrl-c": 5.0, "sigterm": 1.0, "after sigterm": 30.0}


def run_command(cmd: Sequence[str]) -> int:
    """Run ``cmd`` and return its exit status; an interruption of this process stops the child
    before it is raised again.

    After Ctrl-C (:class:`KeyboardInterrupt`) or SIGTERM (:class:`Terminated`, under
    :func:`guarded`) the child, which the signal may have reached too, is given
    :data:`CHILD_GRACE_S` to save and stop, then sent SIGTERM and waited for (SIGKILL as a last
    resort). ``subprocess.run`` SIGKILLs the child a quarter of a second after Ctrl-C (a save cut
    short) and leaves it running on after a SIGTERM of this process alone.
    """
    child = subprocess.Popen(list(cmd))
    try:
        return child.wait()
    except KeyboardInterrupt as stop:
        _stop_child(child, CHILD_GRACE_S["sigterm" if isinstance(stop, Terminated) else "ctrl-c"])
        raise


def _stop_child(child: subprocess.Popen, own_s: float) -> None:
    """Wait ``own_s`` for an interrupted child to stop on its own, then SIGTERM, then SIGKILL."""
    for signal_first, grace in ((None, own_s), (signal.SIGTERM, CHILD_GRACE_S["after sigterm"])):
        if signal_first is not None and child.poll() is None:
            child.send_signal(signal_first)
        try:
            child.wait(grace)
            return
        except (subprocess.TimeoutExpired, KeyboardInterrupt):  # a second Ctrl-C: go on
            continue
    child.kill()
    child.wait()
