"""Jobs of a lazy cluster mirror, taken and freed as runs of cores.

On one-core nodes at nominal speeds with unbounded memory (a homogeneous platform, as the
scheduling literature and RLScheduler's protocol use; :attr:`~hdrm.core.state.ClusterState._lazy`)
nothing is charged and no speed changes: a start takes its runs of cores out of the free runs and
queues one change per run (running), an end puts them back and queues one change per run
(asleep); the per-core counters are made when read. The methods here, mixed into
:class:`~hdrm.core.state.ClusterState`, do this in one step each.

A placement read off the free runs leaves ``(cores, runs)`` in
:attr:`~hdrm.core.state.ClusterState.last_runs`; allocating that very list (unchanged, as the
scheduler hands it on) takes those runs, once, instead of splitting the list into runs again.

An engine whose machine switches a job's hosts itself as it starts and ends calls
:meth:`LazyJobs.follow_occupancy` once, before any job: nothing is queued from then on.
"""

from __future__ import annotations

from typing import Callable, Sequence

from hdrm.core.intervals import IntervalSet
from hdrm.core.power_states import PowerStates
from hdrm.core.runs import WIDE, CoreRuns, core_runs
from hdrm.errors import SimulationError
from hdrm.platform.power import RUNNING, SLEEPING
from hdrm.workload.job import Job

#: The change queued for the runs of a start and of an end.
_TAKEN = (RUNNING, 1.0)
_FREED = (SLEEPING, 1.0)
#: :attr:`LazyJobs._lazy_kinds` when both starts (bit 1) and ends (bit 2) are queued: only then
#: can queued runs overlap (a core is taken twice only if freed in between, and freed twice
#: only if taken in between).
LAZY_MIXED = 3


class LazyJobs(PowerStates):
    """Starts and ends of a lazy :class:`~hdrm.core.state.ClusterState` (its attributes)."""

    free_set: IntervalSet
    free_cores: int
    last_runs: tuple[Sequence[int], list[tuple[int, int]]] | None
    _runs: dict[int, list[tuple[int, int]]]
    _held: dict[int, list[tuple[int, int]]]
    #: Bits of the kinds of runs queued since the engine last took them (1: starts, 2: ends).
    _lazy_kinds: int = 0
    _take_set: Callable[[list[tuple[int, int]]], bool]
    _conflict: Callable[[Job, Sequence[int]], SimulationError]

    def follow_occupancy(self) -> bool:
        """Stop queuing power-state changes, where every change this mirror would queue is its
        taken cores going to running (factor 1) and its freed cores to sleep (factor 1): a lazy
        mirror (one-core nodes at nominal speeds, unbounded memory) that holds no job and has
        nothing queued. Returns True when it stopped (the engine's machine then makes those
        changes itself as jobs start and end), False otherwise, with nothing changed."""
        if not self._lazy or self.alloc or self._pending or self._pending_runs:
            return False
        self._queue_lazy = False
        return True

    @property
    def held_runs(self) -> dict[int, list[tuple[int, int]]]:
        """Read-only use: job key -> the runs of consecutive core ids of a narrow job's cores,
        in their order (:func:`~hdrm.core.runs.core_runs`), for the jobs allocated lazily."""
        return self._held

    def _allocate_lazy(self, job: Job, cores: Sequence[int]) -> None:
        """Give ``cores`` to ``job`` (which holds none): a wide job without memory keeps them as
        runs (:class:`~hdrm.core.runs.CoreRuns`), any other a tuple.

        Raises:
            SimulationError: a core is busy, unknown or given twice (nothing changed).
        """
        picked = self.last_runs
        given = type(cores) is CoreRuns  # (immutable: kept as it is, its runs made once)
        if picked is not None and picked[0] is cores:
            runs = picked[1]
            self.last_runs = None  # used once: a list changed later is split anew
        elif given:
            runs = cores.runs
        else:
            runs = core_runs(cores)
        if len(runs) == 1:
            lo, hi = runs[0]
            if not self.free_set.remove(lo, hi):
                raise self._conflict(job, cores)
        elif not self._take_set(runs):
            raise self._conflict(job, cores)
        key = job.idx
        self.free_cores -= len(cores)
        self._job_bw[key] = job.mem_bw_gbps
        if job.mem_mb == 0 and len(cores) > WIDE:
            self.alloc[key] = cores if given else CoreRuns(runs)
            self._runs[key] = runs
        else:
            self.alloc[key] = tuple(cores)
            self._held[key] = runs
        self._version += 1  # the counters are made on read
        if self._queue_lazy:
            self._lazy_kinds |= 1
            queue = self._pending_runs
            for lo, hi in runs:
                queue.append((lo, hi, _TAKEN))

    def _release_lazy(self, job: Job) -> Sequence[int]:
        """Free the cores of ``job``; returns them (as :meth:`_allocate_lazy` kept them)."""
        key = job.idx
        cores = self.alloc.pop(key, None)
        if cores is None:
            raise SimulationError(f"job {job.id} holds no cores")
        self.free_cores += len(cores)
        del self._job_bw[key]
        runs = self._runs.pop(key, None)
        if runs is None:
            runs = self._held.pop(key)
        free_set = self.free_set
        for lo, hi in runs:
            if not free_set.add(lo, hi):
                raise SimulationError(f"cores {lo}..{hi - 1} freed twice")
        self._version += 1
        if self._queue_lazy:
            self._lazy_kinds |= 2
            queue = self._pending_runs
            for lo, hi in runs:
                queue.append((lo, hi, _FREED))
        return cores
