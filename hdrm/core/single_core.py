"""Jobs of one core on the core-by-core path: taken and freed in one step each.

An inference request holds one accelerator core; a trace of a million of them starts and frees
a million single cores, so the general rules (group the job's cores by processor, then refresh
each processor's speed and states) cost more in their setup than in their work there. The
methods here, mixed into :class:`~hdrm.core.state.ClusterState`, apply the same rules to one core
``c`` of processor ``p`` directly, in the same order, with the same queued changes:

* memory: the node's memory is charged (``job.mem_mb``) or given back; a shortage is recorded
  and refused before anything changes;
* counters: ``p``'s free and running cores and bandwidth demand, the node's free cores;
* speed: ``p``'s fraction from the contention model; when it changes, every running core of
  ``p`` takes the new state, else only ``c`` does (when taken);
* wake and sleep: the first running core wakes ``p``'s free cores (3 -> 2), a freed core idles,
  the last one puts ``p`` to sleep.
"""

from __future__ import annotations

from typing import Sequence

from hdrm.core.power_states import FREE, PowerStates
from hdrm.errors import SimulationError
from hdrm.platform.power import CONTENDED, CONTENDED_SPEED_FRACTION, IDLE, RUNNING, SLEEPING
from hdrm.workload.job import Job


#: The changes of a core that starts or ends on a processor at full speed.
_RUN = (RUNNING, 1.0)
_IDLE = (IDLE, 1.0)


class SingleCoreJobs(PowerStates):
    """One-core starts and ends of :class:`~hdrm.core.state.ClusterState` (its attributes)."""

    alloc: dict[int, Sequence[int]]
    node_free_mem: Sequence[float]
    free_cores: int
    core_node: Sequence[int]
    #: ``(core_proc, core_node)`` as read once (None: not read yet).
    _one_tables: tuple[Sequence[int], Sequence[int]] | None = None

    def _tables_one(self) -> tuple[Sequence[int], Sequence[int]]:
        tables = self._one_tables = (self.core_proc, self.core_node)
        return tables

    def _allocate_one(self, job: Job, c: int, now: float) -> None:
        """Give core ``c`` to ``job`` (which holds none): the core-by-core rules for one core.

        Raises:
            SimulationError: ``c`` is busy, or its node lacks the job's memory (recorded).
        """
        core_proc, core_node = self._one_tables or self._tables_one()
        if self._pending_runs:
            self._spill()  # runs queued before come first
        core_job = self._core_job
        if core_job[c] != FREE:
            raise SimulationError(f"job {job.id}: core {c} is busy with job {core_job[c]}")
        node, mem = core_node[c], job.mem_mb
        free_mem = self.node_free_mem
        if mem > 0 and free_mem[node] < mem:
            available = free_mem[node]
            self.records.memory(now, job.id, node, mem, available)
            raise SimulationError(
                f"job {job.id}: node {node} has {available:g} MB free, needs {mem:g} MB per core")
        free_mem[node] -= mem
        core_job[c] = job.idx
        self.alloc[job.idx] = (c,)
        self.free_cores -= 1
        if self.free_set is not None:
            self.free_set.remove(c, c + 1)
        if self._nominal:
            self._account_nominal((c,), job.mem_bw_gbps, +1)
        else:
            self._account_one(c, core_proc[c], job.mem_bw_gbps, +1, now)

    def _release_one(self, job: Job, c: int, now: float) -> None:
        """Free core ``c`` of ``job`` (already out of :attr:`alloc`): its memory back, then the
        counters and states as for any freed core."""
        core_proc, core_node = self._one_tables or self._tables_one()
        if self._pending_runs:
            self._spill()  # runs queued before come first
        self._core_job[c] = FREE
        self.node_free_mem[core_node[c]] += job.mem_mb
        self.free_cores += 1
        if self.free_set is not None and not self.free_set.add(c, c + 1):
            raise SimulationError(f"cores {c}..{c} freed twice")
        if self._nominal:
            self._account_nominal((c,), job.mem_bw_gbps, -1)
        else:
            self._account_one(c, core_proc[c], job.mem_bw_gbps, -1, now)

    def _account_one(self, c: int, p: int, bw: float, sign: int, now: float) -> None:
        """:meth:`_account` and :meth:`_refresh` for core ``c`` of processor ``p`` taken
        (``sign`` +1) or freed (-1), speeds not nominal."""
        proc_running, proc_demand = self._proc_running, self._proc_demand
        was_running = proc_running[p]
        running = proc_running[p] = was_running + sign
        self._proc_free[p] -= sign
        proc_demand[p] += sign * bw
        self._node_free_cores[self.proc_node[p]] -= sign
        old_fraction = self.proc_fraction[p]
        if running == 0:
            proc_demand[p] = 0.0  # clear rounding residue
            fraction = 1.0
        else:
            fraction = self.contention.speed_fraction(proc_demand[p], self.proc_capacity[p])
        if fraction == 1.0 == old_fraction and running and was_running:
            # full speed before and after, neither the first nor the last running core (most
            # starts and ends): only this core changes, to running or idle
            core_state, core_factor = self._core_state, self.core_factor
            change = _RUN if sign > 0 else _IDLE
            if core_state[c] != change[0] or core_factor[c] != 1.0:
                core_state[c] = change[0]
                core_factor[c] = 1.0
                self._pending[c] = change
            return
        if fraction != 1.0 or old_fraction != 1.0:
            self.proc_fraction[p] = fraction
            self.contended += (running if fraction < 1.0 else 0) - (
                was_running if old_fraction < 1.0 else 0)
            self._record_bandwidth(p, old_fraction, fraction, now)
        cores = self.proc_cores[p]
        core_state, core_factor, pending = self._core_state, self.core_factor, self._pending
        if running == 0:  # the last running core finished: the processor sleeps
            for s in cores:
                if core_state[s] != SLEEPING:
                    core_state[s] = SLEEPING
                    core_factor[s] = 1.0
                    pending[s] = (SLEEPING, 1.0)
            return
        if fraction >= 1.0:
            state, factor = RUNNING, 1.0
        else:
            state, factor = CONTENDED, fraction / CONTENDED_SPEED_FRACTION
        if fraction != old_fraction:
            core_job = self._core_job
            for s in cores:
                if core_job[s] != FREE and (core_state[s] != state or core_factor[s] != factor):
                    core_state[s] = state
                    core_factor[s] = factor
                    pending[s] = (state, factor)
        elif sign > 0 and (core_state[c] != state or core_factor[c] != factor):
            core_state[c] = state
            core_factor[c] = factor
            pending[c] = (state, factor)
        if sign < 0:
            if core_state[c] != IDLE or core_factor[c] != 1.0:
                core_state[c] = IDLE
                core_factor[c] = 1.0
                pending[c] = (IDLE, 1.0)
        elif was_running == 0 and len(cores) > 1:  # the first running core wakes the processor
            core_job = self._core_job
            for s in cores:
                if core_job[s] == FREE and (core_state[s] != IDLE or core_factor[s] != 1.0):
                    core_state[s] = IDLE
                    core_factor[s] = 1.0
                    pending[s] = (IDLE, 1.0)
