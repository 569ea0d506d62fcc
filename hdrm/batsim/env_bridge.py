"""The Gymnasium environment on the ``batsim`` engine: one Batsim run per episode, stepped.

:class:`BatsimEpisode` steps like the built-in :class:`~hdrm.sim.engine.Simulation`
(``next_decision``, ``decide``, ``pick``, ``decide_nothing``, ``core``, ``machine``, ``now``,
``outcomes``, ``result``), so :class:`~hdrm.env.scheduling_env.SchedulingEnv` runs the same episode
logic, observations, masks and rewards on both engines. Two threads take turns:

* the **decision thread** runs pybatsim's loop with a :class:`BridgeScheduler` (our adapter). At
  each decision point with queued jobs it posts ``("point", now)`` and waits; each action handed
  over (a policy pair, or a :class:`~hdrm.batsim.adapter.Pick`) is the adapter's ``decide`` hook
  result, applied to the decision core, and the jobs started go back as ``("applied", starts)``;
  :data:`NEXT` ends the instant (the adapter then answers Batsim);
* the **environment's thread** reads the decision core only while the decision thread waits.

Every wait is bounded (``timeout_s`` for Batsim, :data:`IDLE_TIMEOUT_S` for the environment).
Energy and time for rewards come from the core's own accounting through a
:class:`~hdrm.batsim.engine.MachineMirror`, not from Batsim's QUERY ``consumed_energy`` (answered
one message late); :meth:`BatsimEpisode.result` holds Batsim's own job rows and energy.
"""

from __future__ import annotations

import logging
import queue
import shutil
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Callable, Mapping

from hdrm.batsim.adapter import Action, DecisionStopped, HdrmScheduler, Pick
from hdrm.batsim.engine import (
    BatsimSession,
    MachineMirror,
    batsim_settings,
    check_mirror_profiles,
    check_walltime_kill,
    result_from_run,
)
from hdrm.batsim.instants import InstantGrouper
from hdrm.batsim.process import BatsimRun, find_batsim
from hdrm.core.scheduler import Start
from hdrm.errors import ProtocolError
from hdrm.options import BatsimOptions
from hdrm.platform.model import Platform
from hdrm.policies.core_selection import CorePolicy
from hdrm.policies.pairs import PolicyPair
from hdrm.sim.engine import REJECTED, Outcome, SimulationConfig, SimulationResult
from hdrm.sim.machine import Machine
from hdrm.workload.job import Job, Workload

logger = logging.getLogger(__name__)

#: Handed to the decision thread: no more actions at this instant.
NEXT = object()
#: Seconds between two looks at a queue.
POLL_S = 0.05
#: Seconds the decision thread waits for the next action (an agent may learn between steps).
IDLE_TIMEOUT_S = 3600.0


class Handover:
    """The two queues between the environment's thread and the decision thread (``stop`` is set
    when the episode is closed)."""

    def __init__(self, stop: threading.Event) -> None:
        self._to_env: queue.SimpleQueue = queue.SimpleQueue()
        self._to_core: queue.SimpleQueue = queue.SimpleQueue()
        self._stop = stop

    def post(self, kind: str, value: Any) -> None:
        """Decision thread: tell the environment ``(kind, value)``."""
        self._to_env.put((kind, value))

    def take_action(self, timeout_s: float) -> Any:
        """Decision thread: the next action or :data:`NEXT` (DecisionStopped once closed,
        ProtocolError after ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                return self._to_core.get(timeout=POLL_S)
            except queue.Empty:
                pass
            if self._stop.is_set():
                raise DecisionStopped("the environment closed the episode")
            if time.monotonic() > deadline:
                raise ProtocolError(f"the environment handed over no decision for {timeout_s:g} s; "
                                    "call step() or close() the environment")

    def send(self, action: Any) -> None:
        """Environment: hand one action (or :data:`NEXT`) to the decision thread."""
        self._to_core.put(action)

    def receive(self, wait_s: float) -> tuple[str, Any] | None:
        """Environment: the decision thread's next message, or None after ``wait_s``."""
        try:
            return self._to_env.get(timeout=wait_s)
        except queue.Empty:
            return None


