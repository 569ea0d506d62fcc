"""The decision core's scheduling loop: the job queue, decisions and their two semantics.

Engines call :meth:`DecisionCore.submit` and :meth:`DecisionCore.complete` as jobs arrive and end,
then :meth:`DecisionCore.schedule` once per decision point (after each batch of submissions and
completions, where Batsim would call a decision system) and apply the returned starts and the state
changes from :meth:`DecisionCore.take_changes`.

Decision semantics (``decision``):

``event`` (default)
    At every decision point the queue is re-ordered by the policy and jobs start in that order
    until one does not fit (then backfilling, if any). A job picked earlier does not bind later
    decisions: arrivals can overtake it.
``commit``
    RLScheduler's semantics: once the policy picks a job that does not fit, that pick is held
    (and backfilled around, if backfilling is on) until it fits; later arrivals cannot overtake it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from hdrm.lazy import numpy as np

from hdrm.core.backfilling import Backfilling, Start
from hdrm.core.contention import make_contention
from hdrm.core.predictor import RuntimePredictor
from hdrm.core.state import ClusterState
from hdrm.errors import ConfigError
from hdrm.platform.model import Platform
from hdrm.policies.backfill import BACKFILLING, ExpectedEnds
from hdrm.policies.core_selection import CorePolicy
from hdrm.policies.job_selection import JobPolicy, StaticOrder
from hdrm.policies.pairs import PolicyPair
from hdrm.workload.job import Job

DECISIONS = ("event", "commit")


@dataclass(slots=True)
class RunInfo:
    """A running job as the scheduler sees it."""

    job: Job
    start_s: float
    expected_end_s: float


class DecisionCore(Backfilling):
    """Queue, cluster mirror and decision loop, independent of the engine.

    Args:
        platform: the platform.
        contention: contention model name.
        backfilling: ``"none"``, ``"easy"``, ``"easy_first"`` or ``"conservative"``.
        decision: ``"event"`` or ``"commit"``.
        rng: the run's random generator (random policies).
    """

    def __init__(
        self,
        platform: Platform,
        contention: str = "hdeeprm",
        backfilling: str = "none",
        decision: str = "event",
        rng: np.random.Generator | None = None,
    ) -> None:
        self.platform = platform
        self.state = ClusterState(platform, make_contention(contention))
        self.backfilling = BACKFILLING.get(backfilling, "backfilling")
        if decision not in DECISIONS:
            raise ConfigError(f"decision: unknown value {decision!r}; choose one of: event, commit")
        self.decision = decision
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.queue: list[Job] = []
        self.running: dict[int, RunInfo] = {}
        #: Running jobs by expected end, kept where backfilling reads them at every decision.
        self._ends = (ExpectedEnds(by_size=self.backfilling == "easy_first")
                      if self.backfilling != "none" else None)
        self.committed: Job | None = None
        #: True when a job started or left since the engine last took the cluster mirror's
        #: state changes (it sets it back to False then): without it, no change is queued.
        self.changed = False
        self._max_node_mem = max(platform.node_memory_mb)
        self._nb_cores = platform.nb_cores
        self._capacities: dict[float, int] = {}
        self._blocked: set[int] = set()
        #: Jobs queued so far (arrival numbers), and the queue kept in the order of each static
        #: policy used so far (by name; None: its keys do not order totally, so it sorts).
        self._arrivals = 0
        self._orders: dict[str, StaticOrder | None] = {}
        #: The queue's only job and its arrival number while no kept order has it (it came to
        #: an empty queue): filed when another job comes or an order is made; a job that
        #: starts at once (most inference requests) is never filed.
        self._unfiled: tuple[Job, int] | None = None
        #: run-time predictions from ended jobs (the ``*_pred`` job policies order by them)
        self.predictor = RuntimePredictor()
        #: Called as ``hook(job, now, 1)`` when a job starts and ``hook(job, now, -1)`` when it
        #: leaves the machine (tenants' usage for fair share: :mod:`hdrm.policies.sla_orders`).
        self.usage_hooks: list[Callable[[Job, float, int], None]] = []

    # ------------------------------------------------------------------ events
    def submit(self, job: Job, now: float) -> str | None:
        """Queue ``job``; returns why it must be rejected (it can never run here), or None."""
        res, mem = job.res, job.mem_mb
        if res > self._nb_cores:
            return f"requests {res} cores, the platform has {self._nb_cores}"
        if res <= 0:
            return "requests no core"
        if mem > 0:  # without memory per core, every core can hold the job
            if mem > self._max_node_mem:
                return f"needs {mem:g} MB per core, the largest node has {self._max_node_mem:g} MB"
            capacity = self._memory_capacity(mem)
            if res > capacity:
                return (f"requests {res} cores of {mem:g} MB, the nodes' memory holds at "
                        f"most {capacity} such cores")
        self.queue.append(job)
        self._arrivals += 1
        if self._orders:
            if len(self.queue) == 1:  # any order of one job is that job: filed if others come
                self._unfiled = (job, self._arrivals)
            else:
                if self._unfiled is not None:
                    self._file(*self._unfiled)
                self._file(job, self._arrivals)
        return None

    def _file(self, job: Job, arrival: int) -> None:
        """File queued ``job`` in the kept orders (one whose key cannot be kept is dropped)."""
        if self._unfiled is not None and self._unfiled[0] is job:
            self._unfiled = None
        for name, kept in self._orders.items():
            if kept is not None and not kept.add(job, arrival):
                self._orders[name] = None

    def _memory_capacity(self, mem_mb: float) -> int:
        """Most cores of ``mem_mb`` each the empty platform can hold (node memory per node)."""
        if mem_mb <= 0:
            return self.platform.nb_cores
        capacity = self._capacities.get(mem_mb)
        if capacity is None:  # traces repeat a few memory sizes: compute each once per run
            capacity = self._capacities[mem_mb] = sum(
                len(node.core_ids) if not math.isfinite(node.memory_mb)
                else min(len(node.core_ids), int(node.memory_mb // mem_mb))
                for node in self.platform.nodes
            )
        return capacity

    def complete(self, job: Job, now: float) -> tuple[int, ...]:
        """``job`` left the machine (finished or killed): free its cores."""
        self.changed = True
        info = self.running.pop(job.idx, None)
        if info is not None:
            if self._ends is not None:
                self._ends.remove(job)
            self.predictor.observe(job, now - info.start_s)
            if self.usage_hooks:
                for hook in self.usage_hooks:
                    hook(job, now, -1)
        return self.state.release(job, now)

    def take_changes(self) -> list[tuple[int, float, list[int]]]:
        """Power-state changes to apply, as ``(state, speed_factor, cores)`` groups."""
        return self.state.take_changes()

    # ------------------------------------------------------------------ decisions
    def schedule(self, now: float, pair: PolicyPair) -> list[Start]:
        """One decision with ``pair``: start what the policy, backfilling and semantics allow."""
        if not self.queue:
            return []
        committed = self.committed
        if (committed is not None and self.backfilling == "none" and pair.job.name != "random"
                and not self._fits(committed, now)):
            return []  # the held pick waits and nothing may overtake it: no need to order
        order = self._order(pair.job, now)
        if committed is not None and (not order or order[0] is not committed):
            order = _first(committed, order)  # the held pick first, then the others in order
        started: list[Start] = []
        head = None
        fits, select, state, rng = self._fits, pair.core.select, self.state, self.rng
        jobs = iter(order)
        for job in jobs:  # _place, inline (and _fits when no memory is asked)
            if (job.res <= state.free_cores and job.mem_mb <= 0) or fits(job, now):
                cores = select(state, job, rng)
            else:
                cores = None
            if cores is None:
                head = job
                break
            self._start(job, cores, now)
            started.append((job, cores))
        if head is not None:
            if self.decision == "commit":
                self.committed = head
            if self.backfilling != "none":  # the rest of the order, read as far as needed
                started += self._backfill(now, head, jobs, pair.core)
        elif self.decision == "commit":
            self.committed = None
        if started:
            self._dequeue(started)
        return started

    def start_now(self, job: Job, core: CorePolicy, now: float) -> list[int] | None:
        """Start one chosen ``job`` now if it fits (the ``job_pick`` action); returns its cores."""
        cores = self._place(job, core, now)
        if cores is None:
            return None
        self._start(job, cores, now)
        self.queue.remove(job)
        if self._orders:
            self._forget(job)
        if self.committed is job:
            self.committed = None
        return cores

    def backfill(self, now: float, head: Job, core: CorePolicy) -> list[Start]:
        """Backfill around ``head`` with the queue in submission order (``job_pick`` mode)."""
        if self.backfilling == "none":
            return []
        rest = [j for j in self.queue if j is not head]
        started = self._backfill(now, head, rest, core)
        self._dequeue(started)
        return started

    def expected_ends(self, now: float) -> list[tuple[float, Job]]:
        """Running jobs with their expected ends (start + requested time, never before ``now``),
        in end order: what reservations are computed from."""
        if self._ends is not None:
            return self._ends.at(now)
        ends = [(max(r.expected_end_s, now), r.job) for r in self.running.values()]
        ends.sort(key=lambda e: e[0])  # stable: equal ends in start order
        return ends

    # ------------------------------------------------------------------ internals
    def _order(self, policy: JobPolicy, now: float) -> list[Job]:
        """The queue in ``policy``'s order: kept up to date for static policies (a list the
        caller must not change), sorted for the others."""
        if len(self.queue) == 1:  # one job: its own order, for any policy
            return self.queue
        kept = self._orders.get(policy.name)
        if kept is not None and kept.policy is policy and len(kept.jobs) == len(self.queue):
            return kept.jobs  # (only static policies are kept)
        if policy.static:
            kept = self._orders.get(policy.name, False)
            if kept is False or (kept is not None and (kept.policy is not policy
                                                       or len(kept.jobs) != len(self.queue))):
                kept = self._orders[policy.name] = self._keep(policy)
            if kept is not None:
                return kept.jobs
        return policy.order(self.queue, now, self.rng, self.predictor.predict)

    def _keep(self, policy: JobPolicy) -> StaticOrder | None:
        """A :class:`StaticOrder` of the queue for ``policy``; None when its keys cannot be kept."""
        if self._unfiled is not None:  # the other kept orders get it first (made from the queue,
            self._file(*self._unfiled)  # this one has it)
        kept = StaticOrder(policy)
        for job in self.queue:  # numbered anew in queue order (a job queued by hand included),
            self._arrivals += 1  # after every number given so far
            if not kept.add(job, self._arrivals):
                return None
        return kept

    def _forget(self, job: Job) -> None:
        """``job`` left the queue: drop it from the kept orders."""
        if self._unfiled is not None and self._unfiled[0] is job:
            self._unfiled = None
            return
        for kept in self._orders.values():
            if kept is not None:
                kept.remove(job)

    def _dequeue(self, started: list[Start]) -> None:
        queue = self.queue
        if len(started) == 1:
            job = started[0][0]
            unfiled = self._unfiled
            if unfiled is not None and unfiled[0] is job:
                self._unfiled = None
            else:
                for kept in self._orders.values():  # _forget, inline
                    if kept is not None:
                        kept.remove(job)
            queue.remove(job)  # jobs compare by identity: a C-level scan
            return
        if self._orders:
            if self._unfiled is not None and any(job is self._unfiled[0] for job, _ in started):
                self._unfiled = None
            kept_orders = [kept for kept in self._orders.values() if kept is not None]
            for job, _ in started:  # _forget, inline
                for kept in kept_orders:
                    kept.remove(job)
        if len(started) > 64:
            taken = {id(job) for job, _ in started}
            self.queue = [j for j in queue if id(j) not in taken]
            return
        for job, _ in started:
            queue.remove(job)  # jobs compare by identity: a C-level scan

    def _fits(self, job: Job, now: float) -> bool:
        """Whether ``job`` fits now; the first time it does not, that is recorded."""
        state = self.state
        # without memory per core, enough free cores is what state.fits asks
        if job.res > state.free_cores or (job.mem_mb > 0 and not state.fits(job)):
            if job.idx not in self._blocked:
                self._blocked.add(job.idx)
                state.records.core(now, job.id, job.res, state.allocatable(job.mem_mb))
            return False
        return True

    def _place(self, job: Job, core: CorePolicy, now: float) -> list[int] | None:
        if not self._fits(job, now):
            return None
        return core.select(self.state, job, self.rng)

    def _start(self, job: Job, cores: list[int], now: float) -> None:
        self.changed = True
        self.state.allocate(job, cores, now)
        walltime = job.walltime_s  # estimated_duration_s, inline
        end_s = now + (walltime if 0.0 < walltime < math.inf else job.run_time_s)
        self.running[job.idx] = RunInfo(job, now, end_s)
        if self._ends is not None:
            self._ends.add(job, end_s)
        if self.usage_hooks:
            for hook in self.usage_hooks:
                hook(job, now, 1)


def _first(job: Job, order: list[Job]) -> Iterator[Job]:
    """``job``, then the jobs of ``order`` but ``job`` in their order (read in C: the queue is
    not copied, and a backfilling pass reads only as far as it needs)."""
    try:
        k = order.index(job)  # jobs compare by identity
    except ValueError:
        return itertools.chain((job,), order)
    return itertools.chain((job,), itertools.islice(order, k), itertools.islice(order, k + 1, None))
