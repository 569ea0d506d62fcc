"""docs/results_gpu.rst, written by ``benchmarks/compare_gpu.py`` from its table.

The page states the protocol with the figures of this run (tasks per range, windows, clusters,
load factors and their measurement), the targets per workload, one table per workload with every
policy's metrics, and the learners (or that none is shipped).
"""

from __future__ import annotations

import argparse
import datetime
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks import gpu_protocol, gpu_seeds, gpu_tables
from benchmarks.gpu_learners import ROLE_COLUMNS, GpuModel
from benchmarks.gpu_protocol import Setting
from benchmarks.tables import fmt

DAY_S = 86400.0

INTRO = """\
Written by ``benchmarks/compare_gpu.py`` (do not edit by hand). This is the comparison of issue
20: learned GPU schedulers (two agents, ``order`` and ``place``, trained with MAPPO, and the
ablations) against every queue order x placement pair of :doc:`gpu`, on job completion time (JCT)
and cost, over test windows that no training ever sees."""

LOAD_WHY = """\
Why a load factor: replayed at their own pace the traces rarely make a task wait (openb's 1,213
nodes run its 149 days at 0.2% GPU allocation; see :doc:`gpu`), and then every policy gives the
same JCT, the run times. Dividing the submission times by a factor (:func:`hdrm.workload.load.\
scale_arrivals`) multiplies the offered load and keeps every task. The factor is measured, not
tuned on the test windows: on the validation windows, with seed 0 and backfilling ``none``, it
is the smallest of
{grid} at which the best pair (least mean JCT among all the pairs) waits on average at least
{share:.0%} of the mean run time, so that waiting, the part of JCT a scheduler can change, is a
real share of it. The clusters are a fixed part of the protocol too. On openb's whole GPU
cluster, or on the 41-node sample of ``workloads/``, a 400-task window hardly queues whatever the
factor (on that sample, under 40 s of mean wait at factor 1000 against mean JCTs above 1,300 s:
the tasks are short and many share GPUs), hence every {stride}th node. Gavel's own cluster spec
(300 GPUs of each type) holds a whole test range at once (237 jobs asking 2.7 GPUs on average),
hence 2 nodes of 8 GPUs per type (8: its largest jobs ask 8 workers and a task runs on one
node)."""


LEARNERS_NOTE = """\
The learners are the models of ``models/gpu/`` (its README gives their commands and figures):
runs of ``benchmarks/gpu_train.py`` of at most 45 minutes of wall time each on the shared 2-core
machine (the CPU minutes they actually got are in the table), not tuned results. Each is
evaluated greedily through the multi-agent environment
(:class:`hdrm.env.gpu_multiagent.GpuMultiAgentEnv`) on the same test windows, under the load it
was trained for and in the view it was trained in, with a work-conserving order agent (it may
wait only when no task of its window fits); a frozen heuristic order is work-conserving too (it
plays the greedy pair's decisions). The view (:func:`benchmarks.gpu_learners.view_of`): unless
the column says otherwise, the order agent's window holds the 32 oldest queued tasks and the GPUs
within the place agent's node follow FGD's rule, which makes even the pair itself score 1.04 x
its engine run on openb (:doc:`mappo`); ``fitting-first window, first_fit in node, node rank``
columns see up to 64 tasks, those that fit now first, place GPUs within the node by first_fit's
rule and see each node's rank, in which the drivers play the pair exactly. ``warm start`` names
the pair whose decisions were cloned before MAPPO (:mod:`hdrm.agents.mappo_imitation`). A spread
of 0 means the greedy policy gave the same schedule under every seed."""


SEEDS_NOTE = """\
A learner trained with several seeds (one model file each, ``..._seedK.pt``) is judged on the
mean over its seeds (its column without ``[seed K]``; its spread is the standard deviation over
the training seeds), never on its best seed; each seed's own figures are above, and whether that
seed alone would meet the target."""


def page(table: dict[str, dict[str, Any]], rows: list[str], settings: dict[str, Setting],
         names: dict[str, str], pairs: list[str], models: list[GpuModel],
         loads: dict[str, Any], seeds: tuple[int, ...], wall_s: float,
         args: argparse.Namespace) -> str:
    """The whole page as RST."""
    title = "Results on GPU clusters"
    command = _command(args)
    out = [title, "=" * len(title), "", INTRO, "",
           f"Command: ``{command}``, {datetime.date.today().isoformat()}, {wall_s / 60:.1f} "
           f"minutes on this machine (2 cores shared); seeds {', '.join(map(str, seeds))}.", ""]
    out += _protocol(settings)
    out += _loads(loads)
    out += gpu_tables.rst_table("Targets", gpu_tables.summary_grid(table, rows))
    out += [_reading(), ""]
    files = gpu_seeds.file_columns(models)
    learner_cols = [c for m in models for c in (m.column, files[m.path])]
    for key, setting in settings.items():
        row = names[key]
        policies = pairs + [c for c in dict.fromkeys(learner_cols) if c in table[row]]
        out += gpu_tables.rst_table(f"{row}: every policy",
                                    gpu_tables.policy_grid(table, row, policies))
        seeds_grid = gpu_seeds.seed_grid(table, row)
        if len(seeds_grid) > 1:
            out += gpu_tables.rst_table(f"{row}: each training seed", seeds_grid)
            out += [SEEDS_NOTE, ""]
    out += _learners(table, models)
    return "\n".join(out)


def _command(args: argparse.Namespace) -> str:
    parts = ["python benchmarks/compare_gpu.py"]
    if args.evaluate_only:
        parts.append("--evaluate-only")
    if args.measure_load:
        parts.append("--measure-load")
    if args.seeds != 3:
        parts.append(f"--seeds {args.seeds}")
    if args.quick:
        parts.append("--quick")
    return " ".join(parts)


