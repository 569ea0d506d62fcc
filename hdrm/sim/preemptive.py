"""The built-in engine with block preemption (``SimulationConfig.preemption = "block:SECONDS"``).

:class:`PreemptiveSimulation` is :class:`~hdrm.sim.engine.Simulation` plus three steps (the rules
are :mod:`hdrm.sim.preemption`):

* after each decision, the queued jobs that could not start pick running jobs of a lower
  priority as victims (:func:`~hdrm.sim.preemption.pick_victims`);
* a victim runs on until its next block boundary, found from its remaining work and current
  speed (re-computed at every instant, as contention changes speeds); the engine stops there as
  it stops at a job end, kills the victim with its completed blocks kept and queues the rest of
  its work again (same index, submit time and tenant; the overhead added as work);
* a job that was suspended ends once: one outcome (:class:`PreemptedOutcome`) with its first
  start, its final end, its number of preemptions, the run time it used and the energy of the
  segments it ran.
"""

from __future__ import annotations

import csv
import dataclasses
import logging
import math
from dataclasses import dataclass
from pathlib import Path

from hdrm.core.scheduler import Start
from hdrm.durable import replacing
from hdrm.errors import ConfigError
from hdrm.platform.model import Platform
from hdrm.policies.pairs import PolicyPair
from hdrm.sim.engine import Outcome, Simulation, SimulationResult
from hdrm.sim.preemption import (
    check_policy,
    next_boundary,
    parse_preemption,
    pick_victims,
    priority,
    refuse_accelerators,
)
from hdrm.workload.job import PROFILE_PARALLEL_HOMOGENEOUS, Job

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class PreemptedOutcome(Outcome):
    """An :class:`~hdrm.sim.engine.Outcome` with ``start_s`` the first start, ``finish_s`` the
    final end and ``energy_j`` that of the segments run, plus how often it was suspended and the
    run time its segments used."""

    preemptions: int = 0
    run_s: float = 0.0


@dataclass(slots=True)
class _Progress:
    """A request's segments so far (work per host in GFLOP)."""

    job: Job  # as first started
    first_start_s: float
    block_gflop: float
    overhead_gflop: float  # the overhead work of one resume
    done_gflop: float = 0.0  # work of the request done by the previous segments
    seg_overhead: float = 0.0  # overhead work at the head of the current segment
    seg_start_s: float = 0.0
    preemptions: int = 0
    run_s: float = 0.0
    energy_j: float = 0.0


def preemptive_class(platform: Platform | None) -> type["PreemptiveSimulation"]:
    """:class:`PreemptiveSimulation`, or a ConfigError on a platform with accelerators."""
    refuse_accelerators(platform is not None and bool(platform.accelerators))
    return PreemptiveSimulation


