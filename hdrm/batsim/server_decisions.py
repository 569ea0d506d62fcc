"""The decisions a Batsim-protocol reply may carry, applied to the built-in physics.

:class:`DecisionHandlers` is the part of :class:`~hdrm.batsim.simulator.BatsimSimulation` that
applies one decision event at its timestamp, as Batsim 4.2.1 does: EXECUTE_JOB (an allocation of
exactly the requested number of free, awake resources, or any number with a ``mapping`` of the
requested executors onto them: :func:`~hdrm.batsim.mapping.check_mapping`), REJECT_JOB,
CALL_ME_LATER, KILL_JOB, SET_RESOURCE_STATE, SET_JOB_METADATA and QUERY (``consumed_energy``); a
state change and a query need energy accounting, as Batsim 4.2.1 needs ``-E`` for both (it aborts
otherwise). An invalid decision raises :class:`~hdrm.errors.ProtocolError` naming the event, its
time and the job.

The simulation provides ``board`` (:class:`~hdrm.batsim.hosts.HostBoard`), ``table``, ``config``,
``outbox``, the wake bookkeeping (``_job_wake``, ``_switch_wakes``, ``_calls``, ``_new_wake``) and
``_ended`` and ``_final``, which record a job's end.
"""

from __future__ import annotations

import heapq
import logging

from hdrm.batsim import events as ev
from hdrm.batsim import protocol as p
from hdrm.batsim.jobs import RUNNING, SUBMITTED, run_kwargs, spreads_work
from hdrm.batsim.mapping import check_mapping
from hdrm.errors import ProtocolError
from hdrm.results.records import REJECTED
from hdrm.sim.job_end import COMPLETED_WALLTIME_REACHED, JobEnd
from hdrm.workload.batsim_composed import progress_tree
from hdrm.workload.job import PROFILE_COMPOSED

logger = logging.getLogger(__name__)

#: Added to the wake number of what ends by computing: such events come after the others of their
#: instant (see :mod:`hdrm.batsim.event_order`).
_COMPUTED = 1 << 40
#: Added to the wake number of a ``delay`` job's end under energy accounting: after the sleeps of
#: its instant (submissions, calls), before what ends by computing.
_ENERGY_QUERY = 1 << 39


