"""The observations of ``job_pick`` mode: one row per job of the window.

These kinds register in :data:`~hdrm.env.observations.OBSERVATIONS` with the others (whose
normalisations they share: see :mod:`hdrm.env.observations`). Their ``job_rows`` flag marks them as
the kinds of ``job_pick`` mode (:func:`~hdrm.env.observations.job_window_kinds`).

``job_window`` (``job_pick`` mode)
    A matrix of ``window`` rows (the first queued jobs, in submission order; padding rows are 0)
    and 8 columns: waiting time, requested time, processors, memory, bandwidth, fits-now flag
    (1 when the job could start now), a real-job flag (1 for a queued job, 0 for padding), and the
    cluster's free-core fraction.
``job_window_reservation`` (``job_pick`` mode)
    ``job_window`` with four more columns before the real-job flag, so that a per-job scorer can
    see what EASY backfilling sees (Mu'alem and Feitelson 2001), from the running jobs' expected
    ends (start + requested time):

    * ``start_in``: how long until the job could start, ``log1p(t - now) / log1p(7 days)``
      (0 when it fits now, 1 when it never fits); cores only, memory is not counted;
    * ``reserved``: 1 for the job a reservation is made for, the first job that does not fit now
      in the order of the environment's ``reservation`` policy (FCFS by default);
    * ``before_reserved``: 1 for a job ahead of the reserved one in that order (it fits now: EASY
      starts it before reserving);
    * ``delays_reserved``: 1 for a job that fits now and whose start would delay that reservation
      (it is expected to end after the shadow time and uses more cores than the extra ones).

    The columns come from :mod:`hdrm.env.reservation_view`. They inform; they constrain only
    with ``pick_limit="easy"``, which masks what EASY would not start now (the jobs marked
    ``delays_reserved``, and every job not ``before_reserved`` while one is).
``job_window_predicted`` (``job_pick`` mode)
    ``job_window_reservation`` with one more column before the real-job flag: the job's predicted
    run time, normalised as the requested time: the mean run time of its user's last two ended
    jobs, at most the requested time (:mod:`hdrm.core.predictor`; Tsafrir et al. 2007), i.e.
    what a scheduler can know of the job's real length when it decides. Reservations still
    assume the requested times, as EASY does.
``job_window_queue`` (``job_pick`` mode)
    ``job_window_reservation`` with four columns before the real-job flag that describe the
    whole queue at this decision (the same value on every job row): a per-job scorer sees only
    its own row, so without them it cannot tell a decision with a long or blocked queue from one
    with a short one. Over all queued jobs (the window's and those past it):

    * ``queue_length``: ``q / (q + window)`` for ``q`` queued jobs;
    * ``queue_demand``: the queued jobs' cores ``c`` over the platform's ``n``, as
      ``c / (c + n)`` (0.5: one machine's worth waits);
    * ``queue_blocked``: the share of queued jobs that need more cores than are free now;
    * ``oldest_wait``: the longest wait in the queue, normalised as the waiting time.
"""

from __future__ import annotations

import math

import numpy as np

from hdrm.env.observations import _LOG_WEEK, OBSERVATIONS, Observation

JOB_FEATURES = ("waiting_time", "requested_time", "processors", "memory", "bandwidth",
                "fits_now", "is_job", "free_cores")
RESERVATION_JOB_FEATURES = JOB_FEATURES[:6] + ("start_in", "reserved", "before_reserved",
                                                     "delays_reserved") + JOB_FEATURES[6:]
PREDICTED_JOB_FEATURES = RESERVATION_JOB_FEATURES[:-2] + ("predicted_time",) + JOB_FEATURES[6:]
QUEUE_FEATURES = ("queue_length", "queue_demand", "queue_blocked", "oldest_wait")
QUEUE_JOB_FEATURES = RESERVATION_JOB_FEATURES[:-2] + QUEUE_FEATURES + JOB_FEATURES[6:]


