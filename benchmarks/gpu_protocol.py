"""The protocol of ``benchmarks/compare_gpu.py``: GPU workloads, their split, load and scoring.

Everything the GPU comparison (and any training for it) must agree on lives here:

* the two workloads (:data:`WORKLOADS`): the default openb pod list on a systematic sample of
  openb's GPU nodes, and Gavel's Philly-derived trace with its measured throughputs on a
  K80/P100/V100 cluster; the node lists are written once into the cache folder
  (:func:`platform_file`);
* the split by submission time (:func:`time_split`): the tasks in submission order are cut at the
  submission times of the 60% and 80% quantiles into training, validation and test ranges, so no
  test task is ever in a training or validation window;
* the windows (:func:`windows_in`): equal-sized, disjoint and evenly spaced in a range, each run
  on an empty cluster with its submission times divided by the workload's load factor;
* how a run is scored (:class:`GpuScore`): average and 95th-percentile job completion time,
  maximum wait, makespan, GPU allocation rate and GPU cost;
* how the load factor is chosen (:func:`choose_load_factor`): the smallest factor of a grid at
  which the best pair's mean wait on the validation windows reaches :data:`WAIT_SHARE` of the
  mean run time.
"""

from __future__ import annotations

import csv
import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, NamedTuple, Sequence

import numpy as np

from benchmarks.choices import named
from hdrm.errors import ConfigError
from hdrm.platform.model import Platform
from hdrm.results.records import REJECTED
from hdrm.results.sla import nearest_rank
from hdrm.sim.engine import Simulation, SimulationConfig, SimulationResult
from hdrm.sim.gpu_inputs import load_gpu_platform, load_gpu_workload
from hdrm.sim.gpu_outputs import gpu_summary
from hdrm.sim.outputs import job_results
from hdrm.workload.job import Workload
from hdrm.workload.load import scale_arrivals
from hdrm.workload.openb import read_openb_nodes
from hdrm.workload.select import select

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACES = ROOT.parent / "shared" / "traces"
MODELS_DIR = ROOT / "models" / "gpu"
CACHE_DIR = ROOT / "runs" / "cache"

#: Fractions of the tasks (by submission time) in the training and validation ranges; the rest
#: is the test range.
SPLIT = (0.6, 0.2)
#: The mean wait, as a share of the mean run time, that the load factor must produce under the
#: best pair on the validation windows (:func:`choose_load_factor`).
WAIT_SHARE = 0.10
#: The backfilling modes of the pairs: ``none`` (a task that fits nowhere stops the decision)
#: and ``greedy`` (every later task that fits starts: work-conserving, as the learners are).
PAIR_BACKFILLS = ("none", "greedy")
#: What ``--quick`` (a smoke run) changes in :func:`resolve`: one window of 3 tasks per range.
QUICK = {"window_tasks": 3, "test_windows": 1, "validation_windows": 1}
#: The load factors :func:`choose_load_factor` tries, in increasing order.
LOAD_GRID = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0)


@dataclass(frozen=True)
class GpuWorkload:
    """One workload of the GPU comparison.

    Attributes:
        key: command-line name.
        label: name in tables.
        trace: the workload file, relative to the traces folder.
        throughputs: Gavel's throughput file, relative to the traces folder (Gavel only).
        nodes: the node list the cluster is sampled from (openb), relative to the traces folder.
        node_stride: keep every this many nodes of ``nodes`` (0, 1 ...): a systematic sample.
        gavel_nodes: Gavel cluster: nodes of :data:`GAVEL_GPUS_PER_NODE` GPUs per model.
        load_factor: submission times are divided by it (chosen by :func:`choose_load_factor`).
        window_tasks: tasks per window.
        test_windows: windows evenly spaced in the test range.
        validation_windows: windows evenly spaced in the validation range.
    """

    key: str
    label: str
    trace: str
    throughputs: str | None
    nodes: str | None
    node_stride: int
    gavel_nodes: tuple[tuple[str, int], ...]
    load_factor: float
    window_tasks: int
    test_windows: int
    validation_windows: int


#: GPUs per node of the Gavel cluster: Gavel's largest jobs ask 8 workers, one GPU each, and a
#: task runs on one node.
GAVEL_GPUS_PER_NODE = 8
WORKLOADS: dict[str, GpuWorkload] = {w.key: w for w in (
    # 11 nodes (every 120th of the 1,213 GPU nodes: 45 GPUs of G2, T4, P100 and V100M16): on the
    # whole cluster, or on the 41-node sample, a 400-task window hardly queues at any load.
    GpuWorkload("openb", "openb default", "gpu/openb_pod_list_default.csv", None,
                "gpu/openb_node_list_gpu_node.csv", 120, (), 20.0, 400, 4, 2),
    # 2 nodes of 8 GPUs per model (48 GPUs): the trace's own cluster spec (300 of each) holds a
    # whole test range at once.
    GpuWorkload("gavel", "Gavel (Philly-derived)", "gpu/gavel/msr_seed0.trace",
                "gpu/gavel/simulation_throughputs.json", None, 1,
                (("K80", 2), ("P100", 2), ("V100M16", 2)), 10.0, 75, 3, 2),
)}