class PreemptiveSimulation(Simulation):
    """A :class:`~hdrm.sim.engine.Simulation` that suspends requests at block boundaries."""

    def __init__(self, platform, workload, config=None) -> None:
        super().__init__(platform, workload, config)
        self.preemption = parse_preemption(self.config.preemption,
                                           self.config.preemption_overhead_s)
        self._progress: dict[int, _Progress] = {}
        self._pending: dict[int, float] = {}  # victim -> the boundary it stops at (GFLOP done)
        self._current: dict[int, Job] = {}  # running job objects by index
        self._checked: object = None

    # ------------------------------------------------------------------ engine steps
    def next_decision(self) -> bool:
        """:meth:`Simulation.next_decision`, stopping also at victims' block boundaries."""
        t_b = self._next_boundary_s()
        if t_b < self._next_event_s():
            self.now = t_b
            self.machine.advance(t_b)  # nothing ends before the next event
            self._suspend_due()
            self._flush_changes()
            return True
        more = super().next_decision()
        if more and self._pending:
            self._suspend_due()
            self._flush_changes()
        return more

    def decide(self, pair: PolicyPair) -> list[Start]:
        """One decision, then victims picked for the queued jobs that could not start."""
        if self._checked is not pair.job:
            check_policy(pair.job)
            self._checked = pair.job
        starts = super().decide(pair)
        for job, cores in starts:
            self._started(job, cores)
        if self.core.queue:
            self._mark_victims(pair)
        else:
            self._pending.clear()
        return starts

    def pick(self, job, core, hold):  # noqa: D102 (job_pick: refused by the environment)
        raise ConfigError("preemption: block preemption ranks requests by a job selection's "
                          "order, and job_pick mode has none; use actions mode policy_pair "
                          "or preemption none or request")

    # ------------------------------------------------------------------ internals
    def _next_event_s(self) -> float:
        """Time of the next submission, release or job end."""
        t = self._arrivals[self._next].submit_s if self._next < len(self._arrivals) else math.inf
        if self._releases:
            t = min(t, self._releases[0][0])
        return min(t, self.machine.next_time())

    def _started(self, job: Job, cores: list[int]) -> None:
        self._current[job.idx] = job
        info = self._progress.get(job.idx)
        if info is None:
            gflops = self.platform.core_gflops[cores[0]]
            info = self._progress[job.idx] = _Progress(
                job, self.now, self.preemption.block_s * gflops,
                self.preemption.overhead_s * gflops)
        info.seg_start_s = self.now

    def _boundary_s(self, idx: int, boundary: float) -> float:
        """When running ``idx`` reaches ``boundary`` (work of the request) at its current speed
        (``inf`` while it is stalled)."""
        info = self._progress[idx]
        run = self.machine.running_job(idx)
        now = self.machine.now
        run.sync(now)
        target = run.ops_gflop - info.seg_overhead - (boundary - info.done_gflop)
        left = run.remaining - target
        if left <= 0:
            return now
        return now + left / run.min_speed if run.min_speed > 0 else math.inf

    def _next_boundary_s(self) -> float:
        """When the first victim reaches its block boundary at the current speeds."""
        return min((self._boundary_s(i, b) for i, b in self._pending.items()), default=math.inf)

    def _mark_victims(self, pair: PolicyPair) -> None:
        """Pick the victims for the queued jobs that could not start (anew at each decision:
        a victim no longer needed runs on)."""
        self._pending.clear()
        policy, now = pair.job, self.now
        running = [(priority(policy, job, now), job) for job in self._current.values()
                   if job.profile_type == PROFILE_PARALLEL_HOMOGENEOUS]
        if not running:
            return
        lowest = max(r for r, _ in running)
        blocked = [(r, j) for r, j in ((priority(policy, j, now), j) for j in self.core.queue)
                   if r < lowest]
        blocked.sort(key=lambda e: e[0])
        for job in pick_victims(blocked, running):
            boundary = self._boundary_of(job.idx)
            if boundary is not None:
                self._pending[job.idx] = boundary
                logger.debug("t=%g: job %s to stop at %g GFLOP", now, job.id, boundary)

    def _boundary_of(self, idx: int) -> float | None:
        """The next block boundary of running ``idx`` (work of the request), or None."""
        info = self._progress[idx]
        run = self.machine.running_job(idx)
        run.sync(self.machine.now)
        done = info.done_gflop + max(0.0, run.ops_gflop - run.remaining - info.seg_overhead)
        boundary = next_boundary(done, info.block_gflop, info.job.ops_gflop)
        if boundary is not None and boundary <= info.done_gflop:
            # No work done in this segment yet (it started at this instant, e.g. backfilled):
            # stopping here would make no progress, and the same instant could start it and
            # pick it again without end. It runs to the boundary after the one it started at.
            boundary = next_boundary(info.done_gflop + info.block_gflop, info.block_gflop,
                                     info.job.ops_gflop)
        return boundary

    def _suspend_due(self) -> None:
        """Suspend the victims at their boundary now; queue the rest of their work again."""
        now = self.now
        for idx, boundary in list(self._pending.items()):
            if not self.machine.is_running(idx):  # ended at this instant
                del self._pending[idx]
                continue
            if self._boundary_s(idx, boundary) > now:
                continue
            del self._pending[idx]
            self._suspend(idx, boundary, now)

    def _suspend(self, idx: int, boundary: float, now: float) -> None:
        info = self._progress[idx]
        end = self.machine.kill(idx)
        job = self._current.pop(idx)
        self.core.complete(job, now)
        info.preemptions += 1
        info.run_s += now - info.seg_start_s
        info.energy_j += end.energy_j
        info.done_gflop = boundary
        info.seg_overhead = info.overhead_gflop
        first = info.job
        left = first.ops_gflop - boundary
        walltime = first.walltime_s - info.run_s if first.has_walltime else first.walltime_s
        rest = dataclasses.replace(
            job, ops_gflop=left + info.seg_overhead, extra=job.extra,
            run_time_s=first.run_time_s * left / first.ops_gflop, walltime_s=walltime)
        self._released[idx] = rest  # the engine takes a job's end from there
        reason = self.core.submit(rest, now)
        if reason is not None:  # it ran here before: its size cannot have become too large
            raise AssertionError(f"job {job.id}: resumed part refused: {reason}")
        logger.debug("t=%g: job %s suspended at %g of %g GFLOP", now, job.id, boundary,
                     first.ops_gflop)

    def _record(self, job: Job, outcome: Outcome) -> None:
        """Record a job's end; a job that ran several segments ends once, with all of them."""
        info = self._progress.pop(job.idx, None)
        self._current.pop(job.idx, None)
        self._pending.pop(job.idx, None)
        if info is not None and info.preemptions:
            outcome = PreemptedOutcome(
                info.job, outcome.state, info.first_start_s, outcome.finish_s, outcome.cores,
                info.energy_j + outcome.energy_j, outcome.reason, info.preemptions,
                info.run_s + outcome.finish_s - info.seg_start_s)
            job = info.job
        super()._record(job, outcome)


#: Columns of ``out_preemptions.csv``: one row per job that ran.
PREEMPTION_COLUMNS = ("job_id", "submission_time", "starting_time", "finish_time",
                      "preemptions", "run_time_used")


def preemption_rows(result: SimulationResult) -> list[tuple]:
    """One row per job that ran (:data:`PREEMPTION_COLUMNS`): its first start, final end, how
    often it was suspended and the run time its segments used (its whole span if never)."""
    rows = []
    for o in result.outcomes:
        if o.start_s < 0:
            continue  # rejected
        count, used = ((o.preemptions, o.run_s) if isinstance(o, PreemptedOutcome)
                       else (0, o.finish_s - o.start_s))
        rows.append((o.job.id, o.job.submit_s, o.start_s, o.finish_s, count, used))
    return rows


def write_preemptions(result: SimulationResult, path: str | Path) -> Path:
    """Write ``out_preemptions.csv`` (:func:`preemption_rows`) to ``path``."""
    path = Path(path)
    with replacing(path) as scratch, scratch.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)  # whole or not at all (hdrm.durable.replacing)
        writer.writerow(PREEMPTION_COLUMNS)
        writer.writerows(preemption_rows(result))
    return path
