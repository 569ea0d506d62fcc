"""Orders kept up to date instead of re-sorted: the queue in a static policy's order
(:class:`StaticOrder`), running jobs by expected end (:class:`ExpectedEnds`), the cores-only
reservation and the lowest-free-ids placement. Each is checked against the plain computation it
replaces (a stable sort, the generic release-by-release count, the processor-by-processor scan)."""

from __future__ import annotations

import math

from builders import job
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.core.contention import make_contention
from hdrm.core.state import ClusterState
from hdrm.platform.model import Platform
from hdrm.policies.backfill import ExpectedEnds, _core_reservation
from hdrm.policies.core_selection import CORE_POLICIES, _take
from hdrm.policies.job_selection import JOB_POLICIES, JobPolicy, StaticOrder

#: (add a job with this key) or (remove the queued job at this position) steps.
steps = st.lists(st.one_of(st.tuples(st.just("add"), st.integers(0, 5)),
                           st.tuples(st.just("remove"), st.integers(0, 30))), max_size=60)


@settings(max_examples=200, deadline=None)
@given(steps)
def test_static_order_is_the_stable_sort_of_the_queue(ops):
    policy = JobPolicy("by_res", lambda j, now: j.res, False, "")
    kept, queue, arrivals = StaticOrder(policy), [], 0
    for op, value in ops:
        if op == "add":
            arrivals += 1
            queue.append(job(arrivals, res=value))
            assert kept.add(queue[-1], arrivals)
        elif queue:
            gone = queue.pop(value % len(queue))
            kept.remove(gone)
        assert kept.jobs == sorted(queue, key=lambda j: j.res)  # ties in queue order


def test_static_order_refuses_keys_without_a_total_order():
    nan = JobPolicy("nan", lambda j, now: math.nan, False, "")
    assert not StaticOrder(nan).add(job(0), 1)
    text = JobPolicy("text", lambda j, now: "a", False, "")
    assert not StaticOrder(text).add(job(0), 1)


def test_only_now_free_keys_are_static():
    assert JOB_POLICIES.get("sjf").static and JOB_POLICIES.get("f1").static
    for name in ("fcfs", "random", "wfp3", "unicep", "sjf_pred"):
        assert not JOB_POLICIES.get(name).static, name


#: running jobs as (expected end, cores), started in list order; and the time asked.
running_jobs = st.lists(st.tuples(st.sampled_from([0.0, 5.0, 10.0, 10.0, 20.0, math.inf]),
                                  st.integers(1, 4)), max_size=12)


@settings(max_examples=300, deadline=None)
@given(running_jobs, st.lists(st.integers(0, 11), max_size=6), st.sampled_from([0.0, 5.0, 10.0, 15.0]),
       st.booleans())
def test_expected_ends_are_the_stable_sort_of_the_running_jobs(spec, ended, now, by_size):
    kept = ExpectedEnds(by_size)
    running = {}
    for i, (end, res) in enumerate(spec):
        j = job(i, res=res)
        running[i] = (end, j)
        kept.add(j, end)
    for i in ended:
        if i in running:
            kept.remove(running.pop(i)[1])
    ends = [(max(end, now), j) for end, j in running.values()]  # start order
    key = (lambda e: (e[0], e[1].res)) if by_size else (lambda e: e[0])
    assert kept.at(now) == sorted(ends, key=key)
    assert len(kept) == len(running)


def generic_reservation(free, ends, res, now, first_release):
    """EASY's shadow time and extra cores, release by release (the generic count)."""
    shadow, avail = math.inf, 0
    for end, avail_after in [(-math.inf, free)] + [
            (e, free + sum(j.res for _, j in ends[:k + 1])) for k, (e, _) in enumerate(ends)]:
        if shadow < math.inf and (first_release or end > shadow):
            break
        avail = avail_after
        if shadow == math.inf and avail >= res:
            shadow = max(end, now)
    return (math.inf, 0) if shadow == math.inf else (shadow, avail - res)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 6), running_jobs, st.integers(1, 12), st.sampled_from([0.0, 10.0]),
       st.booleans())
def test_cores_only_reservation_is_the_generic_count(free, spec, res, now, first_release):
    ends = sorted(((max(e, now), job(i, res=r)) for i, (e, r) in enumerate(spec)),
                  key=lambda e: e[0])
    assert _core_reservation(free, ends, res, now, first_release) == generic_reservation(
        free, ends, res, now, first_release)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=40), st.integers(1, 40))
def test_lowest_free_ids_on_one_core_processors_are_what_the_scan_takes(busy, need):
    state = ClusterState(Platform.homogeneous(len(busy)), make_contention("none"))
    taken = [c for c, b in enumerate(busy) if b]
    if taken:
        state.allocate(job(0, res=len(taken)), taken, 0.0)
    wanted = job(1, res=need)
    ranking = list(range(len(busy)))
    expected = _take(state, wanted, ranking) if need <= state.free_cores else None
    assert CORE_POLICIES.get("high_gflops").select(state, wanted, None) == expected
