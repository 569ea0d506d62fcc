"""Power states and contention of the cluster mirror's cores, as cores are taken and freed.

Rules (mixed into :class:`~hdrm.core.state.ClusterState`):

* the first running core wakes its processor (idle siblings go 3 -> 2); the last one to finish puts
  it back to sleep (all cores -> 3);
* the running cores of a processor demand ``job.mem_bw_gbps`` each; the contention model maps
  demand and capacity to the speed of every running core of that processor (state 0 at full speed,
  state 1 when slowed), and spans of oversubscription are recorded;
* changes are queued per core (``_pending``), or per run of cores (``_pending_runs``) for wide
  jobs on one-core nodes and for every job of a lazy state, for the engine to take.
"""

from __future__ import annotations

import itertools
from typing import Sequence

from hdrm.core.contention import ContentionModel
from hdrm.core.intervals import IntervalSet
from hdrm.core.records import OverutilizationRecorder
from hdrm.platform.power import CONTENDED, CONTENDED_SPEED_FRACTION, IDLE, RUNNING, SLEEPING

FREE = -1

#: Value of a free and of a held core in each counter made on read (None: the job's demand;
#: ``core_job``: the job's key).
_IDLE_BUSY: dict[str, tuple[object, object]] = {
    "core_job": (FREE, FREE), "core_state": (SLEEPING, RUNNING), "proc_free": (1, 0),
    "node_free_cores": (1, 0),
    "proc_running": (0, 1), "proc_demand": (0.0, None),
}


def _derived(name: str, doc: str) -> property:
    """A read-only counter list kept as ``_name``, made anew when read after lazy changes."""
    store = "_" + name

    def get(self: "PowerStates") -> list:
        if self._lazy and self._built[name] != self._version:
            self._derive(name)
        return getattr(self, store)

    return property(get, doc=doc)


