"""``hdrm replay``: replay a workload on a platform with a classic policy and write the outputs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from hdrm.cli.checks import check_seed_and_bandwidth
from hdrm.core.contention import CONTENTION_MODELS
from hdrm.durable import Staging, staged
from hdrm.errors import ConfigError, SkippableLineError
from hdrm.implied import ImpliedSimulation, implied_simulation
from hdrm.launch.outdir import replay_outdir
from hdrm.policies.pairs import resolve_policy
from hdrm.policies.sla_names import SLA_POLICIES
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.sim.gpu_inputs import is_gpu_input, load_gpu_platform
from hdrm.sim.inputs import InputSpec, load_inputs
from hdrm.sim.outputs import job_results, schedule_summary, write_outputs
from hdrm.sim.preemption import parse_preemption, refuse_accelerators

if TYPE_CHECKING:
    from hdrm.core.scheduler import DecisionCore
    from hdrm.policies.pairs import PolicyPair
    from hdrm.workload.tenants import TenantTable

EPILOG = """examples:
  hdrm replay --platform platforms/hetero.json --workload workloads/SDSC-SP2-1998-4.2-cln_first500.swf \\
      --policy shortest-high_gflops --backfill easy --outdir runs/replay
  hdrm replay --homogeneous-procs 256 --workload lublin_256.swf.gz --conventions rlscheduler \\
      --start-index 1981 --nb-jobs 1024 --policy sjf --contention none --outdir runs/lublin
  hdrm replay --platform openb_node_list_gpu_node.csv --workload openb_pod_list_default.csv \\
      --policy drf-fgd --outdir runs/openb        (GPU platform: policy ORDER-PLACEMENT)
