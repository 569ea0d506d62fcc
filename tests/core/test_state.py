"""The decision core's cluster mirror: memory, bandwidth contention, power-state rules, records."""

from __future__ import annotations

import math

import pytest
from builders import Proc, job, make_platform

from hdrm.core.contention import (
    CONTENTION_MODELS,
    HdeeprmContention,
    NoContention,
    SmoothContention,
    make_contention,
)
from hdrm.core.state import FREE, ClusterState
from hdrm.errors import ConfigError, SimulationError
from hdrm.platform.power import CONTENDED, IDLE, RUNNING, SLEEPING


def node_platform(memory_mb: float = math.inf, bw_gbps: float = 10.0):
    """Node 0: processor 0 (cores 0-3, 10 GB/s) and processor 1 (cores 4-5); node 1: processor 2
    (cores 6-7, 2 GFLOP/s). Node 0 has ``memory_mb``, node 1 has 500 MB."""
    return make_platform([
        (memory_mb, [Proc(4, 1.0, 100.0, bw_gbps, "a"), Proc(2, 1.0, 100.0, bw_gbps, "a")]),
        (500.0, [Proc(2, 2.0, 50.0, 5.0, "b")]),
    ])


def state_of(contention: str = "hdeeprm", **kwargs) -> ClusterState:
    return ClusterState(node_platform(**kwargs), make_contention(contention))


def snapshot(s: ClusterState) -> tuple:
    """Everything an allocation can change."""
    return (list(s.core_job), list(s.core_state), list(s.core_factor), list(s.node_free_mem),
            list(s.node_free_cores), list(s.proc_free), list(s.proc_running), list(s.proc_demand),
            s.free_cores, dict(s.alloc), dict(s._pending), s.contended)


class TestLayout:
    def test_initial_state(self):
        s = state_of(memory_mb=1000.0)
        assert s.core_state == [SLEEPING] * 8
        assert s.core_job == [FREE] * 8
        assert s.free_cores == 8 and s.busy_cores == 0
        assert s.node_free_mem == [1000.0, 500.0]
        assert s.node_free_cores == [6, 2]
        assert s.proc_cores == [(0, 1, 2, 3), (4, 5), (6, 7)]
        assert s.core_proc == (0, 0, 0, 0, 1, 1, 2, 2)
        assert s.core_node == (0, 0, 0, 0, 0, 0, 1, 1)
        assert s.take_pending() == {}

    def test_allocation_keeps_core_ids(self):
        s = state_of()
        j = job(3, res=3)
        s.allocate(j, [7, 0, 5], 0.0)
        assert s.alloc == {3: (7, 0, 5)}
        assert [s.core_job[c] for c in (0, 5, 7)] == [3, 3, 3]
        assert s.free_cores == 5 and s.busy_cores == 3
        assert s.node_free_cores == [4, 1]
        assert s.proc_free == [3, 1, 1]
        assert s.release(j, 1.0) == (7, 0, 5)
        assert s.core_job == [FREE] * 8 and s.alloc == {} and s.free_cores == 8


class TestMemory:
    def test_allocatable_counts_cores_whose_node_holds_the_memory(self):
        s = state_of(memory_mb=250.0)
        assert s.allocatable(100.0) == 2 + 2  # node 0: 250 // 100 = 2; node 1: 500 // 100 = 5 > 2
        assert s.allocatable(0.0) == 8
        assert s.fits(job(0, res=4, mem_mb=100.0))
        assert not s.fits(job(0, res=5, mem_mb=100.0))
        assert not s.fits(job(0, res=9))

    def test_shortage_rolls_back_the_partial_allocation(self):
        s = state_of(memory_mb=250.0)
        s.allocate(job(0, res=1, mem_mb=10.0), [6], 0.0)
        s.take_pending()
        before = snapshot(s)
        with pytest.raises(SimulationError,
                           match="job 1: node 0 has 50 MB free, needs 100 MB per core"):
            s.allocate(job(1, res=3, mem_mb=100.0), [0, 1, 2], 4.0)
        assert snapshot(s) == before
        (record,) = s.records.data.memory_shortage
        assert (record.time_s, record.job_id, record.node_id) == (4.0, "1", 0)
        assert (record.requested_mb, record.available_mb) == (100.0, 50.0)

    def test_shortage_on_second_node_restores_the_first(self):
        s = state_of(memory_mb=1000.0)
        before = snapshot(s)
        with pytest.raises(SimulationError,
                           match="job 1: node 1 has 100 MB free, needs 400 MB per core"):
            # node 0 gives 2 x 400; node 1 has 500: 100 MB left for its 2nd core
            s.allocate(job(1, res=4, mem_mb=400.0), [0, 1, 6, 7], 0.0)
        assert snapshot(s) == before

    def test_busy_core_rolls_back(self):
        s = state_of(memory_mb=1000.0)
        s.allocate(job(0, res=1, mem_mb=100.0), [2], 0.0)
        before = snapshot(s)
        with pytest.raises(SimulationError, match="job 1: core 2 is busy with job 0"):
            s.allocate(job(1, res=3, mem_mb=100.0), [0, 1, 2], 0.0)
        assert snapshot(s) == before
        assert s.records.data.memory_shortage == []

    def test_memory_is_charged_per_core_and_given_back(self):
        s = state_of(memory_mb=1000.0)
        j = job(0, res=3, mem_mb=120.0)
        s.allocate(j, [0, 4, 6], 0.0)
        assert s.node_free_mem == [760.0, 380.0]
        s.release(j, 1.0)
        assert s.node_free_mem == [1000.0, 500.0]

    def test_double_allocation_and_unknown_release(self):
        s = state_of()
        j = job(5, res=1)
        s.allocate(j, [0], 0.0)
        with pytest.raises(SimulationError, match="job 5 already holds cores"):
            s.allocate(j, [1], 0.0)
        with pytest.raises(SimulationError, match="job 6 holds no cores"):
            s.release(job(6), 0.0)


