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

from dataclasses import replace
from typing import Any, Iterator

import numpy as np

from hdrm.batsim.jobs import ServerJob
from hdrm.batsim.maestro import ANSWERED, EXECUTE, PTASK, SLEEP, TIMEOUT, WAIT_FOR, Exec
from hdrm.batsim.outputs_machines import IDLE, SLEEPING
from hdrm.batsim.ptask import Task, Unroutable
from hdrm.errors import ProtocolError
from hdrm.platform.simgrid_routes import NoRoute, Unmodelled
from hdrm.results.records import (COMPLETED_KILLED, COMPLETED_SUCCESSFULLY,
                                  COMPLETED_WALLTIME_REACHED)

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
            if self.accounts is not None:
                self._energy_at[job.job.idx] = self._energy_of(hosts)
            yield from self._energy(every)
        if self.traces is not None:
            self.traces.job_started(self.maestro.now, job.batsim_id, hosts, self._total_energy_j()
                                    if self.config.energy else None)
        profile = self.table.profile_of(job)
        walltime = float(np.longdouble(job.raw.get("walltime", -1)))
        delay = float(profile.get("delay", -1))
        if self.network is not None:  # any profile the actor model runs, parts included
            code, _ = yield from self._run(job, profile, used, min(hosts), walltime)
            state = COMPLETED_WALLTIME_REACHED if code < 0 else COMPLETED_SUCCESSFULLY
        elif profile["type"] != "delay":
            state = yield from self._ptask(job, used, profile, walltime)
        elif walltime < 0 or delay < walltime:
            yield (SLEEP, delay, min(hosts))
            state = COMPLETED_SUCCESSFULLY
        else:
            yield (SLEEP, walltime, min(hosts))
            state = COMPLETED_WALLTIME_REACHED
        del self._executors[job.job.idx]
        end_s, end = self.maestro.now, self._board_end(job)
        if self.network is None and job.job.idx in self._running_on:
            self._linger(job.job.idx, end.cores)
        if self.traces is not None:
            self.traces.job_ended(end_s, job.batsim_id, hosts,
                                  state == COMPLETED_WALLTIME_REACHED)
        if self.config.energy:
            yield from self._energy(sorted(hosts))
            end = self._accounted(job, end)
            yield from self._energy(every)
            self._window_end()
            if self.traces is not None:
                self.traces.job_energy(self.maestro.now, self._total_energy_j())
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
        if self._shadow is not None:
            per_host: dict[int, float] = {}
            for h in used:
                per_host[h] = per_host.get(h, 0.0) + flops
            self._exec_flops[id(exec_)] = (exec_, per_host)
        yield (PTASK, exec_, 0.0 if exec_.task is not None else self._rate(used, flops))
        state = yield (WAIT_FOR, exec_, walltime, used[0])
        del self._execs[job.job.idx]
        if state == TIMEOUT:
            self._running_on[job.job.idx] = exec_
            if exec_.task is None:
                self._lingering[job.job.idx] = (exec_, used, flops)
        return COMPLETED_WALLTIME_REACHED if state == TIMEOUT else COMPLETED_SUCCESSFULLY

    def _linger(self, key: int, hosts: Any) -> None:
        """Job ``key`` ended at its walltime, its ptask (no lmm system) runs on: the board's
        hosts keep its load until the ptask stops (:meth:`HostBoard.linger
        <hdrm.batsim.hosts.HostBoard.linger>`)."""
        exec_ = self._running_on[key]

        def stop() -> None:
            self._lingering.pop(key, None)
            self._sync()
            self.board.stop_lingering(key)

        if exec_.action is None or exec_.action.remains <= 0:
            self._lingering.pop(key, None)
            return
        exec_.on_end = stop
        self.board.linger(key, hosts)

    def _run(self, job: ServerJob, profile: dict, used: list[int], host: int,
             remaining: float, name: str = "", trail: tuple = ()) -> Iterator[tuple]:
        """execute_task (jobs_execution.cpp) where jobs communicate: a delay (do_delay_task), a
        sequence's parts ``repeat`` times, or a parallel task waited for with what is left of
        the walltime (``remaining``, < 0: none) as timeout; returns (code, remaining): -1 once
        the walltime is reached."""
        kind, name = profile["type"], name or job.profile_name
        if kind == "delay":
            delay = float(profile["delay"])
            self._leaves[job.job.idx] = (trail, name, self.maestro.now, delay, None)
            if remaining < 0 or delay < remaining:
                yield (SLEEP, delay, host)
                return 0, remaining - delay if remaining > 0 else remaining
            yield (SLEEP, remaining, host)
            return -1, 0.0
        if kind == "composed":
            parts = self.table.profile_sets[job.workload_id]
            seq = profile["seq"]
            for i in range(int(profile.get("repeat", 1))):
                for j, part in enumerate(seq):
                    code, remaining = yield from self._run(
                        job, parts[part], used, host, remaining, part,
                        (*trail, (name, i * len(seq) + j)))
                    if code != 0:
                        return code, remaining
            return 0, remaining
        exec_ = Exec(tuple(used))
        self._leaves[job.job.idx] = (trail, name, self.maestro.now, 0.0, exec_)
        exec_.task = self._task(job, used, profile)
        self._execs[job.job.idx] = (exec_, used, 0.0)
        yield (PTASK, exec_, 0.0)
        before = self.maestro.now
        state = yield (WAIT_FOR, exec_, remaining if remaining >= 0 else -1.0, used[0])
        del self._execs[job.job.idx]
        if remaining >= 0:
            remaining = remaining - (self.maestro.now - before)
        if state == TIMEOUT:
            self._running_on[job.job.idx] = exec_
            return -1, remaining
        return 0, remaining

    def _task(self, job: ServerJob, used: list[int], profile: dict) -> Task:
        """The ptask's L07 action (task_execution.cpp's matrices: ``cpu`` on each executor,
        ``com`` from each to every other, a ``_total`` profile's divided by their number; a
        ``parallel`` profile's own vector and matrix).

        Raises:
            ProtocolError: a route it needs is not known exactly, or a ``parallel`` profile's
                size differs from the executors'.
        """
        n = len(used)
        if profile["type"] == "parallel":
            cpu_v, matrix = [float(c) for c in profile["cpu"]], [float(c) for c in profile["com"]]
            if len(cpu_v) != n or len(matrix) != n * n:
                raise ProtocolError(
                    f"EXECUTE_JOB of job {job.batsim_id!r}: its 'parallel' profile is for "
                    f"{len(cpu_v)} resources, the job runs on {n}, which Batsim 4 refuses")
        else:
            cpu, com = float(profile["cpu"]), float(profile.get("com", 0))
            if profile["type"] == "parallel_homogeneous_total":
                cpu, com = cpu / n, com / n
            cpu_v = [cpu] * n
            matrix = [0.0 if i == j else com for i in range(n) for j in range(n)] if com > 0 \
                else None
        try:
            return self.network.ptask(used, cpu_v, matrix)
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

    def _accounted(self, job: ServerJob, end: Any) -> Any:
        """Where SimGrid's accounts are kept: the job's end with their energy (its hosts' now
        less at its start, in long doubles, as Batsim subtracts them)."""
        if self.accounts is None:
            return end
        start = self._energy_at.pop(job.job.idx, None)
        if start is None:
            return end
        return replace(end, energy_j=float(self._energy_of(job.hosts) - start))

    def _window_end(self) -> None:
        """Batsim's energy_last_job_completion (consumed_joules' end), from the accounts."""
        if self.accounts is not None:
            self._window_j[1] = float(self._energy_of(range(self.board.nb_hosts)))

    def _new_speed(self, host: int, state: int | None = None) -> None:
        """Host::set_pstate (to ``state``, by default the board's): the host's speed, its
        energy, the rate of a ptask on it."""
        state = self.board.pstate[host] if state is None else state
        self._set_pstate(host, state)
        self._speed[host] = self.board.hosts[host].speeds_gflops[state] * 1e9
        if self.network is not None:
            self.network.set_speed(host, self._speed[host])
            return
        for exec_, used, flops in (*self._execs.values(), *self._lingering.values()):
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
            if self.network is None:
                progress[batsim_id] = (job.profile_name,
                                       self.board.machine.progress(job.job.idx))
            else:
                progress[batsim_id] = self._progress(job)
            yield (ANSWERED, lambda executor=executor, ptask=ptask: self._kill(executor, ptask))
            end = self._board_end(job)
            if self.network is not None and end.state != COMPLETED_KILLED:
                end = replace(end, state=COMPLETED_KILLED)  # the board's cpu-only run ended
            leaf = self._leaves.get(job.job.idx) if self.network is not None else None
            now = self.maestro.now
            if self.traces is not None:  # a cancelled task's executor ends as killed (Pajé)
                cancelled = ptask is not None or leaf is not None and leaf[4] is not None
                self.traces.job_ended(now, batsim_id, job.hosts, cancelled)
            if self.config.energy:
                yield from self._energy(sorted(job.hosts))
                end = self._accounted(job, end)
            # a cancelled task's executor returns -2 (a ptask of its own, or a network leaf's)
            killed.append((job, end, now, ptask is not None
                           or leaf is not None and leaf[4] is not None))
            if self.config.energy:
                yield from self._energy(range(self.board.nb_hosts))
                self._window_end()
                if self.traces is not None:
                    self.traces.job_energy(now, self._total_energy_j())
        yield from self._put(("KILLED", batsim_ids, progress, killed), MASTER)

    def _progress(self, job: ServerJob) -> Any:
        """Where jobs communicate, a killed job's progress as Batsim computes it
        (BatTask::compute_leaf_progress): a task's ``1 - remains``, a delay's elapsed share;
        a sequence's tree down to its running leaf (``current_task_index`` at each level)."""
        trail, name, start_s, delay, exec_ = self._leaves[job.job.idx]
        if exec_ is not None:
            done = 1 - exec_.action.remains if exec_.action is not None else 0.0
        else:
            done = (self.maestro.now - start_s) / delay
        if not trail:
            return (name, done)
        node: dict[str, Any] = {"profile_name": name, "progress": float(done)}
        for parent, index in reversed(trail):
            node = {"profile_name": parent, "current_task_index": index, "current_task": node}
        return node

    def _kill(self, executor: Any, ptask: tuple | None) -> None:
        """Actor::kill: the actor's ptask (if any) cancelled with it."""
        if ptask is not None:
            self.maestro.cancel_exec(ptask[0])
        self.maestro.cancel(executor)

    def _set_pstate(self, host: int, state: int) -> None:
        """Host::set_pstate's energy update (charged at the state the account had)."""
        if self.accounts is not None:
            self.accounts.pstate[host] = state
        if self._shadow is not None:
            self._shadow.pstate[host] = state
        if self.traces is not None:
            self.traces.set_pstate(host, state)
        self._touched(host)

    def _switcher(self, group: int, host: int, via: int, target: int) -> Steps:
        """switch_on/off_machine_process (pstate.cpp): the virtual state ``via``, one flop
        computed at its speed, the ``target`` state, then the message."""
        speed_flops = self.board.hosts[host].speeds_gflops[via] * 1e9
        yield (ANSWERED, lambda: self._new_speed(host, via))  # Host::set_pstate
        yield (EXECUTE, 1.0, speed_flops, host)
        yield (ANSWERED, lambda: self._new_speed(host, target))
        if self.traces is not None:
            self.traces.set_state(self.maestro.now, host,
                                  SLEEPING if target in self.board.sleep[host] else IDLE)
        yield from self._put(("SWITCHED", group), host)
