"""One-core jobs taken and freed in one step (:mod:`hdrm.core.single_core`): the same counters,
states, queued changes (in order), records and errors as the core-by-core rules."""

from __future__ import annotations

import math

import pytest
from builders import Proc, job, make_platform
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.core.contention import make_contention
from hdrm.core.power_states import PowerStates
from hdrm.core.state import FREE, ClusterState
from hdrm.errors import SimulationError
from hdrm.platform.power import CONTENDED, IDLE, RUNNING, SLEEPING


def platform(memory_mb: float = 300.0):
    """Node 0 (``memory_mb``): processor 0 (cores 0-3, 10 GB/s), processor 1 (cores 4-5, 10 GB/s);
    node 1 (250 MB): processor 2 (cores 6-7, 5 GB/s)."""
    return make_platform([
        (memory_mb, [Proc(4, 1.0, 100.0, 10.0, "a"), Proc(2, 1.0, 100.0, 10.0, "a")]),
        (250.0, [Proc(2, 2.0, 50.0, 5.0, "b")]),
    ])


def state(contention: str = "hdeeprm", fast: bool = True, memory_mb: float = 300.0):
    ClusterState.fast_paths = fast
    try:
        return ClusterState(platform(memory_mb), make_contention(contention))
    finally:
        ClusterState.fast_paths = True


def snapshot(s: ClusterState) -> tuple:
    """Everything a start or an end can change; the queued changes in their order."""
    return (list(s.core_job), list(s.core_state), list(s.core_factor), list(s.node_free_mem),
            list(s.node_free_cores), list(s.proc_free), list(s.proc_running),
            list(s.proc_demand), list(s.proc_fraction), s.free_cores, dict(s.alloc),
            list(s._pending.items()), s.contended, repr(s.records.data))


def test_one_core_jobs_skip_the_grouped_rules(monkeypatch):
    """A one-core start and end take the one-step path, not :meth:`PowerStates._account` (the
    grouping of a job's cores by processor): it costs inference requests their setup."""
    def grouped(*args, **kwargs):
        raise AssertionError("one-core job taken through the grouped rules")

    monkeypatch.setattr(PowerStates, "_account", grouped)
    s = state()
    j = job(0, mem_mb=100.0, mem_bw_gbps=4.0)
    s.allocate(j, [5], 0.0)
    assert s.release(j, 1.0) == (5,)


def test_wake_contend_idle_and_sleep_by_hand():
    s = state()
    a, b = job(0, mem_mb=100.0, mem_bw_gbps=6.0), job(1, mem_mb=100.0, mem_bw_gbps=6.0)
    s.allocate(a, [2], 0.0)  # first running core of processor 0: its free siblings wake
    assert list(s._pending.items()) == [(2, (RUNNING, 1.0)), (0, (IDLE, 1.0)), (1, (IDLE, 1.0)),
                                        (3, (IDLE, 1.0))]
    assert s.node_free_mem[0] == 200.0 and s.proc_demand[0] == 6.0 and s.free_cores == 7
    s._pending.clear()
    s.allocate(b, [0], 1.0)  # 12 GB/s on 10: both running cores contended (0.75 = state 1)
    assert list(s._pending.items()) == [(0, (CONTENDED, 1.0)), (2, (CONTENDED, 1.0))]
    assert s.contended == 2 and s.proc_fraction[0] == 0.75
    assert s.records.data.bandwidth[0].start_s == 1.0
    s._pending.clear()
    assert s.release(a, 3.0) == (2,)  # 6 GB/s: full speed again, the freed core idles
    assert list(s._pending.items()) == [(0, (RUNNING, 1.0)), (2, (IDLE, 1.0))]
    assert s.contended == 0 and s.records.data.bandwidth[0].end_s == 3.0
    s._pending.clear()
    s.release(b, 4.0)  # the last running core: the processor sleeps
    assert list(s._pending.items()) == [(c, (SLEEPING, 1.0)) for c in range(4)]
    assert s.proc_demand[0] == 0.0 and s.node_free_mem == [300.0, 250.0]
    assert s.core_job == [FREE] * 8 and s.free_cores == 8


def test_busy_core_and_memory_shortage_change_nothing():
    s = state()
    s.allocate(job(0, mem_mb=200.0), [6], 0.0)
    before = snapshot(s)
    with pytest.raises(SimulationError, match=r"job 1: core 6 is busy with job 0"):
        s.allocate(job(1), [6], 1.0)
    with pytest.raises(SimulationError, match=r"job 2: node 1 has 50 MB free, needs 60 MB"):
        s.allocate(job(2, mem_mb=60.0), [7], 2.0)
    assert snapshot(s)[:-1] == before[:-1]
    assert [r.job_id for r in s.records.data.memory_shortage] == ["2"]


_STEP = st.tuples(st.integers(0, 7), st.sampled_from([0.0, 40.0, 120.0]),
                  st.sampled_from([0.0, 3.0, 6.0, 11.0]), st.integers(1, 3), st.booleans())


@settings(max_examples=150, deadline=None)
@given(st.lists(_STEP, max_size=40), st.sampled_from(["hdeeprm", "smooth", "none"]),
       st.sampled_from([300.0, math.inf]))
def test_same_as_core_by_core_rules(steps, contention, memory_mb):
    """Random starts (one core mostly, some of two or three) and ends: the one-step path leaves
    what the core-by-core rules (``fast_paths`` off) leave, errors included."""
    fast, slow = state(contention, True, memory_mb), state(contention, False, memory_mb)
    held: list = []
    for k, (core, mem, bw, width, end) in enumerate(steps):
        now = float(k)
        if end and held:
            j = held.pop(core % len(held))
            assert fast.release(j, now) == slow.release(j, now)
        else:
            j = job(k, res=width, mem_mb=mem, mem_bw_gbps=bw)
            cores = [(core + 3 * i) % 8 for i in range(width)]
            errors = []
            for s in (fast, slow):
                try:
                    s.allocate(j, cores, now)
                    errors.append(None)
                except SimulationError as error:
                    errors.append(str(error))
            assert errors[0] == errors[1]
            if errors[0] is None:
                held.append(j)
        assert snapshot(fast) == snapshot(slow)
        assert fast.take_changes() == slow.take_changes()
