"""Processors of several cores: jobs without memory or bandwidth are taken and freed run by
run, with the very same state and the very same changes, in the same order, as the
core-by-core rules (the general path, ``ClusterState.fast_paths = False``, is the reference)."""

from __future__ import annotations

import math

import numpy as np
from builders import Proc, job, make_platform
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.core.contention import make_contention
from hdrm.core.intervals import as_disjoint_runs
from hdrm.core.state import FREE, ClusterState
from hdrm.platform.model import Platform
from hdrm.platform.power import IDLE, RUNNING, SLEEPING


def platform() -> Platform:
    """Three kinds of node: two processors of 4 cores, one of 1 core and one of 3, and one
    processor of 6 cores; bandwidth 4 GB/s a processor (a job of 1 GB/s a core on 5 cores
    oversubscribes one), memory 8 MB a node. 40 cores."""
    four, one, three, six = (Proc(4, 2.0, 10.0, 4.0, "four"), Proc(1, 1.0, 7.5, 4.0, "one"),
                             Proc(3, 1.0, 7.5, 4.0, "three"), Proc(6, 3.0, 12.5, 4.0, "six"))
    return make_platform([(8.0, [four, four]), (8.0, [one, three]), (8.0, [six]),
                          (8.0, [four, four]), (8.0, [one, three]), (8.0, [six]),
                          (8.0, [one, three])])


N = 40


def pair(contention: str) -> tuple[ClusterState, ClusterState]:
    """The state with the run-by-run path and the same state on the core-by-core path."""
    fast = ClusterState(platform(), make_contention(contention))
    fast._runs_always = True  # narrow jobs too, as on a platform of RUNS_ALWAYS_CORES cores
    try:
        ClusterState.fast_paths = False
        slow = ClusterState(platform(), make_contention(contention))
    finally:
        ClusterState.fast_paths = True
    assert fast._layout is not None and slow._layout is None
    return fast, slow


def snapshot(s: ClusterState) -> tuple:
    return (list(s.core_job), list(s.core_state), list(s.core_factor), list(s.node_free_mem),
            list(s.node_free_cores), list(s.proc_free), list(s.proc_running), list(s.proc_demand),
            list(s.proc_fraction), s.free_cores, s.contended, dict(s.alloc), repr(s.records.data),
            dict(s.records._open))


def changes(s: ClusterState) -> list[tuple[int, tuple[int, float]]]:
    """The queued changes core by core, in order (runs expanded when given as runs)."""
    runs = s.take_pending_runs()
    if runs is None:
        return list(s.take_pending().items())
    assert all(a[1] <= b[0] for a, b in zip(sorted(runs), sorted(runs)[1:]))  # disjoint
    return [(c, change) for lo, hi, change in runs for c in range(lo, hi)]


def by_processors(s: ClusterState, cores: list[int], rng: np.random.Generator) -> list[int]:
    """``cores`` (ascending) processor by processor, the processors in a shuffled order."""
    procs = sorted({s.core_proc[c] for c in cores})
    return [c for p in rng.permutation(procs).tolist() for c in cores if s.core_proc[c] == p]


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(["none", "hdeeprm", "smooth"]), st.integers(0, 2**16),
       st.lists(st.tuples(st.integers(1, 30), st.integers(0, 4), st.integers(0, 5),
                          st.booleans()), min_size=1, max_size=25))
def test_run_by_run_equals_core_by_core(contention, seed, steps):
    """Jobs of 1..30 cores (the lowest free ones, scattered, in a shuffled order, or processor
    by processor in a shuffled order of processors, as a placement's ranking gives; without
    memory and bandwidth, with 0.3, 0.7 or 1 GB/s a core, so that processors are slowed at
    times and demands are sums that round, or with memory) started and ended in random
    batches: both paths give the same state and the same changes in the same order."""
    rng = np.random.default_rng(seed)
    fast, slow = pair(contention)
    running = []
    for i, (res, placing, kind, end_some) in enumerate(steps):
        if end_some and running:
            for k in sorted(rng.choice(len(running), rng.integers(1, len(running) + 1),
                                       False))[::-1]:
                j = running.pop(k)
                assert fast.release(j, float(i)) == slow.release(j, float(i))
        free = [c for c in range(N) if fast.core_job[c] == FREE]
        if res <= len(free):
            cores = free[:res] if placing == 0 else sorted(rng.choice(free, res, False).tolist())
            if placing == 3:
                cores = rng.permutation(cores).tolist()
            elif placing == 4:
                cores = by_processors(fast, cores, rng)
            j = job(i, res=res, mem_mb=1.0 if kind == 4 else 0.0,
                    mem_bw_gbps=(0.0, 0.0, 0.3, 0.7, 0.0, 1.0)[kind])
            fast.allocate(j, cores, float(i))
            slow.allocate(j, cores, float(i))
            running.append(j)
        assert snapshot(fast) == snapshot(slow)
        if rng.integers(2):
            assert changes(fast) == changes(slow)
    assert changes(fast) == changes(slow)