class TestPowerStates:
    @pytest.mark.parametrize("contention", ["hdeeprm", "none", "smooth"])
    def test_first_core_wakes_its_processor_only(self, contention):
        s = state_of(contention)
        s.allocate(job(0, res=1, mem_bw_gbps=1.0), [1], 0.0)
        assert s.core_state == [IDLE, RUNNING, IDLE, IDLE, SLEEPING, SLEEPING, SLEEPING, SLEEPING]
        assert s.take_pending() == {0: (IDLE, 1.0), 1: (RUNNING, 1.0), 2: (IDLE, 1.0),
                                    3: (IDLE, 1.0)}
        assert s.take_pending() == {}  # taken once

    @pytest.mark.parametrize("contention", ["hdeeprm", "none", "smooth"])
    def test_release_idles_then_last_one_sleeps_all(self, contention):
        s = state_of(contention)
        a, b = job(0, res=2), job(1, res=1)
        s.allocate(a, [0, 1], 0.0)
        s.allocate(b, [2], 0.0)
        s.take_pending()
        s.release(a, 1.0)
        assert s.core_state[:4] == [IDLE, IDLE, RUNNING, IDLE]
        assert s.take_pending() == {0: (IDLE, 1.0), 1: (IDLE, 1.0)}
        s.release(b, 2.0)
        assert s.core_state[:4] == [SLEEPING] * 4
        assert s.take_pending() == {c: (SLEEPING, 1.0) for c in range(4)}

    def test_single_core_processor_has_no_sibling_to_wake(self):
        s = ClusterState(make_platform([(math.inf, [Proc(1, bw) for bw in (1.0, 1.0)])]),
                         make_contention("hdeeprm"))
        s.allocate(job(0), [0], 0.0)
        assert s.core_state == [RUNNING, SLEEPING]

    def test_take_changes_groups_cores_by_state(self):
        s = state_of()
        s.allocate(job(0, res=2), [0, 6], 0.0)
        groups = {(state, factor): sorted(cores) for state, factor, cores in s.take_changes()}
        assert groups == {(RUNNING, 1.0): [0, 6], (IDLE, 1.0): [1, 2, 3, 7]}
        assert s.take_changes() == []


class TestHdeeprmContention:
    def test_oversubscription_slows_every_running_core_of_the_processor(self):
        s = state_of("hdeeprm")  # processor 0: 10 GB/s
        a, b, c = (job(i, res=n, mem_bw_gbps=4.0) for i, n in ((0, 1), (1, 1), (2, 1)))
        s.allocate(a, [0], 0.0)
        s.allocate(b, [1], 0.0)  # demand 8 <= 10: full speed
        s.allocate(job(9, res=1, mem_bw_gbps=4.0), [4], 0.0)  # processor 1: unaffected
        assert s.core_state[:2] == [RUNNING, RUNNING] and s.contended == 0
        s.take_pending()
        s.allocate(c, [2], 3.0)  # demand 12 > 10
        assert s.core_state[:5] == [CONTENDED, CONTENDED, CONTENDED, IDLE, RUNNING]
        assert s.core_factor[:3] == [1.0, 1.0, 1.0]
        assert s.proc_fraction == [0.75, 1.0, 1.0]
        assert s.contended == 3
        assert s.take_pending() == {0: (CONTENDED, 1.0), 1: (CONTENDED, 1.0), 2: (CONTENDED, 1.0)}
        s.release(a, 5.0)  # demand 8 again: back to full speed
        assert s.core_state[:4] == [IDLE, RUNNING, RUNNING, IDLE]
        assert s.contended == 0

    def test_demand_equal_to_capacity_is_not_contended(self):
        s = state_of("hdeeprm")
        s.allocate(job(0, res=2, mem_bw_gbps=5.0), [0, 1], 0.0)
        assert s.core_state[:2] == [RUNNING, RUNNING] and s.records.data.bandwidth == []

    def test_bandwidth_span_records(self):
        s = state_of("hdeeprm")
        a = job(0, res=3, mem_bw_gbps=4.0)  # 12 > 10
        s.allocate(a, [0, 1, 2], 1.0)
        b = job(1, res=1, mem_bw_gbps=3.0)  # 15
        s.allocate(b, [3], 2.0)
        assert s.contended == 4
        s.release(b, 3.0)  # 12: still oversubscribed
        assert s.contended == 3 and s.core_state[:4] == [CONTENDED] * 3 + [IDLE]
        (span,) = s.records.data.bandwidth
        assert (span.processor_id, span.node_id, span.start_s, span.end_s) == (0, 0, 1.0, math.inf)
        assert (span.max_demand_gbps, span.capacity_gbps) == (15.0, 10.0)
        s.release(a, 4.0)
        assert span.end_s == 4.0
        s.allocate(job(2, res=2, mem_bw_gbps=3.0), [6, 7], 5.0)  # processor 2: 6 > 5
        s.close(9.0)
        spans = [(p.processor_id, p.node_id, p.start_s, p.end_s) for p in s.records.data.bandwidth]
        assert spans == [(0, 0, 1.0, 4.0), (2, 1, 5.0, 9.0)]

    def test_model_values(self):
        model = HdeeprmContention()
        assert model.speed_fraction(10.0001, 10.0) == 0.75
        assert model.speed_fraction(10.0, 10.0) == 1.0
        assert model.speed_fraction(1e9, math.inf) == 1.0


