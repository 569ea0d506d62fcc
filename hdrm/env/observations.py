"""Observations of the environment: what the agent sees at a decision point.

All features lie in [0, 1] (clipped). Normalisations:

* requested time ``r``: ``log1p(r) / log1p(7 days)`` (a week or more is 1);
* processors: requested cores / platform cores;
* memory: memory per core / the largest memory per core of any node;
* bandwidth: bandwidth per core / the largest fair share of a processor (capacity / cores);
* waiting time ``w``: ``log1p(w) / log1p(7 days)``;
* queue size ``q``: ``q / (q + window)``;
* queue change (HDeepRM's feature): ``0.5 + 0.5 * tanh(queue_sensitivity * (q - q_prev))``, so
  0.5 means no change since the previous observation.

Observation kinds:

``minimal``
    The queue block: the 0th, 25th, 50th, 75th and 100th percentiles of requested time, processors,
    memory and bandwidth over the queued jobs (20 values), the queue size and the queue change.
``small``
    ``minimal`` plus a cluster block: free cores, contended cores (both as fractions of all cores),
    mean free memory fraction of the nodes, mean free bandwidth fraction of the processors, and
    the current power over the full-load power.
``normal`` (HDeepRM's)
    ``small`` plus, per node, its free memory fraction; per processor, its free bandwidth fraction;
    per core, its speed fraction (current speed / nominal; 0 when idle), its power fraction
    (current power / full power) and the fraction of its job's run still ahead at the current
    speeds, ``(end - now) / (end - start)`` with ``end`` the job's current end estimate (0 when
    idle).
``small_waits``
    ``small`` plus the 0th, 25th, 50th, 75th and 100th percentiles of the queued jobs' waiting
    times (0 for an empty queue): how long jobs have been held back, which the percentiles of
    their requests do not show (a queue order that starves some jobs is visible only here).
``small_waits_predicted``
    ``small_waits`` plus the 0th, 25th, 50th, 75th and 100th percentiles of the queued jobs'
    predicted run times (normalised as the requested time; the prediction of
    ``job_window_predicted``): next to the requested-time percentiles of the queue block,
    how far the requests overstate what the queued jobs will really run.

The kinds of ``job_pick`` mode, one row per window job (``job_window``,
``job_window_reservation``, ``job_window_predicted``, ``job_window_queue``), are in
:mod:`hdrm.env.job_window`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from gymnasium import spaces

from hdrm.platform.power import NB_STATES, state_power_w, state_speeds_gflops
from hdrm.policies.backfill import estimated_duration_s
from hdrm.registry import Registry

if TYPE_CHECKING:  # pragma: no cover
    from hdrm.env.scheduling_env import SchedulingEnv

WEEK_S = 7 * 24 * 3600.0
_LOG_WEEK = math.log1p(WEEK_S)
PERCENTILES = (0.0, 25.0, 50.0, 75.0, 100.0)


def job_static_features(env: "SchedulingEnv") -> np.ndarray:
    """Per job of the episode: normalised requested time, processors, memory and bandwidth."""
    jobs = env.sim.workload.jobs
    platform = env.platform
    req = np.array([estimated_duration_s(j) for j in jobs], dtype=float)
    res = np.array([j.res for j in jobs], dtype=float)
    mem = np.array([j.mem_mb for j in jobs], dtype=float)
    bw = np.array([j.mem_bw_gbps for j in jobs], dtype=float)
    mem_scale = max((n.memory_mb / len(n.core_ids) for n in platform.nodes), default=1.0)
    bw_scale = max((p.mem_bw_gbps / len(p.core_ids) for p in platform.processors), default=1.0)
    out = np.empty((len(jobs), 4))
    out[:, 0] = np.log1p(np.maximum(req, 0.0)) / _LOG_WEEK
    out[:, 1] = res / platform.nb_cores
    out[:, 2] = mem / mem_scale if math.isfinite(mem_scale) and mem_scale > 0 else 0.0
    out[:, 3] = bw / bw_scale if math.isfinite(bw_scale) and bw_scale > 0 else 0.0
    return np.clip(out, 0.0, 1.0)


class Observation:
    """Base class: builds one observation kind for one environment."""

    name = ""
    #: True for one row per window job (``job_pick`` mode's observations): a
    #: ``[window, len(features)]`` box in [0, 1], built from :meth:`window_rows`.
    job_rows = False

    def __init__(self, env: "SchedulingEnv") -> None:
        self.env = env
        self._last_queue = 0

    def space(self) -> spaces.Box:
        """The observation space (a job-rows box where :attr:`job_rows`)."""
        if self.job_rows:
            return spaces.Box(0.0, 1.0, shape=(self.env.config.window, len(self.features)),
                              dtype=np.float32)
        raise NotImplementedError

    def window_rows(self) -> tuple[list, np.ndarray, np.ndarray]:
        """The window's jobs, a zeroed ``[window, len(features)]`` float32 array for their rows
        (padding rows stay 0) and the jobs' indices."""
        window = self.env.window_jobs()
        out = np.zeros((self.env.config.window, len(self.features)), dtype=np.float32)
        idx = np.fromiter((j.idx for j in window), dtype=np.int64, count=len(window))
        return window, out, idx

    def reset(self) -> None:
        """Start of an episode."""
        self._last_queue = 0

    def build(self) -> np.ndarray:
        """The observation now."""
        raise NotImplementedError

    # -- shared blocks --------------------------------------------------------------------
    def queue_block(self) -> np.ndarray:
        env = self.env
        queue = env.sim.core.queue
        block = np.zeros(22, dtype=np.float32)
        q = len(queue)
        if q:
            feats = env.static[[j.idx for j in queue]]
            block[:20] = _quartiles(feats).T.reshape(-1)
        block[20] = q / (q + env.config.window)
        block[21] = 0.5 + 0.5 * math.tanh(env.config.queue_sensitivity * (q - self._last_queue))
        self._last_queue = q
        return block

    def cluster_block(self, mem: np.ndarray | None = None, bw: np.ndarray | None = None
                      ) -> np.ndarray:
        """Free and contended cores, mean free memory and bandwidth, power (5 values)."""
        env = self.env
        state = env.sim.core.state
        n = env.platform.nb_cores
        mem = self.memory_free() if mem is None else mem
        bw = self.bandwidth_free() if bw is None else bw
        return np.array(
            [state.free_cores / n, state.contended / n, float(mem.mean()), float(bw.mean()),
             env.sim.machine.power_w / env.full_power_w],
            dtype=np.float32,
        )

    def memory_free(self) -> np.ndarray:
        """Free memory fraction of every node (1 for unbounded memory)."""
        total, finite = self._static("memory", self.env.platform.node_memory_mb)
        return _fractions(self.env.sim.core.state.node_free_mem, total, finite)

    def bandwidth_free(self) -> np.ndarray:
        """Free bandwidth fraction of every processor (1 for unbounded bandwidth)."""
        capacity, finite = self._static("bandwidth", self.env.platform.processor_mem_bw_gbps)
        used = _fractions(self.env.sim.core.state.proc_demand, capacity, finite)
        return np.where(finite, 1.0 - used, 1.0)

    def _static(self, key: str, values) -> tuple[np.ndarray, np.ndarray]:
        cache = self.__dict__.setdefault("_static_arrays", {})
        if key not in cache:
            total = np.asarray(values, dtype=float)
            cache[key] = (total, np.isfinite(total) & (total > 0))
        return cache[key]


