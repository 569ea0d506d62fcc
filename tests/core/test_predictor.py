"""Run-time prediction from the users' ended jobs, and the ``*_pred`` orderings that use it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from builders import job, one_node, simulate, starts

from hdrm.core.predictor import RuntimePredictor
from hdrm.core.scheduler import DecisionCore
from hdrm.policies.job_selection import JOB_POLICIES
from hdrm.policies.pairs import resolve_policy


def test_requested_time_until_the_user_has_an_ended_job():
    p = RuntimePredictor()
    assert p.predict(job(0, walltime_s=500.0, user_id=3)) == 500.0
    no_wall = job(1, walltime_s=math.inf, run_time_s=70.0, user_id=3)
    assert p.predict(no_wall) == 70.0  # no walltime: what the scheduler assumes (the run time)


def test_mean_of_the_last_two_ended_jobs_capped_at_the_request():
    p = RuntimePredictor()
    asked = job(9, walltime_s=1000.0, user_id=5)
    p.observe(job(0, user_id=5), 100.0)
    assert p.predict(asked) == 100.0
    p.observe(job(1, user_id=5), 300.0)
    assert p.predict(asked) == 200.0
    p.observe(job(2, user_id=5), 500.0)  # the oldest (100) leaves the history
    assert p.predict(asked) == 400.0
    assert p.predict(job(10, walltime_s=250.0, user_id=5)) == 250.0  # never above the request
    assert p.predict(job(11, walltime_s=1000.0, user_id=6)) == 1000.0  # another user: no history
    assert p.user_mean(5) == 400.0 and p.user_mean(6) == math.inf


def test_unknown_users_are_not_pooled():
    p = RuntimePredictor()
    p.observe(job(0, user_id=-1), 5.0)
    assert p.predict(job(1, walltime_s=800.0, user_id=-1)) == 800.0


def test_history_length_is_checked():
    assert RuntimePredictor(history=3).history == 3
    with pytest.raises(ValueError, match="history must be at least 1, got 0"):
        RuntimePredictor(history=0)


def test_the_core_learns_only_from_ended_jobs():
    core = DecisionCore(one_node(2), contention="none")
    first = job(0, walltime_s=1000.0, run_time_s=40.0, user_id=1)
    later = job(1, walltime_s=1000.0, user_id=1)
    core.submit(first, 0.0)
    assert [j.idx for j, _ in core.schedule(0.0, resolve_policy("fcfs"))] == [0]
    assert core.predictor.predict(later) == 1000.0  # still running: its run time is unknown
    core.complete(first, 40.0)
    assert core.predictor.predict(later) == 40.0


def test_predicted_orderings_need_a_predictor():
    with pytest.raises(ValueError, match="'wfp3_pred' orders by predicted run times"):
        JOB_POLICIES.get("wfp3_pred").order([job(0), job(1)], 0.0, np.random.default_rng(0))


def test_predicted_keys_put_the_prediction_for_r():
    # w = 60 s, n = 8, predicted r = 30 s: WFP3 -(w/r)^3 n, UNICEP -w/(log2(n) r), SJF r
    j = job(0, submit_s=40.0, res=8, walltime_s=3000.0)
    ordered = {}
    for name in ("wfp3_pred", "unicep_pred", "sjf_pred"):
        policy = JOB_POLICIES.get(name)
        assert policy.predicted
        ordered[name] = policy.key(j, 100.0, 30.0)
    assert ordered == {"wfp3_pred": pytest.approx(-64.0), "unicep_pred": pytest.approx(-2 / 3),
                       "sjf_pred": 30.0}
    # r below 1 s counts as 1 s, as requested times do: no division by zero for a 0 s history
    p = RuntimePredictor()
    p.observe(job(5, user_id=2), 0.0)
    fresh = job(1, submit_s=0.0, walltime_s=10.0, user_id=2)
    assert JOB_POLICIES.get("wfp3_pred").order([fresh], 5.0, None, p.predict) == [fresh]


class TestHandCheckedSchedule:
    """One core. j0 (user 1, requested 100 s, runs 5 s) starts at 0; at 1 j1 (user 2, requested
    and runs 20 s) and at 2 j2 (user 1, requested 100 s, runs 5 s) queue. At 5, j0 has ended,
    so user 1's jobs are predicted at 5 s: the ``*_pred`` orderings start j2 first."""

    @staticmethod
    def jobs():
        return [job(0, 0.0, 1, 100.0, 5.0, user_id=1), job(1, 1.0, 1, 20.0, 20.0, user_id=2),
                job(2, 2.0, 1, 100.0, 5.0, user_id=1)]

    @pytest.mark.parametrize("policy", ["sjf", "wfp3", "unicep"])
    def test_requested_times_start_j1_first(self, policy):
        assert starts(simulate(one_node(1), self.jobs(), policy)) == {0: 0.0, 1: 5.0, 2: 25.0}

    @pytest.mark.parametrize("policy", ["sjf_pred", "wfp3_pred", "unicep_pred"])
    def test_predictions_start_j2_first(self, policy):
        # sjf_pred: 5 < 20; wfp3_pred: (3/5)^3 > (4/20)^3; unicep_pred: 3/5 > 4/20
        assert starts(simulate(one_node(1), self.jobs(), policy)) == {0: 0.0, 2: 5.0, 1: 10.0}

    def test_without_user_history_they_equal_the_plain_orderings(self):
        anonymous = [job(j.idx, j.submit_s, j.res, j.walltime_s, j.run_time_s) for j in self.jobs()]
        assert starts(simulate(one_node(1), anonymous, "wfp3_pred")) == \
            starts(simulate(one_node(1), anonymous, "wfp3"))