def workload_spec(key: str) -> GpuWorkload:
    """The :class:`GpuWorkload` named ``key``.

    Raises:
        ConfigError: unknown name, with the valid ones.
    """
    return named(WORKLOADS, key, "--workloads", "GPU workload")


def trace_file(spec: GpuWorkload, traces: str | Path, name: str | None = None) -> str:
    """A file of ``spec`` in the traces folder (its trace unless ``name``).

    Raises:
        ConfigError: the file is missing (the message names it and ``--traces``).
    """
    path = Path(traces) / (name or spec.trace)
    if not path.is_file():
        raise ConfigError(f"{path}: GPU trace file not found; pass the folder holding gpu/ "
                          "with --traces")
    return str(path)


def throughputs_file(spec: GpuWorkload, traces: str | Path) -> str | None:
    """Gavel's throughput file of ``spec`` (None for openb)."""
    return trace_file(spec, traces, spec.throughputs) if spec.throughputs else None


# ---------------------------------------------------------------------------------- platforms
def platform_file(spec: GpuWorkload, traces: str | Path, cache: str | Path = CACHE_DIR) -> str:
    """The node list (openb's CSV format) of ``spec``'s cluster, written once into ``cache``."""
    cache = Path(cache)
    if spec.gavel_nodes:
        tag = "_".join(f"{m}x{n}" for m, n in spec.gavel_nodes)
        path = cache / f"gavel_nodes_{tag}_{GAVEL_GPUS_PER_NODE}gpus.csv"
        rows = [(f"{m.lower()}-{i}", 64000, 262144, GAVEL_GPUS_PER_NODE, m)
                for m, n in spec.gavel_nodes for i in range(n)]
    else:
        source = Path(trace_file(spec, traces, spec.nodes))
        nodes, _ = read_openb_nodes(source)
        path = cache / f"{source.stem}_stride{spec.node_stride}_{source.stat().st_size}.csv"
        rows = [(n.name, n.cpu_milli, n.memory_mib, n.gpus, n.model)
                for n in nodes[::max(spec.node_stride, 1)]]
    if not path.is_file():
        _write_nodes(path, rows)
    return str(path)