class BridgeScheduler(HdrmScheduler):
    """The adapter deciding what the environment hands over (see the module doc).

    Args:
        platform: the platform.
        config: contention, backfilling, decision semantics and seed.
        jobs: the episode's jobs (the env's own objects stand for Batsim's jobs).
        idle_timeout_s: how long to wait for each action.
    """

    def __init__(self, platform: Platform, config: SimulationConfig, jobs: list[Job],
                 idle_timeout_s: float = IDLE_TIMEOUT_S) -> None:
        super().__init__(platform=platform, contention=config.contention,
                         backfilling=config.backfilling, decision=config.decision, seed=config.seed,
                         decide=self._handed_action)
        self.handover = Handover(self.stop_event)
        self.mirror = MachineMirror(platform, jobs)
        self.idle_timeout_s = idle_timeout_s
        self.outcomes: dict[int, Outcome] = {}
        #: Called with (job, outcome) as jobs end or are rejected (the environment's tracker).
        self.on_outcome: Callable[[Job, Outcome], None] | None = None
        self._episode_jobs = jobs
        self._action: Action = None
        self._started_at: dict[int, tuple[float, tuple[int, ...]]] = {}

    def onSimulationBegins(self) -> None:  # noqa: N802 (pybatsim's name)
        super().onSimulationBegins()
        (wid,) = self.bs.workloads
        self.jobs = {f"{wid}!{job.id}": job for job in self._episode_jobs}
        if self.group_instants:  # the env's own job objects
            self._instants = InstantGrouper(self.platform, self._episode_jobs)

    def _submit(self, job: Job, now: float) -> None:
        before = len(self.rejections)
        super()._submit(job, now)
        if len(self.rejections) > before:
            _, mine, reason = self.rejections[-1]
            self._record(mine, Outcome(mine, REJECTED, reason=reason))

    def onJobCompletion(self, job: Any) -> None:  # noqa: N802
        mine = self.jobs.get(job.id)
        if mine is None:
            super().onJobCompletion(job)  # raises the adapter's error naming the job
            return
        t = float(job.finish_time if job.finish_time is not None else self.bs.time())
        start_s, cores = self._started_at.pop(mine.idx, (t, ()))
        energy_j = self.mirror.job_left(mine.idx, t)
        super().onJobCompletion(job)
        self._record(mine, Outcome(mine, job.job_state.name, start_s, t, cores, energy_j))

    def _decision_point(self, now: float) -> None:
        self.mirror.advance(now)
        self.mirror.sync(self.core.state)
        super()._decision_point(now)

    def _act(self, now: float) -> list[Start]:
        """Ask the environment, applying its actions one by one until it says :data:`NEXT`."""
        self.handover.post("point", now)
        starts: list[Start] = []
        while True:
            action = self.handover.take_action(self.idle_timeout_s)
            if action is NEXT:
                return starts
            self._action = action
            done = super()._act(now)
            self.mirror.sync(self.core.state)
            for job, cores in done:
                self.mirror.start(job, cores)
                self._started_at[job.idx] = (now, tuple(cores))
            starts += done
            self.handover.post("applied", done)

    def _handed_action(self, now: float) -> Action:
        return self._action

    def _record(self, job: Job, outcome: Outcome) -> None:
        self.outcomes[job.idx] = outcome
        if self.on_outcome is not None:
            self.on_outcome(job, outcome)


