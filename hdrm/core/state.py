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

from hdrm.core.contention import ContentionModel
from hdrm.core.intervals import IntervalSet, as_disjoint_runs
from hdrm.core.proc_runs import ProcRuns, layout
from hdrm.core.records import OverutilizationRecorder
from hdrm.core.runs import WIDE, CoreRuns, OneEach, Repeated, core_runs
from hdrm.core.lazy_jobs import LAZY_MIXED, LazyJobs
from hdrm.core.single_core import SingleCoreJobs
from hdrm.errors import SimulationError
from hdrm.platform.model import Platform
from hdrm.platform.one_core import OneCoreProcessors, Same
from hdrm.platform.run_table import RunTable
from hdrm.core.power_states import FREE
from hdrm.platform.power import SLEEPING
from hdrm.workload.job import Job

__all__ = ["FREE", "RUNS_ALWAYS_CORES", "ClusterState"]

#: From this many cores on, jobs of any width on processors of several cores are taken run by
#: run (the core-by-core rules would build per-core tables of the whole platform); below it,
#: only jobs of more than :data:`~hdrm.core.runs.WIDE` cores are (on hdrm's heterogeneous
#: example platform a narrow job costs ~10 % more steps run by run: the environments' case).
RUNS_ALWAYS_CORES = 1 << 16


def _any_finite(values: Sequence[float]) -> bool:
    """True when some value is finite (one look for a table of one repeated value)."""
    if isinstance(values, Same):
        return len(values) > 0 and math.isfinite(values.value)
    return any(map(math.isfinite, values))


