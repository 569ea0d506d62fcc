"""Batsim's side of the protocol on the built-in physics, without sockets.

:class:`BatsimSimulation` produces the messages Batsim 4.2.1 would send and applies the decisions
of the replies, so a transport (:mod:`hdrm.batsim.server`) only moves text::

    message = sim.begin()
    while message is not None:
        reply = exchange(message)
        sim.react(reply)
        message = sim.next_message()

Timing, as Batsim does it:

* a message is sent as soon as there are events and the decision process is ready; its ``now`` is
  the current time, each event keeps the time it happened;
* the reply's ``now`` is when the decision process is ready again (pybatsim's ``consume_time``);
  each decision takes effect at its event timestamp (a time within a microsecond of the message's
  ``now`` is that ``now``: messages carry six decimals, the simulation keeps exact times); events that happen in between (a submission,
  a job end) are sent with the next message, stamped with their own time;
* events at one instant go in one message, in the order in which what they wait for began
  (see below); NOTIFY ``no_more_static_job_to_submit`` follows the events of the last submission's
  instant, or opens the next message when the last submission was sent at once on its own; and
  SIMULATION_ENDS comes once every job has ended or been rejected and no call or state change is
  pending.

Order of simultaneous events (Batsim 4.2.1 on SimGrid 3.32, read in their sources and checked
against the real binary): each event is the wake-up of a SimGrid actor (the workload submitter
sleeping until the next submission time, a job's executor, the waiter of a CALL_ME_LATER, a
switcher), which then sends an inter-process message to Batsim's server; the ``ptask_L07`` model
finishes the actions due at one date in the order they were created, the actors run in that order,
and the server takes their messages first come, first served, sending to the decision process only
once its mailbox is empty. So events at one instant are ordered by when their wait *began*: a job's
end by its start, a submission by the delivery of the previous submission batch (the submitter
sleeps again right after it), a requested call by its CALL_ME_LATER, a state change by its request.
A job started before the previous submission therefore ends ahead of a simultaneous submission,
one started after it behind.

This rule is exact for what waits by sleeping (submissions, calls, ``delay`` jobs): SimGrid ends
sleeps due within a nanosecond of each other in one step. What waits by computing (a
``parallel_homogeneous`` job, a switch to or from a sleep state) ends only when its remaining work
is below 1e-14 of a flop, and it started after a chain of inter-process messages that take a
fraction of a nanosecond each, so it ends just after the sleeps of its nominal instant: such
events come after the others of their instant, in the order they began (the recorded session of
``sessions/protocol_demo`` shows a switch acknowledged after a simultaneous submission). This part
is an approximation: Batsim sometimes sends such an event in a message of its own, at the same
printed time, when the decision process was waiting and the other events had already gone.
A parallel job killed at its walltime ends by its timer, a sleep, in the solver step of the
first thing due at its instant (``_end_wake``); one whose work ends exactly at its walltime is
killed when a submission, a call or an earlier job's end is due first then
(:mod:`hdrm.sim.running`).

With energy accounting (``-E``) a ``delay`` job's end is late too: before it tells the server,
the job's executor asks SimGrid's energy plugin for its hosts' energy (the job's energy and
Batsim's energy trace), and each host whose account is older than the current instant costs a
simcall, one scheduling round each. So under ``-E`` the submissions and requested calls of an
instant come before its ``delay`` job ends, whenever the jobs started; these keep their start
order (checked with the binary for jobs of 1 and 3 hosts) and come before what ends by computing.

Invalid decisions raise :class:`~hdrm.errors.ProtocolError` naming the event, its time and the job.
"""

from __future__ import annotations

import heapq
import logging
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from hdrm.batsim import events as ev
from hdrm.batsim import protocol as p
from hdrm.batsim.hosts import HostBoard
from hdrm.batsim.server_decisions import DecisionHandlers
from hdrm.batsim.jobs import DONE, RUNNING, SUBMITTED, JobTable, ServerJob, job_result
from hdrm.errors import ProtocolError
from hdrm.platform.simgrid import HostSpec
from hdrm.results.records import JobResult
from hdrm.sim.machine import JobEnd

logger = logging.getLogger(__name__)

#: Slack on times read back from 6-decimal messages.
TIME_SLACK_S = 1e-6


@dataclass(frozen=True)
class ServerConfig:
    """What Batsim's command line would set.

    Attributes:
        energy: energy accounting (Batsim's ``-E``): job and total energies, energy QUERY.
        forward_profiles: attach each job's profile to JOB_SUBMITTED
            (``--forward-profiles-on-submission``).
        sched_config: the string passed as ``config["sched-config"]`` (``--sched-cfg``).
        workload_id: the workload's id in job ids (``w0``) when there is one workload; with
            several (:func:`hdrm.batsim.jobs.read_job_tables`) they are w0, w1, ... as in Batsim.
    """

    energy: bool = False
    forward_profiles: bool = False
    sched_config: str = ""
    workload_id: str = "w0"