class DecisionHandlers:
    """The handlers of the decision events, one method per event type."""

    def _execute(self, event: p.Event, ts: float, where: str) -> None:
        data = event.data
        job = self.table.get(data["job_id"], where)
        where = f"{where}, job {job.batsim_id!r}"
        for key in ("storage_mapping", "additional_io_job"):
            if key in data:
                raise ProtocolError(f"{where}: {key!r} is not supported by hdrm serve (it needs "
                                    "Batsim's storage and I/O models); leave it out, or run the "
                                    "real batsim")
        if job.state != SUBMITTED:
            what = "rejected" if job.final_state == REJECTED else f"already started at {job.start_s:g} s"
            raise ProtocolError(f"{where}: the job was {what}; a job runs at most once")
        hosts = p.parse_resource_ids(data["alloc"], f"{where}: alloc")
        kwargs = run_kwargs(job.job, len(hosts))
        computing = kwargs.get("ops_gflop") is not None or any(
            ops is not None for _, ops in kwargs.get("parts", ()))
        spread = spreads_work(job.job)
        if "mapping" in data:
            check_mapping(data["mapping"], len(hosts), None if spread else job.job.res,
                          computing, where)
        elif len(hosts) != job.job.res and not spread:
            raise ProtocolError(f"{where}: alloc {data['alloc']!r} has {len(hosts)} resources, the job "
                                f"requests {job.job.res}, which Batsim 4 refuses; allocate "
                                f"{job.job.res}, or map its {job.job.res} executors onto the "
                                "allocation with a 'mapping'")
        self._check_hosts(hosts, where, data["alloc"], ts)
        parts = kwargs.get("parts", ())
        self.board.start(job.job.idx, hosts, **kwargs)
        job.state, job.start_s, job.hosts = RUNNING, ts, tuple(hosts)
        ends_computing = (kwargs.get("ops_gflop") is not None
                          or bool(parts) and parts[-1][1] is not None)
        late = (_COMPUTED if ends_computing else _ENERGY_QUERY if self.config.energy else 0)
        self._job_wake[job.job.idx] = self._new_wake() + late

    def _end_wake(self, end: JobEnd, in_computed_step: bool = False) -> int:
        """Where a job's end ranks among the events of its instant: by its start (its wake),
        late as :meth:`_execute` set it. A parallel job killed at its walltime ends by its
        timer, a sleep: in the solver step of the first thing due at its instant, which is its
        own timer, a submission or call, a ``delay`` job's end (then it ranks by its start among
        the sleeps, behind the submissions and calls under energy accounting, as a ``delay``
        job's end) or a parallel job's work done (``in_computed_step``: among what ends by
        computing). Checked with the binary: a tie killed by a submission goes before it without
        ``-E``, after it with ``-E``; killed by an earlier tie's end, right after that end."""
        wake = self._job_wake[end.key]
        if wake >= _COMPUTED and end.state == COMPLETED_WALLTIME_REACHED and not in_computed_step:
            wake += (_ENERGY_QUERY if self.config.energy else 0) - _COMPUTED
        return wake

    def _ends_by_computing(self, end: JobEnd) -> bool:
        """Whether ``end`` is a parallel job's work done (not its timer, not a sleep)."""
        return self._job_wake[end.key] >= _COMPUTED and end.state != COMPLETED_WALLTIME_REACHED

    def _check_hosts(self, hosts: list[int], where: str, alloc: str, ts: float) -> None:
        """Refuse an allocation where Batsim 4.2.1 aborts, with its words: a busy machine (all
        first), then machine by machine its state (unavailable, sleeping, switching) and, under
        energy accounting, its power state (a sleep or switch state: a machine made available
        while asleep or during a switch is idle for Batsim, and a host whose platform power
        state is a sleep state starts idle; without -E Batsim checks no power state and the job
        runs at that state's speed)."""
        board, availability = self.board, self.availability
        nb_hosts, job_on = board.nb_hosts, board.machine.job_on
        for h in hosts:
            if not 0 <= h < nb_hosts:
                raise ProtocolError(f"{where}: unknown resource {h}; resources are "
                                    f"0..{nb_hosts - 1}")
            other = job_on[h]
            if other != -1:
                busy = self.table.jobs[other].batsim_id
                raise ProtocolError(
                    f"{where}: invalid allocation ('{alloc}'): machine {h} (hostname="
                    f"'{board.hosts[h].name}') is currently computing jobs (these ones: {{{busy}}})"
                    " whereas time-sharing on compute machines is disabled; the binary aborts "
                    f"here: resource {h} is busy with job {busy!r}")
        energy, events = self.config.energy, bool(self.config.events)
        if not energy and not events:
            return
        for h in hosts:
            if availability.down:  # external events (hdrm.batsim.external_events)
                availability.check(alloc, (h,), where, ts)
            what = f"{where}: invalid job allocation ('{alloc}'): machine {h} (hostname=" \
                f"'{board.hosts[h].name}')"
            state = board.switch_state_name(h)
            if state != "idle" and not (events and availability.made_idle(h, ts)):
                raise ProtocolError(f"{what} cannot compute jobs now (the machine is not "
                                    f"computing nor idle, its state is '{state}'); the binary "
                                    "aborts here: switch it on first")
            ps = board.machine.state[h] // 2
            if energy and (ps in board.sleep[h] or ps in board.virtual[h]):
                raise ProtocolError(f"{what} is not in a computation pstate (ps={ps}); the "
                                    "binary aborts here: switch it on first")

    def _reject(self, event: p.Event, ts: float, where: str) -> None:
        job = self.table.get(event.data["job_id"], where)
        if job.state != SUBMITTED:
            raise ProtocolError(f"{where}: job {job.batsim_id!r} cannot be rejected: it is {job.state}")
        self._final(job, REJECTED, ts)

    def _call_me_later(self, event: p.Event, ts: float, where: str) -> None:
        at = float(event.data["timestamp"])
        if at < ts:
            logger.warning("%s: CALL_ME_LATER for %g s, already past: calling back now", where, at)
        heapq.heappush(self._calls, (max(at, ts), self._new_wake()))

    def _kill(self, event: p.Event, ts: float, where: str) -> None:
        progress: dict[str, tuple[str, float]] = {}
        trees: dict[str, dict] = {}
        asked = []  # Batsim discards a job whose kill was asked before (src/server.cpp)
        for batsim_id in event.data["job_ids"]:
            job = self.table.get(batsim_id, where)
            if job.state == SUBMITTED:
                raise ProtocolError(f"{where}: job {batsim_id!r} has not started; reject it instead")
            if job.kill_requested:
                continue
            job.kill_requested = True
            asked.append(batsim_id)
            if job.state != RUNNING:
                continue  # it ended before the kill, as Batsim allows
            progress[batsim_id] = (job.profile_name, self.board.machine.progress(job.job.idx))
            if job.job.profile_type == PROFILE_COMPOSED:  # the tree down to the running part
                trees[batsim_id] = progress_tree(job.job, self.board.machine.running_job(
                    job.job.idx).part_i, progress[batsim_id][1])
            computing = self.board.machine.running_job(job.job.idx).parallel
            self._ended(job, self.board.kill(job.job.idx))
            if computing and self.outbox and self.outbox[-1].data.get("job_id") == batsim_id:
                # Batsim cancels a running computation, whose executor returns -2; a sleep's
                # executor is killed and the code stays -1 (src/jobs_execution.cpp)
                self.outbox[-1].data["return_code"] = -2
        if not asked:
            return  # (no killer, no JOB_KILLED)
        killed = ev.job_killed(ts, progress)
        killed.data["job_progress"].update(trees)
        killed.data["job_ids"] = asked
        self.outbox.append(killed)

    def _set_state(self, event: p.Event, ts: float, where: str) -> None:
        if not self.config.energy:  # Batsim 4.2.1 aborts: "forbidden as Batsim has not been
            # launched with energy support"
            raise ProtocolError(f"{where}: a power-state change needs energy accounting; start "
                                "hdrm serve with -E/--energy (as batsim needs -E)")
        hosts = p.parse_resource_ids(event.data["resources"], f"{where}: resources")
        state = int(event.data["state"])
        before = self.board.switch_seq
        self.board.request(hosts, state, where)
        if self.config.events:  # a switch to or from sleep overwrites the unavailable state
            for end_s, members, _ in self.board.switches_after(before):
                if end_s > ts:
                    self.availability.switched(members, end_s)
        self._switch_wakes.setdefault((tuple(hosts), state), []).append(self._new_wake() + _COMPUTED)

    def _metadata(self, event: p.Event, ts: float, where: str) -> None:
        self.table.get(event.data["job_id"], where).metadata = event.data["metadata"]

    def _query(self, event: p.Event, ts: float, where: str) -> None:
        requests = event.data["requests"]
        unknown = [k for k in requests if k != "consumed_energy"]
        if unknown:
            raise ProtocolError(f"{where}: unsupported request(s) {', '.join(map(repr, unknown))}; "
                                "hdrm serve answers 'consumed_energy'")
        if not self.config.energy:
            raise ProtocolError(f"{where}: consumed_energy needs energy accounting; start hdrm serve "
                                "with -E/--energy (as batsim needs -E)")
        self.board.lazy.read_all(ts)  # (Batsim reads every host's energy: not checked)
        self.outbox.append(ev.answer_energy(ts, self.board.energy_j()))