"""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Add ``hdrm replay``."""
    parser = subparsers.add_parser(
        "replay",
        help="replay a workload with a classic policy on the built-in simulator",
        description="Replay an SWF trace or a Batsim JSON workload on a platform with a heuristic "
        "or a job-core policy pair, and write Batsim-style outputs.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--platform", metavar="P.json", help="platform JSON (or SimGrid XML) file")
    where.add_argument("--homogeneous-procs", type=int, metavar="N",
                       help="N identical one-core resources instead of a platform (0: the trace's MaxProcs)")
    parser.add_argument("--workload", required=True, metavar="W",
                        help="SWF(.gz) or Batsim JSON workload; on a GPU platform an openb pod "
                        "list (.csv) or a Gavel trace (with --throughputs)")
    parser.add_argument("--throughputs", metavar="T.json",
                        help="Gavel's simulation_throughputs.json (for a Gavel trace)")
    parser.add_argument("--accelerator-types", metavar="A.json",
                        help="extra GPU models for a GPU replay, a file shaped like "
                        "hdrm/platform/data/accelerators.json ({\"accelerator_types\": "
                        "{\"MYGPU\": {\"memory_gb\": ..., \"idle_w\": ..., \"busy_w\": "
                        "..., \"price_usd_per_hour\": ...}}}); a model of a library name "
                        "replaces it")
    parser.add_argument("--policy", default="fcfs",
                        help="heuristic (fcfs, sjf, ljf, wfp3, unicep, f1, ...) or pair 'job-core'; "
                        "on a GPU platform a queue order (fifo, sjf, drf, tetris, las) or a pair "
                        "'order-placement' (default placement fgd)")
    parser.add_argument("--backfill", default="none",
                        choices=("none", "easy", "easy_first", "conservative", "greedy"))
    parser.add_argument("--contention", default="hdeeprm", help=f"one of {', '.join(CONTENTION_MODELS.names())}")
    parser.add_argument("--decision", default=None, choices=("event", "commit"),
                        help="re-decide at every event, or hold a pick until it fits (RLScheduler); "
                        "default: commit with --conventions rlscheduler, else event (hdrm.implied)")
    parser.add_argument("--nb-jobs", type=int, default=0, metavar="N", help="number of jobs (0: all)")
    parser.add_argument("--start-index", type=int, default=0, metavar="I", help="first job (0-based)")
    parser.add_argument("--conventions", default="default", choices=("default", "rlscheduler"))
    parser.add_argument("--no-strict", action="store_true",
                        help="skip and count SWF lines the standard does not allow (malformed, "
                        "fractional processors, a repeated job number), or bad rows of an openb "
                        "pod list or a Gavel trace (never the nodes of a platform)")
    parser.add_argument("--bandwidth", default="hdeeprm", help="memory-bandwidth distribution of SWF jobs")
    parser.add_argument("--dependencies", action=argparse.BooleanOptionalAction, default=None,
                        help="submit a job with a preceding job (SWF fields 17-18) when that job "
                        "ends plus the think time (default: on where the trace has any); "
                        "--no-dependencies submits every job at its trace time")
    kill = parser.add_mutually_exclusive_group()
    kill.add_argument("--walltime-kill", dest="walltime_kill", action="store_true", default=None,
                      help="kill jobs at their requested time (default: unless --conventions "
                      "rlscheduler)")
    kill.add_argument("--no-walltime-kill", dest="walltime_kill", action="store_false",
                      help="let jobs run past their requested time (default with --conventions "
                      "rlscheduler, as RLScheduler)")
    parser.add_argument("--tenants", metavar="SRC", default=None,
                        help="tenants of the jobs: user, group (SWF field 13), qos (openb), job, "
                        "a mapping CSV or a tenants JSON file (docs/tenants.rst); adds SLA and "
                        "fairness metrics and out_sla.csv, and enables edf, least_laxity, "
                        "fair_share and sla_class")
    parser.add_argument("--sla", default="relative:3", metavar="KIND:VALUE",
                        help="default SLA of tenants without one: relative:K (deadline = submit "
                        "+ K x run time alone), latency:SECONDS, absolute (from the mapping "
                        "file) or none (default relative:3)")
    parser.add_argument("--preemption", default="none", metavar="MODE",
                        help="none; request (no running job is suspended: the non-preemptive "
                        "baseline); block:SECONDS (suspend a running job of a lower priority at "
                        "its next block of SECONDS of run time for a queued one that cannot "
                        "start; built-in CPU engine; writes out_preemptions.csv)")
    parser.add_argument("--preemption-overhead", type=float, default=0.0, metavar="SECONDS",
                        help="checkpoint and restore time of a suspended job (default 0)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--engine", default="builtin", choices=("builtin", "batsim"))
    parser.add_argument("--batsim", default="batsim", metavar="PATH", help="batsim binary (engine batsim)")
    parser.add_argument("--outdir", required=True, metavar="D", help="output folder")
    parser.add_argument("--overwrite", action="store_true",
                        help="delete other hdrm outputs found in --outdir (a model, training logs); "
                             "a previous replay's outputs are always replaced")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``hdrm replay`` (on a GPU platform: :func:`hdrm.cli.gpu_replay.run_gpu`)."""
    check_seed_and_bandwidth(args.seed, args.bandwidth, "--bandwidth")
    builtin = args.engine == "builtin"
    preemption = parse_preemption(args.preemption, args.preemption_overhead, "--preemption")
    if preemption.suspends and args.engine == "batsim":
        raise ConfigError("--preemption: Batsim cannot suspend a job and resume its remaining "
                          "work with its progress kept; use --engine builtin, or --preemption "
                          "none or request")
    if args.platform and is_gpu_input(args.platform, args.workload, args.throughputs):
        if not builtin:  # the inputs are not SWF: say why Batsim cannot run them
            _refuse_batsim_on(args.platform, getattr(args, "accelerator_types", None))
        refuse_accelerators(preemption.suspends)
        return _run_gpu(args)
    if not args.platform and is_gpu_input(None, args.workload, args.throughputs):
        raise ConfigError(f"{args.workload}: an openb or Gavel workload runs on a GPU platform; "
                          "give --platform NODES.csv (an openb node list) or a platform JSON "
                          "with accelerators")
    if getattr(args, "accelerator_types", None) is not None:
        raise ConfigError("--accelerator-types: for a GPU replay only (an openb node list as "
                          "--platform, or a GPU workload); a platform JSON file defines its own "
                          "models in its accelerator_types section")
    try:
        pair = resolve_policy(args.policy, "--policy")
    except ConfigError:
        if not args.platform:
            raise
        pair = None  # a GPU policy name is valid if the platform turns out to have GPUs
    CONTENTION_MODELS.get(args.contention, "--contention")
    spec = InputSpec(
        workload_path=args.workload,
        platform_path=args.platform,
        homogeneous_procs=-1 if args.homogeneous_procs == 0 else (args.homogeneous_procs or 0),
        conventions=args.conventions,
        strict=not args.no_strict,
        start_index=args.start_index,
        nb_jobs=args.nb_jobs,
        bandwidth=args.bandwidth,
        seed=args.seed,
        dependencies=args.dependencies is not False,
    )
    if args.homogeneous_procs is not None and args.homogeneous_procs < 0:
        raise ConfigError(f"--homogeneous-procs: expected a positive number, got {args.homogeneous_procs}")
    try:
        platform, workload = load_inputs(spec)
    except SkippableLineError as exc:  # name the flag, not read_swf's argument
        raise exc.relaxed_by("rerun with --no-strict") from None
    if builtin and platform.accelerators:  # a CPU workload (SWF, Batsim JSON) on GPU nodes
        refuse_accelerators(preemption.suspends)
        return _run_gpu(args, platform, workload)
    if pair is None:
        pair = resolve_policy(args.policy, "--policy")
    if args.backfill == "greedy":
        raise ConfigError("--backfill: greedy is for GPU platforms (no reservation); on a CPU "
                          "platform choose none, easy, easy_first or conservative")
    tenants = _tenants(args, workload, pair.job.name)
    implied = implied_settings(args)
    config = SimulationConfig(
        contention=args.contention,
        backfilling=args.backfill,
        decision=implied.decision,
        kill_on_walltime=implied.kill_on_walltime,
        seed=args.seed,
        preemption=args.preemption,
        preemption_overhead_s=args.preemption_overhead,
    )
    if args.engine == "batsim":
        _refuse_inputs_in_the_way(args)
    if args.engine == "batsim" and pair.job.name == "fair_share":
        raise ConfigError("--policy: fair_share counts the tenants' usage in the built-in "
                          "engine's decision core; use --engine builtin (edf, least_laxity "
                          "and sla_class run on both engines)")
    # locked from here (before the run: a bad or busy folder should not cost a whole simulation);
    # every output file of the run is published together when the run ends (hdrm.durable.staged)
    with replay_outdir(args.outdir, overwrite=args.overwrite) as folder, staged() as stage:
        if args.engine == "batsim":
            from hdrm.batsim.engine import replay_with_batsim  # imports zmq: only when asked

            pair = _bound(pair, tenants, None)  # edf, least_laxity, sla_class read only the table
            result, paths = replay_with_batsim(platform, workload, pair, config, args.outdir,
                                               binary=args.batsim, stage=stage)
        else:
            sim = Simulation(platform, workload, config)
            pair = _bound(pair, tenants, sim.core)
            result = sim.run(pair, progress=_progress_bar(len(workload), args.quiet))
            paths = write_outputs(result, args.outdir, stage=stage)
            if preemption.suspends:
                from hdrm.sim.preemptive import write_preemptions  # block preemption only

                paths["preemptions"] = Path(args.outdir) / "out_preemptions.csv"
                write_preemptions(result, stage.path(paths["preemptions"]))
        sla = _sla_lines(result, tenants, stage, paths, args.outdir)
    _print_summary(result, paths, pair.name, args, sla)
    if folder.note():
        print(f"hdrm replay: {folder.note()}", file=sys.stderr)
    return 0


def _run_gpu(args: argparse.Namespace, *inputs) -> int:
    """:func:`hdrm.cli.gpu_replay.run_gpu` (imported here: a CPU replay never loads the GPU
    engine, its policies and outputs)."""
    from hdrm.cli.gpu_replay import run_gpu

    return run_gpu(args, *inputs)


def _refuse_inputs_in_the_way(args: argparse.Namespace) -> None:
    """Refuse an input file that the Batsim run would overwrite with its own copy.

    The run writes ``platform.xml`` and ``workload.json`` (the selected jobs only) into
    ``--outdir``; a ``--workload`` or ``--platform`` that is one of those files would be replaced.

    Raises:
        ConfigError: naming the option, the file and the fix.
    """
    outdir = Path(args.outdir).resolve()
    for option, given, written in (("--workload", args.workload, "workload.json"),
                                   ("--platform", args.platform, "platform.xml")):
        if given and Path(given).resolve() == outdir / written:
            raise ConfigError(f"{option} {given}: --engine batsim writes its own {written} into "
                              f"--outdir {args.outdir}, which would replace this file; give "
                              "another --outdir (or move the file)")


def _refuse_batsim_on(platform_path: str, accelerator_types: str | None = None) -> None:
    """Refuse engine batsim on a GPU platform (or an openb node list) in Batsim's terms.

    Raises:
        ConfigError: always; the platform's GPUs by model, or that it has none.
    """
    from hdrm.batsim.accelerators import refuse_accelerators as refuse_gpus

    refuse_gpus(load_gpu_platform(platform_path, accelerator_types))
    raise ConfigError(f"{platform_path}: engine 'batsim' runs SWF or Batsim JSON workloads, not "
                      "openb or Gavel ones; use --engine builtin")


def _tenants(args: argparse.Namespace, workload, policy: str) -> TenantTable | None:
    """The run's tenant table (``--tenants``), or None; an SLA policy without it is an error."""
    if args.tenants is None:
        if policy in SLA_POLICIES:
            raise ConfigError(f"--policy: {policy} orders jobs by tenant and SLA; give --tenants "
                              "(user, group, qos, job, a mapping CSV or a tenants JSON file)")
        return None
    from hdrm.workload.tenant_files import tenants_for  # only with --tenants

    return tenants_for(workload, args.tenants, args.sla)


