"""The built-in discrete-event engine: drives the decision core over a simulated machine.

Events are job submissions (from the workload, in submission order) and job ends (from the
:class:`~hdrm.sim.machine.Machine`, whose heap orders them by time and a sequence number, so runs
are deterministic). All events at the same instant are processed as one batch, then the decision
core decides once: the same decision points at which Batsim calls a decision system.

The engine can run a fixed policy to the end (:meth:`Simulation.run`) or be stepped by an
environment: :meth:`Simulation.next_decision` advances to the next decision point and
:meth:`Simulation.decide` / :meth:`Simulation.pick` apply one decision.
"""

from __future__ import annotations

import heapq
import math
import operator
import time as _time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence


from hdrm.core.scheduler import DecisionCore, Start
from hdrm.errors import WorkloadError
from hdrm.lazy import LazyGenerator
from hdrm.platform.model import Platform
from hdrm.platform.power import RUNNING, SLEEPING
from hdrm.policies.core_selection import CorePolicy
from hdrm.policies.pairs import PolicyPair, resolve_policy
from hdrm.results.overutil import Overutilizations
from hdrm.results.timeline import TimelineRow, TimelineRows
from hdrm.sim.collector import collector_paused
from hdrm.sim.job_end import start_job
from hdrm.sim.machine import Machine, machine_for
from hdrm.sim.run_loop import STEPS, run_decisions
from hdrm.sim.simgrid_machine import SimgridMachine, simgrid_machine_for
from hdrm.workload.batsim_json import check_supported
from hdrm.workload.job import Job, Workload

if TYPE_CHECKING:  # imported where a workload has dependencies
    from hdrm.core.dependencies import DependencyGate

REJECTED = "REJECTED"
_IDX = operator.attrgetter("idx")
_FINISH = operator.attrgetter("finish_s")


@dataclass(slots=True)
class Outcome:
    """What happened to one job (``cores`` as the machine gave them: a tuple, or for a wide job a
    :class:`~hdrm.results.core_sets.CoreRuns`, which costs its runs of consecutive cores)."""

    job: Job
    state: str
    start_s: float = -1.0
    finish_s: float = -1.0
    cores: Sequence[int] = ()
    energy_j: float = 0.0
    reason: str = ""


@dataclass
class SimulationConfig:
    """Settings of a built-in simulation.

    Attributes:
        contention: contention model name.
        backfilling: "none", "easy", "easy_first" or "conservative".
        decision: "event" or "commit".
        kill_on_walltime: kill jobs still running at their requested time, with Batsim's tests
            (:mod:`hdrm.sim.running`).
        record_timeline: keep one timeline row per decision instant.
        seed: seed of the run's random generator.
        preemption: ``"none"``, ``"request"`` or ``"block:SECONDS"`` (:mod:`hdrm.sim.preemption`;
            ``block`` runs a :class:`~hdrm.sim.preemptive.PreemptiveSimulation`).
        preemption_overhead_s: checkpoint and restore time of a suspended request.
    """

    contention: str = "hdeeprm"
    backfilling: str = "none"
    decision: str = "event"
    kill_on_walltime: bool = True
    record_timeline: bool = True
    seed: int = 0
    preemption: str = "none"
    preemption_overhead_s: float = 0.0


@dataclass
class SimulationResult:
    """Everything a finished run produced."""

    platform: Platform
    workload: Workload
    outcomes: list[Outcome]
    #: One :class:`~hdrm.results.timeline.TimelineRow` per decision instant, kept as columns.
    timeline: Sequence[TimelineRow] = field(default_factory=TimelineRows)
    overutilizations: Overutilizations = field(default_factory=Overutilizations)
    energy_j: float = 0.0
    makespan_s: float = 0.0
    wall_s: float = 0.0
    decisions: int = 0
    decision_s: float = 0.0
    #: On a GPU platform, the :class:`~hdrm.sim.gpu_engine.GpuReport` (placements, GPU timeline).
    gpu: Any = None
    #: The out_jobs.csv rows and the out_schedule.csv row, made once on first use by
    #: :mod:`hdrm.sim.outputs` (writing the files and printing a summary share them).
    reports: dict = field(default_factory=dict, repr=False, compare=False)


