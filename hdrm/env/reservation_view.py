"""What EASY backfilling sees of a ``job_pick`` window, once per decision.

EASY (Mu'alem and Feitelson 2001) reserves for one waiting job, the first in its order that does
not fit now (the *reserved* job), at the *shadow time*, the earliest time the running jobs'
expected ends (start + requested time) free enough cores for it. The jobs ahead of it in that
order fit now and start first; any later job may start now if it fits and does not delay the
reservation: it is expected to end by the shadow time, or it uses no more cores than the *extra*
ones (those free at the shadow time beyond the reserved job's need).

:class:`ReservationView` computes this for the window of a
:class:`~hdrm.env.scheduling_env.SchedulingEnv`, in the order of the environment's
``reservation`` policy (FCFS by default: EASY's own). Two parts of the environment read it: the
``job_window_reservation`` observations (:mod:`hdrm.env.job_window`) show it to the agent, and
``pick_limit="easy"`` (:class:`~hdrm.env.config.EnvConfig`) masks the picks EASY would not make
now: while jobs ahead of the reserved one wait, only they may start (in any order); then only
the fitting jobs that do not delay the reservation. A learned order so keeps EASY's guarantee:
the reserved job is pushed back only by the jobs before it in the order (with FCFS, by older
jobs only), never by a backfilled one. Cores only: node memory is not counted in the
reservation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from hdrm.policies.backfill import estimated_duration_s, reservation
from hdrm.policies.job_selection import JOB_POLICIES

if TYPE_CHECKING:  # pragma: no cover
    from hdrm.env.scheduling_env import SchedulingEnv
    from hdrm.workload.job import Job


@dataclass(frozen=True)
class ReservationMarks:
    """EASY's view of the window jobs (arrays over window positions).

    Attributes:
        start: earliest start of each job from the expected ends (now when it fits; inf when it
            never fits); None when every job fits (nothing waits, no reservation).
        reserved: window position of the reserved job, -1 when none.
        ahead: the jobs before the reserved one in the reservation order (they fit now).
        delays: the fitting jobs, not ahead, whose start now would delay the reservation.
    """

    start: np.ndarray | None
    reserved: int
    ahead: np.ndarray
    delays: np.ndarray


class ReservationView:
    """EASY's reservation for the window of ``env`` (see the module's text)."""

    def __init__(self, env: "SchedulingEnv") -> None:
        self.env = env
        self.policy = JOB_POLICIES.get(env.config.reservation, "reservation")
        self._rng = np.random.default_rng(env.config.seed)  # "random" order: never the run's own
        self._per_job: tuple[object, np.ndarray, np.ndarray] | None = None

    def per_job(self) -> tuple[np.ndarray, np.ndarray]:
        """Requested time (what reservations assume) and cores of every job of the episode."""
        jobs = self.env.sim.workload.jobs
        if self._per_job is None or self._per_job[0] is not jobs:
            durations = np.array([estimated_duration_s(j) for j in jobs], dtype=float)
            cores = np.array([j.res for j in jobs], dtype=float)
            self._per_job = (jobs, durations, cores)
        return self._per_job[1], self._per_job[2]

    def marks(self, window: list["Job"], fits: np.ndarray) -> ReservationMarks:
        """EASY's view of ``window`` (whose jobs that fit now are ``fits``)."""
        k = len(window)
        none = np.zeros(k, dtype=bool)
        if fits.all():
            return ReservationMarks(None, -1, none, none)
        sim = self.env.sim
        core, now = sim.core, sim.now
        state = core.state
        durations, cores = self.per_job()
        idx = np.fromiter((j.idx for j in window), dtype=np.intp, count=k)
        res = cores[idx]
        # the earliest start of every job: when the cores freed by the expected ends suffice
        ends = core.expected_ends(now)
        start = np.full(k, np.inf)
        if ends:
            times = np.array([e for e, _ in ends], dtype=float)
            avail = state.free_cores + np.cumsum([j.res for _, j in ends], dtype=float)
            pos = np.searchsorted(avail, res, side="left")
            ok = pos < len(times)
            start[ok] = times[pos[ok]]
        start[fits] = now
        # the reserved job: the first that does not fit in the policy's order; those before it
        position = {id(job): i for i, job in enumerate(window)}
        ahead = none.copy()
        reserved = -1
        for job in self.policy.order(window, now, self._rng, core.predictor.predict):
            i = position[id(job)]
            if not fits[i]:
                reserved = i
                break
            ahead[i] = True
        head = window[reserved]
        shadow, extra = reservation(state, ends, head, now, core.backfilling == "easy_first")
        delays = none
        if math.isfinite(shadow):
            late = now + durations[idx] > shadow
            delays = fits & late & (res > extra) & ~ahead
        return ReservationMarks(start, reserved, ahead, delays)
