"""The actors of Batsim 4.2.1 that run jobs, step by step (mixed into
:class:`~hdrm.batsim.actors.ActorSimulation`).

* A job's executor (``jobs_execution.cpp``) runs on its first host: it sleeps for a ``delay``
  profile's delay (or its walltime, which kills it), or runs a ``parallel_homogeneous`` profile as
  one parallel task over the executors' hosts, waited for with the walltime as timeout
  (``task_execution.cpp``); with ``-E`` it asks for the energy of its hosts, then of every host,
  on start and on end; then it sends JOB_COMPLETED.
* A killer (KILL_JOB) stops the running jobs' executors, their tasks cancelled with them, then
  tells the server; a switcher (a power-state change through a virtual state) computes one flop
  at the virtual state's speed.

The methods use :class:`~hdrm.batsim.actors.ActorSimulation`'s state (``maestro``, ``board``,
``table``, the running executors and tasks) and its message helpers.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from hdrm.batsim.jobs import ServerJob
from hdrm.batsim.maestro import ANSWERED, EXECUTE, PTASK, SLEEP, TIMEOUT, WAIT_FOR, Exec
from hdrm.batsim.ptask import Task, Unroutable
from hdrm.errors import ProtocolError
from hdrm.platform.simgrid_routes import NoRoute, Unmodelled
from hdrm.results.records import COMPLETED_SUCCESSFULLY, COMPLETED_WALLTIME_REACHED

MASTER = -1  # the master host, where the server, submitters, waiters and killers run

Steps = Iterator[tuple]


class JobActors:
    """Executors, killers and switchers: a mixin of
    :class:`~hdrm.batsim.actors.ActorSimulation`."""

    def _executor(self, job: ServerJob, hosts: list[int], used: list[int]) -> Steps:
        """execute_job_process (jobs_execution.cpp) for a ``delay`` profile, or a
        ``parallel_homogeneous`` one on the executors' hosts ``used`` (task_execution.cpp)."""
        every = range(self.board.nb_hosts)
        if self.config.energy:
            yield from self._energy(sorted(hosts))
            yield from self._energy(every)
        profile = self.table.profile_of(job)
        walltime = float(np.longdouble(job.raw.get("walltime", -1)))
        delay = float(profile.get("delay", -1))
        if profile["type"] != "delay":
            state = yield from self._ptask(job, used, profile, walltime)
        elif walltime < 0 or delay < walltime:
            yield (SLEEP, delay, min(hosts))
            state = COMPLETED_SUCCESSFULLY
        else:
            yield (SLEEP, walltime, min(hosts))
            state = COMPLETED_WALLTIME_REACHED
        del self._executors[job.job.idx]
        end_s, end = self.maestro.now, self._board_end(job)
        if self.config.energy:
            yield from self._energy(sorted(hosts))
            yield from self._energy(every)
        yield from self._put(("END", job, state, end, end_s), min(hosts))
        running_on = self._running_on.pop(job.job.idx, None)
        if running_on is not None:  # SimGrid 3.32's wait_for left it running: the actor's end
            self.maestro.cancel_exec(running_on)  # cancels it (cleanup_from_self)

    def _ptask(self, job: ServerJob, used: list[int], profile: dict, walltime: float) -> Steps:
        """execute_parallel_task: the ptask started (``Exec::start``), waited for with the
        walltime as timeout (a sleep on the first host), failed if the timeout came first."""
        exec_ = Exec(tuple(used))
        flops = float(profile["cpu"])
        if self.network is not None:
            exec_.task = self._task(job, used, profile)
        self._execs[job.job.idx] = (exec_, used, flops)
        yield (PTASK, exec_, 0.0 if exec_.task is not None else self._rate(used, flops))
        state = yield (WAIT_FOR, exec_, walltime, used[0])
        del self._execs[job.job.idx]
        if state == TIMEOUT and exec_.task is not None:
            self._running_on[job.job.idx] = exec_
        return COMPLETED_WALLTIME_REACHED if state == TIMEOUT else COMPLETED_SUCCESSFULLY

    def _task(self, job: ServerJob, used: list[int], profile: dict) -> Task:
        """The ptask's L07 action (task_execution.cpp's matrices: ``cpu`` on each executor,
        ``com`` from each to every other).

        Raises:
            ProtocolError: a route it needs is not known exactly.
        """
        n = len(used)
        cpu, com = float(profile["cpu"]), float(profile.get("com", 0))
        matrix = [0.0 if i == j else com for i in range(n) for j in range(n)] if com > 0 \
            else None
        try:
            return self.network.ptask(used, [cpu] * n, matrix)
        except (Unroutable, NoRoute, Unmodelled) as exc:
            raise ProtocolError(
                f"EXECUTE_JOB of job {job.batsim_id!r}: hdrm serve cannot route its "
                f"communication ({exc}); run this workload with the real batsim") from None

    def _rate(self, used: list[int], flops: float) -> float:
        """The ptask's rate (its work a fraction 1): the slowest host's speed over its flops
        (a host holding k executors: k times the flops)."""
        count: dict[int, int] = {}
        for h in used:
            count[h] = count.get(h, 0) + 1
        return min(self._speed[h] / (flops * k) for h, k in count.items())

    def _new_speed(self, host: int) -> None:
        """Host::set_pstate: the host's speed, its energy, the rate of a ptask on it."""
        self._touched(host)
        self._speed[host] = self.board.hosts[host].speeds_gflops[self.board.pstate[host]] * 1e9
        if self.network is not None:
            self.network.set_speed(host, self._speed[host])
            return
        for exec_, used, flops in self._execs.values():
            if host in exec_.hosts:
                self.maestro.set_rate(exec_, self._rate(used, flops))

    def _killer(self, batsim_ids: list[str]) -> Steps:
        """killer_process: stops the running jobs' executors, then tells the server."""
        progress: dict[str, tuple[str, float]] = {}
        killed = []
        for batsim_id in batsim_ids:
            job = self.table.by_id[batsim_id]
            executor = self._executors.pop(job.job.idx, None)
            if executor is None:
                continue  # it ended before the kill
            self._sync()
            ptask = self._execs.pop(job.job.idx, None)
            done = self.board.machine.progress(job.job.idx)
            if ptask is not None and ptask[0].task is not None and ptask[0].action is not None:
                done = 1 - ptask[0].action.remains  # BatTask::compute_leaf_progress
            progress[batsim_id] = (job.profile_name, done)
            yield (ANSWERED, lambda executor=executor, ptask=ptask: self._kill(executor, ptask))
            killed.append((job, self._board_end(job), self.maestro.now))
            if self.config.energy:
                yield from self._energy(sorted(job.hosts))
                yield from self._energy(range(self.board.nb_hosts))
        yield from self._put(("KILLED", batsim_ids, progress, killed), MASTER)

    def _kill(self, executor: Any, ptask: tuple | None) -> None:
        """Actor::kill: the actor's ptask (if any) cancelled with it."""
        if ptask is not None:
            self.maestro.cancel_exec(ptask[0])
        self.maestro.cancel(executor)

    def _switcher(self, group: int, host: int, speed_flops: float) -> Steps:
        """switch_on/off_machine_process (pstate.cpp): the virtual state, one flop computed at
        its speed, the target state, then the message."""
        yield (ANSWERED, lambda: self._touched(host))  # Host::set_pstate (energy updated)
        yield (EXECUTE, 1.0, speed_flops, host)
        yield (ANSWERED, lambda: self._touched(host))
        yield from self._put(("SWITCHED", group), host)
