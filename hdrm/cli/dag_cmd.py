"""``hdrm dag``: schedule a WfCommons workflow with HEFT, CPOP or PEFT on an hdrm platform, or
replay its tasks as dependent jobs with a queue policy.

Usage::

    hdrm dag schedule WF.json --platform platforms/tiny_hetero.json --policy heft -o sched.csv
    hdrm dag replay WF.json --platform platforms/tiny_hetero.json --policy sjf -o wf_out
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from hdrm.cli.periodic_cmd import add_commands as add_periodic_commands
from hdrm.dag.listsched import DAG_POLICIES, schedule_dag
from hdrm.dag.machines import load_machines
from hdrm.dag.wfformat import read_workflow, to_dag
from hdrm.dag.workflow_jobs import critical_path_s, slowest_link, workflow_workload
from hdrm.errors import ConfigError
from hdrm.launch.outdir import replay_outdir
from hdrm.platform.loader import load_platform
from hdrm.policies.pairs import resolve_policy
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.sim.outputs import write_outputs


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``dag`` sub-command (and its ``schedule`` command) to the ``hdrm`` parser."""
    parser = subparsers.add_parser(
        "dag",
        help="DAG list scheduling (HEFT, CPOP, PEFT) of WfCommons workflows",
        description="Schedule task graphs on heterogeneous processors (see the DAGs page).",
    )
    commands = parser.add_subparsers(dest="dag_command", metavar="COMMAND")
    schedule = commands.add_parser(
        "schedule",
        help="schedule a WfCommons workflow (wfformat JSON) on a platform's cores",
        description=(
            "Read a WfCommons workflow (wfformat JSON, any schema version), make every core of "
            "the platform a processor (speed relative to the platform's reference speed; "
            "transfers at memory bandwidth within a node, at the network's between nodes), "
            "schedule the workflow with the policy, print the makespan, SLR and speedup, and "
            "write the schedule as CSV (task, processor, start_s, finish_s, cost_s)."),
        epilog="example: hdrm dag schedule montage.json --platform platforms/tiny_hetero.json "
               "--policy heft -o schedule.csv",
    )
    schedule.add_argument("workflow", metavar="WF.json", help="WfCommons workflow instance")
    schedule.add_argument("--platform", required=True, metavar="P.json", help="hdrm platform")
    schedule.add_argument("--policy", default="heft", choices=DAG_POLICIES.names(),
                          help="list scheduler (default %(default)s)")
    schedule.add_argument("-o", "--output", metavar="OUT.csv",
                          help="schedule CSV (default WF.POLICY.csv in the current folder)")
    schedule.set_defaults(func=run_schedule)
    replay = commands.add_parser(
        "replay",
        help="run a WfCommons workflow's tasks as dependent jobs with a queue policy",
        description=(
            "Run every task of a WfCommons workflow as a one-core job of the built-in engine, "
            "released when its parents have ended plus the transfer over the platform's slowest "
            "link, served by a queue policy (FCFS, SJF ... or a 'job-core' pair); write the "
            "replay's outputs and print the makespan, SLR and speedup (see the DAGs page)."),
        epilog="example: hdrm dag replay montage.json --platform platforms/tiny_hetero.json "
               "--policy sjf -o wf_out")
    replay.add_argument("workflow", metavar="WF.json", help="WfCommons workflow instance")
    replay.add_argument("--platform", required=True, metavar="P.json",
                        help="hdrm platform without accelerators")
    replay.add_argument("--policy", default="fcfs",
                        help="job selection or 'job-core' pair (default %(default)s)")
    replay.add_argument("-o", "--outdir", required=True, metavar="DIR", help="output folder")
    replay.add_argument("--overwrite", action="store_true",
                        help="delete other hdrm outputs found in --outdir (a model, training "
                             "logs); a previous replay's outputs are always replaced")
    replay.set_defaults(func=run_replay)
    add_periodic_commands(commands)
    parser.set_defaults(func=lambda args: _help(parser))
    return parser


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def run_schedule(args: argparse.Namespace) -> int:
    """Carry out ``hdrm dag schedule``; returns the exit status."""
    workflow = read_workflow(args.workflow)
    machines = load_machines(args.platform)
    dag = to_dag(workflow, machines.network, machines.speeds)
    began = time.perf_counter()
    schedule = schedule_dag(dag, args.policy)
    took = time.perf_counter() - began
    schedule.validate()
    output = Path(args.output or f"{Path(args.workflow).stem}.{args.policy}.csv")
    schedule.write_csv(output)
    print(f"{args.policy} on {workflow.name}: {dag.size} tasks, {len(dag.edges)} edges on "
          f"{dag.network.size} processors: makespan {schedule.makespan_s:.3f} s, "
          f"SLR {schedule.slr:.3f}, speedup {schedule.speedup:.3f} ({took:.2f} s); wrote {output}")
    return 0


def run_replay(args: argparse.Namespace) -> int:
    """Carry out ``hdrm dag replay``; returns the exit status."""
    workflow = read_workflow(args.workflow)
    platform = load_platform(args.platform)
    if platform.accelerators:
        raise ConfigError(f"{args.platform}: has accelerators; hdrm dag replay runs workflows on "
                          "CPU cores: give a platform without them, or use hdrm dag schedule")
    pair = resolve_policy(args.policy, "--policy")
    speed = max(platform.core_gflops) / platform.reference_gflops
    bound_s = critical_path_s(workflow, speed)  # also refuses a cycle, naming a task
    workload = workflow_workload(workflow, platform)
    config = SimulationConfig(kill_on_walltime=False, record_timeline=False)
    with replay_outdir(args.outdir, overwrite=args.overwrite) as folder:
        result = Simulation(platform, workload, config).run(pair)
        paths = write_outputs(result, args.outdir)
    if folder.note():
        print(f"hdrm dag replay: {folder.note()}", file=sys.stderr)
    makespan = result.makespan_s
    print(f"{workflow.name}: {len(workload)} tasks, {len(workflow.edges)} edges as jobs on "
          f"{platform.nb_cores} cores, policy {pair.name} (transfers over "
          f"{slowest_link(platform).bandwidth_mb_s:g} MB/s)")
    print(f"makespan {makespan:.3f} s, SLR {makespan / bound_s if bound_s > 0 else 1.0:.3f}, "
          f"speedup {sum(workflow.runtime_s) / speed / makespan if makespan > 0 else 1.0:.3f}")
    print(f"wrote {paths['jobs'].name} ... in {args.outdir}")
    return 0