def _write_nodes(path: Path, rows: list[tuple]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(["sn", "cpu_milli", "memory_mib", "gpu", "model"])
        out.writerows(rows)
    tmp.replace(path)


@lru_cache(maxsize=8)
def load_platform(path: str) -> Platform:
    """The GPU platform of a node list (cached; do not mutate it)."""
    return load_gpu_platform(path)


@lru_cache(maxsize=8)
def load_workload(trace: str, throughputs: str | None) -> Workload:
    """The whole workload in submission order (cached; do not mutate it)."""
    return load_gpu_workload(trace, throughputs)


# ---------------------------------------------------------------------------------- split
class Split(NamedTuple):
    """Index ranges ``[first, end)`` of the tasks in submission order, and the cut times."""

    train: tuple[int, int]
    validation: tuple[int, int]
    test: tuple[int, int]
    cuts_s: tuple[float, float]


def time_split(submit_s: Sequence[float], fractions: tuple[float, float] = SPLIT) -> Split:
    """Cut tasks in submission order at the submission times of two quantiles.

    The cut times are the submission times of the tasks at ``fractions[0]`` and ``fractions[0] +
    fractions[1]`` of the list; a task submitted before the first cut is a training task, before
    the second a validation task, else a test task (tasks submitted at the same instant stay
    together).

    Raises:
        ConfigError: the fractions do not leave three non-empty ranges.
    """
    times = np.asarray(submit_s, dtype=float)
    n = len(times)
    if np.any(np.diff(times) < 0):
        raise ConfigError("time_split: the tasks must be in submission order")
    a, b = fractions
    if not (0 < a and 0 < b and a + b < 1):
        raise ConfigError(f"split fractions {fractions}: expected two shares > 0 summing below 1")
    cuts = (float(times[int(a * n)]), float(times[int((a + b) * n)])) if n else (0.0, 0.0)
    first, second = (int(np.searchsorted(times, c, side="left")) for c in cuts)
    split = Split((0, first), (first, second), (second, n), cuts)
    if not (0 < first < second < n):
        raise ConfigError(f"split {fractions} of {n} tasks leaves an empty range ({split[:3]}); "
                          "give a longer workload")
    return split


def windows_in(span: tuple[int, int], count: int, size: int) -> tuple[int, ...]:
    """Start indices of ``count`` disjoint windows of ``size`` tasks, evenly spaced in ``span``.

    Raises:
        ConfigError: the windows do not fit in the range.
    """
    first, end = span
    if count < 1 or size < 1 or count * size > end - first:
        raise ConfigError(f"{count} windows of {size} tasks do not fit in tasks {first}..{end - 1} "
                          f"({end - first} tasks); use fewer or smaller windows")
    if count == 1:
        return (first,)
    gap = (end - first - size) / (count - 1)
    return tuple(first + int(round(k * gap)) for k in range(count))


@dataclass(frozen=True)
class Setting:
    """A workload resolved to files and windows: what every evaluation of a row needs."""

    key: str
    trace: str
    throughputs: str | None
    platform: str
    load_factor: float
    window_tasks: int
    test_starts: tuple[int, ...]
    validation_starts: tuple[int, ...]
    split: tuple[tuple[int, int], tuple[int, int], tuple[int, int]]

    def window(self, start: int) -> Workload:
        """The window from ``start``: ``window_tasks`` tasks from time 0, loaded."""
        whole = load_workload(self.trace, self.throughputs)
        return scale_arrivals(select(whole, int(start), self.window_tasks), self.load_factor)


def resolve(spec: GpuWorkload, traces: str | Path, cache: str | Path = CACHE_DIR,
            load_factor: float | None = None, window_tasks: int | None = None,
            test_windows: int | None = None, validation_windows: int | None = None) -> Setting:
    """The :class:`Setting` of ``spec`` (the overrides are for tests and ``--quick``)."""
    trace, throughputs = trace_file(spec, traces), throughputs_file(spec, traces)
    whole = load_workload(trace, throughputs)
    split = time_split([j.submit_s for j in whole.jobs])
    size = window_tasks or spec.window_tasks
    nb_validation = validation_windows or spec.validation_windows
    return Setting(spec.key, trace, throughputs, platform_file(spec, traces, cache),
                   float(load_factor or spec.load_factor), size,
                   windows_in(split.test, test_windows or spec.test_windows, size),
                   windows_in(split.validation, nb_validation, size),
                   split[:3])


# ---------------------------------------------------------------------------------- scoring
@dataclass(frozen=True)
class GpuScore:
    """What a GPU run is judged by (times in seconds, cost in USD)."""

    avg_jct: float
    p95_jct: float
    max_wait: float
    makespan: float
    gpu_allocation_rate: float
    gpu_cost: float
    mean_wait: float
    mean_run: float

    @staticmethod
    def mean(scores: Iterable["GpuScore"]) -> "GpuScore":
        """The field-wise mean of ``scores`` (NaN when there are none)."""
        items = list(scores)
        return GpuScore(*(float(np.mean([getattr(s, f.name) for s in items])) if items
                          else math.nan for f in dataclasses.fields(GpuScore)))


def score_result(result: SimulationResult) -> GpuScore:
    """Score a finished GPU run over the tasks that ran (rejected tasks are left out); the 95th
    percentile is the nearest rank, as the multi-agent environment's ``summary()`` takes it."""
    ran = [r for r in job_results(result) if r.final_state != REJECTED]
    summary = gpu_summary(result)
    jct = np.array([r.turnaround_time for r in ran], dtype=float)
    wait = np.array([r.waiting_time for r in ran], dtype=float)
    run = np.array([r.execution_time for r in ran], dtype=float)
    nonempty = len(ran) > 0
    return GpuScore(
        avg_jct=float(summary["mean_jct_s"]),
        p95_jct=nearest_rank(jct, 0.95) if nonempty else 0.0,
        max_wait=float(wait.max()) if nonempty else 0.0,
        makespan=float(summary["makespan_s"]),
        gpu_allocation_rate=float(summary["gpu_allocation_rate_all"]),
        gpu_cost=float(summary["cost_usd"]),
        mean_wait=float(wait.mean()) if nonempty else 0.0,
        mean_run=float(run.mean()) if nonempty else 0.0,
    )


def run_pair(setting: Setting, start: int, policy: str, seed: int,
             backfill: str = "none") -> GpuScore:
    """One (queue order x placement) pair on one window through the engine (seeded tie order),
    with backfilling ``none`` or ``greedy`` (:data:`PAIR_BACKFILLS`)."""
    config = SimulationConfig(backfilling=backfill, decision="event", record_timeline=False,
                              seed=seed)
    platform = load_platform(setting.platform)
    return score_result(Simulation(platform, setting.window(start), config).run(policy))


# ---------------------------------------------------------------------------------- load factor
Runner = Callable[[Setting, int, str, int], GpuScore]


def choose_load_factor(setting: Setting, pairs: Sequence[str], grid: Sequence[float] = LOAD_GRID,
                       share: float = WAIT_SHARE, run: Runner = run_pair
                       ) -> tuple[float, list[tuple[float, str, float, float]]]:
    """The smallest factor of ``grid`` at which the best pair (least mean JCT over the
    validation windows, seed 0, backfilling ``none``) waits on average at least ``share`` of the
    mean run time.

    Returns:
        The factor (the largest of the grid when none reaches it) and, per factor tried,
        ``(factor, best pair, its mean wait, its mean run time)``.
    """
    measured = []
    for factor in grid:
        loaded = dataclasses.replace(setting, load_factor=float(factor))
        scores = {p: GpuScore.mean(run(loaded, s, p, 0) for s in loaded.validation_starts)
                  for p in pairs}
        best = min(scores, key=lambda p: scores[p].avg_jct)
        measured.append((float(factor), best, scores[best].mean_wait, scores[best].mean_run))
        if scores[best].mean_wait >= share * scores[best].mean_run:
            return float(factor), measured
    return float(grid[-1]), measured
