"""``hdrm serve``: play Batsim's side of the protocol, so PyBatsim schedulers run without Batsim.

Usage::

    pybatsim fillerSched -s tcp://127.0.0.1:28000 &
    hdrm serve --platform platform.xml --workload workload.json -e out/out

The options mirror Batsim's own (``-p``, ``-w``, ``-s``, ``-e``, ``-m``, ``-r``, ``-E``,
``--forward-profiles-on-submission``, ``--sched-cfg``, ``--sched-cfg-file``,
``--enable-dynamic-jobs``, ``--acknowledge-dynamic-jobs``, ``--enable-profile-reuse``,
``--events``, ``--forward-unknown-events``, ``--disable-schedule-tracing``,
``--disable-machine-state-tracing``, ``--mmax``, ``--mmax-workload``), so a script that starts
``batsim`` can start ``hdrm serve`` instead.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hdrm.batsim.protocol import DEFAULT_ENDPOINT
from hdrm.errors import ConfigError
from hdrm.platform.simgrid_roles import HostRoles, parse_role_option
from hdrm.platform.simgrid_export import MASTER_HOST


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``serve`` sub-command to the ``hdrm`` parser."""
    parser = subparsers.add_parser(
        "serve",
        help="play Batsim's side of the protocol for a PyBatsim scheduler (no Batsim needed)",
        description=(
            "Simulate a platform and a Batsim JSON workload and drive a decision process over "
            "Batsim 4.x's JSON-over-ZeroMQ protocol, as the batsim binary would: connect to the "
            "scheduler's endpoint, send SIMULATION_BEGINS, submissions, completions ..., apply its "
            "decisions, and write Batsim's output files (out_jobs.csv, out_schedule.csv, "
            "out_machine_states.csv, the Paje trace; with -E out_consumed_energy.csv and "
            "out_pstate_changes.csv). Profiles: delay, parallel, parallel_homogeneous, "
            "parallel_homogeneous_total and composed, communication included on SimGrid XML "
            "platforms; the others (smpi, traces, storage) are refused in one line."
        ),
    )
    parser.add_argument("-p", "--platform", required=True, metavar="PLATFORM",
                        help="SimGrid XML platform (hosts) or hdrm platform JSON")
    parser.add_argument("-w", "--workload", metavar="WORKLOAD.json", action="append",
                        default=[], help="Batsim JSON workload; repeat it for several, "
                        "run side by side as Batsim does (w0, w1, ...: job ids w0!ID, w1!ID); "
                        "none: only the jobs the scheduler registers (--enable-dynamic-jobs)")
    parser.add_argument("-s", "--socket-endpoint", default=DEFAULT_ENDPOINT, metavar="ENDPOINT",
                        help=f"the scheduler's ZeroMQ endpoint (default {DEFAULT_ENDPOINT})")
    parser.add_argument("-e", "--export", default="out", metavar="PREFIX",
                        help="output prefix: PREFIX_jobs.csv, PREFIX_schedule.csv, "
                        "PREFIX_machine_states.csv, the Pajé trace PREFIX_schedule.trace, and "
                        "with -E PREFIX_consumed_energy.csv and PREFIX_pstate_changes.csv "
                        "(default out)")
    parser.add_argument("-m", "--master-host", default=MASTER_HOST, metavar="NAME",
                        help="the host of Batsim's server, which runs no job (default "
                        f"{MASTER_HOST}; Batsim's -m)")
    parser.add_argument("-r", "--add-role-to-hosts", action="append", default=[],
                        metavar="HOSTS:ROLE", help="give each comma-separated host the role "
                        "master, storage or compute_node (Batsim's -r; repeat it)")
    parser.add_argument("-E", "--energy", action="store_true",
                        help="energy accounting (job and total energies, energy queries)")
    parser.add_argument("--forward-profiles-on-submission", action="store_true",
                        help="attach each job's profile to JOB_SUBMITTED")
    cfg = parser.add_mutually_exclusive_group()
    cfg.add_argument("--sched-cfg", default="", metavar="TEXT",
                     help="string passed to the scheduler as config['sched-config']")
    cfg.add_argument("--sched-cfg-file", metavar="FILE",
                     help="the same, read from FILE (Batsim's --sched-cfg-file)")
    parser.add_argument("--enable-dynamic-jobs", action="store_true",
                        help="the scheduler may register jobs and profiles (REGISTER_JOB, "
                        "REGISTER_PROFILE); the simulation then ends once it sends NOTIFY "
                        "registration_finished")
    parser.add_argument("--acknowledge-dynamic-jobs", action="store_true",
                        help="send JOB_SUBMITTED back for each registered job")
    parser.add_argument("--enable-profile-reuse", action="store_true",
                        help="keep the profiles of ended jobs for new jobs (else they are "
                        "garbage collected); needs --enable-dynamic-jobs")
    parser.add_argument("--events", action="append", default=[], metavar="FILE",
                        help="external events, one JSON object per line (machine_unavailable, "
                        "machine_available ...), sent to the scheduler as NOTIFY at their "
                        "timestamps; repeat it for several files (Batsim's --events)")
    parser.add_argument("--forward-unknown-events", action="store_true",
                        help="forward events of other types to the scheduler as they are "
                        "(Batsim's --forward-unknown-events; ignored without --events)")
    parser.add_argument("--disable-schedule-tracing", action="store_true",
                        help="do not write the Pajé trace PREFIX_schedule.trace")
    parser.add_argument("--disable-machine-state-tracing", action="store_true",
                        help="do not write PREFIX_machine_states.csv")
    parser.add_argument("--mmax", type=int, default=0, metavar="N",
                        help="use the first N compute hosts only (by name; 0: all; Batsim's "
                        "--mmax)")
    parser.add_argument("--mmax-workload", action="store_true",
                        help="use at most as many compute hosts as the largest nb_res of the "
                        "workloads (Batsim's --mmax-workload)")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="S",
                        help="seconds to wait for each reply of the scheduler (default 60)")
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Carry out ``hdrm serve``; returns the exit status."""
    if args.timeout <= 0:
        raise ConfigError(f"--timeout: must be > 0 seconds, got {args.timeout:g}")
    if args.enable_profile_reuse and not args.enable_dynamic_jobs:
        raise ConfigError("--enable-profile-reuse needs --enable-dynamic-jobs (Batsim refuses "
                          "it alone: 'Profile reuse is enabled but dynamic registration is not')")
    sched_config = (args.sched_cfg if args.sched_cfg_file is None
                    else _read_cfg(args.sched_cfg_file))
    from hdrm.batsim.server import ServeOptions, serve  # zmq only when serving
    from hdrm.batsim.simulator import ServerConfig
    from hdrm.sim.outputs import check_outdir

    if args.export:  # before the session: a bad folder should not cost a whole simulation
        check_outdir(Path(args.export).parent, f"-e/--export {args.export}")

    added = tuple(pair for text in args.add_role_to_hosts for pair in parse_role_option(text))
    options = ServeOptions(
        roles=HostRoles(args.master_host, added),
        endpoint=args.socket_endpoint,
        export_prefix=args.export,
        timeout_s=args.timeout,
        machine_states=not args.disable_machine_state_tracing,
        schedule_trace=not args.disable_schedule_tracing,
        config=ServerConfig(energy=args.energy, forward_profiles=args.forward_profiles_on_submission,
                            sched_config=sched_config, dynamic_jobs=args.enable_dynamic_jobs,
                            ack_dynamic_jobs=args.acknowledge_dynamic_jobs,
                            profile_reuse=args.enable_profile_reuse,
                            mmax=args.mmax, mmax_workload=args.mmax_workload,
                            events=tuple(args.events),
                            forward_unknown_events=args.forward_unknown_events),
    )
    result = serve(args.platform, args.workload, options)
    s = result.summary
    print(
        f"hdrm serve: {s['nb_jobs']} jobs ({s['nb_jobs_success']} successful, {s['nb_jobs_killed']} "
        f"killed, {s['nb_jobs_rejected']} rejected), makespan {s['makespan']:.6f} s, "
        f"{result.messages} messages"
        + (f", {s['consumed_joules']:.3f} J" if args.energy else "")
    )
    for path in result.files:
        print(f"wrote {path}")
    return 0


def _read_cfg(path: str) -> str:
    """The whole text of ``--sched-cfg-file`` (as Batsim reads it: bytes as they are)."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except OSError as exc:
        raise ConfigError(f"--sched-cfg-file {path}: cannot read it ({exc.strerror}); give a "
                          "readable file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"--sched-cfg-file {path}: not UTF-8 text ({exc.reason} at byte "
                          f"{exc.start}); the configuration string travels as JSON text") from None
