"""Jobs and profiles a decision process registers during a session, as Batsim 4.2.1 takes them.

:class:`DynamicJobs` is the part of :class:`~hdrm.batsim.simulator.BatsimSimulation` that applies
REGISTER_PROFILE, REGISTER_JOB and the scheduler's NOTIFY (``registration_finished``,
``continue_registration``), with Batsim's options (``--enable-dynamic-jobs``,
``--acknowledge-dynamic-jobs``, ``--enable-profile-reuse``: :class:`ServerConfig` fields
``dynamic_jobs``, ``ack_dynamic_jobs``, ``profile_reuse``). What Batsim 4.2.1 does, read in its
``src/protocol.cpp``, ``server.cpp``, ``jobs.cpp``, ``profiles.cpp`` and checked with the binary:

* a registration without ``--enable-dynamic-jobs``, or once the decision process said
  ``registration_finished``, aborts Batsim; Batsim reads each event of a reply while its server
  handles the one before, so a NOTIFY counts from the second event after it;
* REGISTER_PROFILE adds a profile to a workload, creating the workload when its name is new;
  a name the workload already has (or had) aborts Batsim;
* REGISTER_JOB ``"wl!name"`` needs the workload (a static one or one a profile created) and its
  profile there; the job is submitted at once (its ``subtime`` is only written in
  out_jobs.csv), and with ``--acknowledge-dynamic-jobs`` Batsim sends JOB_SUBMITTED back at the
  event's time (with the profile under ``--forward-profiles-on-submission``); an id already
  registered aborts Batsim;
* profiles are garbage collected: once a message carrying a job's end (or following its
  rejection) is sent, its profile (and a sequence's parts) can no longer be named by a new job
  (Batsim aborts: "it existed some time ago but is no longer accessible"), unless
  ``--enable-profile-reuse``; the first event of the reply to that message still finds it;
* a registered job's row in out_jobs.csv comes when it ends, as a static job's: ``job_id`` its
  name, ``workload_name`` its workload, ``submission_time`` its ``subtime`` (not the time it
  was registered);
* with dynamic jobs, SIMULATION_ENDS waits for ``registration_finished`` (and
  ``continue_registration`` takes it back).

hdrm serve also refuses, in one line, what it cannot run: a dynamic job whose profile needs
SimGrid's network model in a session that does not use it, a profile type it does not simulate,
and a sequence registered during the session (Batsim 4.2.1 resolves a sequence's parts only when
it loads a workload file, and crashes running such a job).

The simulation provides ``table`` (:class:`~hdrm.batsim.jobs.JobTable`), ``config``, ``outbox``
and ``_job_wake``.
"""

from __future__ import annotations

import re
from typing import Any

from hdrm.batsim import events as ev
from hdrm.batsim import protocol as p
from hdrm.batsim.jobs import SUBMITTED, ServerJob, check_batsim_json, check_simulable, network_need
from hdrm.errors import ProtocolError, SessionDeadlock, WorkloadError
from hdrm.workload.batsim_json import workload_from_dict

#: NOTIFY types a decision process sends about registration.
REGISTRATION_FINISHED, CONTINUE_REGISTRATION = "registration_finished", "continue_registration"


