"""The ``hdrm`` console script: one sub-command per module in :mod:`hdrm.cli`.

Each sub-command module defines ``add_parser(subparsers)``, which adds its parser and sets
``func`` (a callable taking the parsed arguments and returning an exit status). Errors that users
cause (:class:`~hdrm.errors.HdrmError`) become one line on stderr and exit status 2. Output
piped into a reader that stops early (``hdrm workload trace.swf | head``) ends the command quietly
with status 141, as the shell's own tools do.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from hdrm import __version__
from hdrm.errors import HdrmError

#: Sub-command modules, in the order ``hdrm --help`` lists them.
SUBCOMMANDS = (
    "platform_cmd",
    "workload_cmd",
    "replay_cmd",
    "serve_cmd",
    "plot_cmd",
    "compare_cmd",
    "sweep_cmd",
    "fragmentation_cmd",
    "dag_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    """Build the ``hdrm`` parser with every sub-command that is installed."""
    parser = argparse.ArgumentParser(
        prog="hdrm",
        description="Learn and evaluate job-scheduling policies on heterogeneous clusters.",
    )
    parser.add_argument("--version", action="version", version=f"hdrm {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"hdrm.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"hdrm.cli.{name}":
                continue  # sub-command not written yet
            raise
        module.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``hdrm``; returns the exit status (0 ok, 2 bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # inside the try: a reader gone shows here, not at the interpreter's exit
        return status
    except HdrmError as exc:
        print(f"hdrm {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"hdrm {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader of stdout has gone; send what is still buffered nowhere, so that the
        # interpreter's final flush does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13  # SIGPIPE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
