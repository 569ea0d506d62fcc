"""Backfilling helpers: EASY's reservation (shadow time, extra cores) and conservative's Profile."""

from __future__ import annotations

import math

import pytest
from builders import Proc, job, make_platform, one_node

from hdrm.core.contention import make_contention
from hdrm.core.state import ClusterState
from hdrm.errors import ConfigError
from hdrm.policies.backfill import BACKFILLING, Profile, estimated_duration_s, reservation


def running(state: ClusterState, spec: list[tuple[int, list[int], float, float]]):
    """Allocate ``(idx, cores, mem_mb, end_s)`` jobs; returns the sorted ``ends`` list."""
    ends = []
    for idx, cores, mem_mb, end_s in spec:
        j = job(idx, res=len(cores), mem_mb=mem_mb)
        state.allocate(j, cores, 0.0)
        ends.append((end_s, j))
    return sorted(ends, key=lambda e: e[0])


@pytest.fixture
def four() -> tuple[ClusterState, list]:
    """4 identical cores: job 0 on cores 0-1 until 10, job 1 on core 2 until 20; core 3 free."""
    state = ClusterState(one_node(4), make_contention("none"))
    return state, running(state, [(0, [0, 1], 0.0, 10.0), (1, [2], 0.0, 20.0)])


@pytest.mark.parametrize("res,expected", [
    (1, (0.0, 0)),  # fits now: shadow now, no extra counted beyond now
    (2, (10.0, 1)),  # 3 free at 10
    (3, (10.0, 0)),
    (4, (20.0, 0)),
    (5, (math.inf, 0)),  # never fits
])
def test_reservation_on_identical_cores(four, res, expected):
    state, ends = four
    assert reservation(state, ends, job(9, res=res), 0.0) == expected


def test_jobs_ending_at_the_shadow_time_all_count_as_extra():
    state = ClusterState(one_node(6), make_contention("none"))
    ends = running(state, [(0, [0, 1], 0.0, 10.0), (1, [2, 3], 0.0, 10.0), (2, [4], 0.0, 30.0)])
    # 1 free; at 10 both jobs end: 5 free, head needs 2 -> 3 extra
    assert reservation(state, ends, job(9, res=2), 4.0) == (10.0, 3)


def test_easy_first_counts_extra_cores_only_up_to_the_release_that_fits_the_head():
    state = ClusterState(one_node(6), make_contention("none"))
    ends = running(state, [(0, [0, 1], 0.0, 10.0), (1, [2, 3], 0.0, 10.0), (2, [4], 0.0, 30.0)])
    # 1 free; job 0 ends at 10: 3 free, head needs 2 -> 1 extra (job 1's cores are not counted)
    assert reservation(state, ends, job(9, res=2), 4.0, first_release=True) == (10.0, 1)
    # the head needs 4: both releases at 10 are needed, 1 extra
    assert reservation(state, ends, job(9, res=4), 4.0, first_release=True) == (10.0, 1)
    assert reservation(state, ends, job(9, res=6), 4.0, first_release=True) == (30.0, 0)


def test_shadow_is_never_before_now():
    state = ClusterState(one_node(2), make_contention("none"))
    ends = running(state, [(0, [0, 1], 0.0, 5.0)])  # overran its expected end
    assert reservation(state, ends, job(9, res=2), 8.0) == (8.0, 0)


def two_nodes() -> ClusterState:
    """Two nodes of 2 cores (0-1, 2-3) and 1000 MB each."""
    return ClusterState(make_platform([(1000.0, [Proc(2)]), (1000.0, [Proc(2)])]),
                        make_contention("none"))