def _quartiles(values: np.ndarray) -> np.ndarray:
    """The 0/25/50/75/100th percentiles of each column (linear interpolation, as numpy's default)."""
    ordered = np.sort(values, axis=0)
    n = ordered.shape[0]
    pos = np.array(PERCENTILES) / 100.0 * (n - 1)
    low = np.floor(pos).astype(np.int64)
    high = np.minimum(low + 1, n - 1)
    weight = (pos - low)[:, None]
    return ordered[low] * (1.0 - weight) + ordered[high] * weight


def _seconds_quartiles(seconds: np.ndarray | None) -> np.ndarray:
    """The 5 percentiles of durations in seconds, ``log_week`` normalised (zeros for None)."""
    out = np.zeros(5, dtype=np.float32)
    if seconds is not None and len(seconds):
        out[:] = np.clip(np.log1p(_quartiles(seconds[:, None])[:, 0]) / _LOG_WEEK, 0.0, 1.0)
    return out


def _fractions(part, total: np.ndarray, finite: np.ndarray) -> np.ndarray:
    """``part / total`` where ``total`` is finite and positive, else 1; clipped to [0, 1]."""
    out = np.ones(len(total))
    if finite.any():
        out[finite] = np.asarray(part, dtype=float)[finite] / total[finite]
    return np.clip(out, 0.0, 1.0)


OBSERVATIONS: Registry[type[Observation]] = Registry("observation")


@OBSERVATIONS.register("minimal")
class MinimalObservation(Observation):
    name = "minimal"

    def space(self) -> spaces.Box:
        return spaces.Box(0.0, 1.0, shape=(22,), dtype=np.float32)

    def build(self) -> np.ndarray:
        return self.queue_block()


