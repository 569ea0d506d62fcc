"""The ``small_waits`` observation: ``small`` plus the percentiles of the queued jobs' waits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hdrm.env import SchedulingEnv
from hdrm.env.observations import WEEK_S

from .conftest import write_jobs


def test_wait_percentiles_by_hand(tmp_path):
    # 4 cores: j1 (4 cores, 100 s) starts at 0; j2 (submitted at 10) and j3 (at 30) wait for it.
    # At 100 they have waited 90 and 70 s: percentiles 70, 75, 80, 85, 90 (linear interpolation).
    jobs = [(0, 100, 4, 100), (10, 5, 1, 5), (30, 5, 1, 5)]
    path = write_jobs(tmp_path / "w.swf", jobs)
    env = SchedulingEnv(workload_file=path, platform_file=None, homogeneous_procs=4,
                        observation="small_waits")
    small = SchedulingEnv(workload_file=path, platform_file=None, homogeneous_procs=4,
                          observation="small")
    obs, _ = env.reset()
    small_obs, _ = small.reset()
    assert obs.shape == (32,) and obs[-5:].tolist() == [0.0] * 5  # j1 has just arrived
    assert obs[:27].tolist() == small_obs.tolist()
    obs, *_, info = env.step(0)
    small_obs, *_ = small.step(0)
    assert info["time"] == 100.0
    expected = [math.log1p(w) / math.log1p(WEEK_S) for w in (70, 75, 80, 85, 90)]
    assert obs[-5:] == pytest.approx(np.array(expected), rel=1e-6)
    assert obs[:27].tolist() == small_obs.tolist()