class TestNoContention:
    def test_full_speed_whatever_the_demand(self):
        s = state_of("none")
        s.allocate(job(0, res=4, mem_bw_gbps=100.0), [0, 1, 2, 3], 0.0)
        assert s.core_state[:4] == [RUNNING] * 4 and s.contended == 0
        assert s.records.data.bandwidth == []
        assert NoContention().speed_fraction(1e9, 1.0) == 1.0

    def test_demand_is_still_tracked(self):
        s = state_of("none")
        a, b = job(0, res=2, mem_bw_gbps=3.0), job(1, res=1, mem_bw_gbps=0.5)
        s.allocate(a, [0, 1], 0.0)
        s.allocate(b, [2], 0.0)
        assert s.proc_demand == [6.5, 0.0, 0.0]
        s.release(a, 1.0)
        assert s.proc_demand == [0.5, 0.0, 0.0]
        s.release(b, 2.0)
        assert s.proc_demand == [0.0, 0.0, 0.0]


class TestSmoothContention:
    def test_documented_formula(self):
        model = SmoothContention()
        assert model.speed_fraction(10.0, 10.0) == 1.0
        assert model.speed_fraction(20.0, 10.0) == pytest.approx(2 ** -0.5)
        assert model.speed_fraction(40.0, 10.0) == pytest.approx(0.5)
        assert model.speed_fraction(320.0, 10.0) == 0.25  # 32 ** -0.5 = 0.177, floored
        assert SmoothContention(beta=1.0).speed_fraction(30.0, 10.0) == pytest.approx(1 / 3)

    def test_fraction_becomes_state_1_with_speed_factor(self):
        s = state_of("smooth")
        s.allocate(job(0, res=2, mem_bw_gbps=10.0), [0, 1], 0.0)  # rho = 2
        factor = 2 ** -0.5 / 0.75
        assert s.core_state[:2] == [CONTENDED, CONTENDED]
        assert s.core_factor[:2] == pytest.approx([factor, factor])
        assert s.take_pending()[0] == (CONTENDED, pytest.approx(factor))
        s.allocate(job(1, res=2, mem_bw_gbps=10.0), [2, 3], 0.0)  # rho = 4: every core re-timed
        assert s.core_factor[:4] == pytest.approx([0.5 / 0.75] * 4)
        assert set(s.take_pending()) == {0, 1, 2, 3}
        assert s.contended == 4
        span = s.records.data.bandwidth[0]
        assert span.max_demand_gbps == 40.0


class TestRegistry:
    def test_names(self):
        assert {"hdeeprm", "none", "smooth"} <= set(CONTENTION_MODELS.names())
        assert isinstance(make_contention("HDeepRM"), HdeeprmContention)

    def test_unknown_name_suggests(self):
        with pytest.raises(ConfigError,
                           match=r"contention: unknown contention model 'smoth'; did you mean "
                                 r"'smooth'\? choose one of: .*hdeeprm"):
            make_contention("smoth")


def test_cores_of_one_processor_given_apart_are_counted_together():
    """A job's cores grouped by processor when they come apart ([0, 4, 1, 6, 2]): processor 0
    is counted once with its 3 cores, in the order given, as when they come together."""
    apart, together = state_of(), state_of()
    apart.allocate(job(1, res=5, mem_bw_gbps=3.0), [0, 4, 1, 6, 2], 0.0)
    together.allocate(job(1, res=5, mem_bw_gbps=3.0), [0, 1, 2, 4, 6], 0.0)
    assert apart.proc_running == [3, 1, 1] and apart.proc_free == [1, 1, 1]
    assert apart.proc_demand == [9.0, 3.0, 3.0] == together.proc_demand
    assert apart.core_state == together.core_state and apart.contended == together.contended
    assert list(apart.take_pending()) == [0, 1, 2, 3, 4, 5, 6, 7]  # processor 0's first
    assert apart.core_factor[:4] == together.core_factor[:4]
