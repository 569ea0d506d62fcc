"""The decision core's mirror of the cluster: who runs where, memory, bandwidth and power states.

Rules (the heterogeneity layer):

* memory capacity is a hard per-node limit, charged per allocated core (``job.mem_mb`` each); an
  allocation that runs out part way is rolled back whole;
* memory bandwidth is a soft per-processor limit: the running cores of a processor demand
  ``job.mem_bw_gbps`` each, and the contention model maps demand and capacity to the speed of every
  running core of that processor (state 0 at full speed, state 1 when slowed);
* the first running core wakes its processor (idle siblings go 3 -> 2); the last one to finish puts
  it back to sleep (all cores -> 3). All cores start in state 3 (these updates live in
  :mod:`hdrm.core.power_states`).

State changes are queued per core and handed to the engine with :meth:`ClusterState.take_changes`,
which applies them to the simulated machine (built-in engine) or sends them as SET_RESOURCE_STATE
(Batsim engine).
"""

from __future__ import annotations

import math
import operator
from typing import Sequence

import numpy as np

from hdrm.core.contention import ContentionModel
from hdrm.core.records import OverutilizationRecorder
from hdrm.core.runs import WIDE, CoreRuns, core_runs
from hdrm.errors import SimulationError
from hdrm.platform.model import Platform
from hdrm.platform.one_core import OneCoreProcessors
from hdrm.core.power_states import FREE, PowerStates
from hdrm.platform.power import SLEEPING
from hdrm.workload.job import Job

__all__ = ["FREE", "MASK_MIN_CORES", "ClusterState"]

#: Platforms of more one-core nodes than this keep a numpy mask of their free cores (smaller
#: ones find free cores faster in Python).
MASK_MIN_CORES = 256


