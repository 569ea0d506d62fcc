"""``hdrm replay`` on a GPU platform: the time-based replay of an openb or Gavel workload."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hdrm.core.gpu_scheduler import GPU_BACKFILLING, resolve_gpu_policy
from hdrm.durable import staged
from hdrm.errors import ConfigError
from hdrm.launch.outdir import replay_outdir
from hdrm.platform.model import Platform
from hdrm.results.sla import SLA_FILE, print_summary, report_from_outcomes, write_sla_csv
from hdrm.sim.engine import Simulation, SimulationConfig, SimulationResult
from hdrm.sim.gpu_inputs import load_gpu_platform, load_gpu_workload
from hdrm.sim.gpu_outputs import gpu_summary, write_gpu_outputs
from hdrm.workload.job import Workload
from hdrm.workload.select import select
from hdrm.workload.swf import SkippableLineError
from hdrm.workload.tenant_files import tenants_for


def run_gpu(args: argparse.Namespace, platform: Platform | None = None,
            workload: Workload | None = None) -> int:
    """Replay on a GPU platform (inputs read here unless given) and print the summary."""
    policy = resolve_gpu_policy(args.policy, "--policy")
    if args.backfill not in GPU_BACKFILLING:
        raise ConfigError(f"--backfill: {args.backfill!r} is not supported on GPU platforms (it "
                          f"needs reservations over GPU shares); use one of "
                          f"{', '.join(GPU_BACKFILLING)}")
    if platform is None or workload is None:
        platform, workload = _inputs(args)
    tenants = (tenants_for(workload, args.tenants, args.sla)
               if getattr(args, "tenants", None) is not None else None)
    config = SimulationConfig(backfilling=args.backfill, decision=args.decision or "event",
                              seed=args.seed)
    with replay_outdir(args.outdir, overwrite=getattr(args, "overwrite", False)) as folder:
        result = Simulation(platform, workload, config).run(policy)
        report = (report_from_outcomes(tenants, workload.jobs, result.outcomes)
                  if tenants is not None else None)  # SLA metrics, out_sla.csv (docs/tenants.rst)
        with staged() as stage:  # every output of the run published together
            paths = write_gpu_outputs(result, args.outdir, stage=stage)
            if report is not None:
                paths["sla"] = Path(args.outdir) / SLA_FILE
                write_sla_csv(report, stage.path(paths["sla"]))
    print_gpu_summary(result, Path(args.outdir), args.backfill, config.decision)
    if report is not None:
        print_summary(report)
    if folder.note():
        print(f"hdrm replay: {folder.note()}", file=sys.stderr)
    return 0 if paths else 1


def _inputs(args: argparse.Namespace) -> tuple[Platform, Workload]:
    """The GPU platform, read whole (``--no-strict`` never drops a node), and the selected
    workload, whose bad rows ``--no-strict`` skips and counts."""
    platform = load_gpu_platform(  # a bad node row: one line, no skip offered
        args.platform, getattr(args, "accelerator_types", None))
    try:
        workload = load_gpu_workload(args.workload, args.throughputs, not args.no_strict,
                                     platform)
    except SkippableLineError as exc:  # name the flag, not the reader's argument
        raise exc.relaxed_by("rerun with --no-strict") from None
    return platform, select(workload, args.start_index, args.nb_jobs)


def _skipped(skipped: dict[str, int]) -> str:
    """``"3 (num_gpu: expected an integer: 3)"``, or ``"none"``."""
    if not skipped:
        return "none"
    return f"{sum(skipped.values())} (" + ", ".join(f"{r}: {n}" for r, n in skipped.items()) + ")"


def _models(values: dict[str, float], fmt: str) -> str:
    return ", ".join(f"{m} {format(v, fmt)}" for m, v in values.items()) or "none"


def print_gpu_summary(result: SimulationResult, outdir: Path, backfill: str,
                      decision: str = "event") -> None:
    """The replay's figures, one per line."""
    s = gpu_summary(result)
    platform = result.platform
    print(f"hdrm replay: {s['nb_jobs']} tasks of {result.workload.name} on {platform.name} "
          f"({len(platform.nodes)} nodes, {len(platform.accelerators)} GPUs), policy "
          f"{s['policy']}, backfilling {backfill}"
          + (", commit decisions" if decision == "commit" else ""))
    rejected = "; ".join(f"{reason}: {n}" for reason, n in s["rejected"].items())
    rows = [
        ("tasks finished / rejected", f"{s['nb_finished']} / {s['nb_rejected']}"
         + (f" ({rejected})" if rejected else "")),
        ("makespan", f"{s['makespan_s']:.1f} s"),
        ("mean waiting time", f"{s['mean_waiting_time_s']:.1f} s"),
        ("mean JCT", f"{s['mean_jct_s']:.1f} s"),
        ("GPU allocation rate", f"{100 * s['gpu_allocation_rate_all']:.2f}% ("
         + _models({m: 100 * v for m, v in s["gpu_allocation_rate"].items()}, ".2f") + " %)"),
        ("mean fragmentation", f"{s['mean_frag_milli'] / 1000:.2f} GPUs"),
        ("energy", f"{s['energy_j'] / 3.6e6:.3f} kWh"),
        ("GPU cost", f"{s['cost_usd']:.2f} USD (" + _models(s["cost_usd_by_model"], ".2f") + ")"),
        ("skipped from the source", _skipped(result.workload.skipped)),
        ("wall time", f"{result.wall_s:.2f} s"),
        ("outputs", str(outdir)),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"  {key:<{width}}  {value}")