def test_memory_aware_reservation_counts_cores_that_hold_the_memory():
    state = two_nodes()
    # job 0 (600 MB/core) on core 0 until 10, job 1 (100 MB/core) on core 2 until 20.
    # Free: core 1 (node 0, 400 MB free), core 3 (node 1, 900 MB free).
    ends = running(state, [(0, [0], 600.0, 10.0), (1, [2], 100.0, 20.0)])
    # without memory the head fits now on cores 1 and 3
    assert reservation(state, ends, job(9, res=2), 0.0) == (0.0, 0)
    # 500 MB/core: node 0 holds none now (400 free), node 1 one; at 10 node 0 frees: 2 + 1
    assert reservation(state, ends, job(9, res=2, mem_mb=500.0), 0.0) == (10.0, 1)
    # 800 MB/core: at 10 node 0 holds 1 (1000 MB), node 1 holds 1 (900 MB): exactly 2
    assert reservation(state, ends, job(9, res=2, mem_mb=800.0), 0.0) == (10.0, 0)
    # 950 MB/core: node 1 must wait for job 1 too
    assert reservation(state, ends, job(9, res=2, mem_mb=950.0), 0.0) == (20.0, 0)
    # 1001 MB/core: never
    assert reservation(state, ends, job(9, res=1, mem_mb=1001.0), 0.0) == (math.inf, 0)


class TestProfile:
    def test_steps(self, four):
        state, ends = four
        p = Profile(0.0, state.free_cores, ends)
        assert (p.times, p.free) == ([0.0, 10.0, 20.0], [1, 3, 4])

    def test_earliest(self, four):
        state, ends = four
        p = Profile(0.0, state.free_cores, ends)
        assert p.earliest(1, 100.0) == 0.0
        assert p.earliest(2, 5.0) == 10.0
        assert p.earliest(4, 1.0) == 20.0
        assert p.earliest(5, 1.0) == math.inf

    def test_reserve_then_earliest(self, four):
        state, ends = four
        p = Profile(0.0, state.free_cores, ends)
        p.reserve(10.0, 5.0, 3)
        assert (p.times, p.free) == ([0.0, 10.0, 15.0, 20.0], [1, 0, 3, 4])
        assert p.earliest(1, 5.0) == 0.0  # ends by 10
        assert p.earliest(1, 20.0) == 15.0  # the reservation blocks [10, 15)
        assert p.earliest(3, 1.0) == 15.0
        p.reserve(15.0, math.inf, 4)  # an open-ended reservation takes the rest of time
        assert p.free == [1, 0, -1, 0]
        assert p.earliest(1, 1.0) == 0.0 and p.earliest(1, 11.0) == math.inf

    def test_reserve_at_infinity_is_ignored(self, four):
        state, ends = four
        p = Profile(0.0, state.free_cores, ends)
        p.reserve(math.inf, 5.0, 2)
        assert (p.times, p.free) == ([0.0, 10.0, 20.0], [1, 3, 4])

    def test_overdue_jobs_release_right_after_now(self):
        # Jobs whose estimate ended (3.0, 5.0) still hold their cores at 5.0: they count as free
        # only from the next instant, so the segment at now matches the cluster.
        state = ClusterState(one_node(4), make_contention("none"))
        ends = running(state, [(0, [0], 0.0, 3.0), (1, [1, 2], 0.0, 5.0), (2, [3], 0.0, 9.0)])
        p = Profile(5.0, 0, ends)
        assert (p.times, p.free) == ([5.0, math.nextafter(5.0, math.inf), 9.0], [0, 3, 4])


def test_estimated_duration_is_the_walltime_or_the_run_time():
    assert estimated_duration_s(job(0, walltime_s=30.0, run_time_s=5.0)) == 30.0
    assert estimated_duration_s(job(0, walltime_s=math.inf, run_time_s=5.0)) == 5.0


def test_modes():
    assert BACKFILLING.names() == ["conservative", "easy", "easy_first", "none"]
    with pytest.raises(ConfigError, match=r"backfilling: unknown backfilling mode 'eazy'; did you "
                                          r"mean 'easy'\? choose one of: conservative, easy, "
                                          r"easy_first, none"):
        BACKFILLING.get("eazy", "backfilling")
