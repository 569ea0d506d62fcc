"""``hdrm workload``: load a trace, print its summary, optionally write a Batsim JSON workload.

Examples::

    hdrm workload traces/SDSC-SP2-1998-4.2-cln.swf.gz
    hdrm workload lublin_256.swf.gz --conventions rlscheduler --start-index 1981 --nb-jobs 1024
    hdrm workload sdsc.swf.gz --platform platforms/hetero.json --nb-jobs 500 --json w.json --seed 7
    hdrm workload sdsc.swf.gz --load-factor 1.5 --json heavier.json
    hdrm workload inference --tenants hdrm/data/inference_tenants.json -o inf

``inference`` in place of a trace generates a multi-tenant DNN inference workload
(:mod:`hdrm.cli.inference_workload`).
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

import numpy as np

from hdrm.cli.inference_workload import run_inference
from hdrm.cli.checks import check_seed_and_bandwidth
from hdrm.errors import ConfigError
from hdrm.workload.batsim_json import read_batsim_json, write_batsim_json
from hdrm.workload.conventions import CONVENTIONS
from hdrm.workload.gpu_formats import is_gpu_trace_name, trace_kind
from hdrm.workload.job import Workload
from hdrm.workload.load import scale_arrivals
from hdrm.workload.requirements import DEFAULT_BW, attach_requirements
from hdrm.workload.select import select
from hdrm.workload.summary import format_summary, summarize_workload
from hdrm.workload.swf import SkippableLineError, read_swf

logger = logging.getLogger(__name__)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``workload`` sub-command to ``subparsers``."""
    parser = subparsers.add_parser(
        "workload",
        help="summarize an SWF trace or Batsim workload; convert it to Batsim JSON",
        description=(
            "Load an SWF trace (.swf or .swf.gz) or a Batsim JSON workload (.json), select jobs, "
            "print a summary (jobs kept, jobs skipped per reason, span, max processors, offered "
            "load) and optionally write a Batsim JSON workload."
        ),
    )
    parser.add_argument("trace", metavar="TRACE",
                        help="SWF trace or Batsim workload .json, or 'inference' to generate "
                             "inference requests from a tenant spec (--tenants, -o)")
    parser.add_argument("--platform", metavar="P.json",
                        help="platform file (JSON or SimGrid XML): the load refers to its cores, "
                             "and SWF jobs written with --json get parallel_homogeneous "
                             "requirements at its reference speed (Batsim JSON input is written "
                             "as it is)")
    parser.add_argument("--nb-jobs", type=int, default=0, metavar="N",
                        help="keep N jobs (0, the default: all from the start index)")
    parser.add_argument("--start-index", type=int, default=0, metavar="I",
                        help="first job to keep, 0-based, after the conventions' filtering")
    parser.add_argument("--conventions", default="default", metavar="NAME",
                        help=f"SWF conventions: {', '.join(CONVENTIONS.names())} "
                             "(default: default)")
    parser.add_argument("--no-strict", dest="strict", action="store_false",
                        help="skip SWF lines the standard does not allow (not 18 numbers, fractional "
                             "processors, a repeated job number), counted, instead of stopping")
    parser.add_argument("--load-factor", type=float, metavar="F",
                        help="divide the selection's submission times by F (F times the offered "
                             "load: 2 doubles the arrival rate, 0.5 halves it)")
    parser.add_argument("--json", metavar="OUT.json", help="write the selection as Batsim JSON")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed of the memory bandwidth draw (default: 0); with inference, "
                             "of the arrivals (default: the spec's seed)")
    parser.add_argument("--bw", default=DEFAULT_BW, metavar="SPEC",
                        help="memory bandwidth per core: hdeeprm (default), none, constant:X, "
                             "uniform:A:B, choice:[X,Y,...] (GB/s)")
    inference = parser.add_argument_group("inference (TRACE = inference)")
    inference.add_argument("--tenants", metavar="SPEC.json",
                           help="tenant spec: per tenant a model, arrival process, batch, share "
                                "(docs/tenants.rst)")
    inference.add_argument("-o", "--output", metavar="DIR",
                           help="folder for workload.json and tenants.json")
    inference.add_argument("--requests", type=int, metavar="N",
                           help="generate N requests (overrides the spec's bound)")
    parser.set_defaults(func=run)
    return parser


