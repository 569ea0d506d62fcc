"""One-core nodes: wide allocations are kept run by run, with the very same result as the
core-by-core rules (the general path is the reference)."""

from __future__ import annotations

import numpy as np
import pytest
from builders import job
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.core.contention import make_contention
from hdrm.core.runs import core_runs
from hdrm.core.state import FREE, ClusterState
from hdrm.errors import SimulationError
from hdrm.platform.model import Platform
from hdrm.platform.power import RUNNING, SLEEPING

N = 1200


def pair() -> tuple[ClusterState, ClusterState]:
    """A state with the run-by-run path, and the same state on the general (core-by-core)
    path."""
    platform = Platform.homogeneous(N)
    fast = ClusterState(platform, make_contention("none"))
    try:
        ClusterState.fast_paths = False
        slow = ClusterState(platform, make_contention("none"))
    finally:
        ClusterState.fast_paths = True
    assert ClusterState.fast_paths and not slow._singletons and not slow._lazy
    return fast, slow


def snapshot(s: ClusterState) -> tuple:
    return (list(s.core_job), list(s.core_state), list(s.core_factor), list(s.node_free_mem),
            list(s.node_free_cores), list(s.proc_free), list(s.proc_running), list(s.proc_demand),
            s.free_cores, dict(s.alloc))


def test_core_runs():
    assert core_runs([4, 5, 6, 0, 1, 9]) == [(4, 7), (0, 2), (9, 10)]
    assert core_runs([]) == []
    wide = list(range(40, 80)) + [3] + list(range(100, 110))
    assert core_runs(wide) == [(40, 80), (3, 4), (100, 110)]


def test_layout_is_detected_only_on_one_core_nodes():
    fast, _ = pair()
    assert fast._singletons and fast.free_set is not None and fast.free_set.runs == [(0, N)]
    small = ClusterState(Platform.homogeneous(4), make_contention("none"))
    assert small._singletons and small.free_set.runs == [(0, 4)]
    from builders import one_node
    assert not ClusterState(one_node(8), make_contention("none"))._singletons


def test_wide_allocation_queues_runs_and_frees_them():
    fast, _ = pair()
    fast.allocate(job(0, res=80, mem_bw_gbps=2.0), list(range(10, 90)), 0.0)
    assert fast.take_pending_runs() == [(10, 90, (RUNNING, 1.0))]
    assert fast.core_job[10:90] == [0] * 80 and fast.core_job[9] == FREE
    assert fast.free_set.runs == [(0, 10), (90, N)]
    assert fast.proc_demand[10:90] == [2.0] * 80 and fast.free_cores == N - 80
    fast.release(job(0, res=80), 5.0)
    assert fast.take_pending() == {c: (SLEEPING, 1.0) for c in range(10, 90)}
    assert fast.free_set.runs == [(0, N)] and fast.core_state == [SLEEPING] * N


def test_a_busy_core_is_refused_with_nothing_changed():
    fast, _ = pair()
    fast.allocate(job(0, res=1), [30], 0.0)
    before = snapshot(fast)
    with pytest.raises(SimulationError, match="core 30 is busy with job 0"):
        fast.allocate(job(1, res=70), list(range(0, 70)), 0.0)
    assert snapshot(fast) == before
    with pytest.raises(SimulationError, match="core 45 is busy with job 2"):
        fast.allocate(job(2, res=70), list(range(40, 109)) + [45], 0.0)  # a core given twice
    assert snapshot(fast) == before
    with pytest.raises(SimulationError, match="core 30 is busy with job 0"):
        fast.allocate(job(3, res=3), [28, 29, 30], 0.0)  # narrow: core by core, no memory
    with pytest.raises(SimulationError, match="core 8 is busy with job 4"):
        fast.allocate(job(4, res=3), [7, 8, 8], 0.0)
    assert snapshot(fast) == before


allocations = st.lists(st.tuples(st.integers(1, 100), st.booleans(), st.booleans(), st.booleans()),
                       min_size=1, max_size=25)


@settings(max_examples=60, deadline=None)
@given(allocations, st.integers(0, 2**16))
def test_same_state_and_changes_as_core_by_core(steps, seed):
    """Random wide and narrow jobs, scattered or contiguous cores, with or without memory,
    started and ended in random batches: both paths give the same state and the same changes,
    in the same order."""
    rng = np.random.default_rng(seed)
    fast, slow = pair()
    running = []
    for i, (res, scattered, memory, end_some) in enumerate(steps):
        if end_some and running:
            for k in sorted(rng.choice(len(running), rng.integers(1, len(running) + 1), False))[::-1]:
                j = running.pop(k)
                assert fast.release(j, float(i)) == slow.release(j, float(i))
        free = [c for c in range(N) if fast.core_job[c] == FREE]
        if res <= len(free):
            cores = sorted(rng.choice(free, res, False).tolist()) if scattered else free[:res]
            j = job(i, res=res, mem_mb=1.0 if memory else 0.0, mem_bw_gbps=float(i % 3))
            fast.allocate(j, cores, float(i))
            slow.allocate(j, cores, float(i))
            running.append(j)
        assert snapshot(fast) == snapshot(slow)
        assert list(fast.free_set) == [c for c in range(N) if fast.core_job[c] == FREE]
        if rng.integers(2):
            runs = fast.take_pending_runs()
            expected = list(slow.take_pending().items())
            got = [(c, ch) for lo, hi, ch in runs for c in range(lo, hi)] if runs is not None \
                else list(fast.take_pending().items())
            assert got == expected


