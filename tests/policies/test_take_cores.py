"""Ranked core selection without memory (:func:`hdrm.policies.core_selection._take`): the cores a
core-by-core scan gives, read by slices and C-level scans (a free processor costs no step per
core)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from builders import Proc, job, make_platform
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.core.contention import make_contention
from hdrm.core.state import FREE, ClusterState
from hdrm.policies.core_selection import CORE_POLICIES, _take


def core_by_core(core_job, proc_cores, ranking, need):
    """The rule written out: processors in ranking order, their free cores ascending."""
    chosen = []
    for p in ranking:
        for c in proc_cores[p]:
            if core_job[c] == FREE:
                chosen.append(c)
                if len(chosen) == need:
                    return chosen
    return None


class CountingList(list):
    """A list that counts the items read one by one."""

    reads = 0

    def __getitem__(self, index):
        CountingList.reads += 1
        return super().__getitem__(index)


def mirror(sizes, held):
    """A stand-in cluster mirror: processors of ``sizes`` cores in id order, ``held`` cores busy."""
    proc_cores, c = [], 0
    for n in sizes:
        proc_cores.append(range(c, c + n))
        c += n
    core_job = CountingList(7 if i in held else FREE for i in range(c))
    proc_free = [sum(1 for i in cores if i not in held) for cores in proc_cores]
    return SimpleNamespace(proc_free=proc_free, proc_cores=proc_cores, core_job=core_job,
                           proc_node=list(range(len(sizes))), node_free_mem=[0.0] * len(sizes))


def test_free_processors_are_taken_without_reading_each_core():
    # 4 processors of 64 cores, the second with cores 64 and 70 busy; ranking 3, 1, 0, 2
    state = mirror([64, 64, 64, 64], {64, 70})
    CountingList.reads = 0
    chosen = _take(state, job(0, res=100), [3, 1, 0, 2])
    assert chosen == list(range(192, 256)) + [65, 66, 67, 68, 69] + list(range(71, 102))
    assert CountingList.reads == 64  # the one partly busy processor's cores, none of the others
    assert _take(state, job(1, res=255), [3, 1, 0, 2]) is None


@settings(max_examples=150, deadline=None)
@given(sizes=st.lists(st.integers(1, 9), min_size=1, max_size=8), data=st.data())
def test_same_cores_as_core_by_core(sizes, data):
    total = sum(sizes)
    held = set(data.draw(st.lists(st.integers(0, total - 1), max_size=total)))
    ranking = data.draw(st.permutations(range(len(sizes))))
    need = data.draw(st.integers(1, total))
    state = mirror(sizes, held)
    expected = core_by_core(list(state.core_job), state.proc_cores, ranking, need)
    assert _take(state, job(0, res=need), ranking) == expected


def test_high_gflops_on_a_real_mirror_after_starts_and_ends():
    platform = make_platform([
        (1e9, [Proc(8, 1.0, 10.0, 10.0, "slow"), Proc(8, 4.0, 10.0, 10.0, "fast")]),
        (1e9, [Proc(4, 2.0, 10.0, 10.0, "mid")]),
    ])
    state = ClusterState(platform, make_contention("none"))
    policy, rng = CORE_POLICIES.get("high_gflops"), np.random.default_rng(0)
    first = policy.select(state, job(0, res=5), rng)
    assert first == [8, 9, 10, 11, 12]  # the fast processor's lowest cores
    state.allocate(job(0, res=5), first, 0.0)
    second = policy.select(state, job(1, res=6), rng)
    assert second == [13, 14, 15, 16, 17, 18]  # the fast one's rest, then the mid one
    state.allocate(job(1, res=6), second, 0.0)
    state.release(job(0, res=5), 1.0)
    assert policy.select(state, job(2, res=7), rng) == [8, 9, 10, 11, 12, 19, 0]


def test_one_core_reads_up_to_the_first_free_core():
    # processor 0: cores 0 and 1 busy; one core is core 2, read after 0 and 1 (not core 3)
    state = mirror([4, 4], {0, 1})
    CountingList.reads = 0
    assert _take(state, job(0, res=1), [0, 1]) == [2]
    assert CountingList.reads == 3
    assert _take(state, job(0, res=1), [1, 0]) == [4] and CountingList.reads == 3  # free: a slice
    assert _take(mirror([2], {0, 1}), job(0, res=1), [0]) is None


def test_select_of_one_core_without_memory_goes_straight_to_the_scan(monkeypatch):
    """A one-core job without memory (inference requests) is placed by the scan of
    :func:`_take_cores`, with no step through :func:`_take`."""
    import hdrm.policies.core_selection as core_selection

    def general(*args):
        raise AssertionError("went through _take")

    platform = make_platform([(1e9, [Proc(4, 1.0, 10.0, 10.0, "a"), Proc(4, 3.0, 10.0, 10.0, "b")])])
    state = ClusterState(platform, make_contention("hdeeprm"))
    policy, rng = CORE_POLICIES.get("high_gflops"), np.random.default_rng(0)
    state.allocate(job(0), [4], 0.0)
    monkeypatch.setattr(core_selection, "_take", general)
    assert policy.select(state, job(1), rng) == [5]
    state.allocate(job(1), [5], 0.0)
    state.release(job(0), 1.0)
    assert policy.select(state, job(2), rng) == [4]


def test_a_wide_job_gets_the_processors_runs():
    """More than WIDE cores: a CoreRuns made of the processors' runs (ranges taken whole, a
    partly busy processor's free cores split into runs), equal to the core-by-core list."""
    from hdrm.core.runs import WIDE, CoreRuns

    state = mirror([64, 64, 64], {64, 70})
    chosen = _take(state, job(0, res=WIDE + 40), [2, 1, 0])
    assert isinstance(chosen, CoreRuns)
    assert chosen.runs == [(128, 192), (65, 70), (71, 106)]
    assert chosen == core_by_core(list(state.core_job), state.proc_cores, [2, 1, 0], WIDE + 40)
    assert type(_take(state, job(1, res=WIDE), [2, 1, 0])) is list  # WIDE itself: a list