class DynamicJobs:
    """The registration handlers and the garbage collection of profiles."""

    def _init_dynamic(self) -> None:
        #: each workload's profiles by name (the table's own dicts, registered ones added)
        self._gone: dict[str, set[str]] = {w: set() for w in self.table.profile_sets}
        self._registering = True  # until registration_finished
        self._collected = 0  # table.finished[:_collected]: their profiles are collected
        self._gone_before: dict[str, set[str]] = {}  # _gone before the last collection
        self._events: list[p.Event] = []  # the reply being applied
        self._notified: tuple[p.Event | None, bool] = (None, True)  # last NOTIFY, state before
        self._sequences: set[tuple[str, str]] = set()  # sequences registered in the session

    # ------------------------------------------------------------------ handlers
    def _register_profile(self, event: p.Event, ts: float, where: str) -> None:
        self._check_registration(event, where, "profile")
        data = event.data
        workload, name, profile = data["workload_name"], data["profile_name"], data["profile"]
        sets = self.table.profile_sets
        if workload not in sets:  # Batsim creates a dynamic workload
            sets[workload], self._gone[workload] = {}, set()
        if name in sets[workload]:
            raise ProtocolError(f"{where}: profile {name!r} already exists (or existed) in "
                                f"workload {workload!r}, which Batsim 4 refuses; register it "
                                "under a new name")
        if not isinstance(profile.get("type"), str):
            raise ProtocolError(f"{where}: profile {name!r} has no string 'type', which Batsim 4 "
                                "refuses")
        try:
            check_batsim_json({"profiles": {name: profile}}, where)
        except WorkloadError as exc:
            raise ProtocolError(str(exc)) from None
        if profile["type"] == "composed":
            self._sequences.add((workload, name))  # (see _check_profile)
        sets[workload][name] = profile

    def _register_job(self, event: p.Event, ts: float, where: str) -> None:
        self._check_registration(event, where, "job")
        workload, name = _split_id(event.data["job_id"], where)
        batsim_id = f"{workload}!{name}"
        raw = event.data["job"]
        where = f"{where}, job {batsim_id!r}"
        if workload not in self.table.profile_sets:
            raise ProtocolError(f"{where}: workload {workload!r} does not exist, which Batsim 4 "
                                "refuses; register a profile in it first (REGISTER_PROFILE creates "
                                "a workload)")
        _check_job_id(raw, workload, batsim_id, where)
        if batsim_id in self.table.by_id:
            raise ProtocolError(f"{where}: job {batsim_id!r} already exists, which Batsim 4 "
                                "refuses; register it under a new id")
        first = bool(self._events) and event is self._events[0]
        job = self._make_job(raw, workload, name, where, first)
        job.idx = len(self.table.jobs)
        served = ServerJob(job, batsim_id, {k: (batsim_id if k == "id" else v)
                                            for k, v in raw.items()}, workload, SUBMITTED)
        self.table.jobs.append(served)
        self.table.by_id[batsim_id] = served
        self._job_wake.append(0)
        if self.config.ack_dynamic_jobs:
            profile = self.table.profile_of(served) if self.config.forward_profiles else None
            self.outbox.append(ev.job_submitted(ts, batsim_id, served.raw, profile))

    def _notify_scheduler(self, event: p.Event, ts: float, where: str) -> None:
        kind = event.data["type"]
        if kind not in (REGISTRATION_FINISHED, CONTINUE_REGISTRATION):
            raise ProtocolError(f"{where}: unknown NOTIFY type {kind!r}, which Batsim 4 refuses; "
                                f"it takes {REGISTRATION_FINISHED!r} and {CONTINUE_REGISTRATION!r}")
        self._notified = (event, self._registering)
        self._registering = kind == CONTINUE_REGISTRATION

    # ------------------------------------------------------------------ bookkeeping
    def _reply_read(self, reply: p.Message) -> None:
        """A reply arrives; its first event is read before the collection of the message it
        answers takes effect (see :meth:`_collect_profiles`)."""
        self._events = reply.events

    def _check_registration_closed(self) -> None:
        """Nothing is left to happen: with dynamic jobs, Batsim still waits for
        ``registration_finished``, and nothing can come any more.

        Raises:
            ProtocolError: registration is still open.
        """
        if self.config.dynamic_jobs and self._registering:
            raise SessionDeadlock(
                f"deadlock at t={self.board.now:.6f}: every job has ended, but with "
                "--enable-dynamic-jobs the simulation ends only once the decision process sends "
                f"NOTIFY {REGISTRATION_FINISHED!r}, and it sent nothing else to wait for; send "
                "it (pybatsim: notify_registration_finished()) once no job will be registered")

    def _collect_profiles(self) -> None:
        """Batsim's garbage collection once a message is sent: the profiles of the jobs that
        ended or were rejected since the previous one can no longer be named. Batsim collects
        them right after it creates the actor that sends the message, which runs first: it
        exchanges the message and reads the reply's first event before its first simcall, so
        a job registered by the reply's first event still finds them (checked with the binary:
        first event, found; second event or a later reply, gone)."""
        finished, by_id = self.table.finished, self.table.by_id
        if self.config.profile_reuse or len(finished) == self._collected:
            self._collected = len(finished)
            self._gone_before = self._gone
            return
        self._gone_before = {w: set(names) for w, names in self._gone.items()}
        for batsim_id in finished[self._collected:]:
            job = by_id[batsim_id]
            self._forget(job.workload_id, job.profile_name, 0)
        self._collected = len(finished)

    def _forget(self, workload: str, name: str, depth: int) -> None:
        gone = self._gone[workload]
        if name in gone or depth > 50:
            return
        gone.add(name)
        profile = self.table.profile_sets[workload].get(name)
        if isinstance(profile, dict) and profile.get("type") == "composed":
            for part in profile.get("seq", ()):
                self._forget(workload, part, depth + 1)

    # ------------------------------------------------------------------ checks
    def _check_registration(self, event: p.Event, where: str, what: str) -> None:
        """Batsim reads each event of a reply while its server handles the one before, so a
        NOTIFY reaches the registrations two events after it (checked with the binary:
        ``registration_finished`` then two profiles, the second one refused)."""
        if not self.config.dynamic_jobs:
            raise ProtocolError(f"{where}: dynamic {what} registration needs "
                                "--enable-dynamic-jobs (Batsim 4 aborts without it)")
        notify, before = self._notified
        events = self._events
        just_after = notify is not None and any(
            e is event and i > 0 and events[i - 1] is notify for i, e in enumerate(events))
        if not (before if just_after else self._registering):
            raise ProtocolError(f"{where}: dynamic {what} registration after NOTIFY "
                                f"{REGISTRATION_FINISHED!r}, which Batsim 4 refuses; send "
                                f"{CONTINUE_REGISTRATION!r} first")

    def _make_job(self, raw: Any, workload: str, name: str, where: str, first: bool) -> Any:
        """The built-in physics' job of a registered job (its profile checked; ``first``: the
        reply's first event, which the last collection has not reached)."""
        profiles = self.table.profile_sets[workload]
        profile_name = raw.get("profile")
        if not isinstance(profile_name, str) or profile_name not in profiles:
            raise ProtocolError(f"{where}: the profile {profile_name!r} does not exist in workload "
                                f"{workload!r}, which Batsim 4 refuses; register it first "
                                "(REGISTER_PROFILE, before the REGISTER_JOB)")
        gone = self._gone_before.get(workload, set()) if first else self._gone[workload]
        if profile_name in gone:
            raise ProtocolError(
                f"{where}: profile {profile_name!r} was garbage collected when a job using it "
                "ended (Batsim 4 aborts: 'it existed some time ago but is no longer "
                "accessible'); start hdrm serve with --enable-profile-reuse, or register a new "
                "profile")
        if (workload, profile_name) in self._sequences:
            raise ProtocolError(f"{where}: its profile {profile_name!r} is a sequence registered "
                                "during the session, whose parts Batsim 4.2.1 never resolves (it "
                                "crashes running the job); put the sequence in a workload file")
        problem = self._cannot_run(profiles, profile_name)
        if problem:
            raise ProtocolError(f"{where}: its profile {profile_name!r} {problem}; run the real "
                                "batsim")
        walltime = raw.get("walltime", -1)
        try:
            check_batsim_json({"jobs": [raw]}, where)
            doc = {"nb_res": 1, "jobs": [dict(raw, id=name, walltime=walltime)],
                   "profiles": profiles}
            loaded = workload_from_dict(doc, where)
            check_simulable(loaded, profiles)
        except WorkloadError as exc:
            raise ProtocolError(str(exc)) from None
        return loaded.jobs[0]

    def _cannot_run(self, profiles: dict[str, Any], name: str) -> str:
        """Why this session's model cannot run a job of profile ``name`` ("" if it can)."""
        if network_need(profiles, name) == "network":
            return ("needs SimGrid's network model, which hdrm serve runs only in sessions "
                    "whose workload files have jobs that communicate")
        return ""


