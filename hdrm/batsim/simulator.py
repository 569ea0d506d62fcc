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
  ``now`` is that ``now``: messages carry six decimals, the simulation keeps exact times); events
  that happen in between (a submission, a job end) are sent with the next message, stamped with
  their own time;
* events at one instant go in one message, in the order in which what they wait for began
  (:mod:`hdrm.batsim.event_order`); NOTIFY ``no_more_static_job_to_submit`` follows the events of
  the last submission's instant, or opens the next message when the last submission was sent at
  once on its own; and SIMULATION_ENDS comes once every job has ended or been rejected and no call
  or state change is pending.

The order of the events of one instant (Batsim's actors waking up) is
:class:`~hdrm.batsim.event_order.EventOrder`'s; the decisions of a reply are applied by
:class:`~hdrm.batsim.server_decisions.DecisionHandlers`.

Invalid decisions raise :class:`~hdrm.errors.ProtocolError` naming the event, its time and the job.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from hdrm.batsim import events as ev
from hdrm.batsim import protocol as p
from hdrm.batsim.dynamic_jobs import DynamicJobs
from hdrm.batsim.event_order import EventOrder, Submitter
from hdrm.batsim.external_events import (NO_MORE_EVENTS, Availability, EventSubmitter,
                                          read_event_files)
from hdrm.batsim.hosts import HostBoard
from hdrm.batsim.jobs import DONE, RUNNING, JobTable, ServerJob, job_result
from hdrm.batsim.server_decisions import DecisionHandlers
from hdrm.batsim.zone_properties import resource_properties
from hdrm.errors import ProtocolError, SessionDeadlock
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
        storage: the platform's storage hosts (role=storage, by name), which SIMULATION_BEGINS
            lists after the compute hosts (:func:`hdrm.batsim.platform_hosts.load_served_hosts`);
            they run no job.
        events: external event files (``--events``, :mod:`hdrm.batsim.external_events`).
        forward_unknown_events: forward events of types other than the machine events
            (``--forward-unknown-events``; Batsim ignores it without event files).
        dynamic_jobs: the decision process may register jobs and profiles
            (``--enable-dynamic-jobs``; :mod:`hdrm.batsim.dynamic_jobs`).
        ack_dynamic_jobs: a registered job is acknowledged with JOB_SUBMITTED
            (``--acknowledge-dynamic-jobs``).
        profile_reuse: profiles are not garbage collected when their jobs end
            (``--enable-profile-reuse``; needs ``dynamic_jobs``, as in Batsim).
        mmax: keep the first ``mmax`` compute hosts only (``--mmax``; 0: all;
            :mod:`hdrm.batsim.machine_limit`).
        mmax_workload: keep at most the largest ``nb_res`` of the workloads
            (``--mmax-workload``).
    """

    energy: bool = False
    forward_profiles: bool = False
    sched_config: str = ""
    workload_id: str = "w0"
    storage: tuple[HostSpec, ...] = ()
    events: tuple[str, ...] = ()
    forward_unknown_events: bool = False
    dynamic_jobs: bool = False
    ack_dynamic_jobs: bool = False
    profile_reuse: bool = False
    mmax: int = 0
    mmax_workload: bool = False


def _config_block(config: ServerConfig) -> dict[str, Any]:
    return {
        "redis-enabled": False, "redis-hostname": "127.0.0.1", "redis-port": 6379,
        "redis-prefix": "default", "profiles-forwarded-on-submission": config.forward_profiles,
        "dynamic-jobs-enabled": config.dynamic_jobs,
        "dynamic-jobs-acknowledged": config.ack_dynamic_jobs,
        "profile-reuse-enabled": config.dynamic_jobs and config.profile_reuse,
        "sched-config": config.sched_config,
        "forward-unknown-events": config.forward_unknown_events and bool(config.events),
    }


class BatsimSimulation(EventOrder, DecisionHandlers, DynamicJobs):
    """The simulated system behind a Batsim-protocol session.

    Args:
        hosts: compute hosts in resource order (:func:`hdrm.batsim.platform_hosts.load_hosts`).
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
        self._subs = [Submitter(sorted(jobs, key=lambda j: (j.job.submit_s, j.batsim_id)),
                                 self._new_wake()) for jobs in table.by_workload()]
        # then one submitter per event file (we0, we1, ...), started after the workloads' ones
        cfg = self.config
        self._event_subs = [EventSubmitter(events, self._new_wake()) for events in
                            read_event_files(cfg.events, cfg.forward_unknown_events, len(hosts))]
        self.availability = Availability([h.name for h in hosts])
        # NOTIFY no_more_external_event_to_occur: "waiting", then "due", then "sent"; at time 0
        # ("start") when every file is empty
        empty = all(not s.events for s in self._event_subs)
        self._events_bye = "none" if not cfg.events else "start" if empty else "waiting"
        self._events_last: tuple[float, p.Event | None] = (0.0, None)
        self._events_alone = False
        self._first_read = False  # the first submission's energy reading (event_order._rank)
        self._last_rank = self._events_rank = 0  # the wakes of the submitters' last batches
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
            "QUERY": self._query, "REGISTER_JOB": self._register_job,
            "REGISTER_PROFILE": self._register_profile, "NOTIFY": self._notify_scheduler,
        }
        self._init_dynamic()

    # ------------------------------------------------------------------ messages out
    def begin(self) -> p.Message:
        """SIMULATION_BEGINS, the first message."""
        board, cfg = self.board, self.config
        resources = [  # zone_properties: read with the hosts (platform_hosts.load_hosts)
            {"id": i, "name": h.name, "state": board.state_name(i),
             "properties": resource_properties(dict(h.properties)),
             "zone_properties": dict(h.zone_properties)}
            for i, h in enumerate(board.hosts)
        ]
        storage = [  # Batsim numbers them after the compute hosts; they stay idle
            {"id": board.nb_hosts + i, "name": h.name, "state": "idle",
             "properties": resource_properties(dict(h.properties)),
             "zone_properties": dict(h.zone_properties)}
            for i, h in enumerate(cfg.storage)
        ]
        data = {
            "nb_resources": board.nb_hosts + len(storage), "nb_compute_resources": board.nb_hosts,
            "nb_storage_resources": len(storage), "allow_compute_sharing": False,
            "allow_storage_sharing": True, "config": _config_block(cfg),
            "compute_resources": resources, "storage_resources": storage,
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
                self._check_registration_closed()
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
        if self.config.dynamic_jobs:
            self._collect_profiles()
        if self._notify == "due":
            self._notify = "sent"
            self.outbox.append(ev.notify(self._last_submit_s))
        if self._events_bye == "due":
            self._events_bye = "sent"
            self.outbox.append(ev.notify(self._events_last[0], NO_MORE_EVENTS))
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
        self._reply_read(reply)
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
                    f"{', '.join(self._handlers)} (job messages need the real batsim)"
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
            raise SessionDeadlock(
                f"deadlock at t={self.board.now:.6f}: job(s) {names} can never end (their resources "
                "compute at speed 0 in their power state) and nothing else can happen"
            )
        raise SessionDeadlock(
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
