"""``hdrm plot KIND RUN_DIR [-o FILE]``: draw one plot of a run folder.

KIND is one of gantt, gpus, utilisation, queue, energy, contention, learning, actions (see
docs/plots.rst; ``gpus``, the gantt chart by GPU of a replay on a GPU platform, in docs/gpu.rst).
The figure goes to FILE (png, svg or pdf by its suffix), by default
``RUN_DIR/KIND.png``. ``hdrm plot fragmentation D1 D2 ...`` draws the FGD paper's figure from
several ``hdrm fragmentation`` output folders, one line per policy (docs/gpu.rst), by default
into ``fragmentation.png`` beside D1. ``hdrm plot dag RUN --graph FILE`` draws a DAG gantt
chart of a periodic run folder (with its task set JSON), of a replay of a workload with job
dependencies (with that workload) or of a DAG schedule CSV (with its workflow JSON), by default into ``RUN/dag.png`` or beside the CSV (docs/dags.rst).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from hdrm.errors import ConfigError
from hdrm.registry import suggest

logger = logging.getLogger(__name__)

#: The plot kinds, in the order the help lists them (kept here so ``hdrm --help`` stays light).
KINDS = ("gantt", "gpus", "utilisation", "queue", "energy", "contention", "learning", "actions")
#: The kind drawn from several ``hdrm fragmentation`` folders rather than from one run folder.
FRAGMENTATION = "fragmentation"
#: The DAG gantt chart, drawn from a periodic run folder or a DAG schedule CSV.
DAG = "dag"
#: Options that apply to one kind only: option -> (kind, keyword of the plot function).
KIND_OPTIONS = {
    "color": ("gantt", "color_by"),
    "max_jobs": ("gantt", "max_jobs"),
    "max_gpus": ("gpus", "max_gpus"),
    "window": ("learning", "window"),
    "top": ("actions", "top"),
    "metric": (FRAGMENTATION, "metric"),
    "graph": (DAG, "graph"),
    "max_arrows": (DAG, "max_arrows"),
}
_ALIASES = {"utilization": "utilisation"}


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``plot`` sub-command."""
    parser = subparsers.add_parser(
        "plot",
        help="draw a plot of a run folder (gantt, utilisation, queue, energy, ...)",
        description=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("kind", metavar="KIND",
                        help="one of: " + ", ".join(KINDS + (FRAGMENTATION, DAG)))
    parser.add_argument("run_dir", metavar="RUN_DIR", nargs="+",
                        help="folder with the run's result files (fragmentation: one or more "
                        "hdrm fragmentation output folders)")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="save the plot here: .png, .svg or .pdf (default RUN_DIR/KIND.png)")
    parser.add_argument("--color", metavar="BY",
                        help="gantt: colour jobs by 'job' (default) or 'user'")
    parser.add_argument("--max-jobs", type=int, metavar="N",
                        help="gantt: draw only the N largest jobs (default 2000)")
    parser.add_argument("--max-gpus", type=int, metavar="N",
                        help="gpus: draw only the N busiest GPUs (default 64)")
    parser.add_argument("--window", type=int, metavar="N",
                        help="learning: moving-average window in episodes (default 10)")
    parser.add_argument("--top", type=int, metavar="N",
                        help="actions: actions shown separately per episode (default 8)")
    parser.add_argument("--metric", metavar="M",
                        help="fragmentation: unallocated (default), frag_ratio or frag_amount")
    parser.add_argument("--graph", metavar="FILE",
                        help="dag: the task set JSON of a periodic run folder, the workload (SWF "
                        "or Batsim JSON) a replay folder replayed, or the workflow JSON of a DAG "
                        "schedule CSV")
    parser.add_argument("--max-arrows", type=int, metavar="N",
                        help="dag: draw dependency arrows up to N dependencies (default 300)")
    parser.set_defaults(func=run)
    return parser


def plot_options(kind: str, args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments of the plot function from the options given for ``kind``.

    Raises:
        ConfigError: an option given belongs to another kind.
    """
    kwargs = {}
    for option, (owner, keyword) in KIND_OPTIONS.items():
        value = getattr(args, option, None)
        if value is None:
            continue
        if owner != kind:
            flag = "--" + option.replace("_", "-")
            raise ConfigError(f"option {flag} applies to 'hdrm plot {owner}' only, not to {kind!r}")
        kwargs[keyword] = value
    return kwargs


def _fragmentation(args: argparse.Namespace) -> int:
    """``hdrm plot fragmentation D1 D2 ...``: the FGD paper's figure."""
    from hdrm.viz import check_output_path, save
    from hdrm.viz.fragmentation import plot_fragmentation

    options = plot_options(FRAGMENTATION, args)
    metric = options.get("metric", "unallocated")
    name = "fragmentation.png" if metric == "unallocated" else f"fragmentation_{metric}.png"
    output = check_output_path(args.output or Path(args.run_dir[0]).parent / name)
    print(f"wrote {save(plot_fragmentation(args.run_dir, **options), output)}")
    return 0


def _dag(args: argparse.Namespace) -> int:
    """``hdrm plot dag RUN --graph FILE``: the DAG gantt chart."""
    from hdrm.viz import check_output_path, save
    from hdrm.viz.dag import plot_dag

    if len(args.run_dir) > 1:
        raise ConfigError(f"hdrm plot dag draws one RUN (a periodic run folder or a DAG schedule "
                          f"CSV), got {len(args.run_dir)}")
    source = Path(args.run_dir[0])
    if not source.exists():
        raise ConfigError(f"hdrm plot dag: {source} does not exist; give a periodic run folder "
                          "or a DAG schedule CSV")
    default = source / "dag.png" if source.is_dir() else source.with_suffix(".png")
    output = check_output_path(args.output or default)
    print(f"wrote {save(plot_dag(source, **plot_options(DAG, args)), output)}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Draw and save the plot; prints the path written."""
    from hdrm.results.run import Run
    from hdrm.viz import PLOTS, check_output_path, save

    if args.kind.lower() == FRAGMENTATION:
        return _fragmentation(args)
    if args.kind.lower() == DAG:
        return _dag(args)
    if args.kind.lower() not in PLOTS.names():
        choices = sorted(PLOTS.names() + [FRAGMENTATION, DAG])
        raise ConfigError(f"hdrm plot KIND: unknown plot kind {args.kind!r}; "
                          f"{suggest(args.kind.lower(), choices)}choose one of: {', '.join(choices)}")
    plot = PLOTS.get(args.kind, where="hdrm plot KIND")
    kind = _ALIASES.get(args.kind.lower(), args.kind.lower())
    if len(args.run_dir) > 1:
        raise ConfigError(f"hdrm plot {kind} draws one RUN_DIR, got {len(args.run_dir)}; "
                          "compare runs with 'hdrm compare', or plot fragmentation folders with "
                          "'hdrm plot fragmentation D1 D2 ...'")
    run_folder = Run(args.run_dir[0])
    output = check_output_path(args.output or run_folder.path / f"{kind}.png")
    figure = plot(run_folder, **plot_options(kind, args))
    print(f"wrote {save(figure, output)}")
    return 0
