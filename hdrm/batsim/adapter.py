"""hdrm's decision core as a PyBatsim scheduler: the ``batsim`` engine's decision process.

:class:`HdrmScheduler` subclasses pybatsim's ``BatsimScheduler``. Batsim (the real one, or
``hdrm serve``) tells it about submissions and completions; at every message that brought one, it
runs one decision of the :class:`~hdrm.core.scheduler.DecisionCore` (a fixed policy pair, or what
the ``decide`` hook returns) and answers with:

* ``SET_RESOURCE_STATE`` for every power-state change the core reports
  (:meth:`DecisionCore.take_changes`), before the jobs start, as the built-in engine applies them:
  state ids 0-3 (running, contended, idle, sleeping) are the P-states ``"0"``-``"3"`` of the SimGrid
  hosts hdrm exports, so memory-bandwidth contention reaches SimGrid as slower P-states;
* ``EXECUTE_JOB`` with a procset allocation of the core ids the core chose (core ``i`` is Batsim
  resource ``i``);
* ``REJECT_JOB`` for jobs the platform can never run.

Decisions happen at the same points as on the built-in engine, once all the submissions and
completions of one of its instants have come, however many messages Batsim used
(:mod:`hdrm.batsim.instants`), with the same random generator, so both engines make the same
decisions. Job requirements (memory, bandwidth, work) come
from the workload file named in SIMULATION_BEGINS, the platform from the file given to the
adapter.

Run it from Python (:func:`hdrm.batsim.process.run_batsim`, or pybatsim's ``Batsim(scheduler, ...)``)
or with pybatsim's launcher: ``pybatsim /path/to/hdrm/batsim/hdrmScheduler.py -o '{"platform":
"platforms/tiny4.json", "policy": "shortest-high_gflops"}'`` (see :mod:`hdrm.batsim.hdrmScheduler`).
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from typing import Any, Callable

import numpy as np
import zmq

from hdrm.batsim import protocol
from hdrm.batsim.actions import Action, DecideHook, DecisionStopped, Pick
from hdrm.batsim.accelerators import startup_allowance_s
from hdrm.batsim.adapter_options import (CONTINUOUS_MODELS, OPTION_KEYS, PSTATE_OF_STATE,
                                         adapter_platform, check_options)
from hdrm.batsim.dependents import DependentJobs
from hdrm.batsim.instants import Diverged, Instant, InstantGrouper
from hdrm.batsim.pybatsim_api import BatsimScheduler
from hdrm.core.scheduler import DecisionCore, Start
from hdrm.errors import ConfigError, ProtocolError
from hdrm.platform.power import NB_STATES
from hdrm.platform.simgrid import core_host_name
from hdrm.policies.pairs import PolicyPair, resolve_policy
from hdrm.workload.batsim_json import read_batsim_json
from hdrm.workload.job import Job

#: Names that lived here before the actions and options had modules of their own.
__all__ = ["Action", "CONTINUOUS_MODELS", "DecideHook", "DecisionStopped", "HdrmScheduler",
           "OPTION_KEYS", "PSTATE_OF_STATE", "Pick", "resources_text"]

logger = logging.getLogger(__name__)


def _start_note(start_s: float, nb_cores: int) -> str:
    """What the timeout of Batsim's first message added for its start (none under 1 s)."""
    return f" beyond the {start_s:.0f} s its start may take on {nb_cores:,} cores" if (
        start_s >= 1.0) else ""