def _cluster(setting: Setting) -> str:
    platform = gpu_protocol.load_platform(setting.platform)
    models = Counter(a.type.name for a in platform.accelerators)
    gpus = ", ".join(f"{n} {m}" for m, n in sorted(models.items()))
    return f"{len(platform.nodes)} nodes, {len(platform.accelerators)} GPUs ({gpus})"


def _protocol(settings: dict[str, Setting]) -> list[str]:
    grid = [["workload", "trace", "cluster", "training tasks", "validation tasks", "test tasks",
             "test windows (first task)", "load factor"]]
    for key, s in settings.items():
        spec = gpu_protocol.WORKLOADS[key]
        whole = gpu_protocol.load_workload(s.trace, s.throughputs)
        times = [j.submit_s for j in whole.jobs]
        cells = [spec.label, Path(spec.trace).name, _cluster(s)]
        for first, end in s.split:
            last = times[end - 1] if end > first else times[first]
            cells.append(f"{end - first} (tasks {first}-{end - 1}, days "
                         f"{times[first] / DAY_S:.1f}-{last / DAY_S:.1f})")
        cells += [f"{len(s.test_starts)} x {s.window_tasks} tasks: "
                  + ", ".join(map(str, s.test_starts)), f"{s.load_factor:g}"]
        grid.append(cells)
    a, b = gpu_protocol.SPLIT
    text = (f"Split: the tasks in submission order are cut at the submission times of the "
            f"{a:.0%} and {a + b:.0%} quantiles into training, validation and test ranges "
            "(:func:`benchmarks.gpu_protocol.time_split`); training and validation windows lie "
            "in their ranges, so no test task is ever trained on. The test windows are disjoint "
            "and evenly spaced in the test range; each runs on an empty cluster from time 0 with "
            "event decisions. Each pair runs with backfilling ``none`` (column ``sjf-fgd``: the "
            "first task in the order that fits nowhere stops the decision) and ``greedy`` "
            "(``sjf-fgd (greedy)``: every later task that fits starts, as Kubernetes does); the "
            "learners are work-conserving (the order agent may wait only when no task of its "
            "window fits now), so the greedy pairs are their like-for-like baselines, and the "
            "best pair is the best of both modes. A task that no node could hold, or an openb "
            "task that never ran in the trace, is rejected and left out of every metric.")
    return (gpu_tables.rst_table("Protocol", grid) + [text, ""]
            + [LOAD_WHY.format(grid=", ".join(f"{g:g}" for g in gpu_protocol.LOAD_GRID),
                               share=gpu_protocol.WAIT_SHARE, stride=120), ""])


def _loads(loads: dict[str, Any]) -> list[str]:
    if not loads:
        return ["The load factors in use are those of :data:`benchmarks.gpu_protocol.WORKLOADS`; "
                "``--measure-load`` measures them again and reports the steps here.", ""]
    grid = [["workload", "factor", "best pair", "its mean wait (s)", "its mean run time (s)",
             "wait / run (%)"]]
    for key, found in loads.items():
        for factor, best, wait, run in found["steps"]:
            grid.append([key, f"{factor:g}", best, fmt(wait), fmt(run),
                         f"{100 * wait / run:.1f}" if run else "n/a"])
    chosen = "; ".join(f"{k}: measured {v['chosen']:g}, in use {v['in use']:g}"
                       for k, v in loads.items())
    return gpu_tables.rst_table("Load factor measurement (validation windows, seed 0)", grid) + [
        f"Measured factors: {chosen}.", ""]


def _reading() -> str:
    return (f"How to read it: every value is the mean over the test windows, then over the seeds "
            f"(each seed is the engine's tie order between equal nodes, and a learner's episode "
            f"seed). The target is met when the best learner's mean JCT is at most "
            f"{gpu_tables.TARGET_FACTOR} x the best pair's and its GPU cost is no more than that "
            f"pair's; ``flag`` names the max wait or makespan where the best learner exceeds "
            f"{gpu_tables.FLAG_FACTOR} x the best pair's (a learner that starves large jobs to "
            "win the mean shows there). ``best learner spread`` is the standard deviation of "
            "its mean JCT over its training seeds when it has several (one model file each), "
            "else over the evaluation seeds. GPU cost is GPU-hours x the model's price per hour, a "
            "shared GPU charged for its share; the allocation rate is the allocated GPU share, "
            "time-averaged over the makespan.")


def _learners(table: dict[str, dict[str, Any]], models: list[GpuModel]) -> list[str]:
    title = "Learners"
    out = [title, "-" * len(title), ""]
    if not models:
        return out + ["No model is shipped under ``models/gpu/``, so the learner columns are "
                      "empty and no target is judged: nothing here is a learner's number.", ""]
    out += [LEARNERS_NOTE, ""]
    train = [n for n in table if n.startswith("training: ")]
    cols = list(table[train[0]]) if train else []
    grid = [["model"] + cols] + [[n[len("training: "):]] + [fmt(table[n].get(c)) for c in cols]
                                 for n in train]
    out += gpu_tables.rst_table("Learners: setting and training budget", grid)
    for key in gpu_protocol.WORKLOADS:
        roles = {m.meta["setting"].get("role", "mappo") for m in models if m.workload == key}
        missing = [r for r in ROLE_COLUMNS if r not in roles]
        if missing:
            out += [f"No model for {key} with the role(s) {', '.join(missing)}: no column, "
                    "no number.", ""]
    return out