def _bound(pair: PolicyPair, tenants: TenantTable | None, core: DecisionCore | None
           ) -> PolicyPair:
    """``pair`` with its SLA order bound to the run's tenants and decision core (``core``: None
    under Batsim); unchanged without tenants, and then the tenants' code is never imported."""
    if tenants is None:
        return pair
    from hdrm.policies.sla_orders import bind_tenants

    return bind_tenants(pair, tenants, core)


def _progress_bar(total: int, quiet: bool):
    if quiet or total < 20000 or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    bar = tqdm(total=total, unit="job", file=sys.stderr, leave=False)

    def update(done: int, _total: int) -> None:
        bar.update(done - bar.n)
        if done >= _total:
            bar.close()

    return update


def implied_settings(args: argparse.Namespace) -> ImpliedSimulation:
    """The decision semantics and walltime rule of a replay: given, or implied by the
    conventions (:mod:`hdrm.implied`)."""
    return implied_simulation(args.conventions, args.decision, args.walltime_kill, args.engine)


def _skipped(skipped: dict[str, int]) -> str:
    """``"3 (duplicate job number: 2, run time 0: 1)"``, or ``"none"``."""
    if not skipped:
        return "none"
    reasons = ", ".join(f"{reason}: {count}" for reason, count in skipped.items())
    return f"{sum(skipped.values())} ({reasons})"


