"""Batsim's side of the protocol with the platform's message latencies (:class:`DelayedSimulation`).

On a platform whose links have latency, each of Batsim's internal messages takes time, and
Batsim's server takes them one at a time. The model, measured with the Batsim 4.2.1 binary:

* a sender posts a message to the server's mailbox on the master host; the transfer starts when
  the server is ready to take it (first posted, first taken) and lasts the route's latency
  (:mod:`hdrm.batsim.latency`): it arrives at ``max(posted, previous arrival) + latency``;
* senders: a job's end (posted when it ends, from its first host), each workload's submitter
  (a greeting, its batches, then its goodbye), the actor forwarding a reply's decisions (one at
  a time, each posted when the previous one has arrived and not before its timestamp, then
  SCHED_READY not before the reply's ``now``), a requested call (posted at its date); messages
  posted at one instant (within SimGrid's timing precision) are taken in the order their senders
  began to wait;
* what a message carries takes effect when it arrives: a job starts when its EXECUTE_JOB arrives,
  a job's end is reported when its message arrives (``out_jobs.csv`` keeps the end itself);
* one submitter per workload (``-w`` order), all on the master host; each greets the server, then
  wakes for its first batch at its submission time; it then sleeps for the gap between the next
  submission time and its last wake-up, starting once its (blocking) send is over, so later
  batches arrive two latencies after their time (more when other messages are taken first);
  a batch is every job due by the wake-up (a job due within that delay joins it); the goodbye
  is posted when the last batch has arrived, and the last submitter's goodbye is NOTIFY
  ``no_more_static_job_to_submit``;
* a KILL_JOB takes effect when it arrives; Batsim's killer actor, created then on the master
  host, reports the kill once the forwarding actor's next message is in (a message of its own,
  from the master host), and the server writes the jobs' rows and events when that arrives;
  a job's row is written when its end's message arrives;
* each event file's submitter (:mod:`hdrm.batsim.delayed_events`) greets, sends its batches
  and says goodbye like a workload's; under ``-E`` the first batch of all comes after the other
  messages posted at its instant (Batsim reads every host's energy before sending it);
* the server sends the events it holds to the decision process once the previous reply's
  SCHED_READY has arrived and no message is waiting to be taken; the message's ``now`` is the
  arrival of the last one.

Events are stamped with their arrival time. The physics' clock moves to ends, finished switches
and decisions taking effect only, so hosts are not charged energy for the transfer of the last
messages (Batsim's totals). Everything else (decisions, physics, outputs) is
:class:`~hdrm.batsim.simulator.BatsimSimulation`'s.
"""

from __future__ import annotations

import heapq
import logging
import math
from typing import Any, Sequence

from hdrm.batsim import events as ev
from hdrm.batsim import protocol as p
from hdrm.batsim.delayed_events import EVENTS_BATCH, DelayedEvents
from hdrm.batsim.jobs import SUBMITTED, JobTable, ServerJob
from hdrm.batsim.latency import RouteLatencies
from hdrm.batsim.simulator import BatsimSimulation, ServerConfig
from hdrm.errors import ProtocolError
from hdrm.platform.simgrid import HostSpec
from hdrm.sim.machine import JobEnd

logger = logging.getLogger(__name__)

#: Times this close are one instant for SimGrid (its timing precision, ``precision/timing``): a
#: job's end computed as start + delay may differ from a submitter's wake-up by a rounding error.
SAME_INSTANT_S = 1e-9

#: A wake number carries, above this, where an end ranks late among the events of its instant
#: (:mod:`hdrm.batsim.server_decisions`); whether its message is already waiting when the server
#: looks depends on when its wait began, below.
_LATE_RANKS = 1 << 39

# kinds of message posted to the server
_END, _SWITCHED, _HELLO, _BATCH, _BYE, _DECISION, _READY, _CALL, _KILLED = range(9)


