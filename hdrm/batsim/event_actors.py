"""Batsim 4.2.1's event submitters as actors of :class:`~hdrm.batsim.actors.ActorSimulation`.

``static_event_submitter_process`` (``event_submitter.cpp``), one per ``--events`` file, runs on
the master host, started after the workloads' job submitters: it greets the server, sends the
events of each timestamp as one message and sleeps for the gap to the next timestamp, measured
from its last wake-up (Batsim keeps the dates as long doubles), then says goodbye. The server
(``server_on_event_occurred``) turns each event into a NOTIFY and changes the machines'
availability; once every event submitter has said goodbye it queues NOTIFY
``no_more_external_event_to_occur``, and SIMULATION_ENDS waits for that (see
:mod:`hdrm.batsim.external_events` for the files, the NOTIFY payloads and the refusals).

The simulation provides ``maestro``, ``_put``, ``_sync``, ``_early``, ``_event_subs``,
``availability``, ``board``, ``traces`` (Batsim's machine states,
:mod:`hdrm.batsim.outputs_machines`) and the server's ``_queued`` events.
"""

from __future__ import annotations

import numpy as np

from hdrm.batsim import events as ev
from hdrm.batsim.actor_jobs import MASTER, Steps
from hdrm.batsim.external_events import MACHINE_UNAVAILABLE, NO_MORE_EVENTS, ExternalEvent
from hdrm.batsim.maestro import SLEEP


class EventActors:
    """The event submitters' actor and the server's handling of their messages."""

    _event_byes = 0

    def _spawn_event_submitters(self) -> None:
        for i, esub in enumerate(self._event_subs):
            self.maestro.spawn(self._event_submitter(i, esub.events))

    def _event_submitter(self, index: int, events: list[ExternalEvent]) -> Steps:
        """static_event_submitter_process."""
        yield from self._put(("EVENTS_HELLO", index), MASTER)
        current = np.longdouble(self.maestro.now)
        batch: list[ExternalEvent] = []
        for event in events:
            due = np.longdouble(event.timestamp_s)
            if due > current:
                if batch:
                    yield from self._put(("EVENTS", batch), MASTER)
                batch = []
                yield (SLEEP, float(due - current), MASTER)
                current = np.longdouble(self.maestro.now)
            batch.append(event)
        if batch:
            yield from self._put(("EVENTS", batch), MASTER)
        yield from self._put(("EVENTS_BYE", index), MASTER)

    def _events_done(self) -> bool:
        """Every event submitter has said goodbye (part of is_simulation_finished)."""
        return self._event_byes == len(self._event_subs)

    def _handle_events(self, message: tuple, now: float) -> None:
        """server_on_event_occurred and the event submitters' goodbyes."""
        kind = message[0]
        if kind == "EVENTS":
            self._sync()
            job_on, early = self.board.machine.job_on, self._early.values()

            def busy(h: int) -> bool:  # a job computes on it (its executor has not ended)
                return job_on[h] != -1 or any(h in end.cores for end in early)
            traces = getattr(self, "traces", None)
            for event in message[1]:
                self.availability.apply(event, now, lambda h: "computing" if busy(h)
                                        else self.board.switch_state_name(h))
                self._queued.append(event.notify(now))
                if traces is not None:  # the time_* columns (Batsim writes no state row here)
                    from hdrm.batsim.outputs_machines import COMPUTING, IDLE, UNAVAILABLE
                    down = event.type == MACHINE_UNAVAILABLE
                    for h in event.resources:
                        traces.set_state(now, h, UNAVAILABLE if down else
                                         COMPUTING if busy(h) else IDLE)
        elif kind == "EVENTS_BYE":
            self._event_byes += 1
            if self._events_done():
                self._queued.append(ev.notify(now, NO_MORE_EVENTS))
