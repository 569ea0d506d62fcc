"""The ``hdrm`` console script: one sub-command per module in :mod:`hdrm.cli`.

Each sub-command module defines ``add_parser(subparsers)``, which adds its parser and sets
``func`` (a callable taking the parsed arguments and returning an exit status). Errors that users
cause (:class:`~hdrm.errors.HdrmError`) become one line on stderr and exit status 2. Output
piped into a reader that stops early (``hdrm workload trace.swf | head``) ends the command quietly
with status 141, as the shell's own tools do.

A command's process leaves without the cyclic collector's passes over what is still alive
(:func:`_skip_exit_collections`).
"""

from __future__ import annotations

import argparse
import atexit
import gc
import importlib
import logging
import os
import sys

from hdrm import __version__
from hdrm.cli.script import guarded
from hdrm.sim.collector import collector_paused

#: Sub-command name -> its module, in the order ``hdrm --help`` lists them.
COMMANDS = {
    "platform": "platform_cmd",
    "workload": "workload_cmd",
    "replay": "replay_cmd",
    "serve": "serve_cmd",
    "plot": "plot_cmd",
    "compare": "compare_cmd",
    "sweep": "sweep_cmd",
    "fragmentation": "fragmentation_cmd",
    "dag": "dag_cmd",
}
#: Sub-command modules, in the order ``hdrm --help`` lists them.
SUBCOMMANDS = tuple(COMMANDS.values())


def _named_command(argv: list[str]) -> str | None:
    """The sub-command that ``argv`` names (its first word that is not an option), if known."""
    first = next((w for w in argv if not w.startswith("-")), None)
    return first if first in COMMANDS else None


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """Build the ``hdrm`` parser with every sub-command that is installed.

    Args:
        argv: the command line about to be parsed, if known: when its first word names a
            sub-command, only that sub-command's module is imported (the others' imports: GPU
            data, DAG tools, Ray's sweep, cost a short replay a good share of its time). Without it,
            or without a known sub-command in it (``hdrm --help``, a typo), every one is built,
            so help and argparse's "invalid choice" list them all.

    The parser is built, and the sub-command modules imported, with the cycle collector paused
    (:mod:`hdrm.sim.collector`): their modules, classes and functions live as long as the
    process, and the collections that making them would set off (~2 ms of a replay's imports)
    would free next to nothing (what they drop in cycles is collected later, as usual).
    """
    with collector_paused():  # the parser too lives as long as the process
        return _build_parser(argv)


def _build_parser(argv: list[str] | None) -> argparse.ArgumentParser:
    """:func:`build_parser`'s work."""
    parser = argparse.ArgumentParser(
        prog="hdrm",
        description="Learn and evaluate job-scheduling policies on heterogeneous clusters.",
    )
    parser.add_argument("--version", action="version", version=f"hdrm {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    parser.add_argument("--traceback", action="store_true",
                        help="print the full trace of an error before its one line (also "
                        "HDRM_TRACEBACK=1)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    named = _named_command(argv) if argv is not None else None
    for name in (COMMANDS[named],) if named else SUBCOMMANDS:
        try:
            module = importlib.import_module(f"hdrm.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"hdrm.cli.{name}":
                continue  # sub-command not written yet
            raise
        module.add_parser(subparsers)
    return parser


def _skip_exit_collections() -> None:
    """At interpreter exit, keep the cyclic garbage collector off what is still alive.

    Python's finalisation clears the modules and runs the cyclic collector until their classes
    and functions are freed (they form cycles: a function holds its module's globals), memory
    that the operating system takes back at exit anyway: ~8 ms of a replay's CPU.
    :func:`gc.freeze` at exit (an :mod:`atexit` handler, run before the finalisation) puts what
    is alive out of the collector's sight, so the exit costs ~2 ms. Other atexit handlers and
    :class:`weakref.finalize` callbacks still run; what is lost is the ``__del__`` of objects in
    reference cycles still alive at exit, which Python does not promise to call either.
    Registered once per process.
    """
    global _exit_freeze_registered
    if not _exit_freeze_registered:
        atexit.register(gc.freeze)
        _exit_freeze_registered = True


_exit_freeze_registered = False


def main(argv: list[str] | None = None) -> int:
    """Run ``hdrm``; returns the exit status (0 ok, 2 bad input)."""
    _skip_exit_collections()
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    def run() -> int:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # inside the try: a reader gone shows here, not at the interpreter's exit
        return status

    try:  # bad input: one line and 2; Ctrl-C: one line and 130
        return guarded(run, f"hdrm {args.command}", trace=args.traceback)
    except BrokenPipeError:
        # the reader of stdout has gone; send what is still buffered nowhere, so that the
        # interpreter's final flush does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13  # SIGPIPE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
