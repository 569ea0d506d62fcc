"""``hdrm serve``: play Batsim's side of the protocol, so PyBatsim schedulers run without Batsim.

Usage::

    pybatsim fillerSched -s tcp://127.0.0.1:28000 &
    hdrm serve --platform platform.xml --workload workload.json -e out/out

The options mirror Batsim's own (``-p``, ``-w``, ``-s``, ``-e``, ``-m``, ``-r``, ``-E``,
``--forward-profiles-on-submission``, ``--sched-cfg``), so a script that starts ``batsim`` can
start ``hdrm serve`` instead.
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
            "decisions, and write out_jobs.csv and out_schedule.csv in Batsim's format. Profiles: "
            "delay and parallel_homogeneous (com = 0)."
        ),
    )
    parser.add_argument("-p", "--platform", required=True, metavar="PLATFORM",
                        help="SimGrid XML platform (hosts) or hdrm platform JSON")
    parser.add_argument("-w", "--workload", required=True, metavar="WORKLOAD.json",
                        action="append", help="Batsim JSON workload; repeat it for several, "
                        "run side by side as Batsim does (w0, w1, ...: job ids w0!ID, w1!ID)")
    parser.add_argument("-s", "--socket-endpoint", default=DEFAULT_ENDPOINT, metavar="ENDPOINT",
                        help=f"the scheduler's ZeroMQ endpoint (default {DEFAULT_ENDPOINT})")
    parser.add_argument("-e", "--export", default="out", metavar="PREFIX",
                        help="output prefix: PREFIX_jobs.csv and PREFIX_schedule.csv (default out)")
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
    parser.add_argument("--sched-cfg", default="", metavar="TEXT",
                        help="string passed to the scheduler as config['sched-config']")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="S",
                        help="seconds to wait for each reply of the scheduler (default 60)")
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Carry out ``hdrm serve``; returns the exit status."""
    if args.timeout <= 0:
        raise ConfigError(f"--timeout: must be > 0 seconds, got {args.timeout:g}")
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
        config=ServerConfig(energy=args.energy, forward_profiles=args.forward_profiles_on_submission,
                            sched_config=args.sched_cfg),
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