#: GPU traces other than openb pod lists, as ``hdrm workload`` names them when refusing them.
_GPU_TRACES = {"philly": "Philly's job log (cluster_job_log)",
               "helios": "a Helios job log (cluster_log.csv)",
               "pai": "a PAI task table (pai_task_table.csv)"}


def run(args: argparse.Namespace) -> int:
    """Run ``hdrm workload``; returns the exit status."""
    check_seed_and_bandwidth(args.seed, args.bw, "--bw")
    if args.trace == "inference":
        return run_inference(args)
    if args.tenants or args.output or args.requests is not None:
        raise ConfigError("--tenants, -o and --requests generate inference workloads: give "
                          "'inference' as TRACE (hdrm workload inference --tenants SPEC.json "
                          "-o DIR)")
    if is_gpu_trace_name(args.trace) or trace_kind(args.trace) == "philly":
        what = _GPU_TRACES.get(trace_kind(args.trace) or "", "an openb pod list (.csv)")
        raise ConfigError(f"{args.trace}: hdrm workload reads SWF traces and Batsim JSON; {what} "
                          "is replayed with hdrm replay --platform NODES.csv --workload "
                          f"{'TRACE' if what in _GPU_TRACES.values() else 'PODS.csv'}")
    platform = load_platform(args.platform) if args.platform else None
    is_json = args.trace.lower().endswith(".json")
    try:
        workload = _load(args, platform)
    except SkippableLineError as exc:  # name the flag, not read_swf's argument
        raise exc.relaxed_by("rerun with --no-strict") from None
    if args.start_index or args.nb_jobs:  # else the trace as it is, on its own clock
        workload = select(workload, args.start_index, args.nb_jobs)
    if args.load_factor is not None:
        workload = scale_arrivals(workload, args.load_factor)
    nb_cores = platform.nb_cores if platform is not None else None
    print(format_summary(summarize_workload(workload, nb_cores)))
    if workload.dependencies is not None:  # as hdrm replay's summary says it
        print(f"dependencies    {workload.dependencies.describe()}")
    if platform is not None:
        print(f"reference speed {platform.reference_gflops:g} GFLOP/s per core "
              f"({args.platform})")
    if args.json:
        if platform is not None and not is_json:
            rng = np.random.default_rng(args.seed if args.seed is not None else 0)
            workload = attach_requirements(workload, platform.reference_gflops, rng, args.bw)
            workload.nb_res = platform.nb_cores
        guessed = workload.nb_res is None  # Batsim JSON needs nb_res: the widest job's
        write_batsim_json(workload, args.json)
        kind = ("parallel_homogeneous" if platform is not None and not is_json
                else "as loaded" if is_json else "delay")
        print(f"wrote {args.json}: {len(workload)} jobs, profiles {kind}")
        if guessed:
            widest = max(job.res for job in workload.jobs)
            print(f"note            nb_res {widest} in {args.json} is the widest job's: the "
                  "trace states no MaxProcs (nor MaxNodes); give --platform for the machine's "
                  "cores")
    return 0


def _load(args: argparse.Namespace, platform: Any) -> Workload:
    """Read the trace: SWF with the chosen conventions, or Batsim JSON taken as it is."""
    CONVENTIONS.get(args.conventions, "--conventions")
    if args.trace.lower().endswith(".json"):
        if args.conventions != "default":
            logger.warning("--conventions applies to SWF traces only; ignored for %s", args.trace)
        ref = platform.reference_gflops if platform is not None else None
        return read_batsim_json(args.trace, ref)
    return read_swf(args.trace, args.conventions, strict=args.strict)


def load_platform(path: str) -> Any:
    """Load a platform JSON file or a SimGrid XML platform, as ``hdrm replay`` does
    (:func:`hdrm.sim.inputs.load_platform_any`)."""
    from hdrm.sim.inputs import load_platform_any

    return load_platform_any(path)