def test_counters_of_one_core_nodes_are_made_when_read():
    """Starts and ends leave the per-core and per-node counters alone (they cost the job's
    cores in ``core_job`` only); reading a counter makes it, equal to the core-by-core rules."""
    fast, slow = pair()
    assert fast._lazy and not slow._lazy
    wide, narrow = job(0, res=100, mem_bw_gbps=1.5), job(1, res=3, mem_bw_gbps=0.25)
    for s in (fast, slow):
        s.allocate(wide, list(range(200, 300)), 0.0)
        s.allocate(narrow, [5, 7, 9], 0.0)
    assert fast._proc_running == [] and fast._core_state == []  # not made yet: no memory
    assert fast.proc_running[5:10] == [1, 0, 1, 0, 1] and fast.proc_running[200:300] == [1] * 100
    assert fast.proc_demand[7] == 0.25 and fast.proc_demand[250] == 1.5
    assert fast.proc_demand[8] == 0.0
    assert fast.core_state[9] == RUNNING and fast.node_free_cores[9] == 0 == fast.proc_free[299]
    assert snapshot(fast) == snapshot(slow)
    fast.release(wide, 1.0)
    slow.release(wide, 1.0)
    assert fast.proc_running[200:300] == [0] * 100 and fast.core_state[250] == SLEEPING
    assert snapshot(fast) == snapshot(slow)


def test_unknown_or_negative_cores_are_refused_with_nothing_changed():
    """On one-core nodes the free runs check every core: an id beyond the platform or a
    negative one (which a list would read from its end) is refused by name."""
    fast, _ = pair()
    fast.allocate(job(0, res=2), [3, 4], 0.0)
    before = snapshot(fast)
    with pytest.raises(SimulationError, match=rf"unknown core {N} \(0..{N - 1}\)"):
        fast.allocate(job(1, res=2), [5, N], 0.0)
    with pytest.raises(SimulationError, match="unknown core -1"):
        fast.allocate(job(2, res=80), [-1] + list(range(10, 89)), 0.0)
    assert snapshot(fast) == before and fast.free_set.runs == [(0, 3), (5, N)]


def test_narrow_jobs_of_a_lazy_state_queue_run_changes():
    """On lazy one-core nodes a narrow job's wake and sleep are queued as its runs of cores
    (no mapping of one change per core); two jobs' runs come back in their order."""
    fast, _ = pair()
    fast.allocate(job(0, res=3), [3, 4, 5], 0.0)
    fast.allocate(job(1, res=2), [9, 7], 0.0)
    assert fast._pending == {}
    assert fast.take_pending_runs() == [(3, 6, (RUNNING, 1.0)), (9, 10, (RUNNING, 1.0)),
                                        (7, 8, (RUNNING, 1.0))]
    assert fast.take_pending_runs() is None and fast.take_pending() == {}
    fast.release(job(0, res=3), 1.0)
    assert fast.take_pending_runs() == [(3, 6, (SLEEPING, 1.0))]


def test_a_core_changed_twice_comes_back_as_the_mappings_runs():
    """Runs that overlap (a core released and taken again before the engine reads them, or
    the same run twice) come back as the disjoint runs of the mapping: each core at the place
    of its first change, with its last change (None before: the engine went core by core)."""
    fast, _ = pair()
    fast.allocate(job(0, res=2), [3, 4], 0.0)
    fast.release(job(0, res=2), 1.0)
    assert fast.take_pending_runs() == [(3, 5, (SLEEPING, 1.0))]
    fast.allocate(job(1, res=2), [3, 4], 2.0)
    fast.release(job(1, res=2), 3.0)
    fast.allocate(job(2, res=1), [4], 4.0)
    assert fast.take_pending_runs() == [(3, 4, (SLEEPING, 1.0)), (4, 5, (RUNNING, 1.0))]
    assert fast.take_pending() == {}


def test_a_placement_read_off_the_free_runs_is_taken_without_splitting_it(monkeypatch):
    """The list a placement made from the free runs is allocated with those runs (kept in
    ``last_runs``); any other list is split into runs as before."""
    import hdrm.core.lazy_jobs
    import hdrm.core.state
    from hdrm.policies.core_selection import CORE_POLICIES

    s = ClusterState(Platform.homogeneous(16), make_contention("none"))
    s.allocate(job(0, res=3), [0, 1, 2], 0.0)
    rng = np.random.default_rng(0)
    cores = CORE_POLICIES.get("high_gflops").select(s, job(1, res=5), rng)
    assert cores == [3, 4, 5, 6, 7] and s.last_runs == (cores, [(3, 8)])

    def split(cores):
        raise AssertionError("split into runs again")

    for module in (hdrm.core.state, hdrm.core.lazy_jobs):
        monkeypatch.setattr(module, "core_runs", split, raising=False)
    s.allocate(job(1, res=5), cores, 1.0)
    assert s.free_set.runs == [(8, 16)] and s.alloc[1] == (3, 4, 5, 6, 7)
    assert s.last_runs is None  # taken once
    assert s.take_pending_runs() == [(0, 3, (RUNNING, 1.0)), (3, 8, (RUNNING, 1.0))]
    with pytest.raises(AssertionError, match="split"):
        s.allocate(job(2, res=2), [9, 8], 2.0)  # not the placement's list


