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


def _key(shape: TaskShape, spec: str | None = None) -> tuple[int, int, int, str]:
    return (shape.cpu_milli, shape.milli if shape.gpus else 0, shape.gpus,
            "|".join(shape.models) if spec is None else spec)


def typical_task_types(shapes: Iterable[TaskShape], coverage: float = DEFAULT_COVERAGE,
                       specs: Iterable[str] | None = None) -> TaskTypes:
    """The most frequent task types covering ``coverage`` of the tasks (see the module docs).

    Types are ranked by count, ties by the larger (CPU, share, count, models) first, and added one
    by one until their tasks reach ``coverage`` of all tasks. ``specs``: per shape, its model
    constraint as written (the paper's simulator keys types by that text, repeats included);
    default: the shape's models.
    """
    shapes = list(shapes)
    specs = [None] * len(shapes) if specs is None else list(specs)
    counts = Counter(_key(s, t) for s, t in zip(shapes, specs))
    if not counts:
        raise ValueError("no task to take the typical task types from")
    ranked = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    total, kept, covered = sum(counts.values()), [], 0
    for key, count in ranked:
        if covered >= coverage * total:
            break
        kept.append((key, count))
        covered += count
    freq = np.array([c for _, c in kept], dtype=float) / total
    if len(kept) < len(ranked):  # renormalised as the simulator does: share / covered share
        freq = freq / (covered / total)
    keys = [k for k, _ in kept]
    return TaskTypes(np.array([k[0] for k in keys], dtype=np.int64),
                     np.array([k[1] for k in keys], dtype=np.int64),
                     np.array([k[2] for k in keys], dtype=np.int64),
                     tuple(tuple(k[3].split("|")) if k[3] else () for k in keys), freq)


#: The classes of a (node, task type) pair whose free GPU share the paper's simulator counts as
#: fragment, in the order it adds them up (lacking GPU and CPU, lacking GPU, lacking CPU, CPU-only
#: type served, CPU-only type lacking CPU, GPU model not allowed); a GPU type the node can serve
#: adds the GPUs too small for it to "lacking GPU".
_CLASSES = ("lack_both", "lack_gpu", "lack_cpu", "cpu_only", "cpu_only_lacking", "no_access")
_LACK_BOTH, _LACK_GPU, _LACK_CPU, _CPU_ONLY, _CPU_ONLY_LACKING, _NO_ACCESS = range(len(_CLASSES))
#: :meth:`FragMeter.frag` adds up this many node states or fewer in Python floats (less overhead
#: than numpy's calls for one or two states; the same bits).
_FEW = 2


class FragMeter:
    """Fragmentation of node states of one cluster against fixed task types (vectorised).

    The floating-point sums follow the paper's simulator: per class, ``frequency x milli-GPU``
    added type by type in the types' order, then the classes added in :data:`_CLASSES` order, so
    that equal fragmentation before and after a placement gives the same float (FGD's score is
    50 exactly then) as it does there.
    """

    def __init__(self, cluster: GpuCluster, types: TaskTypes) -> None:
        self.types = types
        self.gpu = types.milli > 0
        self.levels, self.level_of = np.unique(types.milli[self.gpu], return_inverse=True)
        self.gpus_k = types.gpus[self.gpu]
        self.access = types.access(cluster.model_names)  # [model, type]
        self._columns = np.arange(len(types))
        # the same data as Python numbers, for a few states at a time (:meth:`_frag_one`)
        self._type_rows = list(zip(types.cpu_milli.tolist(), types.milli.tolist(),
                                   types.gpus.tolist(), types.freq.tolist()))
        self._access_rows = self.access.tolist()

    def frag(self, cpu_left: np.ndarray, gpu_left: np.ndarray, model: np.ndarray) -> np.ndarray:
        """Fragmentation (milli-GPU) of B node states: ``cpu_left[B]``, ``gpu_left[B, G]``,
        ``model[B]`` (-1: no GPU).

        Per GPU type: the free share of the GPUs too small for it where the node can host it,
        else the whole free share; per CPU-only type, the whole free share.
        """
        if len(cpu_left) <= _FEW:
            return np.array([self._frag_one(c, g, m) for c, g, m in
                             zip(cpu_left.tolist(), gpu_left.tolist(), model.tolist())])
        free = gpu_left.sum(axis=1)
        cpu_ok = cpu_left[:, None] >= self.types.cpu_milli                  # B x K
        classes = np.where(cpu_ok, _CPU_ONLY, _CPU_ONLY_LACKING)
        amount = np.repeat(free[:, None], len(self.types), axis=1)
        if len(self.levels):
            fits = gpu_left[:, None, :] >= self.levels[None, :, None]      # B x L x G
            host = fits.sum(axis=2)[:, self.level_of] >= self.gpus_k        # B x K'
            usable = (gpu_left[:, None, :] * fits).sum(axis=2)[:, self.level_of]
            cpu, allowed = cpu_ok[:, self.gpu], self.access[model][:, self.gpu]
            lacking = np.where(host, _LACK_CPU, np.where(cpu, _LACK_GPU, _LACK_BOTH))
            served = host & cpu & allowed
            classes[:, self.gpu] = np.where(allowed, np.where(served, _LACK_GPU, lacking),
                                            _NO_ACCESS)
            amount[:, self.gpu] = np.where(served, free[:, None] - usable, free[:, None])
        # each term in its class's row, then sequential sums (cumsum) type by type, then the
        # classes one after the other, as the simulator adds them
        grid = np.zeros((len(free), len(_CLASSES), len(self.types)))
        grid[np.arange(len(free))[:, None], classes, self._columns] = self.types.freq * amount
        sums = np.cumsum(grid, axis=2)[:, :, -1]
        total = sums[:, 0]
        for k in range(1, len(_CLASSES)):
            total = total + sums[:, k]
        return total

    def _frag_one(self, cpu_left: int, gpu_left: list[int], model: int) -> float:
        """:meth:`frag` of one node state in Python floats: the same products, added in the
        same order (a class's sum skips the other classes' zeros, which leave it unchanged)."""
        free = sum(gpu_left)
        allowed = self._access_rows[model]
        sums = [0.0] * len(_CLASSES)
        fitting: dict[int, tuple[int, int]] = {}  # share -> (GPUs that hold it, their shares)
        for k, (cpu_k, milli, gpus, freq) in enumerate(self._type_rows):
            cpu_ok = cpu_left >= cpu_k
            if not milli:
                sums[_CPU_ONLY if cpu_ok else _CPU_ONLY_LACKING] += freq * free
            elif not allowed[k]:
                sums[_NO_ACCESS] += freq * free
            else:
                if milli not in fitting:
                    held = [g for g in gpu_left if g >= milli]
                    fitting[milli] = (len(held), sum(held))
                count, usable = fitting[milli]
                if count >= gpus and cpu_ok:
                    sums[_LACK_GPU] += freq * (free - usable)
                else:
                    lacking = _LACK_CPU if count >= gpus else _LACK_GPU if cpu_ok else _LACK_BOTH
                    sums[lacking] += freq * free
        total = sums[0]
        for value in sums[1:]:
            total = total + value
        return total

    def of_cluster(self, cluster: GpuCluster,
                   nodes: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Fragmentation of the given nodes as they are now."""
        return self.frag(cluster.cpu_left[nodes], cluster.gpu_left[nodes], cluster.model[nodes])