@OBSERVATIONS.register("small")
class SmallObservation(Observation):
    name = "small"

    def space(self) -> spaces.Box:
        return spaces.Box(0.0, 1.0, shape=(27,), dtype=np.float32)

    def build(self) -> np.ndarray:
        return np.concatenate([self.queue_block(), self.cluster_block()])


@OBSERVATIONS.register("small_waits")
class SmallWaitsObservation(SmallObservation):
    name = "small_waits"

    def space(self) -> spaces.Box:
        return spaces.Box(0.0, 1.0, shape=(32,), dtype=np.float32)

    def build(self) -> np.ndarray:
        env = self.env
        queue = env.sim.core.queue
        waits = None
        if queue:
            idx = np.fromiter((j.idx for j in queue), dtype=np.int64, count=len(queue))
            waits = np.maximum(env.sim.now - env.submit[idx], 0.0)
        return np.concatenate([super().build(), _seconds_quartiles(waits)])


@OBSERVATIONS.register("small_waits_predicted")
class SmallWaitsPredictedObservation(SmallWaitsObservation):
    name = "small_waits_predicted"

    def space(self) -> spaces.Box:
        return spaces.Box(0.0, 1.0, shape=(37,), dtype=np.float32)

    def build(self) -> np.ndarray:
        env = self.env
        queue = env.sim.core.queue
        runs = None
        if queue:
            predict = env.sim.core.predictor.predict
            runs = np.fromiter((predict(job) for job in queue), dtype=float, count=len(queue))
        return np.concatenate([super().build(), _seconds_quartiles(runs)])


@OBSERVATIONS.register("normal")
class NormalObservation(Observation):
    name = "normal"

    def __init__(self, env: "SchedulingEnv") -> None:
        super().__init__(env)
        platform = env.platform
        self._speed_of_state = np.array(state_speeds_gflops(1.0))  # speed fraction per state
        full = np.array(platform.core_power_w, dtype=float)
        table = np.array([state_power_w(w) for w in full]).reshape(-1, NB_STATES)
        self._power_frac = np.where(full[:, None] > 0, table / np.maximum(full[:, None], 1e-12), 0.0)
        self._rows = np.arange(platform.nb_cores)
        self._size = 27 + len(platform.nodes) + len(platform.processors) + 3 * platform.nb_cores

    def space(self) -> spaces.Box:
        return spaces.Box(0.0, 1.0, shape=(self._size,), dtype=np.float32)

    def build(self) -> np.ndarray:
        env = self.env
        state = env.sim.core.state
        n = len(state.core_state)
        states = np.fromiter(state.core_state, dtype=np.intp, count=n)
        speed = self._speed_of_state[states]
        if state.contended:
            factor = np.fromiter(state.core_factor, dtype=float, count=n)
            speed = np.where(states == 1, speed * factor, speed)
        power = self._power_frac[self._rows, states]
        remaining = np.zeros(n)
        now = env.sim.now
        fraction_left = env.sim.machine.fraction_left
        for idx, cores in state.alloc.items():
            remaining[cores,] = fraction_left(idx, now)
        mem, bw = self.memory_free(), self.bandwidth_free()
        out = np.concatenate(
            [self.queue_block(), self.cluster_block(mem, bw), mem, bw, speed, power, remaining])
        return np.clip(out, 0.0, 1.0, out=out).astype(np.float32, copy=False)


def job_window_kinds() -> tuple[str, ...]:
    """The registered observation kinds of ``job_pick`` mode (one row per window job)."""
    return tuple(n for n in OBSERVATIONS.names() if getattr(OBSERVATIONS.get(n), "job_rows", False))


def make_observation(name: str, env: "SchedulingEnv", where: str = "observation") -> Observation:
    """Instantiate the observation registered as ``name`` for ``env``."""
    return OBSERVATIONS.get(name, where)(env)


# registers the job-window kinds, then ``gpu`` and ``gpu_job_window`` (their own modules; imported
# last: they build on the above); the job-window names stay importable from here
from hdrm.env.job_window import (  # noqa: E402,F401
    JOB_FEATURES,
    PREDICTED_JOB_FEATURES,
    QUEUE_JOB_FEATURES,
    RESERVATION_JOB_FEATURES,
    JobWindowObservation,
    JobWindowPredictedObservation,
    JobWindowQueueObservation,
    JobWindowReservationObservation,
)
from hdrm.env import gpu_observations  # noqa: E402,F401