def _config_block(config: ServerConfig) -> dict[str, Any]:
    return {
        "redis-enabled": False, "redis-hostname": "127.0.0.1", "redis-port": 6379,
        "redis-prefix": "default", "profiles-forwarded-on-submission": config.forward_profiles,
        "dynamic-jobs-enabled": False, "dynamic-jobs-acknowledged": False,
        "profile-reuse-enabled": False, "sched-config": config.sched_config,
        "forward-unknown-events": False,
    }


@dataclass
class _Submitter:
    """One workload's static job submitter (internal): its jobs in submission order, the next one
    to submit, and the wake number of its current sleep."""

    jobs: list[ServerJob]
    wake: int
    next: int = 0

    @property
    def next_s(self) -> float:
        """When its next batch is due (inf once all are submitted)."""
        return self.jobs[self.next].job.submit_s if self.next < len(self.jobs) else math.inf

    def take_batch(self) -> list[ServerJob]:
        """The jobs of its next batch (one submission time), taken."""
        start, batch_s = self.next, self.next_s
        while self.next < len(self.jobs) and self.jobs[self.next].job.submit_s == batch_s:
            self.next += 1
        return self.jobs[start:self.next]


class BatsimSimulation(DecisionHandlers):
    """The simulated system behind a Batsim-protocol session.

    Args:
        hosts: compute hosts in resource order (:func:`hdrm.batsim.hosts.load_hosts`).
        table: the workload (:func:`hdrm.batsim.jobs.read_job_table`).
        config: Batsim options.
    """

    def __init__(self, hosts: Sequence[HostSpec], table: JobTable, config: ServerConfig | None = None):
        self.config = config or ServerConfig()
        self.board = HostBoard(hosts)
        self.board.lazy_energy = self.config.energy
        self.table = table
        self.ready_s = 0.0
        self.sent_now = 0.0
        self.outbox: list[p.Event] = []
        self.ended = False
        self.done = False
        self._pending: list[tuple[float, int, p.Event]] = []
        self._wakes = 0
        # Batsim's submitters, one per workload, started in -w order: each submits its jobs by
        # submission time, ties by job id as text (w0!10 before w0!9), then sleeps (its wake)
        self._subs = [_Submitter(sorted(jobs, key=lambda j: (j.job.submit_s, j.batsim_id)),
                                 self._new_wake()) for jobs in table.by_workload()]
        self._job_wake = [0] * len(table.jobs)
        self._switch_wakes: dict[tuple[tuple[int, ...], int], list[int]] = {}
        if table.jobs:  # where Batsim's consumed_joules begins
            self.board.mark_energy_at(min(sub.next_s for sub in self._subs))
        self._calls: list[tuple[float, int]] = []
        self._notify = "waiting"  # then "due", then "sent"
        self._last_submit_s = 0.0
        self._last_id = ""
        self._last_alone = True  # the last batch's submitter is the only one ending at its time
        self._handlers: dict[str, Callable[[p.Event, float, str], None]] = {
            "EXECUTE_JOB": self._execute, "REJECT_JOB": self._reject,
            "CALL_ME_LATER": self._call_me_later, "KILL_JOB": self._kill,
            "SET_RESOURCE_STATE": self._set_state, "SET_JOB_METADATA": self._metadata,
            "QUERY": self._query,
        }

    # ------------------------------------------------------------------ messages out
    def begin(self) -> p.Message:
        """SIMULATION_BEGINS, the first message."""
        board, cfg = self.board, self.config
        resources = [
            {"id": i, "name": h.name, "state": board.state_name(i),
             "properties": {"role": h.properties.get("role", ""),
                            **{k: v for k, v in h.properties.items() if k != "role"}},
             "zone_properties": {}}
            for i, h in enumerate(board.hosts)
        ]
        data = {
            "nb_resources": board.nb_hosts, "nb_compute_resources": board.nb_hosts,
            "nb_storage_resources": 0, "allow_compute_sharing": False,
            "allow_storage_sharing": True, "config": _config_block(cfg),
            "compute_resources": resources, "storage_resources": [],
            "workloads": dict(self.table.paths),
            "profiles": {w: profiles for w, profiles in self.table.profile_sets.items()},
        }
        return self._send(p.Message(0.0, [p.Event(0.0, "SIMULATION_BEGINS", data)]))

    def next_message(self) -> p.Message | None:
        """The next message to send, or None once the reply to SIMULATION_ENDS was handled.

        Raises:
            ProtocolError: nothing can happen any more while jobs are waiting or running forever.
        """
        if self.done:
            return None
        machine = self.board.machine
        while not self.outbox:
            t = self._next_time()
            if t == math.inf:
                self._check_finished()
                now = max(self.ready_s, self.board.now)
                self.ended = True
                return self._send(p.Message(now, [ev.simulation_ends(now)]))
            steps = machine.parts_begun
            self._collect(max(t, self.ready_s), self.ready_s)
            if machine.parts_begun == steps:  # (a composed job's next part: nothing to send)
                break
        return self._send(p.Message(max(self.ready_s, self.board.now), self.outbox))

    def _send(self, message: p.Message) -> p.Message:
        self.outbox = []
        self.sent_now = message.now
        if self._notify == "due":
            self._notify = "sent"
            self.outbox.append(ev.notify(self._last_submit_s))
        return message

    # ------------------------------------------------------------------ replies in
    def react(self, reply: p.Message) -> None:
        """Apply a reply: each decision at its timestamp, then move time to the reply's ``now``.

        Raises:
            ProtocolError: the reply goes back in time, or a decision is invalid.
        """
        if self.ended:
            if reply.events:
                logger.warning("ignoring %d event(s) sent in reply to SIMULATION_ENDS", len(reply.events))
            self.done = True
            return
        ready = max(self._snap(reply.now), self.board.now)
        for event, where in self._checked_events(reply):
            ts = min(max(self._snap(event.timestamp), self.board.now), ready)
            self._collect(ts)
            self._handlers[event.type](event, ts, where)
        self._collect(ready, ready)
        self.ready_s = ready

    def _checked_events(self, reply: p.Message) -> list[tuple[p.Event, str]]:
        """The reply's events with the text that names each in errors, once the reply's time and
        every event's type and timestamp are known to be acceptable.

        Raises:
            ProtocolError: the reply or an event goes back in time, or an event type is unsupported.
        """
        if reply.now < self.sent_now - TIME_SLACK_S:
            raise ProtocolError(
                f"the reply's now {reply.now!r} is before the message's now {self.sent_now!r}; a "
                "decision process answers at or after the time it was called"
            )
        checked = []
        for i, event in enumerate(reply.events):
            where = f"{event.type} (event {i} of the reply at t={reply.now:.6f})"
            if event.type not in self._handlers:
                raise ProtocolError(
                    f"{where}: hdrm serve does not support {event.type}; it accepts "
                    f"{', '.join(self._handlers)} (dynamic jobs and job messages need the real batsim)"
                )
            if event.timestamp < self.sent_now - TIME_SLACK_S:
                raise ProtocolError(f"{where}: timestamp {event.timestamp!r} is before the message's "
                                    f"now {self.sent_now!r}")
            checked.append((event, where))
        return checked

    def _snap(self, t: float) -> float:
        """A time read back from a 6-decimal message: within a microsecond of ``now``, it is ``now``."""
        return self.sent_now if abs(t - self.sent_now) <= TIME_SLACK_S else max(t, self.sent_now)

    # ------------------------------------------------------------------ internal events
    def _next_time(self) -> float:
        t_sub = min(sub.next_s for sub in self._subs)
        t_call = self._calls[0][0] if self._calls else math.inf
        return min(t_sub, t_call, self.board.next_time())

    def _new_wake(self) -> int:
        """A number for a wait that begins now: simultaneous events come in this order."""
        self._wakes += 1
        return self._wakes

    def _collect(self, t: float, ready_s: float = math.inf) -> None:
        """Advance to ``t`` and queue every event that happened up to ``t``, in Batsim's order.

        Args:
            t: the time to advance to.
            ready_s: from when the decision process waits for a message (sent as soon as the
                events of an instant are in), which decides where NOTIFY goes.
        """
        if t == self.board.now and not self._pending and self._next_time() > t:
            return  # nothing happens: the common case of a decision at the message's time
        sleepers = self._note_sleepers(t)
        first: dict[float, bool] = {}  # instant -> its first thing due is a parallel job's work
        for when, item in self.board.advance(t):
            if isinstance(item, JobEnd):
                job = self.table.jobs[item.key]
                self._ended(job, item, queue=False)
                computed = first.get(when)
                if computed is None:
                    first[when] = when not in sleepers and self._ends_by_computing(item)
                self._push(when, self._end_wake(item, bool(computed)), ev.job_completed(
                    when, job.batsim_id, item.state, p.format_resources(item.cores)))
            else:
                hosts, state = item
                wake = self._switch_wakes[(tuple(hosts), state)].pop(0)
                self._push(when, wake, ev.resource_state_changed(when, p.format_resources(hosts), str(state)))
        self._collect_submissions(t)
        while self._calls and self._calls[0][0] <= t:
            when, wake = heapq.heappop(self._calls)
            self._push(when, wake, ev.requested_call(when))
        pending = self._pending
        pending.sort(key=lambda e: e[:2])
        events = [e[2] for e in pending]
        if self._notify == "due":
            self._place_notify(events, [e[0] for e in pending], ready_s)
        self.outbox.extend(events)
        pending.clear()

    def _note_sleepers(self, t: float) -> set[float]:
        """Tell the machine when submissions and requested calls are due up to ``t``, and
        return those times: their sleeps aim at the exact instant, so they come before the job
        ends of that instant, and a parallel job whose work ends exactly at its walltime then is
        killed at its walltime."""
        machine_note, noted = self.board.machine.note_event, set()

        def note(when: float) -> None:
            machine_note(when)
            noted.add(when)
        for sub in self._subs:
            last = -math.inf
            for i in range(sub.next, len(sub.jobs)):
                when = sub.jobs[i].job.submit_s
                if when > t:
                    break
                if when != last:  # one note per batch
                    note(when)
                    last = when
        for when, _ in self._calls:
            if when <= t:
                note(when)
        return noted

    def _place_notify(self, events: list[p.Event], times: list[float], ready_s: float) -> None:
        """Put NOTIFY behind the events of the last submission's instant (Batsim's submitter says
        goodbye right after its last batch), unless that batch, last of its instant and of the
        only submitter ending then, went out at once to a waiting decision process: then NOTIFY
        opens the next message."""
        last = self._last_submit_s
        k = max(i for i, when in enumerate(times) if when <= last)
        if self._last_alone and ready_s <= last and events[k].type == "JOB_SUBMITTED" \
                and events[k].data["job_id"] == self._last_id:
            return  # _send puts it in the next message
        events.insert(k + 1, ev.notify(last))
        self._notify = "sent"

    def _collect_submissions(self, t: float) -> None:
        """Submit every batch due by ``t``: at one time, the submitter that has waited longest
        first; each sleeps again once its batch is in (a new wake)."""
        subs, forward = self._subs, self.config.forward_profiles
        while True:
            due = [sub for sub in subs if sub.next_s <= t]
            if not due:
                return
            sub = min(due, key=lambda s: (s.next_s, s.wake))
            batch_s, wake = sub.next_s, sub.wake
            for job in sub.take_batch():
                job.state = SUBMITTED
                profile = self.table.profile_of(job) if forward else None
                self._push(batch_s, wake, ev.job_submitted(batch_s, job.batsim_id, job.raw, profile))
            sub.wake = self._new_wake()
            if all(s.next_s == math.inf for s in subs):  # Batsim's NOTIFY: all submitters are done
                self._notify, self._last_submit_s, self._last_id = "due", batch_s, job.batsim_id
                # several submitters ending at this instant: the server's mailbox holds a goodbye
                # whenever it takes a batch, so it sends nothing before the last goodbye (NOTIFY)
                self._last_alone = sum(s.jobs[-1].job.submit_s == batch_s for s in subs) == 1

    def _push(self, when: float, wake: int, event: p.Event) -> None:
        self._pending.append((when, wake, event))

    def _ended(self, job: ServerJob, end: JobEnd, queue: bool = True) -> None:
        job.energy_j = end.energy_j
        self._final(job, end.state, end.finish_s)
        if queue:
            self.outbox.append(ev.job_completed(end.finish_s, job.batsim_id, end.state,
                                               p.format_resources(end.cores)))

    def _final(self, job: ServerJob, state: str, t: float) -> None:
        job.state, job.final_state, job.finish_s = DONE, state, t
        self.table.finished.append(job.batsim_id)

    def _check_finished(self) -> None:
        waiting = self.table.unfinished()
        if not waiting:
            return
        names = ", ".join(repr(j.batsim_id) for j in waiting[:5]) + (", ..." if len(waiting) > 5 else "")
        running = [j for j in waiting if j.state == RUNNING]
        if running:
            raise ProtocolError(
                f"deadlock at t={self.board.now:.6f}: job(s) {names} can never end (their resources "
                "compute at speed 0 in their power state) and nothing else can happen"
            )
        raise ProtocolError(
            f"deadlock at t={self.board.now:.6f}: job(s) {names} were submitted but neither executed "
            "nor rejected, and nothing else can happen; the scheduler must EXECUTE_JOB or REJECT_JOB "
            "every job (or ask for a CALL_ME_LATER)"
        )

    # ------------------------------------------------------------------ results
    def results(self) -> list[JobResult]:
        """out_jobs.csv rows, in the order jobs ended or were rejected."""
        by_id = self.table.by_id
        return [job_result(by_id[j], by_id[j].workload_id, self.config.energy)
                for j in self.table.finished]