class DelayedSimulation(DelayedEvents, BatsimSimulation):
    """:class:`BatsimSimulation` whose internal messages take the platform's route latencies.

    Args:
        hosts: compute hosts in resource order.
        table: the workload.
        config: Batsim options.
        latencies: route latencies to the master host (:func:`hdrm.batsim.latency.route_latencies`).
    """

    def __init__(self, hosts: Sequence[HostSpec], table: JobTable, config: ServerConfig | None,
                 latencies: RouteLatencies):
        super().__init__(hosts, table, config)
        self.latencies = latencies
        # (time, wake number, latency, kind, what): posted at one time, first come first served
        # in the order their senders began to wait (the wake numbers of BatsimSimulation)
        self._posted: list[tuple[float, int, float, int, Any]] = []
        self._free = 0.0  # when the server takes its next message
        self._sched_ready = False
        self._woken_after = 0  # messages posted after this one answer the last arrival
        self._decisions: list[tuple[float, p.Event, str]] = []
        self._next_decision = 0
        self._reply_now = 0.0
        # each workload's submitter: its last wake-up (the end of its greeting at first)
        self._wake_s = [0.0] * len(self._subs)
        self._byes = 0
        for index in range(len(self._subs)):  # started in -w order, each greets the server
            self._post(0.0, latencies.master_s, _HELLO, index)
        self._greet_event_submitters()  # then the event files' (hdrm.batsim.delayed_events)

    def _post(self, t: float, latency: float, kind: int, what: Any, wake: int | None = None) -> None:
        """A sender posts a message at ``t``; ``wake`` numbers when its wait began (default: now)."""
        heapq.heappush(self._posted, (t, self._new_wake() if wake is None else wake, latency, kind, what))

    # ------------------------------------------------------------------ the server's loop
    def next_message(self) -> p.Message | None:
        """The next message to send, or None once the reply to SIMULATION_ENDS was handled."""
        if self.done:
            return None
        while True:
            if self._sched_ready and self.outbox and not self._waiting():
                self._sched_ready = False
                return self._send(p.Message(self._free, self.outbox))
            t = self._first_posted()
            if t == math.inf:
                if self.outbox:  # only while SCHED_READY is on its way: cannot happen
                    raise ProtocolError("internal: events held with no reply pending")
                self._check_finished()
                self.ended = True
                now = max(self._free, self.board.now)
                return self._send(p.Message(now, [ev.simulation_ends(now)]))
            self._take(max(self._free, t))

    def _waiting(self) -> bool:
        """Whether a message is waiting to be taken: posted before the last arrival, or at that
        time by a sender other than the one the arrival woke (its next message comes after the
        server has looked at its mailbox)."""
        free = self._free
        self._advance(free + SAME_INSTANT_S)
        for posted_s, wake, *_ in self._posted:
            if posted_s < free - SAME_INSTANT_S:
                return True
            if posted_s <= free + SAME_INSTANT_S and wake % _LATE_RANKS <= self._woken_after:
                return True
        return False

    def _first_posted(self) -> float:
        head = self._posted[0][0] if self._posted else math.inf
        return min(head, self.board.next_time())

    def _advance(self, t: float, clock: bool = False) -> None:
        """Post the message of each end or finished switch due by ``t``; the physics' clock moves
        only to such events, or to ``t`` with ``clock`` (a decision taking effect): hosts are not
        charged for the time the last messages take, as in Batsim."""
        board = self.board
        while (t_next := board.next_time()) <= t:
            for when, item in board.advance(t_next):
                if isinstance(item, JobEnd):
                    self._post_end(when, item)
                else:
                    wake = self._switch_wakes[(tuple(item[0]), item[1])].pop(0)
                    self._post(when, self.latencies.host_s[item[0][0]], _SWITCHED, item, wake)
        if clock and t > board.now:
            board.advance(t)

    def _post_end(self, when: float, end: JobEnd) -> None:
        """A job's end: its row is final, written when its message reaches the server (rows
        come in the order ends arrive); its message leaves its first host."""
        self._ended(self.table.jobs[end.key], end, queue=False)
        self.table.finished.pop()  # (appended again on arrival: _handle)
        self._post(when, self.latencies.host_s[end.cores[0]], _END, end, self._end_wake(end))

    def _take(self, t: float) -> None:
        """The server takes the first message posted by ``t`` and handles it on arrival."""
        self._advance(t + SAME_INSTANT_S)
        if not self._posted or self._posted[0][0] > t + SAME_INSTANT_S:
            return  # (a composed job's next part began: nothing posted by t)
        posted_s, _, latency, kind, what = self._pop_first()
        arrival = max(posted_s, self._free) + latency
        self._advance(arrival)  # ends due by then are posted (after this message)
        self._free = arrival
        self._woken_after = self._wakes
        self._handle(kind, what, arrival)

    def _pop_first(self) -> tuple[float, int, float, int, Any]:
        """The first message posted: the earliest, and of those posted at one instant (SimGrid's
        timing precision), the one whose sender began to wait first; but an end ranked late
        (energy queries, or computing) comes after the sleeps of its instant (batches, calls)."""
        posted = self._posted
        last_s = posted[0][0] + SAME_INSTANT_S
        same = [item for item in posted if item[0] <= last_s]
        first = min(same, key=lambda item: item[1] % _LATE_RANKS)
        if first[1] >= _LATE_RANKS:
            sleeps = [item for item in same if item[3] in (_BATCH, _CALL, EVENTS_BATCH)]
            if sleeps:
                first = min(sleeps, key=lambda item: item[1])
        posted.remove(first)
        heapq.heapify(posted)
        return first

    def _handle(self, kind: int, what: Any, now: float) -> None:
        if kind == _END:
            job = self.table.jobs[what.key]
            self.table.finished.append(job.batsim_id)
            self.outbox.append(ev.job_completed(now, job.batsim_id, what.state, p.format_resources(what.cores)))
        elif kind == _SWITCHED:
            hosts, state = what
            self.outbox.append(ev.resource_state_changed(now, p.format_resources(hosts), str(state)))
        elif kind == _HELLO:
            self._wake_s[what] = now
            self._sleep_until_batch(what, now)
        elif kind == _BATCH:
            self._submit(*what, now)
        elif kind == _BYE:
            self._byes += 1
            if self._byes == len(self._subs):  # Batsim's NOTIFY: every submitter said goodbye
                self.outbox.append(ev.notify(now))
        elif kind == _DECISION:
            self._decide(now)
        elif kind == _READY:
            self._sched_ready = True
        elif kind == _CALL:
            self.outbox.append(ev.requested_call(now))
        elif kind == _KILLED:  # the kill's messages, stamped when they reach the server
            self.outbox.extend(p.Event(now, e.type, e.data) for e in what[0])
            self.table.finished.extend(what[1])
        else:
            self._handle_events(kind, what, now)

    def _submit(self, index: int, jobs: list[ServerJob], now: float) -> None:
        """Submitter ``index``'s batch arrived: submit its jobs; the submitter sleeps for its next
        batch, or says goodbye."""
        forward = self.config.forward_profiles
        for job in jobs:
            job.state = SUBMITTED
            profile = self.table.profile_of(job) if forward else None
            self.outbox.append(ev.job_submitted(now, job.batsim_id, job.raw, profile))
        self._sleep_until_batch(index, now)

    def _sleep_until_batch(self, index: int, now: float) -> None:
        """Submitter ``index``'s send ended at ``now``: it sleeps for the gap between its next
        job's time and its last wake-up, then posts every job due by its wake-up as one batch
        (Batsim compares submission times with its clock, so a job due within the latencies
        that delayed it joins the batch); or it says goodbye."""
        sub = self._subs[index]
        if sub.next_s == math.inf:
            self._post(now, self.latencies.master_s, _BYE, None)
            return
        last_s = self._wake_s[index]
        # the sleep ends as long after the job's time as the send took (now - last_s): summed in
        # this order, never before the job's time (now + (next - last) may round below it, and
        # the job would start before its submission; in Batsim, the send's 1-byte term keeps it
        # after)
        wake_s = sub.next_s + (now - last_s) if sub.next_s > last_s else now
        self._wake_s[index] = wake_s
        first, jobs = sub.next, sub.jobs
        sub.next += 1  # the job it woke for, then those due by then
        while sub.next < len(jobs) and jobs[sub.next].job.submit_s <= wake_s:
            sub.next += 1
        # under -E the first batch of all waits for Batsim to read every host's energy, and
        # goes after the other messages posted at its instant (hdrm.batsim.event_order._rank)
        late = self.config.energy and not self._first_read
        self._first_read = True
        self._post(wake_s, self.latencies.master_s, _BATCH, (index, jobs[first:sub.next]),
                   self._new_wake() + (_LATE_RANKS if late else 0))

    # ------------------------------------------------------------------ replies
    def react(self, reply: p.Message) -> None:
        """Queue a reply's decisions; each takes effect when its message reaches the server.

        Raises:
            ProtocolError: the reply goes back in time, or names an unsupported event.
        """
        if self.ended:
            super().react(reply)
            return
        checked = self._checked_events(reply)
        self._reply_now = self._snap(reply.now)
        self._decisions = [(self._snap(event.timestamp), event, where) for event, where in checked]
        self._next_decision = 0
        self._post_decision(self.sent_now)

    def _post_decision(self, now: float) -> None:
        """The forwarding actor sends the next decision (or SCHED_READY) once ``now`` is reached."""
        master = self.latencies.master_s
        if self._next_decision < len(self._decisions):
            ts = self._decisions[self._next_decision][0]
            self._post(max(ts, now), master, _DECISION, None)
        else:
            self._post(max(self._reply_now, now), master, _READY, None)

    def _decide(self, now: float) -> None:
        _, event, where = self._decisions[self._next_decision]
        self._next_decision += 1
        self._advance(now, clock=True)
        if event.type == "CALL_ME_LATER":
            at = float(event.data["timestamp"])
            if at < now:
                logger.warning("%s: CALL_ME_LATER for %g s, already past: calling back now", where, at)
            self._post(max(at, now), self.latencies.master_s, _CALL, None)
        else:
            held, rows = len(self.outbox), len(self.table.finished)
            self._handlers[event.type](event, now, where)
            if event.type == "SET_RESOURCE_STATE":
                self._acknowledge_now(now)
            elif event.type == "KILL_JOB":  # Batsim's killer actor, created on the server's
                # host once the forwarding actor has posted its next message, kills at once
                # and reports (KILLING_DONE) over the master host's route; the server writes
                # the jobs' rows when that arrives
                killed = (self.outbox[held:], self.table.finished[rows:])
                del self.outbox[held:], self.table.finished[rows:]
                self._post_decision(now)
                self._post(now, self.latencies.master_s, _KILLED, killed)
                return
        self._post_decision(now)

    def _acknowledge_now(self, now: float) -> None:
        """A change between computation states is done when the server handles it, which writes
        RESOURCE_STATE_CHANGED at once (Batsim 4.2.1's server_on_set_resource_state): no message
        from the hosts, so no latency (a switch to or from sleep still waits for its hosts)."""
        for when, item in self.board.advance(now):  # this decision's immediate switches
            if isinstance(item, JobEnd):  # (a job it re-timed to end right now)
                self._post_end(when, item)
                continue
            hosts, state = item
            self._switch_wakes[(tuple(hosts), state)].pop(0)
            self.outbox.append(ev.resource_state_changed(when, p.format_resources(hosts),
                                                         str(state)))