class BatsimEpisode:
    """One episode under Batsim, stepped like the built-in :class:`~hdrm.sim.engine.Simulation`.

    The Batsim run starts at the first :meth:`next_decision` and ends with the simulation or at
    :meth:`close`.

    Args:
        platform: the platform.
        workload: the episode's jobs (``delay`` and ``parallel_homogeneous`` profiles).
        config: contention, backfilling, decision semantics and seed.
        settings: the Batsim executable, its timeout and extra arguments.
        run_dir: the run folder (inputs, Batsim's outputs and log).
        idle_timeout_s: how long the decision thread waits for each action.

    Raises:
        ConfigError: walltime kills off, or ``smooth`` contention. WorkloadError: a profile other
            than ``delay`` and ``parallel_homogeneous``.
    """

    def __init__(self, platform: Platform, workload: Workload, config: SimulationConfig,
                 settings: BatsimOptions, run_dir: str | Path,
                 idle_timeout_s: float = IDLE_TIMEOUT_S) -> None:
        check_mirror_profiles(workload)
        check_walltime_kill(config, "kill_on_walltime")
        self.platform = platform
        self.workload = workload
        self.settings = settings
        self.run_dir = Path(run_dir)
        self.scheduler = BridgeScheduler(platform, config, workload.jobs, idle_timeout_s)
        #: The decision core (queue, cluster state), read by observations and masks.
        self.core = self.scheduler.core
        #: The mirror of the machine: power, energy, running jobs and their remaining fractions.
        self.machine: Machine = self.scheduler.mirror.machine
        #: What happened to each job that ended or was rejected so far, by job index.
        self.outcomes: dict[int, Outcome] = self.scheduler.outcomes
        self.rng = self.core.rng
        self.now = 0.0
        #: The finished run (Batsim's outputs); None until the episode has ended normally.
        self.run: BatsimRun | None = None
        self.session: BatsimSession | None = None
        self._at_point = False
        self._ended = False

    # ------------------------------------------------------------------ the Simulation view
    @property
    def on_outcome(self) -> Callable[[Job, Outcome], None] | None:
        """Called with (job, outcome) when a job ends or is rejected."""
        return self.scheduler.on_outcome

    @on_outcome.setter
    def on_outcome(self, callback: Callable[[Job, Outcome], None] | None) -> None:
        self.scheduler.on_outcome = callback

    @property
    def done(self) -> bool:
        """True when every job has ended or been rejected."""
        return len(self.outcomes) == len(self.workload.jobs)

    # ------------------------------------------------------------------ stepping
    def next_decision(self) -> bool:
        """Let Batsim run to the next decision point with queued jobs; False at the end.

        Raises:
            SimulationError, ProtocolError, ConfigError: the run failed (it is closed).
        """
        if self._ended:
            return False
        if self._at_point:
            self._at_point = False
            self.scheduler.handover.send(NEXT)
        elif self.session is None:
            self._start()
        kind, value = self._receive("point")
        if kind == "end":
            self._finish()
            return False
        self.now = float(value)
        self._at_point = True
        return True

    def decide(self, pair: PolicyPair) -> list[Start]:
        """One decision with a policy pair now; returns the jobs started."""
        return self._hand(pair)

    def pick(self, job: Job, core: CorePolicy, hold: bool) -> list[Start]:
        """Start ``job`` now if it fits; else hold it (``hold``) and backfill; returns the starts."""
        return self._hand(Pick(job, core, hold))

    def decide_nothing(self) -> None:
        """Start nothing now (the instant ends at the next :meth:`next_decision`)."""

    def result(self) -> SimulationResult:
        """Batsim's outputs once the episode ended; before, what happened so far."""
        if self.run is not None and self.run.jobs_csv.is_file():
            result = result_from_run(self.platform, self.workload, self.run)
        else:
            done = [self.outcomes[j.idx] for j in self.workload.jobs if j.idx in self.outcomes]
            result = SimulationResult(self.platform, self.workload, done,
                                      overutilizations=self.core.state.records.data,
                                      energy_j=self.machine.energy_j(),
                                      makespan_s=max((o.finish_s for o in done), default=0.0))
        result.decisions = self.scheduler.decisions
        return result

    def close(self) -> None:
        """End the episode now: stop the decision thread and Batsim (safe to call twice)."""
        self._ended = True
        self._at_point = False
        if self.session is not None:
            self.session.close()

    # ------------------------------------------------------------------ internals
    def _start(self) -> None:
        s = self.settings
        self.session = BatsimSession(self.platform, self.workload, self.run_dir, self.scheduler,
                                     binary=s.binary, timeout_s=s.timeout_s, extra_args=s.extra_args)
        try:
            self.session.start()
        except BaseException:
            self.close()
            raise

    def _hand(self, action: Action) -> list[Start]:
        if not self._at_point:
            raise RuntimeError("no decision point: call next_decision() first")
        self.scheduler.handover.send(action)
        return self._receive("applied")[1] or []

    def _receive(self, wanted: str) -> tuple[str, Any]:
        """The decision thread's next message (``wanted``, or ``("end", None)`` once it finished)."""
        session, handover = self.session, self.scheduler.handover
        limit_s = 2 * self.settings.timeout_s + 5.0
        deadline = time.monotonic() + limit_s
        try:
            while True:
                message = handover.receive(POLL_S)
                if message is None and session.check():
                    message = handover.receive(0.0) or ("end", None)
                if message is not None:
                    if message[0] not in (wanted, "end"):
                        raise ProtocolError(f"the decision thread sent {message[0]!r} where "
                                            f"{wanted!r} was expected")
                    return message
                if time.monotonic() > deadline:
                    raise ProtocolError(f"no decision point from Batsim within {limit_s:g} s; "
                                        f"see {session.log_path}")
        except BaseException:
            self.close()
            raise

    def _finish(self) -> None:
        self._ended = True
        self.now = max(self.now, self.machine.now)
        try:
            self.run = self.session.finish()
        except BaseException:
            self.close()
            raise


