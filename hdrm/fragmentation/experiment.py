"""A placement-only experiment: one policy, several seeds, curves and a summary on disk.

``run_experiment`` reads an openb node list and pod list (or a Philly, Helios or PAI trace as
the tasks), runs :func:`run_seed` for each seed
(in up to ``processes`` worker processes; results do not depend on it) and writes, in ``outdir``:

* ``curve_<seed>.csv``: per arrival the task, the node (-1: failed), arrived and allocated GPU
  milli and % of the cluster's, fragmentation amount (milli-GPU) and ratio (% of free GPU share);
* ``summary.json``: ``{"policy": P, "unallocated_gpus_pct": {"median": x, "per_seed":
  {"42": x42, ...}}, ...}`` at 100% arrived workload, with the inputs, the tie rule, the draws,
  the failed tasks and the arrivals per seed, and the cluster's milli-GPU (``total_gpu_milli``).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import logging
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from hdrm.durable import replacing, write_text_atomically
from hdrm.errors import ConfigError
from hdrm.fragmentation.paper_draws import load_stream
from hdrm.fragmentation.protocol import (CURVE_COLUMNS, DEFAULT_TUNING_RATIO, DRAWS,
                                         JumpedOver, SeedRun, run_seed)
from hdrm.policies.gpu_frag import typical_task_types
from hdrm.policies.gpu_state import GpuCluster, TaskShape
from hdrm.policies.placement import PLACEMENTS
from hdrm.workload.gpu_formats import read_gpu_trace
from hdrm.workload.openb import read_openb_nodes

logger = logging.getLogger(__name__)


@dataclass
class Inputs:
    """What every seed shares: the cluster, the task shapes and names, the task types.

    ``specs``: each task's GPU-model constraint as its pod list writes it (``gpu_spec`` without
    empty parts; repeats and order kept): the paper's simulator tells task types apart by that
    text, so ``"V100M16|V100M32"`` and ``"V100M16|V100M32|V100M32"`` are two types there.
    """

    cluster: GpuCluster
    shapes: list[TaskShape]
    names: list[str]
    nodes_path: str
    pods_path: str
    specs: list[str] | None = None
    prices: dict[str, float] | None = None

    @property
    def types(self):
        return typical_task_types(self.shapes, specs=self.specs)


def written_spec(job) -> str:
    """A task's ``gpu_spec`` as written (empty parts dropped), "" without GPUs."""
    if not job.accel:
        return ""
    row = (job.extra or {}).get("openb")
    if row is None:  # a Philly, Helios or PAI job: its models as the reader kept them
        return "|".join(job.accel.models)
    return "|".join(m for m in (row.get("gpu_spec") or "").split("|") if m)


def load_inputs(nodes_csv: str | Path, pods_csv: str | Path) -> Inputs:
    """Read the node list and the tasks: an openb pod list, or a Philly, Helios or PAI trace
    (recognised by its content, :func:`~hdrm.workload.gpu_formats.read_gpu_trace`; strict: a
    bad row is a one-line error)."""
    nodes, _ = read_openb_nodes(nodes_csv)
    work = read_gpu_trace(pods_csv)
    cluster = GpuCluster.from_openb(nodes)
    _name_models_as_the_nodes(work.jobs, cluster.model_names)
    if cluster.total_gpu_milli == 0:
        raise ConfigError(f"{nodes_csv}: no GPU in the node list; the protocol measures GPUs")
    if not any(job.accel for job in work.jobs):  # the tuning would append tasks for ever
        raise ConfigError(f"{pods_csv}: none of its {len(work.jobs)} tasks asks a GPU; the "
                          "protocol measures the GPUs a workload leaves unallocated: give "
                          "tasks with num_gpu >= 1")
    return Inputs(cluster, [TaskShape.of_job(j) for j in work.jobs], [str(j.id) for j in work.jobs],
                  str(nodes_csv), str(pods_csv), [written_spec(j) for j in work.jobs])


