"""Batsim 4.2.1's actors, step by step on SimGrid's scheduling (:class:`ActorSimulation`).

The instant model of :class:`~hdrm.batsim.simulator.BatsimSimulation` orders the events of one
instant by when their waits began. In the binary the order comes from sub-nanosecond times:
every message between Batsim's actors is a 1-byte transfer (0.1 ns on a 10 GBps link) that the
server takes one at a time, so a job started by the third decision of a reply starts 0.3 ns
after the reply; a sleep ends at the first SimGrid step less than a nanosecond before its due
time; and what an actor does between its wake-up and its send costs scheduling rounds
(``Mailbox::by_name``; with ``-E``, one energy update per stale host). A job end that lands a
step after the submitter's last batch then comes after NOTIFY, or in a message of its own.

:class:`ActorSimulation` runs the actors of Batsim's source (``server.cpp``, ``job_submitter.cpp``,
``jobs_execution.cpp``, ``network.cpp``) on :class:`~hdrm.batsim.maestro.Maestro`:

* each workload's submitter greets the server, then sends one batch per submission time and
  sleeps for the gap to the next one, measured from its last wake-up; it says goodbye at the end
  (NOTIFY once all have);
* the server takes one message at a time; once the decision process is ready and its mailbox
  holds nothing, it sends the events it has (a request-reply actor), or SIMULATION_ENDS;
* the request-reply actor forwards each decision of the reply as one message (after sleeping
  until its timestamp if that is later), then SCHED_READY;
* a job's executor runs on its first host: it sleeps for the delay (or the walltime), or
  runs a parallel task timed out at the walltime (:meth:`ActorSimulation._ptask`), then sends
  JOB_COMPLETED; with ``-E`` it first asks for the energy of its hosts, then of all hosts, on
  start and on end; waiters (CALL_ME_LATER), killers (KILL_JOB) and switchers (power states)
  are actors too.

It covers ``delay`` and ``parallel_homogeneous`` jobs on the platforms
:func:`hdrm.batsim.bandwidth.message_bandwidths` reads (with or without latency); the physics
(host states, energy, outputs) stays :class:`~hdrm.batsim.hosts.HostBoard`'s. Where jobs
communicate (``com`` > 0), hosts and links form SimGrid's lmm system
(:mod:`hdrm.batsim.ptask`): the jobs' parallel tasks and the messages share the links, and a job
ends when its task's work is done (the board's own end, cpu only, is not used); with ``-E`` the
energy is then SimGrid's lazy per-host accounts (:class:`~hdrm.batsim.lazy_energy.HostAccounts`,
a host charged at its cpu load when the energy plugin is called on it), not the board's.
"""

from __future__ import annotations

import logging
from typing import Any, Sequence

import numpy as np

from hdrm.batsim import events as ev
from hdrm.batsim import protocol as p
from hdrm.batsim.actor_jobs import MASTER, JobActors, Steps
from hdrm.batsim.bandwidth import MessageBandwidths, communicating
from hdrm.batsim.energy_reads import EnergyReads
from hdrm.batsim.event_actors import EventActors
from hdrm.batsim.bandwidth import _covered as covered  # (what the actor model runs)
from hdrm.batsim.jobs import SUBMITTED, JobTable, ServerJob, network_need
from hdrm.batsim.lazy_energy import HostAccounts
from hdrm.batsim.maestro import (ANSWERED, CREATE, EXCHANGE, READ, RECV, SEND, SLEEP, WAIT, Exec,
                                 Maestro)
from hdrm.batsim.outputs_energy import TotalAt, TraceAccounts
from hdrm.batsim.outputs_machines import SWITCHING_OFF, SWITCHING_ON, SessionTraces
from hdrm.batsim.partial_load import power_ranges
from hdrm.batsim.ptask import Network, unroutable_pair
from hdrm.batsim.simulator import BatsimSimulation, ServerConfig
from hdrm.errors import ProtocolError, WorkloadError
from hdrm.platform.simgrid import HostSpec
from hdrm.results.records import JobResult
from hdrm.sim.machine import JobEnd

logger = logging.getLogger(__name__)