def _plain_steps(cls: type) -> bool:
    """True when ``cls`` runs :class:`Simulation`'s own steps (:data:`~hdrm.sim.run_loop.STEPS`)."""
    return all(getattr(cls, name) is getattr(Simulation, name) for name in STEPS)


def check_profiles(workload: Workload) -> None:
    """Refuse jobs whose profile the built-in engine cannot simulate (network-model profiles).

    Raises:
        WorkloadError: naming each unsupported profile type, a few of its jobs and the file.
    """
    check_supported(workload)


def gate_and_arrivals(workload: Workload) -> tuple[DependencyGate | None, list[Job]]:
    """The dependency gate of ``workload`` (None without dependencies) and the jobs the engine
    submits at their own times, in submission order (the others wait for their release)."""
    deps = workload.dependencies
    if deps is None or not len(deps):
        return None, _submission_order(workload.jobs, workload)
    from hdrm.core.dependencies import DependencyGate  # workloads with dependencies only

    gate = DependencyGate(deps)
    held = gate.dependent
    return gate, _submission_order([j for j in workload.jobs if j.idx not in held], workload)


def _submission_order(jobs: list[Job], workload: Workload) -> list[Job]:
    """``jobs`` sorted by submission time (stable), without copying when already sorted.

    Raises:
        WorkloadError: a submission time that is not a finite number (a NaN job would never be
            submitted and the run would wait for it; an infinite one would be lost), naming the
            job; the readers refuse such times, a workload made in code may still hold one.
    """
    submits = [j.submit_s for j in jobs]
    if not math.isfinite(sum(submits)):  # a NaN or an infinity anywhere (finite sums stay finite)
        bad = next((j for j in jobs if not math.isfinite(j.submit_s)), None)
        if bad is not None:
            raise WorkloadError(f"{workload.source or workload.name}: job {bad.id}: submission "
                                f"time {bad.submit_s}: expected a finite number of seconds")
    if all(map(operator.le, submits, submits[1:])):
        return jobs
    return sorted(jobs, key=lambda j: j.submit_s)