def test_a_wide_placement_is_kept_as_the_allocation_with_its_runs(monkeypatch):
    """A wide job's placement read off the free runs (a CoreRuns) is left with those runs in
    ``last_runs`` and allocated as it is: the same object, its runs neither split again nor
    made into a second CoreRuns (a CoreRuns given otherwise is kept too)."""
    import hdrm.core.lazy_jobs
    from hdrm.core.runs import WIDE, CoreRuns
    from hdrm.policies.core_selection import CORE_POLICIES

    s = ClusterState(Platform.homogeneous(4 * WIDE), make_contention("none"))
    s.allocate(job(0, res=3), [0, 1, 2], 0.0)
    s.allocate(job(1, res=2), [10, 11], 0.0)
    rng = np.random.default_rng(0)
    cores = CORE_POLICIES.get("high_gflops").select(s, job(2, res=WIDE + 1), rng)
    assert type(cores) is CoreRuns and s.last_runs == (cores, [(3, 10), (12, WIDE + 6)])
    assert s.last_runs[0] is cores

    def split(cores):
        raise AssertionError("split into runs again")

    monkeypatch.setattr(hdrm.core.lazy_jobs, "core_runs", split)
    s.allocate(job(2, res=WIDE + 1), cores, 1.0)
    assert s.alloc[2] is cores and s.last_runs is None
    assert s.free_set.runs == [(WIDE + 6, 4 * WIDE)]
    given = CoreRuns([(WIDE + 6, 2 * WIDE + 7)])
    s.allocate(job(3, res=WIDE + 1), given, 2.0)
    assert s.alloc[3] is given and s.free_set.runs == [(2 * WIDE + 7, 4 * WIDE)]


def test_runs_of_only_starts_or_only_ends_are_handed_as_queued(monkeypatch):
    """A lazy state's batch of starts only, or of ends only, cannot overlap (a core is taken
    twice only if freed in between): it is handed as queued, with no sweep; a mixed batch is
    swept into the mapping's runs."""
    import hdrm.core.state

    def sweep(runs):
        raise AssertionError("swept")

    s = ClusterState(Platform.homogeneous(16), make_contention("none"))
    a, b, c = job(0, res=2), job(1, res=3), job(2, res=1)
    monkeypatch.setattr(hdrm.core.state, "as_disjoint_runs", sweep)
    s.allocate(a, [4, 5], 0.0)
    s.allocate(b, [0, 1, 2], 0.0)
    assert s.take_pending_runs() == [(4, 6, (RUNNING, 1.0)), (0, 3, (RUNNING, 1.0))]
    s.release(a, 1.0)
    s.release(b, 1.0)
    assert s.take_pending_runs() == [(4, 6, (SLEEPING, 1.0)), (0, 3, (SLEEPING, 1.0))]
    monkeypatch.undo()
    s.allocate(c, [0], 2.0)
    s.release(c, 2.0)
    s.allocate(a, [0, 1], 2.0)
    # core 0 keeps the place of its first change and takes its last; core 1 comes after
    assert s.take_pending_runs() == [(0, 1, (RUNNING, 1.0)), (1, 2, (RUNNING, 1.0))]


def test_a_lazy_mirror_followed_by_its_machine_queues_nothing():
    """follow_occupancy: a lazy mirror that holds nothing stops queuing (the machine makes the
    changes); its cores, runs and counters are kept as before. Refused elsewhere."""
    s = ClusterState(Platform.homogeneous(8), make_contention("none"))
    busy = ClusterState(Platform.homogeneous(8), make_contention("none"))
    busy.allocate(job(0, res=2), [0, 1], 0.0)
    from builders import one_node
    several = ClusterState(one_node(8), make_contention("none"))  # one node of 8 cores
    assert not busy.follow_occupancy() and not several.follow_occupancy()
    assert s.follow_occupancy()
    s.allocate(job(0, res=3), [2, 3, 4], 0.0)
    s.allocate(job(1, res=1), [0], 0.0)
    assert s.take_pending_runs() is None and s.take_pending() == {}
    assert s.free_set.runs == [(1, 2), (5, 8)] and s.core_state[:5] == [RUNNING, SLEEPING] + [RUNNING] * 3
    assert s.release(job(0, res=3), 1.0) == (2, 3, 4)
    assert s.take_pending_runs() is None and s.proc_free == [0] + [1] * 7
    assert busy.take_pending_runs() == [(0, 2, (RUNNING, 1.0))]  # still queued there