class ActorSimulation(EventActors, JobActors, BatsimSimulation):
    """:class:`BatsimSimulation` whose messages follow Batsim's actors step by step.

    Args:
        hosts: compute hosts in resource order.
        table: the workload (``delay`` jobs).
        config: Batsim options.
        bandwidths: the bandwidth and latency of each message's route.
    """

    #: Batsim's machine-state, energy, power-state and Pajé files, when written (set by the
    #: server): the actors add their rows where Batsim's do.
    traces: SessionTraces | None = None

    def __init__(self, hosts: Sequence[HostSpec], table: JobTable, config: ServerConfig | None,
                 bandwidths: MessageBandwidths):
        super().__init__(hosts, table, config)
        self.bandwidths = bandwidths
        self.network = self._network(bandwidths)
        self.maestro = Maestro(self._touched if self.config.energy else None, self.network)
        #: the energy readings (-E): when each host's account was last updated
        self.reads = EnergyReads(self.board.nb_hosts, lambda: self.maestro.now, self.maestro.alone,
                                 self._touched, self._charge)
        self._fresh = self.reads.fresh
        if self.config.energy:
            self.maestro.reads = self.reads
        self._queued: list[p.Event] = []  # Batsim's protocol writer
        self._reply: tuple[float, list[tuple[p.Event, str]]] | None = None
        self._ready = self._ends_sent = self._ends_acked = self._first_energy = False
        self._counts = {"running": 0, "waiters": 0, "killers": 0, "switching": 0, "byes": 0}
        self._executors: dict[int, Any] = {}
        self._execs: dict[int, tuple[Exec, list[int], float]] = {}  # job -> ptask, hosts, flops
        self._running_on: dict[int, Exec] = {}  # job -> its ptask, timed out, still running
        self._lingering: dict[int, tuple[Exec, list[int], float]] = {}  # ... without lmm system
        self._leaves: dict[int, tuple] = {}  # job -> its running leaf (network sessions)
        self._speed = [h.speeds_gflops[s] * 1e9 for h, s in zip(self.board.hosts,
                                                                 self.board.pstate)]
        self._early: dict[int, JobEnd] = {}  # ends the board reached before their executor
        self._groups: dict[int, list] = {}  # switch group -> [hosts, state, machines left]
        self._begins: p.Message | None = None
        #: SimGrid's energy accounts where jobs communicate (-E): the board's energy then
        self.accounts: HostAccounts | None = None
        self._energy_at: dict[int, np.longdouble] = {}  # job -> its hosts' energy at its start
        self._window_j: list[float | None] = [None, None]  # at the first submission, last end
        #: SimGrid's accounts for the energy trace without an lmm system (attach_traces)
        self._shadow: TraceAccounts | None = None
        self._no_usage = np.zeros(0)
        self._usages: tuple[int, np.ndarray] = (-1, self._no_usage)  # (maestro version, usages)
        #: id(ptask) -> (the ptask, host -> its flops), while its work runs
        self._exec_flops: dict[int, tuple[Exec, dict[int, float]]] = {}
        if self.network is not None and self.config.energy:
            hosts_ = self.board.hosts
            self.accounts = HostAccounts(
                [power_ranges(h) for h in hosts_], [[s * 1e9 for s in h.speeds_gflops]
                                                    for h in hosts_],
                [h.cores for h in hosts_], self.board.pstate, self._usage)
            every = range(self.board.nb_hosts)
            self.board.energy_source = lambda: float(self.accounts.total_j(every))
        for i, sub in enumerate(self._subs):
            self.maestro.spawn(self._submitter(i, sub.jobs))
        self._events_bye = "none"  # (the instant model's NOTIFY bookkeeping)
        self._spawn_event_submitters()
        self.maestro.spawn(self._server())

    def _cannot_run(self, profiles: dict[str, Any], name: str) -> str:
        """A registered job's profile must be one the actor model runs in this session."""
        if self.network is None and not covered(profiles[name]):
            return ("is not one the actor model runs where no job communicates (a 'delay', or "
                    "a 'parallel_homogeneous' with cpu > 0 and com 0)")
        if self.network is not None and network_need(profiles, name) == "other":
            return "is not one the actor model runs"
        return ""

    def _network(self, bandwidths: MessageBandwidths) -> Network | None:
        """Where jobs communicate: hosts and links as SimGrid's lmm system sees them.

        Raises:
            WorkloadError: a route between two compute hosts that a communicating job could
                use is not one hdrm serve simulates (:func:`~hdrm.batsim.ptask.unroutable_pair`).
        """
        if bandwidths.between is None:
            return None
        board = self.board
        bad = unroutable_pair(bandwidths.between, board.nb_hosts)
        if bad is not None:
            i, j, why = bad
            talking = communicating(self.table)
            raise WorkloadError(
                f"{self.table.path}: job {talking[0].job.id!r} communicates (com > 0), and "
                f"the route of {bandwidths.platform or 'the platform'} from host "
                f"{board.hosts[i].name!r} to {board.hosts[j].name!r} is {why}, which hdrm serve "
                "does not simulate: run this workload with the real batsim, or give those jobs "
                "com 0")
        return Network([h.speeds_gflops[s] * 1e9 for h, s in zip(board.hosts, board.pstate)],
                       [h.cores for h in board.hosts], bandwidths.between)

    # ------------------------------------------------------------------ protocol
    def begin(self) -> p.Message:
        self._begins = super().begin()
        return self._checked(self.maestro.run())

    def next_message(self) -> p.Message | None:
        if self.done:
            return None
        reply, self._reply = self._reply, None
        return self._checked(self.maestro.resume(reply))

    def _checked(self, message: p.Message | None) -> p.Message:
        if message is None:
            self._check_finished()
            self._check_registration_closed()
            raise ProtocolError(f"internal: Batsim's actors stopped at t={self.maestro.now:.6f}")
        self.sent_now = message.now
        self.ended = message.events[0].type == "SIMULATION_ENDS"
        return message

    def react(self, reply: p.Message) -> None:
        if self.ended:
            super().react(reply)
            if self.traces is not None:  # the server ends once the reply is in (Pajé's end)
                self.maestro.resume((reply.now, [(e, "") for e in reply.events]))
            return
        self._reply_read(reply)
        self._reply = (reply.now, self._checked_events(reply))

    # ------------------------------------------------------------------ helpers of actors
    def _put(self, payload: tuple, host: int) -> Steps:
        """Batsim's send_message: ``Mailbox::by_name``, then a blocking 1-byte put."""
        yield (ANSWERED, None)
        transfer = yield (SEND, payload, self.bandwidths.of(host), host,
                          self.bandwidths.latency(host), self.bandwidths.links(host))
        yield (WAIT, transfer)

    def _energy(self, hosts: Sequence[int]) -> Steps:
        """sg_host_get_consumed_energy on each host: a simcall for each stale account (answered
        all at once while the actor runs alone), stepped by :class:`EnergyReads`."""
        yield (READ, hosts)

    def _charge(self, hosts: Sequence[int], first: int, whole: bool) -> None:
        """The energy plugin is called on ``hosts[first:]`` now (``whole``: on every host), one
        host after the other, the load and power states unchanged meanwhile."""
        now = self.maestro.now
        if self.accounts is not None:
            for h in hosts[first:]:
                self.accounts.update(h, now)
        if self._shadow is not None:
            idle = not self._exec_flops and not self._counts["switching"]
            if whole or min(self._fresh) >= now:  # (every stale account among them)
                self._shadow.update_all(now, None if idle else self._plain_usages())
            elif len(hosts) - first > 8:  # (the same doubles as one host after the other)
                self._shadow.update_hosts(hosts[first:], now, None if idle else
                                          self._plain_usages())
            else:
                self._shadow.update_many(hosts[first:], now, self._idle_usage())

    def _touched(self, host: int) -> None:
        """The energy plugin is called on ``host`` (its account updated)."""
        if host >= 0:
            now = self._fresh[host] = self.maestro.now
            if self.accounts is not None:
                self.accounts.update(host, now)
            if self._shadow is not None:
                self._shadow.touch(host, now, not self._exec_flops and
                                   not self._counts["switching"])

    def _usage(self, host: int) -> float:
        """The flop/s ``host``'s cpu delivers now (``Constraint::get_usage``): its enabled
        elements' weight x value, and its executions outside the lmm system (switches)."""
        used = 0.0
        for elem in self.network.cpus[host].enabled:  # type: ignore[union-attr]
            if elem.weight > 0:
                used += elem.weight * elem.variable.value
        return used + self.maestro.executing(host)

    def attach_traces(self, traces: SessionTraces) -> None:
        """Write Batsim's other output files (before the session runs). Under ``-E`` without an
        lmm system, SimGrid's accounts are kept beside the board for the energy trace: its
        rows are sums of per-host doubles, so that rows a fraction of a nanosecond apart have
        the binary's mean power."""
        self.traces = traces
        if self.config.energy and self.accounts is None:
            self._shadow = TraceAccounts(self.board.hosts)
            self._shadow.usage_of = self._plain_usage
            self._no_usage = np.zeros(self.board.nb_hosts)

    def _idle_usage(self) -> float | None:
        """0.0 when no host's cpu delivers anything (the common case), else None (then
        :meth:`_plain_usage` tells each host's)."""
        return 0.0 if not self._exec_flops and not self._counts["switching"] else None

    def _plain_usage(self, host: int) -> float:
        """Without an lmm system, the flop/s ``host``'s cpu delivers now: its switches, and the
        parallel tasks on it (their rate times its flops)."""
        return float(self._plain_usages()[host])

    def _plain_usages(self) -> np.ndarray:
        """:meth:`_plain_usage` of every host at once (worked out again once the computations
        under way or their rates changed: :attr:`Maestro.version`)."""
        if not self._exec_flops and not self._counts["switching"]:
            return self._no_usage  # (the common case: nothing computes)
        if self._usages[0] == self.maestro.version:
            return self._usages[1]
        used = [0.0] * self.board.nb_hosts
        for h, rate in self.maestro.executing_by_host().items():
            used[h] = rate
        for exec_, rate in self.maestro.exec_rates():
            entry = self._exec_flops.get(id(exec_))
            if entry is not None:
                for h, flops in entry[1].items():
                    used[h] += rate * flops
        for key in [k for k, entry in self._exec_flops.items() if entry[0].ended]:
            del self._exec_flops[key]  # its work is done or cancelled
        self._usages = (self.maestro.version, np.array(used))
        return self._usages[1]

    def _total_energy_j(self) -> float | np.longdouble | TotalAt:
        """machines.total_consumed_energy: every compute host's energy since 0, read now."""
        if self.accounts is not None:
            return self._energy_of(range(self.board.nb_hosts))
        if self._shadow is not None:
            return self._shadow.snapshot()  # (summed when the file is written)
        self._sync()
        return self.board.energy_j()

    def _energy_of(self, hosts: Sequence[int]) -> np.longdouble:
        """consumed_energy_on_machines: the sum of the hosts' accounts (a long double)."""
        return self.accounts.total_j(hosts)  # type: ignore[union-attr]

    def results(self) -> list[JobResult]:
        if self.accounts is not None:  # consumed_joules: from the first submission's reading
            self.board.marked_energy_j, self.board.last_end_energy_j = self._window_j
        elif self._window_j[0] is not None:
            self.board.marked_energy_j = self._window_j[0]
        return super().results()

    def _sync(self) -> None:
        """Bring the board to the actors' time; keep the job ends it reaches first."""
        for _, item in self.board.advance(max(self.maestro.now, self.board.now)):
            if isinstance(item, JobEnd):
                self._early[item.key] = item

    def _board_end(self, job: ServerJob) -> JobEnd:
        self._sync()
        end = self._early.pop(job.job.idx, None)
        return end if end is not None else self.board.kill(job.job.idx)

    # ------------------------------------------------------------------ actors
    def _submitter(self, index: int, jobs: list[ServerJob]) -> Steps:
        """static_job_submitter_process (job_submitter.cpp)."""
        yield from self._put(("HELLO", index), MASTER)
        current = np.longdouble(self.maestro.now)  # Batsim keeps dates as long doubles
        batch: list[ServerJob] = []
        for job in jobs:
            submit = np.longdouble(job.raw["subtime"])
            if submit > current:
                if batch:
                    yield from self._put(("BATCH", batch), MASTER)
                batch = []
                yield (SLEEP, float(submit - current), MASTER)
                current = np.longdouble(self.maestro.now)
            batch.append(job)
            if job is jobs[0] and self.config.energy and not self._first_energy:
                # energy_first_job_submission: every submitter asks until one has the answer
                yield from self._energy(range(self.board.nb_hosts))
                self._first_energy = True
                if self.accounts is not None:
                    self._window_j[0] = float(self._energy_of(range(self.board.nb_hosts)))
                else:  # read now, once the greeting is sent, not at the submission time
                    self._sync()
                    self._window_j[0] = self.board.energy_j()
        if batch:
            yield from self._put(("BATCH", batch), MASTER)
        yield from self._put(("BYE", index), MASTER)

    def _waiter(self, target: float) -> Steps:
        """waiter_process: sleeps until the requested time (at least 10 us ahead)."""
        now = self.maestro.now
        if now < target:
            yield (SLEEP, max(target - now, 1e-5), MASTER)
        if not self._ends_sent:
            yield from self._put(("CALLED",), MASTER)

    def _request_reply(self, message: p.Message) -> Steps:
        """request_reply_scheduler_process: one exchange, then each decision as a message."""
        reply_now, decisions = yield (EXCHANGE, message)
        for event, where in decisions:
            if event.timestamp > self.maestro.now:
                yield (SLEEP, event.timestamp - self.maestro.now, MASTER)
            yield from self._put(("DECISION", event, where), MASTER)
        if reply_now > self.maestro.now:
            yield (SLEEP, reply_now - self.maestro.now, MASTER)
        yield from self._put(("READY",), MASTER)

    def _server(self) -> Steps:
        """server_process: take a message, handle it, send the events when nothing waits."""
        yield (CREATE, self._request_reply(self._begins))
        while not self._ends_acked:
            yield (ANSWERED, None)  # Mailbox::by_name
            transfer = yield (RECV,)
            message = yield (WAIT, transfer)
            yield from self._handle(message)
            if not self._ready or self._ends_acked:
                continue
            yield (ANSWERED, None)  # mailbox_empty's Mailbox::by_name
            if not self.maestro.mailbox_empty:
                continue
            now = self.maestro.now
            if self._queued:
                events, self._queued, self._ready = self._queued, [], False
                yield (CREATE, self._request_reply(p.Message(now, events)))
                if self.config.dynamic_jobs:  # the ended jobs' profiles (dynamic_jobs)
                    self._collect_profiles()
            elif self._finished() and not self._ends_sent:
                self._ends_sent, self._ready = True, False
                yield (CREATE, self._request_reply(p.Message(now, [ev.simulation_ends(now)])))

    def _finished(self) -> bool:
        counts = self._counts
        return (counts["byes"] == len(self._subs) and self._events_done()
                and not self.table.unfinished()
                and not (self.config.dynamic_jobs and self._registering)
                and all(counts[k] == 0 for k in ("running", "waiters", "killers", "switching")))

    # ------------------------------------------------------------------ the server's handlers
    def _handle(self, message: tuple) -> Steps:
        kind, now, queued, counts = message[0], self.maestro.now, self._queued, self._counts
        if kind == "BATCH":
            forward = self.config.forward_profiles
            for job in message[1]:
                job.state = SUBMITTED
                profile = self.table.profile_of(job) if forward else None
                queued.append(ev.job_submitted(now, job.batsim_id, job.raw, profile))
        elif kind == "BYE":
            counts["byes"] += 1
            if counts["byes"] == len(self._subs):
                queued.append(ev.notify(now))
        elif kind == "END":
            _, job, state, end, end_s = message
            counts["running"] -= 1
            self._record(job, state, end, end_s, now)
        elif kind == "CALLED":
            counts["waiters"] -= 1
            queued.append(ev.requested_call(now))
        elif kind == "READY":
            self._ready = True
            self._ends_acked = self._ends_sent
        elif kind == "KILLED":
            _, batsim_ids, progress, killed = message
            counts["killers"] -= 1
            for job, end, end_s, cancelled in killed:
                counts["running"] -= 1
                self._record(job, end.state, end, end_s, now)
                if cancelled:  # a cancelled ptask's executor returns -2 (jobs_execution.cpp)
                    queued[-1].data["return_code"] = -2
            trees = {j: v for j, v in progress.items() if isinstance(v, dict)}
            done = ev.job_killed(now, {j: (v["profile_name"], 0.0) if j in trees else v
                                       for j, v in progress.items()})
            done.data["job_progress"].update(trees)  # a sequence's: down to its running leaf
            done.data["job_ids"] = list(batsim_ids)
            queued.append(done)
        elif kind == "SWITCHED":
            yield from self._switched(message[1], now)
        elif kind == "DECISION" and not self._ends_sent:  # (sent after SIMULATION_ENDS: dropped)
            yield from self._decide(message[1], message[2], now)
        elif kind in ("EVENTS", "EVENTS_BYE"):
            self._handle_events(message, now)

    def _record(self, job: ServerJob, state: str, end: JobEnd, end_s: float, now: float) -> None:
        """A job's row (ended at ``end_s``, Batsim's runtime) and its JOB_COMPLETED (``now``)."""
        job.energy_j = end.energy_j
        self._final(job, state, end_s)
        alloc = p.format_resources(job.hosts)
        self._queued.append(ev.job_completed(now, job.batsim_id, state, alloc))

    def _decide(self, event: p.Event, where: str, now: float) -> Steps:
        self._sync()
        kind = event.type
        if kind == "EXECUTE_JOB":
            self._execute(event, now, where)
            job = self.table.get(event.data["job_id"], where)
            self._counts["running"] += 1
            hosts = list(job.hosts)
            mapping = event.data.get("mapping")
            used = ([hosts[int(mapping[str(i)])] for i in range(len(mapping))] if mapping
                    else hosts)
            executor = self._executor(job, hosts, used)
            self._executors[job.job.idx] = executor
            yield (CREATE, executor)
        elif kind == "CALL_ME_LATER":
            self._counts["waiters"] += 1
            at = float(event.data["timestamp"])
            if at <= now:
                logger.warning("%s: CALL_ME_LATER for %g s, already past: calling back now",
                               where, at)
            yield (CREATE, self._waiter(at))
        elif kind == "KILL_JOB":
            for batsim_id in event.data["job_ids"]:
                if self.table.get(batsim_id, where).state == SUBMITTED:
                    raise ProtocolError(f"{where}: job {batsim_id!r} has not started; reject it "
                                        "instead")
            self._counts["killers"] += 1
            yield (CREATE, self._killer(list(event.data["job_ids"])))
        elif kind == "SET_RESOURCE_STATE":
            yield from self._set_resource_state(event, where, now)
        elif kind == "QUERY":
            if self.config.energy:
                yield from self._energy(range(self.board.nb_hosts))
            self._query(event, now, where)
            self._queued.extend(self.outbox)
            self.outbox = []
        else:  # REJECT_JOB, SET_JOB_METADATA: the instant model's handlers
            self._handlers[kind](event, now, where)
            self._queued.extend(self.outbox)
            self.outbox = []

    def _set_resource_state(self, event: p.Event, where: str, now: float) -> Steps:
        """server_on_pstate_modification: the energy trace, then each host's switch (at once
        between computing states, by a switcher actor to or from a sleep state)."""
        before, board = self.board.switch_seq, self.board
        states = list(board.pstate)
        self._set_state(event, now, where)
        if self.config.energy:
            yield from self._energy(range(self.board.nb_hosts))
        switches = self.board.switches_after(before)
        traces = self.traces
        if traces is not None and switches:
            first = min(h for sw in switches for h in sw[1])
            traces.switch_requested(now, sorted(h for sw in switches for h in sw[1]),
                                    switches[0][2], switches[0][2] in board.sleep[first],
                                    self._total_energy_j() if self.config.energy else 0.0)
        if not switches:
            return
        # one acknowledgement once every host of the request has switched (Batsim's
        # current_switches), however long each host takes
        group, target = len(self._groups), switches[0][2]
        entry = self._groups[group] = [sorted(h for sw in switches for h in sw[1]), target, 0]
        entry[2] = len(entry[0])
        for end_s, hosts, target in switches:
            if end_s <= now:
                for h in hosts:
                    yield (ANSWERED, lambda h=h: self._new_speed(h))  # Host::set_pstate
                entry[2] -= len(hosts)
                if entry[2] == 0:
                    if traces is not None:
                        traces.switch_done(now, entry[0], target, self._total_energy_j()
                                           if self.config.energy else 0.0)
                    self._queued.append(ev.resource_state_changed(
                        now, p.format_resources(entry[0]), str(target)))
                continue
            for h in hosts:  # through the virtual state of the sleep state left or entered
                sleep = board.sleep[h]
                via = sleep[target][0] if target in sleep else sleep[states[h]][1]
                self._counts["switching"] += 1
                if traces is not None:
                    traces.set_state(now, h, SWITCHING_OFF if target in sleep else SWITCHING_ON)
                yield (CREATE, self._switcher(group, h, via, target))
        if traces is not None:
            traces.states_row(now)

    def _switched(self, group: int, now: float) -> Steps:
        """server_on_switched: once every host of the request has switched, the energy trace
        (CurrentSwitches::mark_switch_as_done reads every host's energy), then the message."""
        self._counts["switching"] -= 1
        entry = self._groups[group]
        entry[2] -= 1
        if entry[2] == 0:
            if self.config.energy:
                yield from self._energy(range(self.board.nb_hosts))
            self._sync()
            if self.traces is not None:
                self.traces.switch_done(now, entry[0], entry[1], self._total_energy_j()
                                        if self.config.energy else 0.0)
                self.traces.states_row(now)
            self._queued.append(ev.resource_state_changed(now, p.format_resources(entry[0]),
                                                          str(entry[1])))
