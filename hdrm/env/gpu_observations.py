"""Observations of the environment on a GPU platform (:class:`~hdrm.env.gpu_env.GpuSchedulingEnv`).

All features lie in [0, 1]. Times are log-normalised over a year, ``log1p(t) / log1p(365 days)``
(GPU tasks run for hours to months: openb's for up to 149 days). Per task, four static features
are computed once per episode (:func:`gpu_task_features`): its duration (the trace's run time, or
a Gavel job's on its fastest model), CPU (milli-cores / the largest node's), memory
(MiB / the largest node's) and GPUs (milli-GPU asked in all / the largest node's milli-GPU).

``gpu`` (``policy_pair`` mode), ``27 + 6 + 2 x M`` values for ``M`` GPU models:

* queue block (27): the 0th, 25th, 50th, 75th and 100th percentiles over the queued tasks of
  duration, CPU, memory, GPUs and waiting time (log-normalised), task-major
  (the five percentiles of duration first); then the queue size ``q / (q + window)`` and the queue
  change ``0.5 + 0.5 tanh(queue_sensitivity x (q - q_prev))``;
* cluster block (6): free CPU and free memory (fractions of the cluster's), the GPU allocation
  rate (allocated milli-GPU / all), the fragmentation ratio (fragmented / free milli-GPU, 0 when
  nothing is free) and amount (fragmented / all milli-GPU), measured as FGD does against the
  workload's typical task types, and the power over the full-load power;
* per GPU model, in name order (``env.sim.core.cluster.model_names``): the free share of its
  GPUs (free milli-GPU / the model's), then the fraction of its GPUs wholly free.

``gpu_job_window`` (``job_pick`` mode): ``window`` rows (the first queued tasks in submission
order; padding rows 0) of 9 columns: waiting time, duration, CPU, memory, GPUs, ``shared`` (1 for
a fraction of one GPU), ``fits_now`` (the task could start now on some node), ``is_job`` (1 for a
queued task) and the cluster's free GPU share.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from gymnasium import spaces

from hdrm.env.observations import OBSERVATIONS, Observation, _quartiles
from hdrm.errors import ConfigError
from hdrm.policies.gpu_state import MILLI

if TYPE_CHECKING:  # pragma: no cover
    from hdrm.env.gpu_env import GpuSchedulingEnv

#: Columns of ``gpu_job_window``.
GPU_JOB_FEATURES = ("waiting_time", "duration", "cpu", "memory", "gpus", "shared", "fits_now",
                    "is_job", "free_gpu_share")
#: Times are normalised by ``log1p`` of a year.
_LOG_YEAR = math.log1p(365 * 24 * 3600.0)
#: Values of the ``gpu`` observation before the per-model block.
GPU_FIXED = 27 + 6


def gpu_task_features(env: "GpuSchedulingEnv") -> np.ndarray:
    """``[task, 4]``: duration, CPU, memory and GPUs of every task of the episode (see above)."""
    core = env.sim.core
    cluster = core.cluster
    jobs = env.sim.workload.jobs
    shapes = [core.shape(j) for j in jobs]
    out = np.empty((len(jobs), 4))
    out[:, 0] = np.log1p([max(j.run_time_s, 0.0) for j in jobs]) / _LOG_YEAR
    out[:, 1] = [s.cpu_milli for s in shapes]
    out[:, 1] /= max(int(cluster.cpu_cap.max()), 1)
    out[:, 2] = [s.memory_mib for s in shapes]
    out[:, 2] /= max(int(cluster.mem_cap.max()), 1)
    out[:, 3] = [s.total_milli for s in shapes]
    out[:, 3] /= cluster.max_gpu_milli
    return np.clip(out, 0.0, 1.0)


class _GpuObservation(Observation):
    """Shared parts: the environment must be a GPU one."""

    def __init__(self, env) -> None:
        if not getattr(env, "is_gpu", False):
            raise ConfigError(f"observation: {self.name!r} needs a GPU platform (a platform with "
                              "accelerators and an openb or Gavel workload)")
        super().__init__(env)
        cluster = env.sim.core.cluster
        self._models = len(cluster.model_names)
        # free milli-GPU and whole GPUs of a model, as fractions of the model's
        milli = np.maximum(np.bincount(np.maximum(cluster.model, 0), weights=cluster.nb_gpus
                                       * MILLI * (cluster.model >= 0), minlength=self._models), 1)
        self._per_model_scale = np.concatenate([1.0 / milli, MILLI / milli])
        self._cpu_total = max(int(cluster.cpu_cap.sum()), 1)
        self._mem_total = max(int(cluster.mem_cap.sum()), 1)

    def free_gpu_share(self) -> float:
        """Free milli-GPU over all (0 without GPUs), from the machine's allocation per model."""
        machine = self.env.sim.machine
        total = self.env.sim.core.cluster.total_gpu_milli
        return 1.0 - float(machine.allocated.sum()) / total if total else 0.0


