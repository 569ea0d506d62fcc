"""Observations of the multi-agent GPU environment (:mod:`hdrm.env.gpu_multiagent`).

Every feature lies in [0, 1] (float32).

* Ordering agent, ``jobs`` (``window`` rows): the columns of the single-agent ``gpu_job_window``
  observation (:data:`~hdrm.env.gpu_observations.GPU_JOB_FEATURES`: waiting time, duration, CPU,
  memory, GPUs, shared, fits now, is a task, the cluster's free GPU share), built by that
  observation itself.
* Ordering agent, ``cluster``: the single-agent ``gpu`` observation (queue percentiles, queue
  size and change, free CPU and memory, GPU allocation, fragmentation, power, per GPU model the
  free share and wholly free GPUs), named by :func:`cluster_feature_names`.
* Placing agent, ``job``: the chosen task's ``jobs`` row.
* Placing agent, ``nodes`` (one row per node, platform order), :data:`NODE_FEATURES`:

  =================  ==========================================================================
  ``gpus``           the node's GPU count / the largest node's
  ``cpu_capacity``   the node's CPU / the largest node's
  ``price``          the price of one GPU-hour of its model / the dearest model's (0: no GPU)
  ``free_cpu``       free CPU / the node's CPU
  ``free_memory``    free memory / the node's memory
  ``free_gpu``       free milli-GPU / the node's milli-GPU (0 without GPUs)
  ``whole_gpus``     wholly free GPUs / the node's GPUs (0 without GPUs)
  ``best_share``     the largest free share of one of its GPUs / 1,000
  ``fits``           1 when the chosen task fits on the node now (the action mask)
  ``cpu_after``      free CPU left after placing the task / the node's CPU (0 where it does
                     not fit)
  ``gpu_after``      free milli-GPU left after placing it / the node's milli-GPU (0 where it does
                     not fit or the node has no GPU)
  ``speed``          the task's speed on the node's GPU model relative to its fastest (Gavel
                     throughputs; 1 when the trace gives none, 0 where it does not fit)
  ``fgd_score``      only with ``fgd_features=True``: FGD's score of the node for the task / 100
                     (``100 x sigmoid((fragmentation before - after) / 1000)`` for its best GPU
                     choice there; 0 where it does not fit)
  ``rank``           only with ``node_rank=True``: the node's position in platform order /
                     (nodes - 1), fixed (0 for a single node): the one feature that tells apart
                     two nodes of the same kind in the same state, so that a placer can express
                     a fixed preference between them, as ``first_fit`` does (the lowest node
                     that fits)
  =================  ==========================================================================

The first three columns are fixed per episode; the next five are kept in one numpy table and
only the rows of nodes whose version moved since the last reading are recomputed (vectorised);
the last ones depend on the chosen task: they are kept per task shape (traces repeat a few
shapes) and recomputed, vectorised, only for the nodes that changed since that shape was seen.
"""

from __future__ import annotations

import numpy as np

from hdrm.env.gpu_observations import GPU_JOB_FEATURES, GpuObservation
from hdrm.policies.gpu_price import platform_prices
from hdrm.policies.gpu_state import MILLI, GpuCluster, TaskShape
from hdrm.policies.placement import Placement, make_placement

#: Columns of the placing agent's ``nodes`` rows.
NODE_FEATURES = ("gpus", "cpu_capacity", "price", "free_cpu", "free_memory", "free_gpu",
                 "whole_gpus", "best_share", "fits", "cpu_after", "gpu_after", "speed")
#: The optional node column (``fgd_features=True``): FGD's score of the node for the chosen task.
FGD_FEATURE = ("fgd_score",)
#: The optional last node column (``node_rank=True``): the node's position in platform order.
RANK_FEATURE = ("rank",)
#: FGD's scores run from 0 to 100.
FGD_MAX_SCORE = 100.0
#: Columns of the ordering agent's ``jobs`` rows (and of the placing agent's ``job``).
JOB_FEATURES = GPU_JOB_FEATURES
_STATIC, _DYNAMIC = slice(0, 3), slice(3, 8)
_FITS = 8  # the first task column: fits, cpu_after, gpu_after, speed
#: Task shapes whose columns are kept (all are forgotten past this many).
_SHAPES_KEPT = 1024
_QUEUE_COLUMNS = ("duration", "cpu", "memory", "gpus", "waiting_time")
_PERCENTILES = ("p0", "p25", "p50", "p75", "p100")
_CLUSTER_COLUMNS = ("free_cpu", "free_memory", "gpu_allocation", "frag_ratio", "frag_amount",
                    "power")


def cluster_feature_names(model_names: list[str]) -> tuple[str, ...]:
    """Names of the ``cluster`` vector's values, in order (see the module docstring)."""
    queue = [f"queue_{c}_{p}" for c in _QUEUE_COLUMNS for p in _PERCENTILES]
    return tuple(queue + ["queue_size", "queue_change"] + list(_CLUSTER_COLUMNS)
                 + [f"free_share_{m}" for m in model_names]
                 + [f"whole_free_{m}" for m in model_names])


class ClusterFeatures:
    """The ``cluster`` vector: the single-agent ``gpu`` observation of the same core."""

    def __init__(self, core) -> None:
        self._obs = GpuObservation(core)
        self.names = cluster_feature_names(core.sim.core.cluster.model_names)

    def reset(self) -> None:
        """A new episode (the queue-change feature starts again)."""
        self._obs.reset()

    def build(self) -> np.ndarray:
        return self._obs.build()


