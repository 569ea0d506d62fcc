"""``hdrm compare RUN_DIR_A RUN_DIR_B ... [-o FILE] [--format markdown|csv]``: compare runs.

Prints one row per run (makespan, energy, mean and max waiting time, mean turnaround, mean
slowdown, mean bounded slowdown, utilisation, all recomputed from each run's out_jobs.csv) as a
Markdown or CSV table on stdout; with ``-o FILE`` also saves a grid of bar charts (png, svg or pdf).
Runs of different jobs (another trace, selection or job count) or on platforms of different sizes
are refused, naming what differs; ``--allow-mismatch`` compares them anyway, with a warning.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from hdrm.errors import ConfigError
from hdrm.registry import suggest

logger = logging.getLogger(__name__)

#: Table formats of ``--format``.
FORMATS = ("markdown", "csv")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``compare`` sub-command."""
    parser = subparsers.add_parser(
        "compare",
        help="compare runs: a table of headline metrics and a grid of bar charts",
        description=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run folders to compare")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="also save the bar charts here (.png, .svg or .pdf)")
    parser.add_argument("--format", default="markdown", metavar="FORMAT",
                        help="table format on stdout: markdown (default) or csv")
    parser.add_argument("--allow-mismatch", action="store_true",
                        help="compare runs of different jobs or platform sizes anyway (warns)")
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Print the comparison table and, with ``-o``, save the bar charts."""
    from hdrm.results.compare import (
        as_runs,
        check_comparable,
        compare_rows,
        format_csv,
        format_markdown,
        input_differences,
    )

    fmt = args.format.lower()
    if fmt not in FORMATS:
        raise ConfigError(
            f"--format: unknown table format {args.format!r}; {suggest(fmt, FORMATS)}"
            f"choose one of: {', '.join(FORMATS)}"
        )
    runs = as_runs(args.run_dirs)
    if args.allow_mismatch:
        for difference in input_differences(runs):
            print(f"hdrm compare: warning: not comparable: {difference}", file=sys.stderr)
    else:
        check_comparable(runs, "pass --allow-mismatch")
    rows = compare_rows(runs, allow_mismatch=True)
    if args.output:
        from hdrm.viz import check_output_path, plot_compare, save

        path = save(plot_compare(runs), check_output_path(args.output))
        print(f"wrote {path}", file=sys.stderr)
    sys.stdout.write(format_markdown(rows) if fmt == "markdown" else format_csv(rows))
    return 0
