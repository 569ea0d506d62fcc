"""GPU fragmentation measured against the workload's task types (FGD, Weng et al., ATC'23).

The *typical task types* are the workload's distinct (CPU, GPU share, GPU count, GPU models)
demands, most frequent first, kept until they cover 95% of the tasks, with their frequencies
renormalised to sum to 1 (:func:`typical_task_types`). For one node and one task type, the node's
free GPU shares count as fragment:

* all of them when the type asks no GPU, when the node's model is not allowed for it, or when
  the node cannot host it (too few GPUs with the share free, or too little CPU);
* otherwise only the GPUs whose free share is below the type's share (they cannot serve it).

A node's fragmentation is the frequency-weighted sum over task types (in milli-GPU); the
cluster's is the sum over nodes, and the fragmentation ratio divides it by the free milli-GPU.
FGD places a task where this expected fragmentation grows the least.

Worked example (docs/gpu.rst): a node with two GPUs, free shares 1000 and 300, 8 free cores;
task types A = 1 whole GPU, 4 cores (frequency 0.5), B = 0.5 GPU, 2 cores (0.3), C = CPU only
(0.2). A fits: fragment = the 300 GPU (300); B fits: the 300 GPU cannot serve it (300); C asks no
GPU: all 1300. Fragmentation = 0.5*300 + 0.3*300 + 0.2*1300 = 500 milli-GPU.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from hdrm.policies.gpu_state import GpuCluster, TaskShape

#: Share of the tasks the typical types must cover (the paper's popularity threshold).
DEFAULT_COVERAGE = 0.95


@dataclass(frozen=True)
class TaskTypes:
    """Typical task types and their frequencies (summing to 1).

    Attributes:
        cpu_milli, milli, gpus: per type (``milli`` 0 for CPU-only types).
        models: per type, the allowed GPU models (empty: any).
        freq: per type, its frequency.
    """

    cpu_milli: np.ndarray
    milli: np.ndarray
    gpus: np.ndarray
    models: tuple[tuple[str, ...], ...]
    freq: np.ndarray

    def __len__(self) -> int:
        return len(self.freq)

    def access(self, model_names: list[str]) -> np.ndarray:
        """``[model, type]``: may a task of the type use a GPU of the model (last row: no GPU)."""
        table = np.ones((len(model_names) + 1, len(self)), dtype=bool)
        for k, allowed in enumerate(self.models):
            if allowed:
                table[:-1, k] = [m in allowed for m in model_names]
        return table


def _key(shape: TaskShape) -> tuple[int, int, int, str]:
    return (shape.cpu_milli, shape.milli if shape.gpus else 0, shape.gpus, "|".join(shape.models))


def typical_task_types(shapes: Iterable[TaskShape],
                       coverage: float = DEFAULT_COVERAGE) -> TaskTypes:
    """The most frequent task types covering ``coverage`` of the tasks (see the module docs).

    Types are ranked by count, ties by the larger (CPU, share, count, models) first, and added one
    by one until their tasks reach ``coverage`` of all tasks.
    """
    counts = Counter(_key(s) for s in shapes)
    if not counts:
        raise ValueError("no task to take the typical task types from")
    ranked = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    total, kept, covered = sum(counts.values()), [], 0
    for key, count in ranked:
        if covered >= coverage * total:
            break
        kept.append((key, count))
        covered += count
    freq = np.array([c for _, c in kept], dtype=float) / covered
    keys = [k for k, _ in kept]
    return TaskTypes(np.array([k[0] for k in keys], dtype=np.int64),
                     np.array([k[1] for k in keys], dtype=np.int64),
                     np.array([k[2] for k in keys], dtype=np.int64),
                     tuple(tuple(k[3].split("|")) if k[3] else () for k in keys), freq)


class FragMeter:
    """Fragmentation of node states of one cluster against fixed task types (vectorised)."""

    def __init__(self, cluster: GpuCluster, types: TaskTypes) -> None:
        self.types = types
        gpu = types.milli > 0
        self.levels, self.level_of = np.unique(types.milli[gpu], return_inverse=True)
        self.cpu_k, self.gpus_k, self.freq_k = types.cpu_milli[gpu], types.gpus[gpu], types.freq[gpu]
        self.access_k = types.access(cluster.model_names)[:, gpu]  # [model, GPU type]
        self.cpu_freq = types.freq[~gpu].sum()  # CPU-only types: every free GPU is fragment

    def frag(self, cpu_left: np.ndarray, gpu_left: np.ndarray, model: np.ndarray) -> np.ndarray:
        """Fragmentation (milli-GPU) of B node states: ``cpu_left[B]``, ``gpu_left[B, G]``,
        ``model[B]`` (-1: no GPU).

        Per GPU type: the free share of the GPUs too small for it where the node can host it,
        else the whole free share (integers, summed with the frequencies at the end).
        """
        free = gpu_left.sum(axis=1)
        if not len(self.levels):
            return free * self.cpu_freq
        fits = gpu_left[:, None, :] >= self.levels[None, :, None]          # B x L x G
        able = fits.sum(axis=2)[:, self.level_of]                          # B x K'
        usable = (gpu_left[:, None, :] * fits).sum(axis=2)[:, self.level_of]
        ok = (able >= self.gpus_k) & (cpu_left[:, None] >= self.cpu_k) & self.access_k[model]
        part = np.where(ok, free[:, None] - usable, free[:, None])
        return free * self.cpu_freq + part @ self.freq_k

    def of_cluster(self, cluster: GpuCluster,
                   nodes: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Fragmentation of the given nodes as they are now."""
        return self.frag(cluster.cpu_left[nodes], cluster.gpu_left[nodes], cluster.model[nodes])