@OBSERVATIONS.register("job_window")
class JobWindowObservation(Observation):
    name = "job_window"
    features = JOB_FEATURES
    job_rows = True  # one row per window job: the observation of ``job_pick`` mode

    def build(self) -> np.ndarray:
        env = self.env
        window, out, idx = self.window_rows()
        k = len(window)
        if k:
            wait = env.sim.now - env.submit[idx]
            out[:k, 0] = np.log1p(np.maximum(wait, 0.0)) / _LOG_WEEK
            out[:k, 1:5] = env.static[idx]
            fits = env.window_fits()
            out[:k, 5] = fits
            self.extra_columns(out[:k], window, idx, fits)
            out[:k, -2] = 1.0
        out[:, -1] = env.sim.core.state.free_cores / env.platform.nb_cores
        out.clip(0.0, 1.0, out=out)
        return out

    def extra_columns(self, rows: np.ndarray, window: list, idx: np.ndarray, fits: np.ndarray
                      ) -> None:
        """Fill the columns between ``fits_now`` and ``is_job`` (none here)."""


@OBSERVATIONS.register("job_window_reservation")
class JobWindowReservationObservation(JobWindowObservation):
    name = "job_window_reservation"
    features = RESERVATION_JOB_FEATURES
    reads_reservation = True  # the environment checks its reservation order when it is made

    def extra_columns(self, rows: np.ndarray, window: list, idx: np.ndarray, fits: np.ndarray
                      ) -> None:
        marks = self.env.reservation_marks()
        if marks.start is None:
            return  # nothing waits: no reservation, every job starts now
        start = marks.start
        finite = np.isfinite(start)
        rows[:, 6] = 1.0
        rows[finite, 6] = np.log1p(np.maximum(start[finite] - self.env.sim.now, 0.0)) / _LOG_WEEK
        rows[marks.reserved, 7] = 1.0
        rows[:, 8] = marks.ahead
        rows[:, 9] = marks.delays


@OBSERVATIONS.register("job_window_predicted")
class JobWindowPredictedObservation(JobWindowReservationObservation):
    name = "job_window_predicted"
    features = PREDICTED_JOB_FEATURES

    def extra_columns(self, rows: np.ndarray, window: list, idx: np.ndarray, fits: np.ndarray
                      ) -> None:
        super().extra_columns(rows, window, idx, fits)
        predict = self.env.sim.core.predictor.predict
        predicted = np.fromiter((predict(job) for job in window), dtype=float, count=len(window))
        rows[:, 10] = np.log1p(predicted) / _LOG_WEEK


@OBSERVATIONS.register("job_window_queue")
class JobWindowQueueObservation(JobWindowReservationObservation):
    name = "job_window_queue"
    features = QUEUE_JOB_FEATURES

    def extra_columns(self, rows: np.ndarray, window: list, idx: np.ndarray, fits: np.ndarray
                      ) -> None:
        super().extra_columns(rows, window, idx, fits)
        first = len(RESERVATION_JOB_FEATURES) - 2
        rows[:, first:first + len(QUEUE_FEATURES)] = self.queue_columns()

    def queue_columns(self) -> np.ndarray:
        """The four whole-queue values of :data:`QUEUE_FEATURES` at this decision."""
        env = self.env
        queue = env.sim.core.queue
        q = len(queue)
        out = np.zeros(len(QUEUE_FEATURES), dtype=np.float32)
        if not q:
            return out
        idx = np.fromiter((j.idx for j in queue), dtype=np.int64, count=q)
        cores = env.reservation_view().per_job()[1][idx]
        demand, nb = float(cores.sum()), float(env.platform.nb_cores)
        wait = max(float(env.sim.now - env.submit[idx].min()), 0.0)
        out[:] = (q / (q + env.config.window), demand / (demand + nb),
                  float(np.mean(cores > env.sim.core.state.free_cores)),
                  math.log1p(wait) / _LOG_WEEK)
        return out