def _split_id(text: str, where: str) -> tuple[str, str]:
    """``"wl!name"`` -> ``("wl", "name")`` as Batsim splits it (runs of ``!`` are one)."""
    parts = re.split("!+", text)
    if len(parts) != 2:
        raise ProtocolError(f"{where}: job id {text!r} is not 'workload!name' (two '!'-separated "
                            "parts, the name without '!'), which Batsim 4 refuses")
    return parts[0], parts[1]


def _check_job_id(raw: Any, workload: str, batsim_id: str, where: str) -> None:
    """The ``id`` of a registered job must name the same job as its ``job_id`` (Batsim: an id
    containing the workload's name is a full id, else the name in that workload)."""
    if not isinstance(raw, dict):
        raise ProtocolError(f"{where}: 'job' must be an object")
    job_id = raw.get("id")
    if isinstance(job_id, bool) or not isinstance(job_id, (str, int)):
        raise ProtocolError(f"{where}: job.id must be a string or an integer, got {job_id!r}")
    text = str(job_id)
    full = "!".join(_split_id(text, where)) if workload in text else f"{workload}!{text}"
    if full != batsim_id:
        raise ProtocolError(f"{where}: job.id {job_id!r} names job {full!r}, not {batsim_id!r}; "
                            "give the same job in both")
