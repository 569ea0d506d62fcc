"""EASY's reservation read off the kept expected ends (:meth:`ExpectedEnds.core_reservation`):
the values :func:`reservation` gives on :meth:`ExpectedEnds.at`'s list, without making that list
when no expected end has passed."""

from __future__ import annotations

import math

import pytest
from builders import job, one_node
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.core.scheduler import DecisionCore
from hdrm.policies.backfill import ExpectedEnds, _core_reservation
from hdrm.policies.pairs import resolve_policy


@settings(max_examples=300, deadline=None)
@given(
    running=st.lists(st.tuples(st.integers(0, 6).map(float), st.integers(1, 4)), max_size=8),
    ended=st.sets(st.integers(0, 7)),
    now=st.integers(0, 6).map(float),
    free=st.integers(0, 4),
    res=st.integers(1, 20),
    by_size=st.booleans(),
)
def test_same_as_the_listed_ends(running, ended, now, free, res, by_size):
    ends = ExpectedEnds(by_size=by_size)
    jobs = [job(i, res=r) for i, (_, r) in enumerate(running)]
    for j, (end, _) in zip(jobs, running):
        ends.add(j, end)
    for i in ended:
        if i < len(jobs):
            ends.remove(jobs[i])
    for first_release in (False, True):
        expected = _core_reservation(free, ends.at(now), res, now, first_release)
        assert ends.core_reservation(free, res, now, first_release) == expected


def test_by_hand():
    ends = ExpectedEnds()
    ends.add(job(0, res=2), 10.0)
    ends.add(job(1, res=1), 20.0)
    assert ends.core_reservation(1, 2, 0.0, False) == (10.0, 1)  # 3 free at 10
    assert ends.core_reservation(1, 4, 0.0, False) == (20.0, 0)
    assert ends.core_reservation(1, 5, 0.0, False) == (math.inf, 0)
    assert ends.core_reservation(1, 2, 15.0, False) == (15.0, 1)  # job 0 overdue: ends now


class NoList(ExpectedEnds):
    """Kept ends that refuse to be listed."""

    def at(self, now: float):
        raise AssertionError("the ends were listed")


def test_easy_backfills_without_listing_the_ends():
    # 4 cores: job 0 holds 3 until 100; the head needs 4 (shadow 100, no extra cores);
    # job 2 (1 core, 50 s) ends before the shadow time and starts now; job 3 does not fit
    core = DecisionCore(one_node(4), "none", "easy")
    core._ends = NoList()
    pair = resolve_policy("fcfs")
    core.submit(job(0, res=3, walltime_s=100.0), 0.0)
    assert [j.idx for j, _ in core.schedule(0.0, pair)] == [0]
    for j in (job(1, res=4, walltime_s=10.0), job(2, res=1, walltime_s=50.0),
              job(3, res=1, walltime_s=500.0)):
        core.submit(j, 1.0)
    started = core.schedule(1.0, pair)
    assert [(j.idx, list(cores)) for j, cores in started] == [(2, [3])]
    assert [j.idx for j in core.queue] == [1, 3]


@pytest.mark.parametrize("first_release", [False, True])
def test_overdue_ends_are_listed_in_start_order(first_release):
    ends = ExpectedEnds(by_size=first_release)
    ends.add(job(0, res=3), 5.0)
    ends.add(job(1, res=1), 2.0)
    ends.add(job(2, res=2), 30.0)
    # at 10 jobs 0 and 1 are overdue: 4 cores come back now
    assert ends.core_reservation(0, 4, 10.0, first_release) == (10.0, 0)
    assert ends.core_reservation(0, 1, 10.0, False) == (10.0, 3)