class BatsimBridge:
    """Batsim episodes for one environment: settings, run folders and the last run's outputs.

    Args:
        platform: the platform.
        settings: the ``batsim`` block (or a dict of it); None uses ``batsim`` from the PATH.
        run_root: where the run folders go (``episode_<k>``, all kept); None: a temporary folder
            keeping only the latest episode, removed by :meth:`close`.
        idle_timeout_s: how long the decision thread waits for each action.

    Raises:
        ConfigError: Batsim not found (saying how to get Batsim 4.x), or a bad setting.
    """

    def __init__(self, platform: Platform, settings: BatsimOptions | Mapping[str, Any] | None = None,
                 run_root: str | Path | None = None, idle_timeout_s: float = IDLE_TIMEOUT_S) -> None:
        self.settings = batsim_settings(settings)
        find_batsim(self.settings.binary)
        self.platform = platform
        self.idle_timeout_s = idle_timeout_s
        self.temporary = run_root is None
        self.run_root = Path(run_root or tempfile.mkdtemp(prefix="hdrm-batsim-"))
        self._cleanup = weakref.finalize(self, shutil.rmtree, str(self.run_root), True) \
            if self.temporary else None
        self.current: BatsimEpisode | None = None
        self._count = 0

    def episode(self, workload: Workload, config: SimulationConfig) -> BatsimEpisode:
        """A new (not yet started) episode; the previous one is closed first."""
        previous = self.current
        if previous is not None:
            previous.close()
            if previous.session is not None:  # it ran: the next one gets a new folder
                self._count += 1
                if self.temporary:
                    shutil.rmtree(previous.run_dir, ignore_errors=True)
        run_dir = self.run_root / f"episode_{self._count}"
        logger.debug("episode %d of the batsim engine in %s", self._count, run_dir)
        self.current = BatsimEpisode(self.platform, workload, config, self.settings, run_dir,
                                     self.idle_timeout_s)
        return self.current

    def outputs(self) -> dict[str, Path]:
        """The last finished episode's Batsim files: ``jobs``, ``schedule`` and ``batsim_log``."""
        run = self.current.run if self.current is not None else None
        files = {} if run is None else {"jobs": run.jobs_csv, "schedule": run.schedule_csv,
                                        "batsim_log": run.run_dir / "batsim.log"}
        return {kind: path for kind, path in files.items() if path.is_file()}

    def close(self) -> None:
        """Close the current episode and remove the temporary folder (safe to call twice)."""
        if self.current is not None:
            self.current.close()
        if self._cleanup is not None:
            self._cleanup()
