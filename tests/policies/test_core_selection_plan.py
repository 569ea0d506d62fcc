"""A static core policy's plan (ranking, id order, core ids) is made once per cluster mirror:
later selections read it in one lookup and give the cores the rule gives."""

from __future__ import annotations

import numpy as np
import pytest
from builders import job

from hdrm.core.contention import make_contention
from hdrm.core.state import ClusterState
from hdrm.platform.model import Platform
from hdrm.policies.core_selection import CORE_POLICIES, CorePolicy


def mirror(cores: int) -> ClusterState:
    return ClusterState(Platform.homogeneous(cores), make_contention("none"))


def test_lowest_free_cores_as_lists():
    state, policy, rng = mirror(16), CORE_POLICIES.get("high_gflops"), np.random.default_rng(0)
    first = policy.select(state, job(0, res=3), rng)
    assert first == [0, 1, 2] and type(first) is list  # one run: a slice of the id pool
    state.allocate(job(0, res=3), first, 0.0)
    state.allocate(job(1, res=2), [4, 5], 0.0)
    second = policy.select(state, job(2, res=4), rng)
    assert second == [3, 6, 7, 8] and type(second) is list  # two runs
    state.release(job(0, res=3), 1.0)
    assert policy.select(state, job(3, res=5), rng) == [0, 1, 2, 3, 6]


def test_the_plan_is_made_once_per_mirror(monkeypatch):
    policy, rng = CORE_POLICIES.get("high_gflops"), np.random.default_rng(0)
    small, large = mirror(4), mirror(64)
    assert policy.select(small, job(0, res=2), rng) == [0, 1]
    assert policy.select(large, job(0, res=2), rng) == [0, 1]

    def refuse(self, state):
        raise AssertionError("ranked again")

    monkeypatch.setattr(CorePolicy, "_ranking", refuse)
    small.allocate(job(0, res=2), [0, 1], 0.0)
    assert policy.select(small, job(1, res=2), rng) == [2, 3]
    assert policy.select(small, job(2, res=3), rng) is None
    assert policy.select(large, job(1, res=40), rng) == list(range(40))


def test_dynamic_policies_rank_at_each_selection(monkeypatch):
    state, rng = mirror(8), np.random.default_rng(0)
    policy = CORE_POLICIES.get("high_cores")
    assert policy.select(state, job(0, res=2), rng) == [0, 1]
    calls = []
    original = CorePolicy._ranking
    monkeypatch.setattr(CorePolicy, "_ranking",
                        lambda self, s: calls.append(1) or original(self, s))
    policy.select(state, job(1, res=2), rng)
    assert calls == [1]


@pytest.mark.parametrize("name", ["high_gflops", "low_power"])
def test_static_policies_keep_one_plan(name):
    state, policy = mirror(8), CORE_POLICIES.get(name)
    for i in range(3):
        policy.select(state, job(i, res=1), np.random.default_rng(0))
    plans = [v for v in state.rankings.values() if isinstance(v, tuple) and v and v[0] is policy]
    assert len(plans) == 1