def test_a_wide_job_costs_its_processors_not_its_cores():
    """A job of 20 cores over whole and part processors (with core 9 busy) queues 6 runs of
    changes, no mapping of one change per core: its cores run, each processor it wakes idles
    its other cores after them; its end puts the processors it leaves empty to sleep (split
    where the cores' former states differ, as the machine applies runs of one state) and idles
    its cores beside core 9."""
    fast, slow = pair("hdeeprm")
    small, wide = job(0), job(1, res=20)
    cores = list(range(0, 8)) + [10, 11] + list(range(14, 24))
    for s in (fast, slow):
        s.allocate(small, [9], 0.0)
        s.take_changes()
        s.allocate(wide, cores, 0.0)
    assert fast._pending == {} and len(fast._pending_runs) == 6
    R, I, S = (RUNNING, 1.0), (IDLE, 1.0), (SLEEPING, 1.0)
    expected = [(0, 8, R), (10, 12, R), (14, 18, R), (12, 14, I), (18, 24, R), (24, 26, I)]
    assert fast.take_pending_runs() == expected
    assert [(c, ch) for lo, hi, ch in expected for c in range(lo, hi)] == changes(slow)
    for s in (fast, slow):
        s.release(wide, 1.0)
    expected = [(0, 8, S), (10, 12, I), (12, 14, S), (14, 24, S), (24, 26, S)]
    assert fast.take_pending_runs() == expected
    assert [(c, ch) for lo, hi, ch in expected for c in range(lo, hi)] == changes(slow)
    assert snapshot(fast) == snapshot(slow)
    assert fast.proc_running[:7] == [0, 0, 0, 1, 0, 0, 0] and fast.node_free_cores[:3] == [8, 3, 6]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 8), st.integers(0, 3)),
                max_size=12))
def test_disjoint_runs_equal_the_mapping(raw):
    """Runs applied in order to a mapping (first place, last change) give the same items, in
    the same order, as the disjoint runs made of them."""
    runs = [(lo, lo + n, (state, 1.0)) for lo, n, state in raw]
    mapping: dict[int, tuple[int, float]] = {}
    for lo, hi, change in runs:
        mapping.update(dict.fromkeys(range(lo, hi), change))
    out = as_disjoint_runs(runs)
    assert [(c, ch) for lo, hi, ch in out for c in range(lo, hi)] == list(mapping.items())
    assert all(lo < hi for lo, hi, _ in out)


def test_placements_not_in_processor_order_keep_the_core_by_core_rules():
    """Cores numbered out of processor order (a platform built by hand) turn the path off."""
    odd = make_platform([(math.inf, [Proc(2), Proc(2)])])
    procs = (odd.processors[0].__class__(0, 0, 0, odd.processors[0].type, (0, 2)),
             odd.processors[1].__class__(1, 0, 0, odd.processors[1].type, (1, 3)))
    odd = Platform(odd.name, odd.clusters, odd.nodes, procs, odd.cores)
    assert ClusterState(odd, make_contention("none"))._layout is None


def test_narrow_jobs_go_core_by_core_on_small_platforms_and_run_by_run_on_large_ones():
    """Below RUNS_ALWAYS_CORES cores a job of at most WIDE cores takes the core-by-core rules
    (fewer steps for it); a wider job, or any job of two cores or more on a platform of that
    many cores, takes the run-by-run path."""
    from hdrm.core.runs import WIDE
    from hdrm.core.state import RUNS_ALWAYS_CORES

    state = ClusterState(platform(), make_contention("none"))
    assert not state._runs_always
    state.allocate(job(0, res=5), list(range(5)), 0.0)
    assert 0 not in state._proc_held and state.alloc[0] == (0, 1, 2, 3, 4)
    big = make_platform([(8.0, [Proc(64, 2.0, 10.0, 4.0, "p64")])] * (RUNS_ALWAYS_CORES // 64))
    state = ClusterState(big, make_contention("none"))
    assert state._runs_always and state._layout is not None
    state.allocate(job(0, res=5), list(range(5)), 0.0)
    state.allocate(job(1, res=WIDE + 1), list(range(64, 64 + WIDE + 1)), 0.0)
    assert state._proc_held == {0: [(0, 5)], 1: [(64, 64 + WIDE + 1)]}


def test_processors_in_a_ranking_order_go_run_by_run():
    """Cores given processor by processor in a ranking's order (not ascending) take the
    run-by-run path, with the state and the changes of the core-by-core rules in their order
    (the six-core processor is slowed first); a processor met twice (its cores not in one
    block) or a core given twice turns the path off."""
    from hdrm.core.proc_runs import _in_blocks

    fast, slow = pair("hdeeprm")
    wide = job(0, res=17, mem_bw_gbps=0.7)  # 6 x 0.7 > 4 GB/s: the six-core processor slows
    cores = list(range(12, 18)) + list(range(4, 8)) + list(range(0, 4)) + [9, 10, 8]
    for s in (fast, slow):
        s.allocate(wide, cores, 0.0)
    assert fast._proc_held == {0: [(12, 18), (4, 8), (0, 4), (9, 11), (8, 9)]}
    assert snapshot(fast) == snapshot(slow) and fast.contended == 6
    assert changes(fast) == changes(slow)
    for s in (fast, slow):
        s.release(wide, 1.0)
    assert snapshot(fast) == snapshot(slow) and changes(fast) == changes(slow)
    split = job(1, res=5)
    fast.allocate(split, [22, 23, 0, 1, 24], 2.0)  # processor 22..25 met twice
    assert 1 not in fast._proc_held and fast.alloc[1] == (22, 23, 0, 1, 24)
    first = fast._layout.proc_first
    assert not _in_blocks([(0, 2), (20, 21), (1, 2)], first, N)  # core 1 twice
    assert not _in_blocks([(4, 6), (2, 5)], first, N)  # overlapping, one processor
    assert not _in_blocks([(38, 41)], first, N)  # core 40 unknown
    assert _in_blocks([(30, 36), (0, 2), (3, 4), (26, 27)], first, N)
