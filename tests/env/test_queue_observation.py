"""The ``job_window_queue`` observation (issue 26): the whole queue's size distribution at each
decision, hand-checked on a tiny case; the columns it shares with ``job_window_reservation`` are
that observation's, value for value, so the option changes nothing else."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hdrm.env import SchedulingEnv
from hdrm.env.observations import (
    JOB_FEATURES,
    QUEUE_JOB_FEATURES,
    RESERVATION_JOB_FEATURES,
    WEEK_S,
    job_window_kinds,
)

from .conftest import write_jobs

COL = {name: i for i, name in enumerate(QUEUE_JOB_FEATURES)}
QUEUE = ["queue_length", "queue_demand", "queue_blocked", "oldest_wait"]


def _env(path: str, observation: str, window: int = 6) -> SchedulingEnv:
    return SchedulingEnv(workload_file=path, platform_file=None, homogeneous_procs=4,
                         mode="job_pick", window=window, observation=observation,
                         backfilling="easy")


def _queue(obs: np.ndarray, rows: int) -> np.ndarray:
    return obs[:rows, [COL[c] for c in QUEUE]]


def test_layout_keeps_the_reservation_columns_and_the_last_two():
    assert "job_window_queue" in job_window_kinds()
    assert QUEUE_JOB_FEATURES[:10] == RESERVATION_JOB_FEATURES[:10]
    assert QUEUE_JOB_FEATURES[10:14] == tuple(QUEUE)
    assert QUEUE_JOB_FEATURES[-2:] == JOB_FEATURES[-2:]  # the attention network reads these


def test_queue_columns_by_hand(tmp_path):
    # 4 cores. At 0: j1 (2 cores, 100 s) and j2 (1 core, 50 s) queue, both fit.
    # At 1: j3 (4 cores, 40 s) cannot fit; j4 (1 core, 200 s) and j5 (1 core, 30 s) fit.
    jobs = [(0, 100, 2, 100), (0, 50, 1, 50), (1, 40, 4, 40), (1, 200, 1, 200), (1, 30, 1, 30)]
    env = _env(write_jobs(tmp_path / "w.swf", jobs), "job_window_queue")
    obs, _ = env.reset()
    # 2 queued of a 6-job window; 3 cores asked of 4; none blocked; nobody has waited yet
    assert _queue(obs, 2) == pytest.approx(np.array([[2 / 8, 3 / 7, 0, 0]] * 2))
    assert obs[2:, :-1].sum() == 0  # padding rows: the free-core fraction only
    for _ in range(2):  # start j1, then j2, at time 0
        obs, *_, info = env.step(0)
    assert info["time"] == 1.0
    # j3, j4, j5 queue: 6 cores asked, j3 needs more than the 1 free core
    assert _queue(obs, 3) == pytest.approx(np.array([[3 / 9, 6 / 10, 1 / 3, 0]] * 3))
    obs, *_, info = env.step(2)  # j5 takes the last core; the next decision is when it ends
    assert info["time"] == 31.0 and [j.id for j in env.window_jobs()] == [3, 4]
    waited = math.log1p(30) / math.log1p(WEEK_S)
    assert _queue(obs, 2) == pytest.approx(np.array([[2 / 8, 5 / 9, 1 / 2, waited]] * 2))
    assert obs[0, COL["waiting_time"]] == pytest.approx(waited)


def test_the_queue_reaches_past_the_window(tmp_path):
    # a 2-job window over 5 queued 1-core jobs on 4 cores: the columns count all five
    jobs = [(0, 10, 1, 10)] * 5
    env = _env(write_jobs(tmp_path / "w.swf", jobs), "job_window_queue", window=2)
    obs, _ = env.reset()
    assert obs.shape == (2, len(QUEUE_JOB_FEATURES))
    assert _queue(obs, 2) == pytest.approx(np.array([[5 / 7, 5 / 9, 0, 0]] * 2))


def test_the_other_columns_are_the_reservation_observation_s(small_swf):
    """The same actions on both observations: deleting the queue columns gives
    ``job_window_reservation``'s observation, step for step."""
    plain = _env(small_swf, "job_window_reservation", window=16)
    queue = _env(small_swf, "job_window_queue", window=16)
    a, _ = plain.reset(seed=3)
    b, info = queue.reset(seed=3)
    keep = [COL[c] for c in QUEUE_JOB_FEATURES if c not in QUEUE]
    rng = np.random.default_rng(0)
    steps, done = 0, False
    while not done and steps < 300:
        np.testing.assert_array_equal(b[:, keep], a)
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        a, *_ = plain.step(action)
        b, _, done, _, info = queue.step(action)
        steps += 1
    assert steps > 20