def _dependencies(workload, wanted: bool | None) -> list[tuple[str, str]]:
    """The summary's dependencies line: on (what waits, what was dropped) or off.

    Args:
        workload: the replayed workload.
        wanted: ``--dependencies`` (True), ``--no-dependencies`` (False) or neither (None).

    Returns:
        One (key, value) row, or none for a workload without dependencies replayed with the
        default (the usual case says nothing); asked for explicitly, "none in this trace".
    """
    if wanted is False:
        return [("dependencies", "off (--no-dependencies: every job submitted at its trace time)")]
    deps = workload.dependencies
    if deps is None:
        return [("dependencies", "none in this trace")] if wanted else []
    return [("dependencies", f"on: {deps.describe()}")]


def _print_summary(result, paths: dict[str, Path], policy: str, args: argparse.Namespace,
                   sla: list[tuple[str, str]] = ()) -> None:
    summary = schedule_summary(result, job_results(result))
    platform = result.platform
    print(f"hdrm replay: {len(result.outcomes)} jobs of {result.workload.name} on {platform.name} "
          f"({platform.nb_cores} cores), policy {policy}, backfilling {args.backfill}, "
          f"contention {args.contention}, {implied_settings(args).describe()}")
    rows = [
        ("jobs finished / killed / rejected",
         f"{summary['nb_jobs_success']} / {summary['nb_jobs_killed']} / {summary['nb_jobs_rejected']}"),
        ("makespan", f"{summary['makespan']:.1f} s"),
        ("mean waiting time", f"{summary['mean_waiting_time']:.1f} s"),
        ("mean turnaround time", f"{summary['mean_turnaround_time']:.1f} s"),
        ("mean slowdown", f"{summary['mean_slowdown']:.3f}"),
        ("mean bounded slowdown (10 s)", f"{summary['mean_bounded_slowdown']:.3f}"),
        ("utilisation", f"{summary['utilization']:.3f}"),
        ("energy", f"{summary['consumed_joules'] / 3.6e6:.3f} kWh"),
        ("wall time", f"{result.wall_s:.2f} s ({len(result.outcomes) / max(result.wall_s, 1e-9):,.0f} jobs/s)"),
        ("skipped from the source", _skipped(result.workload.skipped)),
        *_dependencies(result.workload, args.dependencies),
        *sla,
        ("outputs", str(Path(args.outdir))),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"  {key:<{width}}  {value}")


def _sla_lines(result, tenants: TenantTable | None, stage: Staging, paths: dict[str, Path],
               outdir: str) -> list[tuple[str, str]]:
    """The SLA summary lines, out_sla.csv staged with the run's other files (``paths["sla"]``);
    none without tenants."""
    if tenants is None:
        return []
    from hdrm.results.sla import SLA_FILE, sla_report, summary_lines, write_sla_csv

    jobs = list(result.workload.jobs)
    for outcome in result.outcomes:  # released dependent jobs: turnaround from the release
        jobs[outcome.job.idx] = outcome.job
    report = sla_report(tenants, jobs, job_results(result))
    paths["sla"] = Path(outdir) / SLA_FILE
    write_sla_csv(report, stage.path(paths["sla"]))
    return summary_lines(report)