@OBSERVATIONS.register("gpu")
class GpuObservation(_GpuObservation):
    name = "gpu"

    def space(self) -> spaces.Box:
        return spaces.Box(0.0, 1.0, shape=(GPU_FIXED + 2 * self._models,), dtype=np.float32)

    def build(self) -> np.ndarray:
        env = self.env
        out = np.zeros(GPU_FIXED + 2 * self._models, dtype=np.float32)
        self._queue(out[:27])
        self._cluster(out[27:])
        np.clip(out, 0.0, 1.0, out=out)
        return out

    def _queue(self, block: np.ndarray) -> None:
        env = self.env
        queue = env.sim.core.queue
        q = len(queue)
        if q == 1:  # every percentile is the task's own value
            idx = queue[0].idx
            block[:20] = np.repeat(env.gpu_static[idx], 5)
            block[20:25] = math.log1p(max(env.sim.now - env.submit[idx], 0.0)) / _LOG_YEAR
        elif q:
            idx = np.fromiter((j.idx for j in queue), dtype=np.int64, count=q)
            feats = np.empty((q, 5))
            feats[:, :4] = env.gpu_static[idx]
            feats[:, 4] = np.log1p(np.maximum(env.sim.now - env.submit[idx], 0.0)) / _LOG_YEAR
            block[:25] = _quartiles(feats).T.reshape(-1)
        block[25] = q / (q + env.config.window)
        block[26] = 0.5 + 0.5 * math.tanh(env.config.queue_sensitivity * (q - self._last_queue))
        self._last_queue = q

    def _cluster(self, block: np.ndarray) -> None:
        env = self.env
        view = env.view
        view.refresh()
        cluster = view.cluster
        total = max(cluster.total_gpu_milli, 1)
        free = view.free_milli
        block[0] = view.cpu_left / self._cpu_total
        block[1] = view.mem_left / self._mem_total
        block[2] = 1.0 - free / total
        frag = view.frag_milli
        block[3] = frag / free if free > 0 else 0.0
        block[4] = frag / total
        block[5] = env.sim.machine.power_w / env.full_power_w
        m = self._models
        if m:
            block[6:6 + m] = view.free_by_model
            block[6 + m:6 + 2 * m] = view.whole_by_model
            block[6:6 + 2 * m] *= self._per_model_scale


@OBSERVATIONS.register("gpu_job_window")
class GpuJobWindowObservation(_GpuObservation):
    name = "gpu_job_window"
    features = GPU_JOB_FEATURES
    job_rows = True  # one row per window task: the observation of ``job_pick`` mode

    def build(self) -> np.ndarray:
        env = self.env
        window, out, idx = self.window_rows()
        k = len(window)
        if k:
            out[:k, 0] = np.log1p(np.maximum(env.sim.now - env.submit[idx], 0.0)) / _LOG_YEAR
            out[:k, 1:5] = env.gpu_static[idx]
            out[:k, 5] = env.gpu_shared[idx]
            out[:k, 6] = env.window_fits()
            out[:k, 7] = 1.0
        out[:, 8] = self.free_gpu_share()
        np.clip(out, 0.0, 1.0, out=out)
        return out