def _name_models_as_the_nodes(jobs, node_models: list[str]) -> None:
    """Each task's allowed GPU models as the node list writes them where both lists name one
    library model (through :func:`hdrm.platform.accelerators.resolve_model`: a pod list's
    ``A100M80`` on nodes written ``NVIDIA A100-SXM4-80GB``); other names stay as written, and
    the typical task types keep the written ``gpu_spec`` (:func:`written_spec`)."""
    from hdrm.platform.accelerators import resolve_model
    from hdrm.platform.library import default_library

    types = default_library().accelerator_types
    as_written = {m: m for m in node_models if m}
    for model in node_models:
        key = resolve_model(model, types) if model else None
        if key is not None:
            as_written.setdefault(key, model)
    for job in jobs:
        accel = job.accel
        if accel is None or all(m in as_written and as_written[m] == m for m in accel.models):
            continue
        names = (as_written.get(m) or as_written.get(resolve_model(m, types) or "", m)
                 for m in accel.models)
        job.accel = dataclasses.replace(accel, models=tuple(dict.fromkeys(names)))


def parse_seeds(text: str) -> list[int]:
    """``"42-51"``, ``"42,45,50"`` or ``"42"`` as a list of seeds.

    Raises:
        ConfigError: not that form.
    """
    seeds: list[int] = []
    try:
        for part in text.split(","):
            low, _, high = part.strip().partition("-")
            seeds.extend(range(int(low), int(high or low) + 1))
    except ValueError:
        raise ConfigError(f"--seeds: expected '42-51' or '42,43', got {text!r}") from None
    if not seeds:
        raise ConfigError(f"--seeds: no seed in {text!r}; e.g. --seeds 42-51")
    return seeds


_WORKER: dict = {}


def _init_worker(inputs: Inputs) -> None:
    """Keep the inputs (read once by the parent) and their task types for :func:`_one`."""
    _WORKER.update(inputs=inputs, types=inputs.types)


#: ``--ties`` choices and the :class:`~hdrm.policies.gpu_placer.Placer` rule each one is.
TIES = {"shuffled": "shuffled", "first": "name"}


def placer_ties(ties: str) -> str:
    """The placer's tie rule for a ``--ties`` choice (``first``: the first node name).

    Raises:
        ConfigError: not one of :data:`TIES`.
    """
    try:
        return TIES[ties]
    except KeyError:
        raise ConfigError(f"--ties: unknown rule {ties!r}; choose one of: "
                          f"{', '.join(TIES)}") from None


def check_draws(draws: str, ties: str, seeds: Sequence[int]) -> None:
    """Refuse, before any work, draws that cannot be had: an unknown source, the paper's draws
    with another tie rule than the shuffled one, or for a seed they are not shipped for.

    Raises:
        ConfigError: naming the option and the fix.
    """
    if draws not in DRAWS:
        raise ConfigError(f"--draws: unknown {draws!r}; choose one of: {', '.join(DRAWS)}")
    if draws == "paper":
        if ties != "shuffled":
            raise ConfigError(f"--draws paper draws the paper's tie order: it needs --ties "
                              f"shuffled (got {ties!r})")
        for seed in seeds:
            load_stream(seed)


def _one(args: tuple[str, int, float, str, str]) -> SeedRun:
    policy, seed, ratio, ties, draws = args
    inputs = _WORKER["inputs"]
    return run_seed(inputs.cluster, inputs.shapes, inputs.names, _WORKER["types"], policy, seed,
                    ratio, placer_ties(ties), draws, inputs.prices)


