"""The order of the events of one instant, as Batsim 4.2.1 sends them to the decision process.

:class:`EventOrder` is the part of :class:`~hdrm.batsim.simulator.BatsimSimulation` that advances
the hosts to a time and queues every event that happened up to it (job ends, state changes,
submissions by the workloads' submitters, requested calls, NOTIFY) in Batsim's order.

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

External events (``--events``, :mod:`hdrm.batsim.external_events`) come from one more submitter
per event file, started after the workloads' ones: it sleeps towards each timestamp and sends
that timestamp's events as one batch, as a workload's submitter does, so its events rank among
the others of their instant by when its sleep began; NOTIFY ``no_more_external_event_to_occur``
is placed as ``no_more_static_job_to_submit`` is, the two goodbyes in the order of their
submitters' last batches (neither alone when both end at one instant). Under ``-E`` the first
job batch after time 0 ranks last among the sleeps of its instant (:meth:`EventOrder._rank`):
Batsim reads every host's energy before sending it, a simcall per stale account, while the
other submitters send theirs and sleep again. Against the binary on 64 seeded sessions this
model sent the same messages on 60 (41 before that rule); the 4 others have two workloads whose
first batches fall at one time T > 0 (above). The actor model (:mod:`hdrm.batsim.event_actors`)
sent the same messages on 64/64.

The simulation provides ``board`` (:class:`~hdrm.batsim.hosts.HostBoard`), ``table``, ``config``,
``outbox``, ``_pending``, ``_wakes``, ``_subs``, ``_calls``, ``_switch_wakes``, the NOTIFY
bookkeeping (``_notify``, ``_last_submit_s``, ``_last_id``, ``_last_alone``), the event files'
submitters and theirs (``_event_subs``, ``availability``, ``_events_bye``, ``_events_last``,
``_events_alone``), ``_ended`` and the
wake ranks of job ends (``_end_wake``, ``_ends_by_computing``:
:class:`~hdrm.batsim.server_decisions.DecisionHandlers`).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

from hdrm.batsim import events as ev
from hdrm.batsim import protocol as p
from hdrm.batsim.external_events import NO_MORE_EVENTS, EventSubmitter
from hdrm.batsim.jobs import SUBMITTED, ServerJob
from hdrm.sim.machine import JobEnd


@dataclass
class Submitter:
    """One workload's static job submitter: its jobs in submission order, the next one to
    submit, and the wake number of its current sleep."""

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


class EventOrder:
    """Advancing time and queueing the events of each instant in Batsim's order."""

    def _next_time(self) -> float:
        t_sub = min((sub.next_s for sub in self._subs), default=math.inf)
        t_call = self._calls[0][0] if self._calls else math.inf
        t_event = min((sub.next_s for sub in self._event_subs), default=math.inf)
        if self._events_bye == "start":
            t_event = 0.0  # every event file is empty: their submitters say goodbye at once
        return min(t_sub, t_call, t_event, self.board.next_time())

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
                self._push(when, wake, ev.resource_state_changed(
                    when, p.format_resources(hosts), str(state)))
        self._collect_submissions(t)
        if self._events_bye == "start":  # (after the job submitters' greetings at time 0)
            self._events_bye = "sent"
            self._push(0.0, self._event_subs[-1].wake, ev.notify(0.0, NO_MORE_EVENTS))
        while self._calls and self._calls[0][0] <= t:
            when, wake = heapq.heappop(self._calls)
            self._push(when, wake, ev.requested_call(when))
        pending = self._pending
        pending.sort(key=lambda e: e[:2])
        events = [e[2] for e in pending]
        events_first = self._events_bye == "due" and self._events_rank < self._last_rank
        if events_first and events:  # the goodbyes in the order of their last batches
            self._place_events_bye(events, ready_s)
        if self._notify == "due":
            self._place_notify(events, [e.timestamp for e in events], ready_s)
        if self._events_bye == "due" and events and not events_first:
            self._place_events_bye(events, ready_s)
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
        for esub in self._event_subs:  # an event file's submitter sleeps as a workload's does
            for event in esub.events[esub.next:]:
                if event.timestamp_s > t:
                    break
                if event.timestamp_s not in noted:
                    note(event.timestamp_s)
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
            due_events = [esub for esub in self._event_subs if esub.next_s <= t]
            if not due and not due_events:
                return
            sub = min(due + due_events, key=lambda s: (s.next_s, self._rank(s)))
            if isinstance(sub, EventSubmitter):
                self._occur(sub)
                continue
            batch_s, wake = sub.next_s, self._rank(sub)
            self._first_read = self._first_read or self.config.energy
            for job in sub.take_batch():
                job.state = SUBMITTED
                profile = self.table.profile_of(job) if forward else None
                self._push(batch_s, wake,
                           ev.job_submitted(batch_s, job.batsim_id, job.raw, profile))
            sub.wake = self._new_wake()
            if all(s.next_s == math.inf for s in subs):  # Batsim's NOTIFY: all submitters are done
                self._notify, self._last_submit_s, self._last_id = "due", batch_s, job.batsim_id
                # several submitters ending at this instant: the server's mailbox holds a goodbye
                # whenever it takes a batch, so it sends nothing before the last goodbye (NOTIFY)
                self._last_alone = sum(s.jobs[-1].job.submit_s == batch_s for s in subs) == 1 \
                    and not any(e.events and e.last_s == batch_s for e in self._event_subs)
                self._last_rank = wake

    def _rank(self, sub: Submitter | EventSubmitter) -> int:
        """Where a submitter's next batch ranks among the events of its instant: by its wake;
        under ``-E`` the first job batch after time 0 last among the sleeps (Batsim reads every
        host's energy first, a simcall per stale account, while the others send theirs)."""
        if (self.config.energy and not self._first_read and isinstance(sub, Submitter)
                and sub.next_s > 0):
            return sub.wake + (1 << 39)
        return sub.wake

    def _occur(self, esub: EventSubmitter) -> None:
        """Send an event file's next batch (one timestamp): each event changes the machines'
        availability and becomes a NOTIFY; its submitter sleeps again (a new wake), and says
        goodbye after its last batch (NOTIFY ``no_more_external_event_to_occur`` once every
        event file's submitter has)."""
        batch_s, wake = esub.next_s, esub.wake
        board = self.board
        job_on = board.machine.job_on
        for event in esub.take_batch():
            self.availability.apply(event, batch_s, lambda h: "computing" if job_on[h] != -1
                                    else board.switch_state_name(h))
            notify = event.notify(batch_s)
            self._push(batch_s, wake, notify)
        esub.wake = self._new_wake()
        if all(s.next_s == math.inf for s in self._event_subs):
            self._events_bye, self._events_last = "due", (batch_s, notify)
            self._events_alone = sum(s.last_s == batch_s for s in self._event_subs) == 1 \
                and not any(sub.jobs and sub.jobs[-1].job.submit_s == batch_s
                            for sub in self._subs)
            self._events_rank = wake

    def _place_events_bye(self, events: list[p.Event], ready_s: float) -> None:
        """Put NOTIFY ``no_more_external_event_to_occur`` as :meth:`_place_notify` puts
        ``no_more_static_job_to_submit``: behind the events of the last batch's instant, or at
        the head of the next message when that batch, last of its instant, went out at once."""
        last, last_event = self._events_last
        k = max(i for i, e in enumerate(events) if e.timestamp <= last)
        if self._events_alone and ready_s <= last and events[k] is last_event:
            return  # _send puts it in the next message
        events.insert(k + 1, ev.notify(last, NO_MORE_EVENTS))
        self._events_bye = "sent"

    def _push(self, when: float, wake: int, event: p.Event) -> None:
        self._pending.append((when, wake, event))