class NodeFeatures:
    """The ``nodes`` table of one episode's cluster, kept up to date (module docstring).

    Args:
        cluster: the episode's cluster state.
        prices: USD per GPU-hour by model name.
        fgd: FGD's placement on this cluster, for the optional ``fgd_score`` column (None:
            no such column).
        rank: add the last column ``rank`` (the node's position in platform order).
    """

    def __init__(self, cluster: GpuCluster, prices: dict[str, float],
                 fgd: Placement | None = None, rank: bool = False) -> None:
        self.cluster = c = cluster
        self.fgd = fgd
        self.names = (NODE_FEATURES + (FGD_FEATURE if fgd is not None else ())
                      + (RANK_FEATURE if rank else ()))
        #: the task columns: from ``fits`` to ``speed`` or ``fgd_score``
        self._task_width = len(self.names) - _FITS - (1 if rank else 0)
        n = c.nb_nodes
        self.table = np.zeros((n, len(self.names)), dtype=np.float32)
        if rank:
            self.table[:, -1] = np.arange(n) / max(n - 1, 1)
        self._gpus = np.maximum(c.nb_gpus, 1).astype(np.float64)
        self._has_gpu = c.nb_gpus > 0
        model_price = np.array([prices.get(m, 0.0) for m in c.model_names] + [0.0])
        price = model_price[c.model]  # model -1 (no GPU) reads the appended 0
        self.table[:, 0] = c.nb_gpus / max(int(c.nb_gpus.max()), 1)
        self.table[:, 1] = c.cpu_cap / max(int(c.cpu_cap.max()), 1)
        self.table[:, 2] = price / price.max() if price.max() > 0 else 0.0
        self._seen = np.full(n, -1, dtype=np.int64)
        self._speeds: dict[TaskShape, np.ndarray] = {}
        self._per_shape: dict[TaskShape, tuple[np.ndarray, np.ndarray]] = {}
        self.refresh()

    def refresh(self) -> None:
        """Recompute the free-resource columns of the nodes that changed."""
        c = self.cluster
        stale = np.flatnonzero(c.version != self._seen)
        if not len(stale):
            return
        self._seen[stale] = c.version[stale]
        left = c.gpu_left[stale]
        gpus = self._gpus[stale]
        has = self._has_gpu[stale]
        rows = self.table[stale]
        rows[:, 3] = c.cpu_left[stale] / c.cpu_cap[stale]
        rows[:, 4] = c.mem_left[stale] / np.maximum(c.mem_cap[stale], 1)
        rows[:, 5] = np.where(has, left.sum(axis=1) / (gpus * MILLI), 0.0)
        rows[:, 6] = np.where(has, (left == MILLI).sum(axis=1) / gpus, 0.0)
        rows[:, 7] = left.max(axis=1) / MILLI
        self.table[stale] = rows

    def for_task(self, shape: TaskShape | None) -> np.ndarray:
        """A copy of the table with the task columns filled for ``shape`` (zeros for None)."""
        self.refresh()
        out = self.table.copy()
        end = _FITS + self._task_width
        out[:, _FITS:end] = 0.0 if shape is None else self._task_columns(shape)
        return out

    def _task_columns(self, shape: TaskShape) -> np.ndarray:
        """The task columns for ``shape``, kept per shape and recomputed only for the
        nodes that changed since the shape was last seen (traces repeat a few shapes)."""
        c = self.cluster
        entry = self._per_shape.get(shape)
        if entry is None:
            if len(self._per_shape) >= _SHAPES_KEPT:
                self._per_shape.clear()
            entry = self._per_shape[shape] = (
                np.zeros((c.nb_nodes, self._task_width), dtype=np.float32),
                np.full(c.nb_nodes, -1, dtype=np.int64))
        columns, seen = entry
        nodes = np.flatnonzero(seen != c.version)
        if len(nodes):
            seen[nodes] = c.version[nodes]
            columns[nodes] = self._task_rows(shape, nodes)
        return columns

    def _task_rows(self, shape: TaskShape, nodes: np.ndarray) -> np.ndarray:
        """``fits``, ``cpu_after``, ``gpu_after``, ``speed`` (and ``fgd_score``) of ``nodes``
        for ``shape``."""
        c = self.cluster
        fits = c.feasible(shape, nodes)
        rows = np.zeros((len(nodes), self._task_width))
        rows[:, 0] = fits
        rows[:, 1] = np.where(fits, (c.cpu_left[nodes] - shape.cpu_milli) / c.cpu_cap[nodes], 0.0)
        after = (c.gpu_left[nodes].sum(axis=1) - shape.total_milli) / (self._gpus[nodes] * MILLI)
        rows[:, 2] = np.where(fits & self._has_gpu[nodes], after, 0.0)
        rows[:, 3] = np.where(fits, self._speed(shape)[nodes], 0.0)
        if self.fgd is not None and fits.any():
            rows[fits, 4] = self.fgd.score(shape, nodes[fits]) / FGD_MAX_SCORE
        return np.clip(rows, 0.0, 1.0)

    def _speed(self, shape: TaskShape) -> np.ndarray:
        """The task's relative speed on every node's model (1 where unknown), per shape."""
        speed = self._speeds.get(shape)
        if speed is None:
            table = dict(shape.speeds)
            by_model = np.array([table.get(m, 1.0) if table else 1.0
                                 for m in self.cluster.model_names] + [1.0])
            speed = self._speeds[shape] = by_model[self.cluster.model]
        return speed


def node_features(core, fgd_score: bool = False, rank: bool = False) -> NodeFeatures:
    """The :class:`NodeFeatures` of the core's current episode (with the ``fgd_score`` column
    when asked and the workload has task types, and the ``rank`` column when asked)."""
    cluster, types = core.sim.core.cluster, core.sim.core.types
    fgd = make_placement("fgd", cluster, types) if fgd_score and types is not None else None
    return NodeFeatures(cluster, platform_prices(core.platform), fgd, rank)