def run_seeds(nodes_csv: str | Path, pods_csv: str | Path, policy: str, seeds: Sequence[int],
              ratio: float = DEFAULT_TUNING_RATIO, processes: int = 1,
              ties: str = "shuffled", draws: str = "numpy",
              accelerator_types: str | Path | None = None) -> list[SeedRun]:
    """Run one policy on each seed; ``processes`` > 1 spreads the seeds over worker processes;
    ``ties``: ``"shuffled"`` (a random node order per seed, the paper's) or ``"first"`` (the
    first node name); ``draws``: ``"numpy"`` or ``"paper"`` (the paper's own draws of each seed,
    :func:`~hdrm.fragmentation.protocol.run_seed`); ``accelerator_types``: a file of extra GPU
    models (``--accelerator-types``) whose prices ``price_aware`` uses with the library's."""
    PLACEMENTS.get(policy, "--policy")  # a typo fails before any work
    placer_ties(ties)
    check_draws(draws, ties, seeds)
    jobs = [(policy, seed, ratio, ties, draws) for seed in seeds]
    # read and checked here, before any worker starts: a bad list is the reader's one-line
    # error, not a worker's traceback (the workers get the lists as read)
    inputs = load_inputs(nodes_csv, pods_csv)
    if accelerator_types is not None:
        inputs.prices = _prices(inputs.cluster.model_names, accelerator_types)
    if processes <= 1 or len(jobs) == 1:
        _init_worker(inputs)
        return [_one(job) for job in jobs]
    with ProcessPoolExecutor(processes, initializer=_init_worker, initargs=(inputs,)) as pool:
        return list(pool.map(_one, jobs))


def _prices(models: list[str], accelerator_types: str | Path) -> dict[str, float]:
    """The prices of the models the library extended with the file knows (a model neither
    knows is named by ``price_aware``, the one placement that prices models)."""
    from hdrm.platform.openb import library_with_accelerator_types
    from hdrm.policies.gpu_price import known_prices

    return known_prices(models, library_with_accelerator_types(accelerator_types)
                        .accelerator_types)


def summarize(policy: str, runs: Sequence[SeedRun], **extra) -> dict:
    """The summary document of one policy's runs."""
    per_seed = {str(r.seed): round(r.unallocated_pct(), 2) for r in runs}
    return {"policy": policy,
            "unallocated_gpus_pct": {"median": round(float(np.median(list(per_seed.values()))), 2),
                                     "per_seed": per_seed},
            "failed_tasks": {str(r.seed): r.failed for r in runs},
            "arrivals": {str(r.seed): len(r.tasks) for r in runs},
            "total_gpu_milli": runs[0].total_milli if runs else 0, **extra}


def write_curve(run: SeedRun, path: Path) -> None:
    """The allocation curve of one seed as CSV."""
    with replacing(path) as scratch, scratch.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)  # whole or not at all (hdrm.durable.replacing)
        writer.writerow(CURVE_COLUMNS)
        writer.writerows(run.curve_rows())


def run_experiment(nodes_csv: str | Path, pods_csv: str | Path, policy: str,
                   seeds: Sequence[int], outdir: str | Path,
                   ratio: float = DEFAULT_TUNING_RATIO, processes: int = 1,
                   ties: str = "shuffled", draws: str = "numpy",
                   accelerator_types: str | Path | None = None) -> dict:
    """Run, write the curves and ``summary.json`` into ``outdir``; returns the summary."""
    started = time.perf_counter()
    runs = run_seeds(nodes_csv, pods_csv, policy, seeds, ratio, processes, ties, draws,
                     accelerator_types)
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    for run in runs:
        write_curve(run, out / f"curve_{run.seed}.csv")
    try:
        summary = summarize(policy.lower(), runs, nodes=str(nodes_csv), pods=str(pods_csv),
                            workload_tuning_ratio=ratio, ties=ties, draws=draws,
                            wall_s=round(time.perf_counter() - started, 2))
    except ValueError as exc:  # the curves are written: they show how far the workload went
        fix = ("tasks that each ask less than 1% of the GPUs (a larger cluster)"
               if isinstance(exc, JumpedOver) else
               f"--workload-tuning-ratio >= 1 (got {ratio:g}) or more tasks")
        raise ConfigError(f"{pods_csv}: {exc} of the cluster's GPUs, so there is no value at "
                          f"100%; give {fix}") from None
    write_text_atomically(out / "summary.json", json.dumps(summary, indent=1) + "\n")
    return summary