class Simulation:
    """One run of a workload on a platform.

    Args:
        platform: the platform.
        workload: the jobs, sorted by submission time.
        config: engine settings.
    """

    def __new__(cls, platform: Platform | None = None, *args, **kwargs) -> "Simulation":
        """On a platform with accelerators, a :class:`~hdrm.sim.gpu_engine.GpuSimulation`; with
        block preemption, a :class:`~hdrm.sim.preemptive.PreemptiveSimulation` (``platform``
        may be absent: copy and pickle make instances without arguments)."""
        config = args[1] if len(args) > 1 else kwargs.get("config")
        if cls is Simulation and config is not None and config.preemption.startswith("block"):
            from hdrm.sim.preemptive import preemptive_class  # it subclasses this one

            cls = preemptive_class(platform)
        if cls is Simulation and platform is not None and platform.accelerators:
            from hdrm.sim.gpu_engine import GpuSimulation  # it subclasses this one

            cls = GpuSimulation
        return super().__new__(cls)

    def __init__(self, platform: Platform, workload: Workload, config: SimulationConfig | None = None):
        self.config = config or SimulationConfig()
        check_profiles(workload)
        self.platform = platform
        self.workload = workload
        self.rng = LazyGenerator(self.config.seed)  # numpy's, made at the first draw
        self.core, self.machine = self._make_parts()
        #: The machine switches hosts' states with starts and ends, the core queues nothing.
        self._follows = self._follow_occupancy()
        self.now = 0.0
        self.outcomes: dict[int, Outcome] = {}
        self.timeline = TimelineRows()
        self.decisions = 0
        #: Wall seconds spent in scheduling decisions (Batsim's scheduling_time).
        self.decision_s = 0.0
        self._jobs = workload.jobs
        #: Jobs in submission order (the workload's order unless it is not sorted by time); jobs
        #: waiting for preceding jobs come from ``_releases`` (:mod:`hdrm.core.dependencies`).
        self._gate, self._arrivals = gate_and_arrivals(workload)
        self._releases: list[tuple[float, int, int]] = []
        self._released: dict[int, Job] = {}
        self._made = 0
        self._next = 0
        self._wall0 = _time.perf_counter()
        #: Called with (job, outcome) when a job ends or is rejected (environments use it).
        self.on_outcome: Callable[[Job, Outcome], None] | None = None

    # ------------------------------------------------------------------ running
    def run(self, policy: str | PolicyPair, progress: Callable[[int, int], None] | None = None
            ) -> SimulationResult:
        """Run to the end with a fixed policy (a heuristic name or a "job-core" pair)."""
        pair = self.resolve(policy) if isinstance(policy, str) else policy
        total = len(self._jobs)
        with collector_paused():  # the run makes no reference cycles (hdrm.sim.collector)
            if _plain_steps(type(self)):
                run_decisions(self, pair, progress)  # the loop below, written out
            else:
                while self.next_decision():
                    self.decide(pair)
                    if progress is not None and self.decisions % 4096 == 0:
                        progress(len(self.outcomes), total)
        return self.result()

    def resolve(self, name: str) -> PolicyPair:
        """The policy of a name on this platform (a heuristic or a "job-core" pair)."""
        return resolve_policy(name)

    @property
    def done(self) -> bool:
        """True when every job has ended or been rejected."""
        return len(self.outcomes) == len(self._jobs)

    def next_decision(self) -> bool:
        """Advance to the next instant with events and process them; False when nothing is left."""
        machine = self.machine
        arrivals = self._arrivals
        nxt = self._next
        t = arrivals[nxt].submit_s if nxt < len(arrivals) else math.inf
        releases = self._releases
        if releases and releases[0][0] < t:
            t = releases[0][0]
        t_end = machine.next_time()
        if t_end < t:
            t = t_end
        if t == math.inf:
            return False
        self.now = t
        core = self.core
        if t_end <= t and nxt < len(arrivals) and arrivals[nxt].submit_s <= t:
            machine.note_event(t)  # a submission is due before the job ends of its instant
        ends = machine.advance(t)
        if ends:
            released, jobs, complete, record = (self._released, self._jobs, core.complete,
                                                self._record)
            for end in ends:
                job = released.pop(end.key, None) if released else None
                if job is None:
                    job = jobs[end.key]
                complete(job, t)
                record(job, Outcome(job, end.state, end.start_s, end.finish_s, end.cores,
                                    end.energy_j))
        n = len(arrivals)
        if nxt < n and arrivals[nxt].submit_s <= t:
            submit = core.submit
            while nxt < n and arrivals[nxt].submit_s <= t:
                job = arrivals[nxt]
                nxt += 1
                reason = submit(job, t)
                if reason is not None:
                    self._next = nxt
                    self._record(job, Outcome(job, REJECTED, reason=reason))
            self._next = nxt
        if releases:
            self._submit_released(t)
        self._flush_changes()
        return True

    def _submit_released(self, t: float) -> None:
        """Submit the jobs whose preceding jobs ended, released at ``t`` or before."""
        from hdrm.core.dependencies import released_copy  # (loaded with the gate that made heap)

        heap, jobs = self._releases, self._jobs
        while heap and heap[0][0] <= t:
            release_s, _, idx = heapq.heappop(heap)
            job = self._released[idx] = released_copy(jobs[idx], release_s)
            reason = self.core.submit(job, t)
            if reason is not None:
                del self._released[idx]
                self._record(job, Outcome(job, REJECTED, reason=reason))

    def decide(self, pair: PolicyPair) -> list[Start]:
        """One decision with a policy pair at the current instant."""
        if self.core.queue:
            t0 = _time.perf_counter()
            starts = self.core.schedule(self.now, pair)
            self.decision_s += _time.perf_counter() - t0
        else:
            starts = []
        self._apply(starts)
        return starts

    def decide_nothing(self) -> None:
        """A decision that starts nothing (the void action, or an instant with no choice)."""
        self._apply([])

    def pick(self, job: Job, core: CorePolicy, hold: bool) -> list[Start]:
        """Start ``job`` now if it fits (``job_pick``); else hold it (``hold``) and backfill.

        Returns the jobs started (the picked one and backfilled ones).
        """
        cores = self.core.start_now(job, core, self.now)
        starts: list[Start] = []
        if cores is not None:
            starts.append((job, cores))
        else:
            if hold:
                self.core.committed = job
            starts += self.core.backfill(self.now, job, core)
        self._apply(starts)
        return starts

    def result(self) -> SimulationResult:
        """Collect the outcomes of a finished (or stopped) run."""
        self.core.state.close(self.now)
        done, jobs = self.outcomes, self._jobs
        if len(done) == len(jobs):  # every job ended (or was rejected): read in C
            outcomes = list(map(done.__getitem__, map(_IDX, jobs)))
        else:
            outcomes = [done[j.idx] for j in jobs if j.idx in done]
        makespan = max(map(_FINISH, outcomes), default=0.0)
        return SimulationResult(
            platform=self.platform,
            workload=self.workload,
            outcomes=outcomes,
            timeline=self.timeline,
            overutilizations=self.core.state.records.data,
            energy_j=(self.machine.consumed_j() if isinstance(self.machine, SimgridMachine)
                      else self.machine.energy_j()),
            makespan_s=max(makespan, 0.0),
            wall_s=_time.perf_counter() - self._wall0,
            decisions=self.decisions,
            decision_s=self.decision_s,
        )

    # ------------------------------------------------------------------ internals
    def _make_parts(self) -> tuple[DecisionCore, Machine]:
        """The decision core and the machine of this platform."""
        config = self.config
        core = DecisionCore(self.platform, config.contention, config.backfilling, config.decision,
                            self.rng)
        # a SimGrid XML platform's watts as SimGrid's energy plugin charges them
        machine = simgrid_machine_for(self.platform, config.kill_on_walltime, self.workload)
        if machine is None:
            machine = machine_for(self.platform, config.kill_on_walltime)
        return core, machine

    def _follow_occupancy(self) -> bool:
        """Let the machine switch hosts to running and back to sleep with the jobs' starts and
        ends, and the core stop queuing those changes, when they are all the core would queue
        (one-core nodes at nominal speeds) and the machine gives the same floats (one exact
        power row): :meth:`~hdrm.sim.host_lists.HostLists.follow_occupancy`. Only a plain
        simulation does (subclasses may change states themselves)."""
        machine = self.machine
        if not _plain_steps(type(self)) or not isinstance(machine, Machine):
            return False
        return (machine.can_follow(RUNNING, SLEEPING) and self.core.state.follow_occupancy()
                and machine.follow_occupancy(RUNNING, SLEEPING))

    def _apply(self, starts: list[Start]) -> None:
        machine = self.machine
        self.decisions += 1
        self._flush_changes()
        if starts:
            start = machine.start
            held = self.core.state.held_runs if self._follows else {}  # placements' runs
            for job, cores in starts:
                start_job(start, job, cores, held.get(job.idx))
        if self.config.record_timeline:
            core = self.core
            state = core.state
            self.timeline.add(self.now, len(core.queue), machine.running, state.busy_cores,
                              state.contended, machine.power_w, machine.energy_j())

    def _flush_changes(self) -> None:
        """Apply the cluster mirror's queued power-state changes to the machine (none queued
        unless a job started or left since the last call: :attr:`DecisionCore.changed`)."""
        core = self.core
        if not core.changed:
            return
        core.changed = False
        state = core.state
        runs = state.take_pending_runs()
        if runs:
            self.machine.apply_runs(runs)
            return
        pending = state.take_pending()
        if pending:
            self.machine.apply_states(pending)

    def _record(self, job: Job, outcome: Outcome) -> None:
        self.outcomes[job.idx] = outcome
        if self._gate is not None:
            for release_s, idx in self._gate.ended(job.idx, self.now):
                # ties: in the order the releases were made (as the Batsim adapter makes them)
                self._made += 1
                heapq.heappush(self._releases, (release_s, self._made, idx))
        if self.on_outcome is not None:
            self.on_outcome(job, outcome)
