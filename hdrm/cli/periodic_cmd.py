"""``hdrm dag taskset`` and ``hdrm dag periodic``: generate a periodic task set, and simulate it.

Usage::

    hdrm dag taskset --graphs 3 --utilisation 2.0 --seed 1 -o set.json
    hdrm dag periodic set.json --platform platforms/tiny4.json --policy dag_edf -o out/

``periodic`` expands the task set into jobs with dependencies (:func:`hdrm.dag.periodic.expand`),
runs them through the built-in engine (the same one as ``hdrm replay``; on a platform with
accelerators, tasks with a GPU time on its GPUs: :func:`hdrm.dag.periodic_devices.expand_on`),
writes the replay's outputs plus ``out_instances.csv`` (one row per instance, with its schedule
length ratio) in the folder and prints the deadline, response and SLR figures.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

from hdrm.dag.periodic_devices import expand_on
from hdrm.dag.periodic_gen import PeriodicSpec, generate
from hdrm.dag.periodic_io import read_taskset, write_taskset
from hdrm.dag.periodic_metrics import (critical_paths_s, instance_rows, summarise,
                                       write_instances_csv)
from hdrm.dag.periodic_rules import backfilling_for, resolve_periodic_policy
from hdrm.durable import staged
from hdrm.launch.outdir import replay_outdir
from hdrm.platform.loader import load_platform
from hdrm.sim.engine import Simulation, SimulationConfig, SimulationResult
from hdrm.sim.machine import COMPLETED_SUCCESSFULLY
from hdrm.sim.gpu_outputs import write_gpu_outputs
from hdrm.sim.outputs import write_outputs


def add_commands(commands: Any) -> None:
    """Add ``taskset`` and ``periodic`` to the ``hdrm dag`` sub-commands."""
    gen = commands.add_parser(
        "taskset", help="generate a random periodic task set (UUniFast, layered DAGs)",
        description="Draw a seeded periodic task set (see the DAGs page, Periodic pipelines) and "
                    "write it as JSON.")
    for f in fields(PeriodicSpec):
        gen.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=type(f.default),
                         default=f.default, help=f"(default {f.default})")
    gen.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    gen.add_argument("-o", "--output", required=True, metavar="SET.json", help="file to write")
    gen.set_defaults(func=run_taskset)
    run = commands.add_parser(
        "periodic", help="simulate a periodic task set on a platform's cores",
        description="Release every graph's instances until the horizon, run their tasks as "
                    "dependent jobs in the built-in engine, write out_jobs.csv ... and "
                    "out_instances.csv, and print the deadline miss ratio, response times, "
                    "schedule length ratios and jitter.")
    run.add_argument("taskset", metavar="SET.json", help="periodic task set JSON")
    run.add_argument("--platform", required=True, metavar="P.json", help="hdrm platform")
    run.add_argument("--policy", default="dag_edf",
                     help="a rule (heft_edf = dag_edf, cpop_edf, peft_edf, llf = dag_llf), "
                          "optionally '-CORE_SELECTION' (GPU platform: '-PLACEMENT'), or any "
                          "job selection or 'job-core' pair (default %(default)s)")
    run.add_argument("-o", "--outdir", required=True, metavar="DIR", help="output folder")
    run.add_argument("--overwrite", action="store_true",
                     help="delete other hdrm outputs found in --outdir (a model, training logs); "
                          "a previous replay's outputs are always replaced")
    run.set_defaults(func=run_periodic)


def run_taskset(args: argparse.Namespace) -> int:
    """Carry out ``hdrm dag taskset``; returns the exit status."""
    spec = PeriodicSpec(**{f.name: getattr(args, f.name) for f in fields(PeriodicSpec)})
    taskset = generate(spec, args.seed)
    write_taskset(taskset, args.output)
    tasks = sum(len(g.tasks) for g in taskset.graphs)
    print(f"wrote {args.output}: {len(taskset.graphs)} graphs, {tasks} tasks, utilisation "
          f"{taskset.utilisation:.3f}, horizon {taskset.horizon_s:.3f} s")
    return 0


def run_periodic(args: argparse.Namespace) -> int:
    """Carry out ``hdrm dag periodic``; returns the exit status."""
    taskset = read_taskset(args.taskset)
    platform = load_platform(args.platform)
    pair = resolve_periodic_policy(args.policy, platform, "--policy")
    workload = expand_on(taskset, platform)
    config = SimulationConfig(backfilling=backfilling_for(platform), kill_on_walltime=False,
                              record_timeline=False)
    instances = Path(args.outdir) / "out_instances.csv"
    with replay_outdir(args.outdir, overwrite=args.overwrite) as folder:
        result = Simulation(platform, workload, config).run(pair)
        bounds = critical_paths_s(taskset, gpus=bool(platform.accelerators))
        rows = instance_rows(workload.jobs, finish_times(result), bounds)
        with staged() as stage:  # one run's files, renamed into place together
            write = write_gpu_outputs if platform.accelerators else write_outputs
            paths = write(result, args.outdir, stage=stage)
            write_instances_csv(rows, stage.path(instances))
    if folder.note():
        print(f"hdrm dag periodic: {folder.note()}", file=sys.stderr)
    gpus = len(platform.accelerators)
    print(f"{taskset.name}: {len(taskset.graphs)} graphs, {len(workload)} tasks on "
          f"{platform.nb_cores} cores" + (f" and {gpus} GPUs" if gpus else "") +
          f", policy {pair.name}")
    for line in summarise(rows).lines():
        print(line)
    print(f"wrote {instances} and {paths['jobs'].name} ... in {args.outdir}")
    return 0


def finish_times(result: SimulationResult) -> list[float]:
    """Per job index, when the job completed; nan for a job that did not (killed, rejected)."""
    finish = [math.nan] * len(result.workload)
    for outcome in result.outcomes:
        if outcome.state == COMPLETED_SUCCESSFULLY:
            finish[outcome.job.idx] = outcome.finish_s
    return finish
