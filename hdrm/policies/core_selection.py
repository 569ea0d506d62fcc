"""Core selection policies: which free cores a job gets.

Processors are ranked by the policy's key (ties by processor id) and their free cores taken in
order, core ids ascending, until the job has its cores. Node memory is charged as cores are taken;
a node that cannot hold another core's memory is skipped. If the job cannot get all its cores, no
core is taken (the selection returns None).

``random``: uniformly random free cores; ``high_gflops``: fastest cores first; ``high_cores``:
processors with the most free cores first; ``high_mem``: nodes with the most free memory first;
``high_mem_bw``: processors with the most free memory bandwidth first; ``low_power``: cores with the
lowest power first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from hdrm.lazy import numpy as np

from hdrm.core.runs import WIDE, CoreRuns
from hdrm.core.state import FREE, ClusterState
from hdrm.platform.one_core import Ids
from hdrm.registry import Registry
from hdrm.results.core_sets import consecutive_runs
from hdrm.workload.job import Job

ProcKey = Callable[[ClusterState, int], float]


@dataclass(frozen=True)
class CorePolicy:
    """A placement rule.

    Attributes:
        name: registered name.
        key: processor rank key (smallest first), or None for random.
        static: the key never changes during a run (its ranking is computed once).
        doc: definition.
        by_type: the key depends on the processor's type only (on a platform of one
            processor type every processor ties, and the ranking is the ids in order).
    """

    name: str
    key: ProcKey | None
    static: bool
    doc: str
    by_type: bool = False

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickle a registered policy by its name, so that the copy is the registered object
        (and a key defined as a lambda pickles too); any other policy field by field."""
        if self.name in CORE_POLICIES and CORE_POLICIES.get(self.name) is self:
            return (_registered, (self.name,))
        return super().__reduce_ex__(protocol)

    def select(self, state: ClusterState, job: Job, rng: np.random.Generator
               ) -> list[int] | CoreRuns | None:
        """Choose ``job.res`` free cores for ``job``, or None when they cannot be found (wide
        jobs on one-core nodes in id order get a :class:`~hdrm.core.runs.CoreRuns`)."""
        if job.res > state.free_cores:
            return None
        if self.key is None:
            return _take_random(state, job, rng)
        plan = state.rankings.get(id(self))
        if plan is None or plan[0] is not self:  # made once per state (static rankings)
            plan = self._plan(state)
        _, ranking, ids, per_core = plan
        if job.mem_mb <= 0:
            if ids is not None:  # one-core nodes ranked by id: read off the free runs
                return _lowest_free(state, job.res, ids)
            if per_core:
                return _first_free(state, job.res)
            if state.free_set is None:
                return _take_cores(state.proc_free, state.proc_cores, state, job.res, ranking)
        if state.free_set is not None:
            return _take_one_core(state, job, ranking)
        return _take(state, job, ranking)

    def _plan(self, state: ClusterState) -> tuple:
        """``(self, ranking, ids, per core)`` on ``state``, kept there for a static policy:
        ``ids`` is the platform's table of core ids (outcomes keep these objects) when free
        cores are read off the free runs (one-core nodes ranked by id), else None; ``per core``
        is True when, without free runs, every processor has one core, ``p``, and the ranking
        is by id (the lowest free core ids are the cores to take)."""
        ranking = self._ranking(state)
        in_id_order = self._in_id_order(state, ranking)
        ids = state.core_proc if in_id_order and state.free_set is not None else None
        per_core = in_id_order and state.free_set is None and _core_per_processor(state)
        plan = (self, ranking, ids, per_core)
        if self.static:
            state.rankings[id(self)] = plan
        return plan

    def _in_id_order(self, state: ClusterState, ranking: list[int]) -> bool:
        """True when a static ``ranking`` is processor ids in increasing order (cached)."""
        if not self.static:
            return False
        key = ("in_id_order", self.name)
        known = state.rankings.get(key)
        if known is None:
            in_order = range(len(ranking))
            known = state.rankings[key] = (
                ranking == in_order if isinstance(ranking, range) else ranking == list(in_order))
        return known

    def _ranking(self, state: ClusterState) -> Sequence[int]:
        key = self.key
        if self.static:
            cache = state.rankings
            ranking = cache.get(self.name)
            if ranking is None:
                n = len(state.proc_cores)
                if self.by_type and getattr(state.platform.processors, "one_core_type", None):
                    ranking = range(n)  # one processor type: every key ties, ids decide
                else:
                    ranking = sorted(range(n), key=lambda p: (key(state, p), p))
                cache[self.name] = ranking
            return ranking
        free = state.proc_free
        return sorted((p for p in range(len(free)) if free[p]), key=lambda p: (key(state, p), p))