class HdrmScheduler(BatsimScheduler):
    """A PyBatsim scheduler that runs hdrm's decision core.

    Args:
        options: pybatsim's options dict (keys of
            :data:`~hdrm.batsim.adapter_options.OPTION_KEYS`); keyword arguments win.
        platform: the platform (a :class:`Platform`, or a platform JSON / SimGrid XML path).
        policy: the fixed policy, a heuristic or a ``"job-core"`` pair.
        contention: contention model; ``smooth`` is refused (not expressible with 4 P-states).
        backfilling: ``none``, ``easy`` or ``conservative``.
        decision: ``event`` or ``commit``.
        seed: seed of the decision core's random generator (same as the built-in engine's).
        decide: the agent hook (see :data:`~hdrm.batsim.actions.DecideHook`); None runs ``policy``.

    Raises:
        ConfigError: an unknown option, policy or model, a missing platform, or ``smooth``.
    """

    #: Decide once per instant of the built-in engine (:mod:`hdrm.batsim.instants`).
    group_instants = True

    def __init__(self, options: dict[str, Any] | None = None, *, decide: DecideHook | None = None,
                 **settings: Any) -> None:
        super().__init__(dict(options or {}))
        merged = {**self.options, **settings}
        contention = check_options(merged)
        self.platform, self._pstates = adapter_platform(merged.get("platform"))
        self.pair = resolve_policy(merged.get("policy", "shortest-high_gflops"))
        self.rng = np.random.default_rng(int(merged.get("seed", 0)))
        self.core = DecisionCore(self.platform, contention, str(merged.get("backfilling", "none")),
                                 str(merged.get("decision", "event")), self.rng)
        self.decide_hook = decide
        #: Decisions made: (time, job, cores) per started job, in order.
        self.starts: list[tuple[float, Job, list[int]]] = []
        #: Power-state requests sent: (time, state id, cores).
        self.state_requests: list[tuple[float, int, list[int]]] = []
        #: Jobs rejected: (time, job, reason).
        self.rejections: list[tuple[float, Job, str]] = []
        self.decisions = 0
        self.energy_j: float | None = None
        self.jobs: dict[str, Job] = {}
        self._bs_jobs: dict[str, Any] = {}
        self._dirty = False
        #: The built-in engine's instants (None: decide at every message that brought events).
        self._instants: InstantGrouper | None = None
        self._unsent: dict[int, tuple[int, float]] = {}
        self._wid = "w0"
        #: Jobs waiting for preceding jobs (None: the workload has no dependencies).
        self.dependents: DependentJobs | None = None
        self._bs = None
        #: Set by :mod:`hdrm.batsim.process`: seconds to wait for Batsim, and a stop request.
        self.timeout_s: float | None = None
        self._heard = False  # whether Batsim has sent a message (its start may take long)
        self.stop_event = threading.Event()
        self.bound = threading.Event()
        self.endpoint: str | None = None

    # ------------------------------------------------------------------ pybatsim plumbing
    @property
    def bs(self) -> Any:
        """pybatsim's ``Batsim`` object; setting it (pybatsim does) hooks its socket."""
        return self._bs

    @bs.setter
    def bs(self, value: Any) -> None:
        self._bs = value
        self._heard = False
        network = getattr(value, "network", None)
        if network is not None and network.connection is not None:
            network.connection.setsockopt(zmq.LINGER, 1000)
            self.endpoint = network.connection.getsockopt_string(zmq.LAST_ENDPOINT)
            network.recv = self._guarded_recv(network)
        self.bound.set()

    def _guarded_recv(self, network: Any) -> Callable[..., dict | None]:
        """A replacement of pybatsim's recv: stoppable, with a timeout, checking every message."""

        def recv(blocking: bool = False) -> dict | None:
            limit = self.timeout_s
            start_s = 0.0 if self._heard else startup_allowance_s(self.platform.nb_cores)
            if limit is not None:  # Batsim's start takes hosts^2 name comparisons
                limit += start_s
            if limit is None and not blocking:
                limit = network.timeout / 1000.0 if network.timeout and network.timeout > 0 else None
            deadline = None if limit is None else time.monotonic() + limit
            while not network.connection.poll(100):
                if self.stop_event.is_set():
                    raise DecisionStopped("the decision process was stopped")
                if deadline is not None and time.monotonic() > deadline:
                    if self.timeout_s is None:
                        return None  # pybatsim calls onDeadlock
                    raise ProtocolError(f"Batsim sent nothing for {self.timeout_s:g} s"
                                        f"{_start_note(start_s, self.platform.nb_cores)}; it "
                                        "stopped answering")
            self._heard = True
            return protocol.decode_message(network.connection.recv_string(), "batsim").to_json()

        return recv

    def onDeadlock(self) -> None:  # noqa: N802 (pybatsim's name)
        raise ProtocolError("Batsim stopped answering (no message within pybatsim's timeout)")

    # ------------------------------------------------------------------ events
    def onSimulationBegins(self) -> None:  # noqa: N802
        nb = self.bs.nb_compute_resources
        if nb != self.platform.nb_cores:
            raise ProtocolError(
                f"Batsim simulates {nb} compute resources but platform {self.platform.name!r} has "
                f"{self.platform.nb_cores} cores; give the adapter the platform Batsim runs"
            )
        self._check_names()
        workloads = self.bs.workloads
        if len(workloads) != 1:
            raise ConfigError(f"the adapter handles one workload, Batsim has {len(workloads)}: "
                              f"{', '.join(workloads)}")
        (self._wid, path), = workloads.items()
        workload = read_batsim_json(path, self.platform.reference_gflops)
        self.jobs = {f"{self._wid}!{job.id}": job for job in workload.jobs}
        self.dependents = DependentJobs.of(workload)
        if self.group_instants:
            self._instants = InstantGrouper(self.platform, workload.jobs)
        state = self.core.state.core_state  # hosts start in their platform P-state (hdrm: 0)
        self._send_states(self.bs.time(), dict(enumerate(state)))

    def _check_names(self) -> None:
        if self.platform.source.lower().endswith(".xml"):
            return
        nb = self.platform.nb_cores
        for res_id, res in sorted(self.bs.compute_resources.items()):
            expected = core_host_name(res_id, nb)
            if res.get("name") != expected:
                raise ProtocolError(
                    f"Batsim resource {res_id} is host {res.get('name')!r}, expected {expected!r}; run "
                    "Batsim on the platform.xml hdrm exports for this platform"
                )

    def onJobSubmission(self, job: Any) -> None:  # noqa: N802
        mine = self._job(job.id)
        self._bs_jobs[job.id] = job
        if self._instants is not None:
            self._instants.submitted(mine)
        elif self.dependents is None or not self.dependents.submitted(mine):
            self._submit(mine, self.bs.time())
        self._dirty = True

    def onJobCompletion(self, job: Any) -> None:  # noqa: N802
        mine = self._job(job.id)
        if self._instants is not None:
            self._instants.ended(mine, self.bs.time())
        else:
            self._complete(mine, self.bs.time())
        self._dirty = True

    def _complete(self, job: Job, now: float) -> None:
        """``job`` left the machine: free it in the core, release the jobs waiting for it."""
        deps = self.dependents
        self.core.complete(deps.current(job) if deps is not None else job, now)
        if deps is not None:
            self._ended(job.idx, now)

    def _ended(self, idx: int, now: float) -> None:
        """Job ``idx`` ended or was rejected: its dependents' releases, later ones by a call."""
        for release in self.dependents.ended(idx, now):
            if self._instants is not None:
                self._instants.release(*release)
            else:
                heapq.heappush(self.dependents.later, release)
            self.bs.wake_me_up_at(release[0])

    def _submit_due(self, now: float) -> None:
        """Queue the released jobs due at ``now`` (a rejection may release more)."""
        for job in self.dependents.due_jobs(now):
            self._submit(job, now)

    def _submit(self, job: Job, now: float) -> None:
        reason = self.core.submit(job, now)
        if reason is not None:
            self.rejections.append((now, job, reason))
            self.bs.reject_jobs([self._bs_jobs[f"{self._wid}!{job.id}"]])
            if self.dependents is not None:
                self._ended(job.idx, now)

    def onJobsKilled(self, jobs: list[Any]) -> None:  # noqa: N802
        logger.debug("killed: %s", [j.id for j in jobs])

    def onMachinePStateChanged(self, nodeid: tuple[int, int], pstate: str) -> None:  # noqa: N802
        logger.debug("resources %s now in P-state %s", nodeid, pstate)

    def onRequestedCall(self) -> None:  # noqa: N802
        self._dirty = True  # a dependent job's release (CALL_ME_LATER)

    def onReportEnergyConsumed(self, consumed_energy: float) -> None:  # noqa: N802
        self.energy_j = consumed_energy

    def onNoMoreEvents(self) -> None:  # noqa: N802
        if not (self._dirty and self.bs.running_simulation):
            return
        self._dirty = False
        now = self.bs.time()
        grouper = self._instants
        if grouper is None:
            if self.dependents is not None:
                self._submit_due(now)
            self._decision_point(now)
            return
        try:
            for instant in grouper.complete_instants(now):
                self._instant(instant)
        except Diverged as exc:
            logger.warning("Batsim and hdrm's machine model disagree (%s): deciding at every "
                           "message from now on", exc)
            self._instants = None
            if self.dependents is not None:
                self.dependents.later = list(grouper.pending_releases)
            for kind, job in grouper.unprocessed:
                if kind == "end":
                    self._complete(job, now)
                elif self.dependents is None or not self.dependents.submitted(job):
                    self._submit(job, now)
            if self.dependents is not None:
                self._submit_due(now)
            self._decision_point(now)

    def _instant(self, instant: Instant) -> None:
        """One instant of the built-in engine: its ends, its submissions, then one decision."""
        deps = self.dependents
        for job in instant.releases:  # made before this instant's ends release theirs
            deps.release(job, instant.time_s)
        for end in instant.ends:
            self._complete(self._instants.job(end.key), instant.time_s)
        for job in instant.arrivals:
            if deps is None or not deps.submitted(job):
                self._submit(job, instant.time_s)
        if deps is not None:
            self._submit_due(instant.time_s)
        self._take_pending()
        self._decision_point(instant.time_s)

    def _job(self, batsim_id: str) -> Job:
        job = self.jobs.get(batsim_id)
        if job is None:
            raise ProtocolError(f"Batsim sent unknown job {batsim_id!r}; it is not in the workload file")
        return job

    # ------------------------------------------------------------------ decisions
    def _decision_point(self, now: float) -> None:
        """One decision, as the built-in engine's ``next_decision`` + ``decide``."""
        self.decisions += 1
        starts = self._act(now) if self.core.queue else []
        self._send_changes(now)  # the net changes of the whole decision, before the jobs start
        if not starts:
            return
        if self._instants is not None:
            for job, cores in starts:
                self._instants.start(job, cores)
        chosen = []
        for job, cores in starts:
            bs_job = self._bs_jobs[f"{self._wid}!{job.id}"]
            bs_job.allocation = resources_text(cores)
            chosen.append(bs_job)
            self.starts.append((now, job, list(cores)))
        self.bs.execute_jobs(chosen)

    def _act(self, now: float) -> list[Start]:
        action = self.decide_hook(now) if self.decide_hook is not None else self.pair
        if action is None:
            return []
        if isinstance(action, PolicyPair):
            return self.core.schedule(now, action)
        if isinstance(action, Job):
            action = Pick(action)
        if not isinstance(action, Pick):
            raise ConfigError(f"the decide hook returned {action!r}; return a PolicyPair, a Job, a "
                              "Pick or None")
        return self._pick(action, now)

    def _pick(self, pick: Pick, now: float) -> list[Start]:
        """Start a chosen job, as the built-in engine's ``pick``."""
        core = pick.core or self.pair.core
        cores = self.core.start_now(pick.job, core, now)
        if cores is not None:
            return [(pick.job, cores)]
        if pick.hold:
            self.core.committed = pick.job
        return self.core.backfill(now, pick.job, core)

    def _take_pending(self) -> None:
        """Take the core's power-state changes: to the machine model now, to Batsim later."""
        pending = self.core.state.take_pending()
        if pending:
            if self._instants is not None:
                self._instants.apply_states(pending)
            self._unsent.update(pending)

    def _send_changes(self, now: float) -> None:
        """Send the power states the core set since the last call (only where they differ)."""
        self._take_pending()
        groups: dict[tuple[int, float], list[int]] = {}
        for core, key in self._unsent.items():
            groups.setdefault(key, []).append(core)
        self._unsent = {}
        for (state, factor), cores in groups.items():  # one group per state, disjoint
            if factor != 1.0 or not 0 <= state < NB_STATES:
                raise ConfigError(
                    f"the contention model set cores {cores[:4]}... to state {state} with speed factor "
                    f"{factor:g}; Batsim's four power states express only factor 1"
                )
            self._send_state(now, state, cores)

    def _send_states(self, now: float, targets: dict[int, int]) -> None:
        """Send each core its target state where Batsim has another one."""
        groups: dict[int, list[int]] = {}
        for core, state in targets.items():
            groups.setdefault(state, []).append(core)
        for state, cores in sorted(groups.items()):
            self._send_state(now, state, cores)

    def _send_state(self, now: float, state: int, cores: list[int]) -> None:
        """SET_RESOURCE_STATE ``state`` for those of ``cores`` whose P-state Batsim has is another."""
        pstates = self._pstates
        changed = sorted(c for c in cores if pstates[c] != state)
        if not changed:
            return
        for c in changed:
            pstates[c] = state
        self.bs.set_resource_state(resources_text(changed), PSTATE_OF_STATE[state])
        self.state_requests.append((now, state, changed))


def resources_text(cores: list[int]) -> str:
    """The interval-set text of core ids (``"0-3 7"``, ``str(ProcSet(*cores))``), which pybatsim
    sends as it is (it calls ``str()`` on allocations and resource sets): building ProcSets, range
    by range, took most of the adapter's time on wide jobs."""
    return protocol.format_resources(cores)

