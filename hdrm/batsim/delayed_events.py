"""External event files (``--events``) in :class:`~hdrm.batsim.delayed.DelayedSimulation`, where
Batsim's internal messages take the platform's route latencies.

Each event file has its own submitter on the master host (Batsim 4.2.1's
``static_event_submitter_process``), started after the workloads' job submitters: it greets the
server, then, like a job submitter, wakes for its first batch at its first timestamp and sleeps
for the gap between its next timestamp and its last wake-up once its (blocking) send is over; a
batch is every event due by its wake-up; after its last batch it says goodbye. Each message
takes the master host's latency and is handled when it arrives: the events change the machines'
availability and become NOTIFYs stamped with the arrival; once every event submitter's goodbye
has arrived, NOTIFY ``no_more_external_event_to_occur`` follows.

The simulation provides ``_event_subs`` (:class:`~hdrm.batsim.external_events.EventSubmitter`),
``availability``, ``board``, ``outbox``, ``latencies`` and ``_post``.
"""

from __future__ import annotations

import math
from typing import Any

from hdrm.batsim import events as ev
from hdrm.batsim.external_events import NO_MORE_EVENTS

# kinds of message an event submitter posts to the server (after DelayedSimulation's own)
EVENTS_HELLO, EVENTS_BATCH, EVENTS_BYE = 100, 101, 102


class DelayedEvents:
    """The event submitters' messages and their handling on arrival."""

    def _greet_event_submitters(self) -> None:
        """Each event file's submitter greets the server at time 0 (after the job submitters);
        the base model's own goodbye is turned off (this one sends it on arrival)."""
        self._events_bye = "none"
        self._events_wake_s = [0.0] * len(self._event_subs)
        self._events_byes = 0
        for index in range(len(self._event_subs)):
            self._post(0.0, self.latencies.master_s, EVENTS_HELLO, index)

    def _handle_events(self, kind: int, what: Any, now: float) -> None:
        """An event submitter's message arrived at ``now``."""
        if kind == EVENTS_HELLO:
            self._events_wake_s[what] = now
        elif kind == EVENTS_BATCH:
            index, events = what
            board = self.board
            job_on = board.machine.job_on
            for event in events:
                self.availability.apply(event, now, lambda h: "computing" if job_on[h] != -1
                                        else board.switch_state_name(h))
                self.outbox.append(event.notify(now))
            what = index
        else:
            self._events_byes += 1
            if self._events_byes == len(self._event_subs):
                self.outbox.append(ev.notify(now, NO_MORE_EVENTS))
            return
        self._sleep_until_events(what, now)

    def _sleep_until_events(self, index: int, now: float) -> None:
        """Event submitter ``index``'s send ended at ``now``: it sleeps for its next batch (every
        event due by its wake-up), or says goodbye."""
        esub = self._event_subs[index]
        master = self.latencies.master_s
        if esub.next_s == math.inf:
            self._post(now, master, EVENTS_BYE, index)
            return
        last_s = self._events_wake_s[index]
        wake_s = esub.next_s + (now - last_s) if esub.next_s > last_s else now
        self._events_wake_s[index] = wake_s
        first, events = esub.next, esub.events
        while esub.next < len(events) and events[esub.next].timestamp_s <= wake_s:
            esub.next += 1
        esub.next = max(esub.next, first + 1)
        self._post(wake_s, master, EVENTS_BATCH, (index, events[first:esub.next]))