def _lowest_free(state: ClusterState, need: int, ids: Sequence[int]) -> list[int] | CoreRuns | None:
    """The ``need`` lowest free cores of one-core nodes ranked by id, read off the free runs
    (the platform's id objects; runs of ids for a wide job), left with its runs in
    :attr:`~hdrm.core.state.ClusterState.last_runs`."""
    runs = state.free_set.lowest(need)
    if runs is None:
        return None
    if need > WIDE:  # runs of ids, never one int per core
        chosen = CoreRuns(runs)  # the same runs: disjoint, apart and ascending
        state.last_runs = (chosen, runs)
        return chosen
    if type(ids) is Ids:  # its pool, sliced as a list (runs ascend: the last ends last)
        ids = ids.upto(runs[-1][1])
    if len(runs) == 1 and type(ids) is list:  # one slice: a new list already
        lo, hi = runs[0]
        chosen = ids[lo:hi]
    else:
        chosen = []
        for lo, hi in runs:
            chosen += ids[lo:hi]
    state.last_runs = (chosen, runs)  # allocating this list takes these runs
    return chosen


def _core_per_processor(state: ClusterState) -> bool:
    """True when processor ``p`` has one core, core ``p`` (cached): ranked by id, taking free
    cores processor by processor is taking the lowest free core ids."""
    known = state.rankings.get("core_per_processor")
    if known is None:
        known = state.rankings["core_per_processor"] = all(
            cores == (p,) for p, cores in enumerate(state.proc_cores))
    return known


def _first_free(state: ClusterState, need: int) -> list[int] | None:
    """The ``need`` lowest free core ids (the platform's id objects), found by C-level scans."""
    core_job, cores_of = state.core_job, state.proc_cores
    chosen: list[int] = []
    c = -1
    for _ in range(need):
        try:
            c = core_job.index(FREE, c + 1)
        except ValueError:
            return None
        chosen.append(cores_of[c][0])
    return chosen


def _take_one_core(state: ClusterState, job: Job, ranking: Sequence[int]) -> list[int] | None:
    """:func:`_take` on one-core nodes (processor ``p`` is core ``p`` and node ``p``): whether
    a core is free is read off :attr:`~hdrm.core.state.ClusterState.free_set`."""
    need, mem = job.res, job.mem_mb
    free_set, free_mem, ids = state.free_set, state.node_free_mem, state.core_proc
    assert free_set is not None
    chosen: list[int] = []
    for p in ranking:
        if p not in free_set or (mem > 0 and free_mem[p] < mem):
            continue
        chosen.append(ids[p])
        if len(chosen) == need:
            return chosen
    return None


def _take(state: ClusterState, job: Job, ranking: Sequence[int]) -> list[int] | None:
    """The first free cores of the processors in ``ranking`` order, core ids ascending within a
    processor, node memory charged core by core; None when ``job`` cannot get all its cores."""
    need, mem = job.res, job.mem_mb
    free, cores_of, node_of = state.proc_free, state.proc_cores, state.proc_node
    core_job, free_mem = state.core_job, state.node_free_mem
    if mem <= 0:
        return _take_cores(free, cores_of, state, need, ranking)
    charged: dict[int, float] = {}
    chosen: list[int] = []
    for p in ranking:
        if not free[p]:
            continue
        node = node_of[p]
        for c in cores_of[p]:
            if core_job[c] != FREE:
                continue
            if mem > 0:
                used = charged.get(node, 0.0)
                if free_mem[node] - used < mem:
                    break
                charged[node] = used + mem
            chosen.append(c)
            if len(chosen) == need:
                return chosen
    return None