class ClusterState(SingleCoreJobs, LazyJobs, ProcRuns):
    """Mutable state of the platform's cores, processors and nodes.

    On one-core nodes (core ``i`` is processor ``i`` and node ``i``) the free cores are also kept
    as an :class:`~hdrm.core.intervals.IntervalSet` (:attr:`free_set`), so placements find the
    lowest free cores in the runs they touch; with nominal speeds and unbounded memory as well,
    ``core_job`` and the counters are made when read (see :attr:`_lazy`) and a start or an end
    costs the runs of its cores. On processors of several cores numbered in order (platform
    files), a job that charges no memory and demands no bandwidth while no core is slowed is
    taken and freed run by run, processor by processor (:class:`~hdrm.core.proc_runs.ProcRuns`).

    Args:
        platform: the platform.
        contention: the memory-bandwidth contention model.
    """

    #: Use the run-by-run and made-on-read paths of one-core nodes and the one-step path of
    #: one-core jobs (False: the core-by-core reference, which tests compare them with).
    fast_paths: bool = True

    def __init__(self, platform: Platform, contention: ContentionModel) -> None:
        self.platform = platform
        self.contention = contention
        n_cores = self.nb_cores = platform.nb_cores
        one_core = isinstance(platform.processors, OneCoreProcessors)
        if one_core:  # made on demand: not walked
            self.proc_cores: Sequence[Sequence[int]] = OneEach(n_cores)
            self.proc_node: Sequence[int] = range(n_cores)
            node_cores: list[int] | None = None  # [1] * n_cores, made if kept
        else:
            self.proc_cores = [p.core_ids for p in platform.processors]
            self.proc_node = [p.node_id for p in platform.processors]
            node_cores = [len(n.core_ids) for n in platform.nodes]
        n_procs = len(self.proc_cores)
        self.proc_capacity: Sequence[float] = platform.processor_mem_bw_gbps  # read only
        #: the platform's per-core tables as read here (see :attr:`core_proc`), made on first use
        self._core_tables: dict[str, Sequence[int]] = {}
        #: True when speeds never change (no contention model, or no finite bandwidth).
        self._nominal = contention.name == "none" or not _any_finite(
            platform.processor_mem_bw_gbps)
        self.bounded_memory = _any_finite(platform.node_memory_mb)
        #: Core i is processor i and node i (one-core nodes, as ``--homogeneous-procs``): the
        #: counters of a job's cores are updated in C-level passes (:meth:`_account_singletons`).
        self._singletons = self.fast_paths and (one_core or (
            node_cores is not None and n_procs == n_cores == len(node_cores)
            and max(map(len, self.proc_cores), default=0) == 1
            and all(map(operator.eq, platform.core_processor, range(n_cores)))
            and all(map(operator.eq, platform.core_node, range(n_cores)))
        ))
        #: One-core nodes at nominal speeds with unbounded memory: ``core_job``, the per-core and
        #: per-node counters are made when read (:class:`~hdrm.core.power_states.PowerStates`),
        #: so a start or an end costs its runs of cores in :attr:`free_set` and the queued
        #: changes only; node memory is the platform's (unbounded: never charged).
        self._lazy = self._singletons and self._nominal and not self.bounded_memory
        #: On one-core nodes: the free cores as runs (placements find free cores there); None
        #: otherwise.
        self.free_set: IntervalSet | None = IntervalSet(0, n_cores) if self._singletons else None
        self._core_job: list[int] = [] if self._lazy else [FREE] * n_cores
        self._core_state: list[int] = [] if self._lazy else [SLEEPING] * n_cores
        if self._nominal:  # never changed: no memory per core
            self.core_factor: Sequence[float] = Repeated(1.0, n_cores)
            self.proc_fraction: Sequence[float] = Repeated(1.0, n_procs)
        else:
            self.core_factor = [1.0] * n_cores
            self.proc_fraction = [1.0] * n_procs
        if self._lazy:
            self.node_free_mem: Sequence[float] = platform.node_memory_mb
            self._proc_free: list[int] = []
            self._proc_running: list[int] = []
            self._proc_demand: list[float] = []
            self._node_free_cores: list[int] = []
        else:
            self.node_free_mem = list(platform.node_memory_mb)
            self._proc_free = [len(c) for c in self.proc_cores]
            self._proc_running = [0] * n_procs
            self._proc_demand = [0.0] * n_procs
            self._node_free_cores = [1] * n_cores if node_cores is None else node_cores
        self._built = dict.fromkeys(("core_job", "core_state", "proc_free", "proc_running",
                                     "proc_demand", "node_free_cores"), -1 if self._lazy else 0)
        self.free_cores = n_cores
        #: Running cores slowed by contention, kept up to date incrementally.
        self.contended = 0
        self.alloc: dict[int, Sequence[int]] = {}
        self.records = OverutilizationRecorder()
        self._pending: dict[int, tuple[int, float]] = {}
        #: Changes of whole runs of cores ``(first, last + 1, (state, speed_factor))``, queued
        #: after those of ``_pending`` (one-core nodes; see :meth:`take_pending_runs`).
        self._pending_runs: list[tuple[int, int, tuple[int, float]]] = []
        #: Cache for placement policies whose processor ranking never changes (by policy name,
        #: and facts about those rankings).
        self.rankings: dict[object, object] = {}
        self._runs: dict[int, list[tuple[int, int]]] = {}
        #: Runs of the cores of each narrow job of a lazy state (given back at its end).
        self._held: dict[int, list[tuple[int, int]]] = {}
        self._proc_held: dict[int, list[tuple[int, int]]] = {}
        #: Narrow jobs too take the run-by-run path (:data:`RUNS_ALWAYS_CORES`).
        self._runs_always = n_cores >= RUNS_ALWAYS_CORES
        if self.fast_paths and not self._singletons:
            self._layout = layout(self.proc_cores, self.proc_node,
                                  [n.core_ids for n in platform.nodes], n_cores, contention,
                                  self.proc_capacity)
        self._job_bw: dict[int, float] = {}
        #: The last placement read off :attr:`free_set`, ``(cores, their runs)``: allocating
        #: that very list takes the runs (:mod:`hdrm.core.lazy_jobs`); None: none yet.
        self.last_runs: tuple[Sequence[int], list[tuple[int, int]]] | None = None

    # ------------------------------------------------------------------ queries
    @property
    def core_proc(self) -> Sequence[int]:
        """The processor of each core: the platform's table, as a tuple when it is kept as
        runs (:class:`~hdrm.platform.run_table.RunTable`, which platform files have), made at the
        first read: the run-by-run path never reads it, so a platform file keeps no per-core
        entry until a job needs the core-by-core rules."""
        return self._core_table("core_processor")

    @property
    def core_node(self) -> Sequence[int]:
        """The node of each core (as :attr:`core_proc`)."""
        return self._core_table("core_node")

    def _core_table(self, name: str) -> Sequence[int]:
        table = self._core_tables.get(name)
        if table is None:
            table = getattr(self.platform, name)
            if isinstance(table, RunTable):  # indexed core by core from here: a tuple
                table = tuple(table)
            self._core_tables[name] = table
        return table

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
        return self.nb_cores - self.free_cores

    # ------------------------------------------------------------------ commands
    def allocate(self, job: Job, cores: Sequence[int], now: float) -> None:
        """Give ``cores`` to ``job``; memory is charged core by core and rolled back on shortage.

        Raises:
            SimulationError: a core is busy or unknown, the job already holds cores, or a node
                runs out of memory part way (the partial allocation is rolled back and the
                shortage recorded).
        """
        if job.idx in self.alloc:
            raise SimulationError(f"job {job.id} already holds cores")
        if self._lazy:
            self._allocate_lazy(job, cores)
            return
        if job.mem_mb == 0 and len(cores) > WIDE and self._singletons and self._nominal:
            runs = core_runs(cores)  # a wide job on one-core nodes: kept as runs
            if self._take_set(runs):
                self._allocated(job, cores, runs)
                return
        if len(cores) == 1 and self.fast_paths:  # one-core jobs (inference): the rules, one step
            self._allocate_one(job, cores[0], now)
            return
        # Run by run pays off for wide jobs, and on large platforms, where the core-by-core
        # rules would make the per-core tables; a narrow job on a small platform (the
        # environments' case) costs fewer steps core by core.
        if ((len(cores) > WIDE or (self._runs_always and len(cores) > 1))
                and self._runs_allocate(job.idx, cores, job.mem_mb, job.mem_bw_gbps, now)):
            return
        self._spill()  # runs queued before come first
        self._charge(job, cores, now)
        cores = tuple(cores)
        self.alloc[job.idx] = cores
        self.free_cores -= len(cores)
        if self.free_set is not None:
            for lo, hi in core_runs(cores):
                self.free_set.remove(lo, hi)
        self._account(cores, job.mem_bw_gbps, +1, now)

    def release(self, job: Job, now: float) -> Sequence[int]:
        """Free the cores of ``job``; returns them."""
        if self._lazy:
            return self._release_lazy(job)
        if self._proc_held:
            held = self._runs_release(job.idx, job.mem_bw_gbps, now)
            if held is not None:
                return held
        cores = self.alloc.pop(job.idx, None)
        if cores is None:
            raise SimulationError(f"job {job.id} holds no cores")
        if len(cores) == 1 and self.fast_paths:  # never kept as runs
            self._release_one(job, cores[0], now)
            return cores
        self.free_cores += len(cores)
        runs = self._runs.pop(job.idx, None)
        if runs is not None:  # one-core nodes, no memory, nominal speeds: kept as runs
            self._give_set(runs)
            core_job = self._core_job
            for lo, hi in runs:
                core_job[lo:hi] = [FREE] * (hi - lo)
            self._account_singletons(runs, job.mem_bw_gbps, -1)
            return cores
        self._spill()  # runs queued before come first
        core_job, core_node, free_mem = self._core_job, self.core_node, self.node_free_mem
        mem = job.mem_mb
        for c in cores:
            core_job[c] = FREE
            free_mem[core_node[c]] += mem
        if self.free_set is not None:
            self._give_set(core_runs(cores))
        self._account(cores, job.mem_bw_gbps, -1, now)
        return cores

    def take_pending(self) -> dict[int, tuple[int, float]]:
        """Pending power-state changes as ``{core: (state, speed_factor)}``; clears them."""
        if self._pending_runs:
            self._spill()
        pending = self._pending
        self._pending = {}
        return pending

    def take_pending_runs(self) -> list[tuple[int, int, tuple[int, float]]] | None:
        """Pending power-state changes as disjoint runs ``(first, last + 1, (state,
        speed_factor))`` and clears them, when they are all runs (wide jobs on one-core nodes,
        any job of a lazy state, jobs taken run by run on processors of several cores); else
        None, and :meth:`take_pending` gives them core by core. Runs are those of the mapping
        :meth:`take_pending` would give: a core changed twice keeps its first place and its
        last change (:func:`~hdrm.core.intervals.as_disjoint_runs`)."""
        runs = self._pending_runs
        if self._pending or not runs:
            return None
        self._pending_runs = []
        kinds, self._lazy_kinds = self._lazy_kinds, 0
        if len(runs) == 1 or (self._lazy and kinds != LAZY_MIXED):
            return runs  # one run, or only starts or only ends: nothing overlaps
        return as_disjoint_runs(runs)

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
        if self._nominal:  # speeds never changed: no span was opened
            return
        for p, fraction in enumerate(self.proc_fraction):
            if fraction < 1.0:
                self.records.bandwidth_end(p, now)

    # ------------------------------------------------------------------ internals
    def _allocated(self, job: Job, cores: Sequence[int], runs: list[tuple[int, int]]) -> None:
        """Book the cores of a wide job (taken out of :attr:`free_set` as ``runs``) on one-core
        nodes of a state that is not lazy: kept as runs, queued as run changes."""
        key = job.idx
        self.free_cores -= len(cores)
        self.alloc[key] = CoreRuns(runs)
        self._runs[key] = runs
        core_job = self._core_job
        for lo, hi in runs:
            core_job[lo:hi] = [key] * (hi - lo)
        self._account_singletons(runs, job.mem_bw_gbps, +1)

    def _take_set(self, runs: list[tuple[int, int]]) -> bool:
        """Take ``runs`` out of :attr:`free_set` when all their cores are free and distinct;
        else change nothing and return False."""
        free_set = self.free_set
        assert free_set is not None
        for k, (lo, hi) in enumerate(runs):
            if not free_set.remove(lo, hi):
                for done in runs[:k]:
                    free_set.add(*done)
                return False
        return True

    def _give_set(self, runs: list[tuple[int, int]]) -> None:
        """Put ``runs`` (held by a job) back in :attr:`free_set`."""
        free_set = self.free_set
        assert free_set is not None
        for lo, hi in runs:
            if not free_set.add(lo, hi):
                raise SimulationError(f"cores {lo}..{hi - 1} freed twice")

    def _conflict(self, job: Job, cores: Sequence[int]) -> SimulationError:
        """The error of an allocation of ``cores`` that :attr:`free_set` refused: the first
        core (in the given order) that is unknown, busy or given twice."""
        seen: set[int] = set()
        for c in cores:
            if not 0 <= c < self.nb_cores:
                return SimulationError(f"job {job.id}: unknown core {c} (0..{self.nb_cores - 1})")
            owner = job.idx if c in seen else next(
                (key for key, held in self.alloc.items() if c in held), None)
            if owner is not None:
                return SimulationError(f"job {job.id}: core {c} is busy with job {owner}")
            seen.add(c)
        return SimulationError(f"job {job.id}: cores {list(cores)} cannot be given")

    def _charge(self, job: Job, cores: Sequence[int], now: float) -> None:
        """Mark ``cores`` as ``job``'s in ``core_job`` and charge their nodes' memory, core by
        core; on a busy core or a memory shortage roll back and raise."""
        core_job, core_node, free_mem = self._core_job, self.core_node, self.node_free_mem
        mem = job.mem_mb
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

    def _rollback(self, charged: list[int], mem: float) -> None:
        for c in charged:
            self._core_job[c] = FREE
            self.node_free_mem[self.core_node[c]] += mem