class ClusterState(PowerStates):
    """Mutable state of the platform's cores, processors and nodes.

    Args:
        platform: the platform.
        contention: the memory-bandwidth contention model.
    """

    def __init__(self, platform: Platform, contention: ContentionModel) -> None:
        self.platform = platform
        self.contention = contention
        n_cores = platform.nb_cores
        self.core_job: list[int] = [FREE] * n_cores
        self._core_state: list[int] = [SLEEPING] * n_cores
        self.core_factor: list[float] = [1.0] * n_cores
        if isinstance(platform.processors, OneCoreProcessors):  # made on demand: not walked
            ids = platform.core_processor  # the platform's id objects, shared (no new ints)
            self.proc_cores: list[tuple[int, ...]] = [(i,) for i in ids]
            self.proc_node: list[int] = list(ids)
            node_cores = [1] * n_cores
        else:
            self.proc_cores = [p.core_ids for p in platform.processors]
            self.proc_node = [p.node_id for p in platform.processors]
            node_cores = [len(n.core_ids) for n in platform.nodes]
        self.proc_capacity: list[float] = list(platform.processor_mem_bw_gbps)
        self._proc_free: list[int] = [len(c) for c in self.proc_cores]
        self._proc_running: list[int] = [0] * len(self.proc_cores)
        self._proc_demand: list[float] = [0.0] * len(self.proc_cores)
        self.proc_fraction: list[float] = [1.0] * len(self.proc_cores)
        self.node_free_mem: list[float] = list(platform.node_memory_mb)
        self._node_free_cores: list[int] = node_cores
        self.core_proc: tuple[int, ...] = platform.core_processor
        self.core_node: tuple[int, ...] = platform.core_node
        self.free_cores = n_cores
        #: Running cores slowed by contention, kept up to date incrementally.
        self.contended = 0
        self.alloc: dict[int, tuple[int, ...]] = {}
        self.records = OverutilizationRecorder()
        self._pending: dict[int, tuple[int, float]] = {}
        #: Changes of whole runs of cores ``(first, last + 1, (state, speed_factor))``, queued
        #: after those of ``_pending`` (one-core nodes; see :meth:`take_pending_runs`).
        self._pending_runs: list[tuple[int, int, tuple[int, float]]] = []
        #: Cache for placement policies whose processor ranking never changes (by policy name,
        #: and facts about those rankings).
        self.rankings: dict[object, object] = {}
        #: True when speeds never change (no contention model, or no finite bandwidth).
        self._nominal = contention.name == "none" or not any(
            math.isfinite(b) for b in platform.processor_mem_bw_gbps
        )
        self.bounded_memory = any(math.isfinite(m) for m in platform.node_memory_mb)
        #: Core i is processor i and node i (one-core nodes, as ``--homogeneous-procs``): the
        #: counters of a job's cores are updated in C-level passes (:meth:`_account_singletons`).
        self._singletons = (
            len(self.proc_cores) == n_cores == len(self._node_free_cores)
            and max(map(len, self.proc_cores), default=0) == 1
            and all(map(operator.eq, self.core_proc, range(n_cores)))
            and all(map(operator.eq, self.core_node, range(n_cores)))
        )
        #: On more than :data:`MASK_MIN_CORES` one-core nodes: True where a core is free
        #: (placements find free cores in numpy); None otherwise.
        self.free_mask: np.ndarray | None = (
            np.ones(n_cores, dtype=bool) if self._singletons and n_cores > MASK_MIN_CORES else None
        )
        self._runs: dict[int, list[tuple[int, int]]] = {}
        #: One-core nodes at nominal speeds with unbounded memory: the per-core and per-node
        #: counters are made when read (:class:`~hdrm.core.power_states.PowerStates`), so a start
        #: or an end costs its cores in ``core_job`` and the queued changes only.
        self._lazy = self._singletons and self._nominal and not self.bounded_memory
        self._built = dict.fromkeys(("core_state", "proc_free", "proc_running", "proc_demand",
                                     "node_free_cores"), 0)
        if self._lazy:  # made on first read: no memory for counters nobody reads
            for name in self._built:
                setattr(self, "_" + name, [])
                self._built[name] = -1
        self._job_bw: dict[int, float] = {}

    # ------------------------------------------------------------------ queries
    def allocatable(self, mem_mb: float) -> int:
        """How many cores a job needing ``mem_mb`` per core could get right now."""
        if mem_mb <= 0 or not self.bounded_memory:
            return self.free_cores
        total = 0
        free_mem = self.node_free_mem
        for node, free in enumerate(self._node_free_cores):
            if free:
                total += min(free, int(free_mem[node] // mem_mb))
        return total

    def fits(self, job: Job) -> bool:
        """True when ``job`` could start now (enough free cores with enough memory)."""
        if job.res > self.free_cores:
            return False
        return job.mem_mb <= 0 or not self.bounded_memory or self.allocatable(job.mem_mb) >= job.res

    @property
    def busy_cores(self) -> int:
        """Number of cores running a job."""
        return len(self.core_job) - self.free_cores

    # ------------------------------------------------------------------ commands
    def allocate(self, job: Job, cores: Sequence[int], now: float) -> None:
        """Give ``cores`` to ``job``; memory is charged core by core and rolled back on shortage.

        Raises:
            SimulationError: a core is busy, the job already holds cores, or a node runs out of
                memory part way (the partial allocation is rolled back and the shortage recorded).
        """
        if job.idx in self.alloc:
            raise SimulationError(f"job {job.id} already holds cores")
        core_job, core_node, free_mem = self.core_job, self.core_node, self.node_free_mem
        mem = job.mem_mb
        if mem == 0 and len(cores) > WIDE and self._singletons and self._nominal:
            runs = self._take_runs(job.idx, cores)
            if runs is not None:
                cores = CoreRuns(runs)
                self.alloc[job.idx] = cores
                self._runs[job.idx] = runs
                self.free_cores -= len(cores)
                if self._lazy:
                    self._job_bw[job.idx] = job.mem_bw_gbps
                self._account_singletons(runs, job.mem_bw_gbps, +1)
                return
        if mem == 0 and self._lazy and self._take_free(job.idx, cores):
            cores = tuple(cores)
            self.alloc[job.idx] = cores
            self.free_cores -= len(cores)
            self._job_bw[job.idx] = job.mem_bw_gbps
            if self.free_mask is not None:
                self.free_mask[list(cores)] = False
            self._account_nominal(cores, job.mem_bw_gbps, +1)
            return
        charged: list[int] = []
        for c in cores:
            if core_job[c] != FREE:
                owner = core_job[c]  # before the rollback (a core given twice is this job's)
                self._rollback(charged, mem)
                raise SimulationError(f"job {job.id}: core {c} is busy with job {owner}")
            node = core_node[c]
            if mem > 0 and free_mem[node] < mem:
                available = free_mem[node]  # before the rollback gives the partial charge back
                self.records.memory(now, job.id, node, mem, available)
                self._rollback(charged, mem)
                raise SimulationError(
                    f"job {job.id}: node {node} has {available:g} MB free, needs {mem:g} MB per core"
                )
            free_mem[node] -= mem
            core_job[c] = job.idx
            charged.append(c)
        cores = tuple(cores)
        self.alloc[job.idx] = cores
        self.free_cores -= len(cores)
        if self._lazy:
            self._job_bw[job.idx] = job.mem_bw_gbps
        if self.free_mask is not None:
            self.free_mask[list(cores)] = False
        self._account(cores, job.mem_bw_gbps, +1, now)

    def release(self, job: Job, now: float) -> tuple[int, ...]:
        """Free the cores of ``job``; returns them."""
        cores = self.alloc.pop(job.idx, None)
        if cores is None:
            raise SimulationError(f"job {job.id} holds no cores")
        core_job, core_node, free_mem = self.core_job, self.core_node, self.node_free_mem
        mem = job.mem_mb
        if self._lazy:
            del self._job_bw[job.idx]
        runs = self._runs.pop(job.idx, None)
        if runs is not None:  # one-core nodes, no memory, nominal speeds
            for lo, hi in runs:
                core_job[lo:hi] = [FREE] * (hi - lo)
            self.free_cores += len(cores)
            self._account_singletons(runs, job.mem_bw_gbps, -1)
            return cores
        if mem == 0 and self._lazy:  # unbounded memory, none charged
            for c in cores:
                core_job[c] = FREE
        else:
            for c in cores:
                core_job[c] = FREE
                free_mem[core_node[c]] += mem
        self.free_cores += len(cores)
        if self.free_mask is not None:
            self.free_mask[list(cores)] = True
        self._account(cores, job.mem_bw_gbps, -1, now)
        return cores

    def take_pending(self) -> dict[int, tuple[int, float]]:
        """Pending power-state changes as ``{core: (state, speed_factor)}``; clears them."""
        self._spill()
        pending = self._pending
        self._pending = {}
        return pending

    def take_pending_runs(self) -> list[tuple[int, int, tuple[int, float]]] | None:
        """Pending power-state changes as disjoint runs ``(first, last + 1, (state,
        speed_factor))`` and clears them, when they are all runs (wide jobs on one-core nodes);
        else None, and :meth:`take_pending` gives them core by core."""
        runs = self._pending_runs
        if self._pending or not runs:
            return None
        ordered = sorted(runs)
        if any(a[1] > b[0] for a, b in zip(ordered, ordered[1:])):
            return None  # a core changed twice: the mapping keeps its last change
        self._pending_runs = []
        return runs

    def take_changes(self) -> list[tuple[int, float, list[int]]]:
        """Pending power-state changes as ``(state, speed_factor, cores)`` groups; clears them."""
        self._spill()
        if not self._pending:
            return []
        groups: dict[tuple[int, float], list[int]] = {}
        for core, key in self._pending.items():
            group = groups.get(key)
            if group is None:
                groups[key] = [core]
            else:
                group.append(core)
        self._pending.clear()
        return [(state, factor, cores) for (state, factor), cores in groups.items()]

    def close(self, now: float) -> None:
        """End of simulation: close open bandwidth-oversubscription spans."""
        for p, fraction in enumerate(self.proc_fraction):
            if fraction < 1.0:
                self.records.bandwidth_end(p, now)

    # ------------------------------------------------------------------ internals
    def _take_runs(self, key: int, cores: Sequence[int]) -> list[tuple[int, int]] | None:
        """Give ``cores`` to job ``key`` run by run when all are free and distinct; returns
        the runs, or None (nothing changed) for the core-by-core path to report the conflict."""
        core_job, mask = self.core_job, self.free_mask
        runs = core_runs(cores)
        n = len(core_job)
        for lo, hi in runs:
            if lo < 0 or hi > n:
                return None
            if mask is not None:  # the same facts, read from one byte a core
                if not mask[lo:hi].all():
                    return None
            elif core_job[lo:hi].count(FREE) != hi - lo:
                return None
        if len(runs) > 1:
            ordered = sorted(runs)
            if any(a[1] > b[0] for a, b in zip(ordered, ordered[1:])):
                return None  # a core given twice
        for lo, hi in runs:
            core_job[lo:hi] = [key] * (hi - lo)
        return runs

    def _take_free(self, key: int, cores: Sequence[int]) -> bool:
        """Give ``cores`` to job ``key`` (which holds none) when all are free and distinct, with
        no memory to charge; else change nothing and return False (the core-by-core path then
        names the conflict)."""
        core_job = self.core_job
        for c in cores:
            if core_job[c] != FREE:  # busy, or given twice
                for d in cores:
                    if core_job[d] == key:
                        core_job[d] = FREE
                return False
            core_job[c] = key
        return True

    def _rollback(self, charged: list[int], mem: float) -> None:
        for c in charged:
            self.core_job[c] = FREE
            self.node_free_mem[self.core_node[c]] += mem