def _take_cores(free: Sequence[int], cores_of: Sequence[Sequence[int]], state: ClusterState,
                need: int, ranking: Sequence[int]) -> list[int] | None:
    """:func:`_take` without memory: a processor whose cores are all free gives a slice of them,
    another the free ones of a C-level scan (the same cores in the same order, not one Python
    step per core); one core is the first free core of the first processor with one. A job of
    more than :data:`~hdrm.core.runs.WIDE` cores gets a :class:`~hdrm.core.runs.CoreRuns` made
    of the processors' runs (its callers then split no list into runs)."""
    if need == 1:
        for p in ranking:
            k = free[p]
            if k:
                cores = cores_of[p]
                if k == len(cores):
                    return [cores[0]]
                core_job = state.core_job
                for c in cores:
                    if core_job[c] == FREE:
                        return [c]
        return None
    core_job = state.core_job
    wide = need > WIDE  # a CoreRuns of the processors' runs: no id per core
    chosen: list[int] = []
    runs: list[tuple[int, int]] = []
    got = 0
    for p in ranking:
        k = free[p]
        if not k:
            continue
        cores = cores_of[p]
        if k != len(cores):
            cores = [c for c in cores if core_job[c] == FREE]
        left = need - got
        if left < len(cores):
            cores = cores[:left]
        got += len(cores)
        if not wide:
            chosen += cores
        elif type(cores) is range and cores.step == 1:
            runs.append((cores.start, cores.stop))
        else:
            runs += consecutive_runs(cores)
        if got == need:
            return CoreRuns(runs) if wide else chosen
    return None


def _take_random(state: ClusterState, job: Job, rng: np.random.Generator) -> list[int] | None:
    if state.free_set is not None:
        candidates = list(state.free_set)
    else:
        candidates = [c for c, j in enumerate(state.core_job) if j == FREE]
    order = rng.permutation(len(candidates))
    need, mem = job.res, job.mem_mb
    node_of, free_mem = state.core_node, state.node_free_mem
    charged: dict[int, float] = {}
    chosen: list[int] = []
    for i in order:
        c = candidates[i]
        if mem > 0:
            node = node_of[c]
            used = charged.get(node, 0.0)
            if free_mem[node] - used < mem:
                continue
            charged[node] = used + mem
        chosen.append(c)
        if len(chosen) == need:
            return sorted(chosen)
    return None


def _registered(name: str) -> Any:
    """The policy registered as ``name`` (how pickled policies come back)."""
    return CORE_POLICIES.get(name)


CORE_POLICIES: Registry[CorePolicy] = Registry("core selection policy")


def _add(name: str, key: ProcKey | None, static: bool, doc: str, by_type: bool = False) -> None:
    CORE_POLICIES.add(name, CorePolicy(name, key, static, doc, by_type))


def _gflops(state: ClusterState, p: int) -> float:
    return -state.platform.processors[p].type.core_gflops


def _power(state: ClusterState, p: int) -> float:
    return state.platform.processors[p].type.core_power_w


def _free_cores(state: ClusterState, p: int) -> float:
    return -state.proc_free[p]


def _free_mem(state: ClusterState, p: int) -> float:
    return -state.node_free_mem[state.proc_node[p]]


def _free_bw(state: ClusterState, p: int) -> float:
    capacity = state.proc_capacity[p]
    return -(capacity - state.proc_demand[p]) if math.isfinite(capacity) else -math.inf


_add("random", None, False, "Uniformly random free cores (seeded).")
_add("high_gflops", _gflops, True, "Fastest cores (GFLOP/s) first.", by_type=True)
_add("high_cores", _free_cores, False, "Processors with the most free cores first.")
_add("high_mem", _free_mem, False, "Cores of the nodes with the most free memory first.")
_add("high_mem_bw", _free_bw, False, "Processors with the most free memory bandwidth first.")
_add("low_power", _power, True, "Cores with the lowest power (W) first.", by_type=True)
