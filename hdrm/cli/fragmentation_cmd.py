"""``hdrm fragmentation``: the placement-only protocol of the FGD paper on openb lists.

Usage::

    hdrm fragmentation --nodes nodes.csv --pods pods.csv --policy fgd --seeds 42-51 --outdir D
"""

from __future__ import annotations

import argparse
from typing import Any

from hdrm.fragmentation.experiment import TIES, parse_seeds, run_experiment
from hdrm.fragmentation.protocol import DEFAULT_TUNING_RATIO, DRAWS
from hdrm.policies.placement import PLACEMENTS
from hdrm.workload.swf import SkippableLineError


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``fragmentation`` sub-command to the ``hdrm`` parser."""
    parser = subparsers.add_parser(
        "fragmentation",
        help="placement-only GPU fragmentation experiment (FGD protocol) on openb lists",
        description=(
            "Tasks of an openb pod list, resampled until their GPU requests reach the tuning "
            "ratio of the cluster's GPUs, arrive one by one in a random order per seed and never "
            "end; each is placed by the policy or fails. Writes per seed the allocation curve "
            "(curve_SEED.csv) and summary.json with the unallocated GPUs at 100%% arrived "
            "workload (median and per seed)."),
        epilog="example: hdrm fragmentation --nodes openb_node_list_gpu_node.csv "
               "--pods openb_pod_list_default.csv --policy fgd --seeds 42-51 --outdir runs/fgd",
    )
    parser.add_argument("--nodes", required=True, metavar="N.csv", help="openb node list")
    parser.add_argument("--pods", required=True, metavar="P.csv", help="openb pod list")
    parser.add_argument("--policy", required=True, metavar="P",
                        help=f"placement: {', '.join(PLACEMENTS.names())}")
    parser.add_argument("--seeds", default="42-51", metavar="S",
                        help="seeds, e.g. 42-51 or 42,43 (default %(default)s)")
    parser.add_argument("--outdir", required=True, metavar="D", help="output folder")
    parser.add_argument("--workload-tuning-ratio", type=float, default=DEFAULT_TUNING_RATIO,
                        metavar="R", help="resample GPU requests to R x the cluster's GPUs "
                        "(default %(default)s; <= 0: the list as it is)")
    parser.add_argument("--ties", choices=tuple(TIES), default="shuffled",
                        help="equal best scores go to the first node of a random order drawn "
                        "per seed (shuffled, the paper's simulator) or to the first node name "
                        "(first) (default %(default)s)")
    parser.add_argument("--draws", choices=DRAWS, default="numpy",
                        help="where each seed's arrival order and tie order come from: a numpy "
                        "generator seeded with it, or the paper's simulator's own draws of that "
                        "seed (paper: seeds 42-51, --ties shuffled; a seed is then the paper's "
                        "experiment of that seed) (default %(default)s)")
    parser.add_argument("--accelerator-types", metavar="A.json",
                        help="extra GPU models, a file shaped like "
                        "hdrm/platform/data/accelerators.json: price_aware prices the node "
                        "list's models from it and the type library")
    parser.add_argument("--processes", type=int, default=1, metavar="N",
                        help="worker processes for the seeds (default %(default)s)")
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Carry out ``hdrm fragmentation``; returns the exit status."""
    seeds = parse_seeds(args.seeds)
    try:
        summary = run_experiment(args.nodes, args.pods, args.policy, seeds, args.outdir,
                                 args.workload_tuning_ratio, args.processes, args.ties,
                                 args.draws, args.accelerator_types)
    except SkippableLineError as exc:  # both lists are read whole: no row is skipped
        raise exc.unskippable() from None
    unalloc = summary["unallocated_gpus_pct"]
    per_seed = " ".join(f"{s}:{v:.2f}" for s, v in unalloc["per_seed"].items())
    print(f"{summary['policy']}: unallocated GPUs at 100% arrived workload, median "
          f"{unalloc['median']:.2f}% ({per_seed}); wrote {args.outdir}/summary.json and "
          f"{len(seeds)} curve CSV files in {summary['wall_s']:.1f} s")
    return 0