class PowerStates:
    """Counter and power-state updates of :class:`~hdrm.core.state.ClusterState` (its
    attributes, set there)."""

    contention: ContentionModel
    records: OverutilizationRecorder
    nb_cores: int
    core_factor: Sequence[float]
    core_proc: Sequence[int]
    proc_cores: list[Sequence[int]]
    proc_node: Sequence[int]
    proc_capacity: Sequence[float]
    proc_fraction: Sequence[float]
    contended: int
    free_set: IntervalSet | None
    alloc: dict[int, Sequence[int]]
    _core_job: list[int]
    _core_state: list[int]
    _proc_free: list[int]
    _proc_running: list[int]
    _proc_demand: list[float]
    _node_free_cores: list[int]
    _nominal: bool
    _pending: dict[int, tuple[int, float]]
    _pending_runs: list[tuple[int, int, tuple[int, float]]]
    #: One-core nodes, nominal speeds, unbounded memory: the counters below are functions of who
    #: holds each core and are made when read (:meth:`_derive`), not at each start and end.
    _lazy: bool = False
    #: Bumped at each lazy start or end; ``_built[name]`` is the value ``name`` was made at.
    _version: int = 0
    _built: dict[str, int]
    #: Lazy mode: queue the changes of starts and ends (False: the engine's machine follows the
    #: occupancy itself, :meth:`~hdrm.core.lazy_jobs.LazyJobs.follow_occupancy`).
    _queue_lazy: bool = True
    #: Bandwidth demand per core of each running job (lazy mode: ``proc_demand`` is made of it).
    _job_bw: dict[int, float]

    core_job = _derived("core_job", "key of the job holding each core (FREE: none)")
    core_state = _derived("core_state", "power state of each core")
    proc_free = _derived("proc_free", "free cores of each processor")
    proc_running = _derived("proc_running", "running cores of each processor")
    proc_demand = _derived("proc_demand", "memory-bandwidth demand on each processor, GB/s")
    node_free_cores = _derived("node_free_cores", "free cores of each node")

    def _derive(self, name: str) -> None:
        """Make counter ``name`` (in place) from the running jobs, as the core-by-core rules
        leave it on one-core nodes: a held core is running (its processor's demand is its job's
        ``0.0 + mem_bw_gbps``), a free one asleep with its processor and node free."""
        values: list = getattr(self, "_" + name)
        idle, busy = _IDLE_BUSY[name]
        values[:] = [idle] * self.nb_cores  # one-core nodes: as many as cores
        job_bw = self._job_bw
        for key, cores in self.alloc.items():
            if name == "core_job":
                value = key
            else:
                value = 0.0 + job_bw[key] if busy is None else busy
            runs = getattr(cores, "runs", None)
            if runs is None:
                for c in cores:
                    values[c] = value
            else:
                for lo, hi in runs:
                    values[lo:hi] = [value] * (hi - lo)
        self._built[name] = self._version

    def _spill(self) -> None:
        """Move the queued runs of changes into ``_pending``, in order."""
        if self._pending_runs:
            pending = self._pending
            for lo, hi, change in self._pending_runs:
                pending.update(dict.fromkeys(range(lo, hi), change))
            self._pending_runs = []

    def _account(self, cores: tuple[int, ...], bw: float, sign: int, now: float) -> None:
        """Update processor counters for cores taken (+1) or freed (-1), then their states."""
        if self._nominal:
            self._account_nominal(cores, bw, sign)
            return
        if len(cores) == 1:  # one-core jobs (inference requests): the loop below, ungrouped
            c = cores[0]
            p = self.core_proc[c]
            was_running = self._proc_running[p]
            self._proc_free[p] -= sign
            self._proc_running[p] = was_running + sign
            self._proc_demand[p] += sign * bw
            self._node_free_cores[self.proc_node[p]] -= sign
            self._refresh(p, [c], sign, was_running, now)
            return
        by_proc: dict[int, list[int]] = {}
        # cores of one processor mostly come together: one group each, split in C
        for p, group in itertools.groupby(cores, self.core_proc.__getitem__):
            mine = by_proc.get(p)
            if mine is None:
                by_proc[p] = list(group)
            else:
                mine.extend(group)
        node_free, proc_node = self._node_free_cores, self.proc_node
        proc_free, proc_running = self._proc_free, self._proc_running
        proc_demand = self._proc_demand
        for p, mine in by_proc.items():
            k = sign * len(mine)
            was_running = proc_running[p]
            proc_free[p] -= k
            proc_running[p] = was_running + k
            proc_demand[p] += k * bw
            node_free[proc_node[p]] -= k
            self._refresh(p, mine, sign, was_running, now)

    def _account_nominal(self, cores: tuple[int, ...], bw: float, sign: int) -> None:
        """:meth:`_account` when speeds never change: only wake, idle and sleep transitions.

        The bandwidth demand is still kept: the ``high_mem_bw`` placement reads it.
        """
        self._spill()  # keep the order of the queued changes (lazy states never come here:
        # their jobs' cores are runs, :meth:`_account_singletons`)
        core_proc, proc_cores, proc_node = self.core_proc, self.proc_cores, self.proc_node
        proc_free, proc_running = self._proc_free, self._proc_running
        node_free = self._node_free_cores
        core_state, core_job, pending = self._core_state, self._core_job, self._pending
        proc_demand = self._proc_demand
        for c in cores:
            p = core_proc[c]
            was_running = proc_running[p]
            proc_running[p] = was_running + sign
            proc_free[p] -= sign
            node_free[proc_node[p]] -= sign
            proc_demand[p] = proc_demand[p] + sign * bw if was_running + sign else 0.0
            if sign > 0:
                core_state[c] = RUNNING
                pending[c] = (RUNNING, 1.0)
                if was_running == 0:
                    for s in proc_cores[p]:
                        if core_job[s] == FREE and core_state[s] != IDLE:
                            core_state[s] = IDLE
                            pending[s] = (IDLE, 1.0)
            elif was_running == 1:
                for s in proc_cores[p]:
                    core_state[s] = SLEEPING
                    pending[s] = (SLEEPING, 1.0)
            else:
                core_state[c] = IDLE
                pending[c] = (IDLE, 1.0)

    def _account_singletons(self, runs: list[tuple[int, int]], bw: float, sign: int) -> None:
        """:meth:`_account_nominal` on one-core nodes (core = processor = node index), run by
        run: a taken core wakes its processor straight to running, a freed one puts it to
        sleep; there are no siblings to wake or idle."""
        queue = self._pending_runs
        taken = sign > 0
        state = RUNNING if taken else SLEEPING
        change = (state, 1.0)
        if self._lazy:  # the counters are made on read
            self._version += 1
            if self._queue_lazy:
                for lo, hi in runs:
                    queue.append((lo, hi, change))
            return
        demand = 0.0 + bw if taken else 0.0  # an idle processor's demand is 0.0
        running, free = (1, 0) if taken else (0, 1)
        proc_running, proc_free = self._proc_running, self._proc_free
        node_free = self._node_free_cores
        proc_demand, core_state = self._proc_demand, self._core_state
        for lo, hi in runs:
            n = hi - lo
            proc_running[lo:hi] = [running] * n
            proc_free[lo:hi] = node_free[lo:hi] = [free] * n
            proc_demand[lo:hi] = [demand] * n
            core_state[lo:hi] = [state] * n
            queue.append((lo, hi, change))

    def _refresh(self, p: int, mine: list[int], sign: int, was_running: int, now: float) -> None:
        """Recompute processor ``p``'s speed fraction and the states of its cores.

        Args:
            p: the processor.
            mine: its cores just taken (sign +1) or freed (sign -1).
            sign: +1 or -1.
            was_running: running cores of ``p`` before the change.
            now: current time, for the bandwidth records.
        """
        running = self._proc_running[p]
        cores = self.proc_cores[p]
        old_fraction = self.proc_fraction[p]
        core_state, core_factor, pending = self._core_state, self.core_factor, self._pending
        if running == 0:
            self._proc_demand[p] = 0.0  # clear rounding residue
            fraction = 1.0
        elif self._nominal:
            fraction = 1.0
        else:
            fraction = self.contention.speed_fraction(self._proc_demand[p], self.proc_capacity[p])
        if fraction != 1.0 or old_fraction != 1.0:
            self.proc_fraction[p] = fraction
            self.contended += (running if fraction < 1.0 else 0) - (
                was_running if old_fraction < 1.0 else 0
            )
            self._record_bandwidth(p, old_fraction, fraction, now)
        if running == 0:  # the last running core finished: the processor sleeps
            for c in cores:
                if core_state[c] != SLEEPING:
                    core_state[c] = SLEEPING
                    core_factor[c] = 1.0
                    pending[c] = (SLEEPING, 1.0)
            return
        if fraction >= 1.0:
            state, factor = RUNNING, 1.0
        else:
            state, factor = CONTENDED, fraction / CONTENDED_SPEED_FRACTION
        core_job = self._core_job
        if fraction != old_fraction:
            targets = [c for c in cores if core_job[c] != FREE]
        elif sign > 0:
            targets = mine
        else:
            targets = []
        for c in targets:
            if core_state[c] != state or core_factor[c] != factor:
                core_state[c] = state
                core_factor[c] = factor
                pending[c] = (state, factor)
        if sign < 0:
            targets = mine
            state = IDLE
        elif was_running == 0 and len(cores) > 1:  # the first running cores wake the processor
            targets = [c for c in cores if core_job[c] == FREE]
            state = IDLE
        else:
            return
        for c in targets:
            if core_state[c] != state or core_factor[c] != 1.0:
                core_state[c] = state
                core_factor[c] = 1.0
                pending[c] = (state, 1.0)

    def _record_bandwidth(self, p: int, old_fraction: float, fraction: float, now: float) -> None:
        records = self.records
        if fraction < 1.0 <= old_fraction:
            records.bandwidth_start(p, self.proc_node[p], now, self._proc_demand[p],
                                    self.proc_capacity[p], self.proc_cores[p])
        elif old_fraction < 1.0 <= fraction:
            records.bandwidth_end(p, now)
        elif fraction < 1.0:
            records.bandwidth_update(p, self._proc_demand[p])

