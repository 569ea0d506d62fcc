"""Core selection policies on a small heterogeneous platform, with the choices checked by hand.

==========  ====  =====  =========  ======  ======  =========
processor   node  cores  GFLOP/s    W/core  GB/s    node MB
==========  ====  =====  =========  ======  ======  =========
0           0     0-1    1          50      20      2000
1           0     2-5    2          40      30      2000
2           1     6-7    4          200     40      1000
3           2     8-10   3          150     5       8000
==========  ====  =====  =========  ======  ======  =========
"""

from __future__ import annotations

import numpy as np
import pytest
from builders import Proc, job, make_platform

from hdrm.core.contention import make_contention
from hdrm.core.state import ClusterState
from hdrm.errors import ConfigError
from hdrm.policies.core_selection import CORE_POLICIES


def platform():
    return make_platform([
        (2000.0, [Proc(2, 1.0, 50.0, 20.0, "p0"), Proc(4, 2.0, 40.0, 30.0, "p1")]),
        (1000.0, [Proc(2, 4.0, 200.0, 40.0, "p2")]),
        (8000.0, [Proc(3, 3.0, 150.0, 5.0, "p3")]),
    ])


@pytest.fixture
def state() -> ClusterState:
    return ClusterState(platform(), make_contention("hdeeprm"))


def select(state: ClusterState, policy: str, res: int = 2, mem_mb: float = 0.0, seed: int = 0):
    return CORE_POLICIES.get(policy).select(state, job(99, res=res, mem_mb=mem_mb),
                                            np.random.default_rng(seed))


@pytest.mark.parametrize("policy,cores", [
    ("high_gflops", [6, 7]),  # 4 GFLOP/s
    ("low_power", [2, 3]),  # 40 W per core
    ("high_cores", [2, 3]),  # processor 1 has 4 free cores
    ("high_mem", [8, 9]),  # node 2 has 8000 MB free
    ("high_mem_bw", [6, 7]),  # processor 2 has 40 GB/s free
])
def test_choice_on_an_idle_platform(state, policy, cores):
    assert select(state, policy) == cores


def test_high_gflops_spills_to_the_next_fastest(state):
    assert select(state, "high_gflops", res=3) == [6, 7, 8]
    assert select(state, "high_gflops", res=9) == [6, 7, 8, 9, 10, 2, 3, 4, 5]


def test_memory_skips_cores_a_node_cannot_hold(state):
    # node 1 holds one core of 600 MB (1000 MB), then node 2's processor 3 the rest
    assert select(state, "high_gflops", res=3, mem_mb=600.0) == [6, 8, 9]
    # 1500 MB per core: node 0 holds 1 core, node 1 none, node 2 five
    assert select(state, "low_power", res=3, mem_mb=1500.0) == [2, 8, 9]
    assert select(state, "high_gflops", res=3, mem_mb=5000.0) is None  # only node 2 holds one


def test_too_many_cores(state):
    for name in CORE_POLICIES.names():
        assert select(state, name, res=12) is None


def test_high_cores_follows_the_free_counts(state):
    state.allocate(job(0, res=3), [2, 3, 4], 0.0)  # processor 1 keeps 1 free core
    assert select(state, "high_cores") == [8, 9]  # processor 3: 3 free
    assert select(state, "high_cores", res=5) == [8, 9, 10, 0, 1]  # then 2-core processors by id


def test_high_mem_follows_free_memory(state):
    state.allocate(job(0, res=3, mem_mb=2500.0), [8, 9, 10], 0.0)  # node 2: 500 MB left
    assert select(state, "high_mem") == [0, 1]  # node 0 (2000) beats node 1 (1000)
    assert select(state, "high_mem", res=7) == [0, 1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("contention", ["hdeeprm", "none", "smooth"])
def test_high_mem_bw_follows_bandwidth_demand(contention):
    # the placement must not depend on the speed model: "none" also tracks the demand
    state = ClusterState(platform(), make_contention(contention))
    state.allocate(job(0, res=1, mem_mb=0.0, mem_bw_gbps=25.0), [6], 0.0)  # p2: 15 GB/s free
    assert select(state, "high_mem_bw") == [2, 3]  # p1: 30 GB/s free
    state.allocate(job(1, res=1, mem_bw_gbps=20.0), [5], 0.0)  # p1: 10 free
    assert select(state, "high_mem_bw") == [0, 1]  # p0: 20 free


def test_static_rankings_skip_busy_cores(state):
    state.allocate(job(0, res=1), [6], 0.0)
    assert select(state, "high_gflops") == [7, 8]
    state.allocate(job(1, res=1), [3], 0.0)
    assert select(state, "low_power", res=4) == [2, 4, 5, 0]


def test_selection_does_not_change_the_state(state):
    before = (list(state.core_job), list(state.node_free_mem), state.free_cores)
    for name in CORE_POLICIES.names():
        select(state, name, res=4, mem_mb=100.0)
    assert (list(state.core_job), list(state.node_free_mem), state.free_cores) == before


def test_random_is_seeded_free_and_memory_aware(state):
    state.allocate(job(0, res=2), [0, 1], 0.0)
    picks = [tuple(select(state, "random", res=3, seed=s)) for s in range(30)]
    assert all(list(p) == sorted(p) and not {0, 1} & set(p) for p in picks)
    assert len(set(picks)) > 10
    assert select(state, "random", res=3, seed=7) == select(state, "random", res=3, seed=7)
    for s in range(20):  # 1500 MB: at most 1 core on node 0, none on node 1
        cores = select(state, "random", res=4, mem_mb=1500.0, seed=s)
        assert sum(c < 6 for c in cores) <= 1 and not {6, 7} & set(cores)
    assert select(state, "random", res=7, mem_mb=1500.0) is None


def test_names_and_docs():
    assert CORE_POLICIES.names() == sorted(
        ["random", "high_gflops", "high_cores", "high_mem", "high_mem_bw", "low_power"])
    with pytest.raises(ConfigError, match=r"did you mean 'high_gflops'"):
        CORE_POLICIES.get("high_gflop")
