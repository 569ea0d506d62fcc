"""One running job on the simulated machine: lock-step progress and Batsim's walltime rule.

A ``parallel_homogeneous`` job runs as one SimGrid parallel task (``ptask_L07``): the task's rate is
bounded by every host's speed divided by that host's work, so with the same work on every host all
of them advance in lock-step at the speed of the slowest one. The job therefore keeps one remaining
amount of work (GFLOP per host) that drops by ``min(speed) * dt``, and the speed of its slowest host
with the number of its hosts at that speed, which
:meth:`~hdrm.sim.machine_states.MachineStates.apply_states` updates in O(1) per changed host,
recomputing it over the job's hosts only when the last host at the minimum speeds up.

Walltimes follow Batsim 4.2.1 (``src/jobs_execution.cpp``, ``src/task_execution.cpp``) on SimGrid
3.32: a delay job succeeds only if ``delay < walltime`` (a plain comparison); a parallel job is an
execution waited for with the walltime as timeout, killed then if work is left. SimGrid counts a
remaining amount below :data:`WORK_PRECISION` of the work as done, so a parallel job whose work ends
exactly at its walltime succeeds when its end is the first thing due at its instant. Work and
walltime left are both decreased by the same elapsed times, as SimGrid does, so that decision does
not depend on how large the clock is.

Such a tie is lost when SimGrid makes a step less than :data:`TIMING_PRECISION` before its end
(Batsim 4.2.1 on SimGrid 3.32, read in their sources and checked with the binary): the walltime
is a SimGrid sleep (``wait_for``'s timeout), and SimGrid ends a sleep at the first step of its
clock that leaves it less than :data:`TIMING_PRECISION` to go, while the work is done only below
``WORK_PRECISION``: ``COMPLETED_WALLTIME_REACHED``. Within one instant of the built-in engine
the steps fall a fraction of a nanosecond apart, by the jobs' ranks in their decisions
(:data:`MESSAGE_S`); :mod:`hdrm.sim.tie_steps` places them. A step at an earlier time is
:meth:`RunningJob.ties_walltime_by`'s.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

#: Fraction of a parallel job's work below which what is left counts as done: SimGrid 3.32 sets an
#: action's remaining amount (a fraction of its work) to 0 below maxmin precision x surf precision
#: (1e-5 x 1e-9).
WORK_PRECISION = 1e-14
#: SimGrid 3.32's timing precision (``surf/precision``, seconds): a sleep (a walltime's timer)
#: ends at the first step that leaves it less than this to go.
TIMING_PRECISION = 1e-9
#: The time of one message between Batsim's actors on the master host (1 byte on SimGrid's
#: 10 GBps loopback, seconds): the k-th job a decision starts begins k of these after it.
MESSAGE_S = 1e-10


class RunningJob:
    """Book-keeping of one running job (used by :class:`~hdrm.sim.machine.Machine`).

    Args:
        key: the job's key.
        cores: its hosts.
        start_s: when it started.
        walltime_s: its walltime (``math.inf``: none, or kills disabled).
    """

    __slots__ = (
        "key", "cores", "start_s", "parallel", "delay_s", "ops_gflop", "remaining", "wall_left_s",
        "min_speed", "at_min", "updated_s", "end_s", "version", "energy_j", "power_w", "energy_t",
        "walltime_hit", "runs", "parts", "part_i", "part_s", "rank", "order",
    )

    def __init__(self, key: int, cores: Sequence[int], start_s: float, walltime_s: float) -> None:
        self.key = key
        self.cores = cores
        self.start_s = start_s
        self.parallel = False
        self.delay_s = 0.0
        self.ops_gflop = 0.0
        self.remaining = 0.0  # GFLOP left on each host (parallel jobs), as of updated_s
        self.wall_left_s = walltime_s  # walltime left as of updated_s
        self.min_speed = math.inf  # speed of the slowest host, GFLOP/s (parallel jobs)
        self.at_min = 0  # how many of its hosts run at min_speed
        self.updated_s = start_s
        self.end_s = math.inf
        self.version = 0
        self.energy_j = 0.0  # energy of its hosts up to energy_t
        self.power_w = 0.0  # current power of its hosts
        self.energy_t = start_s
        self.walltime_hit = False
        #: the runs of ``cores`` its start took (a wide job's, or a narrow one's on hosts that
        #: follow their jobs), kept for its end; None where not made
        self.runs: list[tuple[int, int]] | None = None
        #: a composed job's parts, ``(delay_s, None)`` or ``(None, ops_gflop per host)`` each,
        #: run one after the other; the one running; when it began (None: one part, the job's)
        self.parts: tuple[tuple[float | None, float | None], ...] | None = None
        self.part_i = 0
        self.part_s = start_s
        #: (set by the machine at its start: its place among the jobs started at its instant,
        #: ``rank`` 1, 2, ..., how many messages after its decision it starts, in
        #: :data:`MESSAGE_S`; and among all starts, ``order``, which ranks ties of rank)

    def delay_run_s(self, delay_s: float) -> float:
        """Make this a delay job; returns how long it runs (its delay, or its walltime)."""
        self.delay_s = delay_s
        self.walltime_hit = not delay_s < self.wall_left_s  # Batsim: success iff delay < walltime
        return self.wall_left_s if self.walltime_hit else delay_s

    def make_parallel(self, ops_gflop: float, host_speeds: Iterable[float]) -> None:
        """Make this a parallel job of ``ops_gflop`` per host, its hosts at ``host_speeds``."""
        self.parallel = True
        self.ops_gflop = self.remaining = ops_gflop
        self.set_min_speed(host_speeds)

    def set_min_speed(self, host_speeds: Iterable[float]) -> None:
        """Recompute the slowest-host speed (and its count) from every host's speed."""
        low, count = math.inf, 0
        for s in host_speeds:
            if s < low:
                low, count = s, 1
            elif s == low:
                count += 1
        self.min_speed, self.at_min = low, count

    def sync(self, now: float) -> None:
        """Bring a parallel job's remaining work and walltime up to ``now``."""
        dt = now - self.updated_s
        if dt > 0:
            left = self.remaining - self.min_speed * dt if self.remaining > 0 else 0.0
            self.remaining = left if left >= WORK_PRECISION * self.ops_gflop else 0.0
            self.wall_left_s -= dt
        self.updated_s = now

    def run_left_s(self) -> float:
        """Time from ``updated_s`` until a synced parallel job ends at the current speeds (its
        work done, or its walltime if work would be left then); sets ``walltime_hit``."""
        speed, left, wall = self.min_speed, self.remaining, self.wall_left_s
        if left <= 0:
            to_end = 0.0
        else:
            to_end = left / speed if speed > 0 else math.inf
        self.walltime_hit = False
        if to_end > wall:
            self.walltime_hit = left - speed * wall >= WORK_PRECISION * self.ops_gflop
            to_end = wall
        return to_end

    def ties_walltime_by(self, step_s: float) -> bool:
        """True when this parallel job, due to end with its work done, is still running at a
        step at ``step_s`` (at an earlier time than its end) that fires its walltime's timer:
        the walltime is then within :data:`TIMING_PRECISION` of ``step_s``."""
        return (self.parallel and not self.walltime_hit
                and step_s >= self.updated_s + self.wall_left_s - TIMING_PRECISION)

    def progress(self, now: float) -> float:
        """Fraction of the job done at ``now``, in [0, 1]."""
        if not self.parallel:  # (of a composed job: its running part's, as Batsim reports it)
            return min(1.0, (now - self.part_s) / self.delay_s) if self.delay_s > 0 else 1.0
        self.sync(now)
        if self.ops_gflop <= 0:
            return 1.0
        return max(0.0, 1.0 - self.remaining / self.ops_gflop)
