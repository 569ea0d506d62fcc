"""The decision core orders the queue without re-sorting it at every decision, and decides the same.

A static policy's key is computed once per job (at arrival); a held pick that does not fit, with
no backfilling, is not re-ordered around at all. The schedules are those of the same key sorted at
every decision (a dynamic copy of the policy), on random workloads under every backfilling mode.
"""

from __future__ import annotations

from builders import job, simulate, workload
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.platform.model import Platform
from hdrm.policies.core_selection import CORE_POLICIES
from hdrm.policies.job_selection import JobPolicy
from hdrm.policies.pairs import PolicyPair
from hdrm.sim.engine import Simulation, SimulationConfig

HIGH_GFLOPS = CORE_POLICIES.get("high_gflops")


def counting(dynamic: bool) -> tuple[PolicyPair, list[int]]:
    """Shortest walltime first, with a count of key computations."""
    calls: list[int] = []

    def key(j, now):
        calls.append(j.idx)
        return j.walltime_s

    return PolicyPair(JobPolicy("counted", key, dynamic, ""), HIGH_GFLOPS), calls


def run(jobs, pair, nb_cores=4, **config):
    settings_ = SimulationConfig(contention="none", record_timeline=False, **config)
    return Simulation(Platform.homogeneous(nb_cores), workload(jobs), settings_).run(pair)


def test_a_static_key_is_computed_once_per_job():
    # 4 cores; a 4-core job runs 0-100, ten 1-core jobs queue behind it (one per second)
    jobs = [job(0, 0.0, res=4, walltime_s=100.0)] + [
        job(i, float(i), res=1, walltime_s=50.0 - i) for i in range(1, 11)]
    pair, calls = counting(dynamic=False)
    result = run(jobs, pair)
    # once per job that waited (job 0 found the queue empty: the order of one job is that
    # job, never keyed); it was one per queued job at each of 14 decisions
    assert sorted(calls) == list(range(1, 11))
    starts = {o.job.idx: o.start_s for o in result.outcomes}
    assert [starts[i] for i in (10, 9, 8, 7)] == [100.0] * 4  # shortest first at 100


def test_a_held_pick_that_does_not_fit_is_not_ordered_around():
    # commit, no backfilling: job 1 (4 cores) is picked at 1 and held until job 0 ends at 100;
    # the arrivals at 2 and 3 cannot overtake it, so they are not ordered then
    jobs = [job(0, 0.0, res=2, walltime_s=100.0), job(1, 1.0, res=4, walltime_s=10.0),
            job(2, 2.0, res=1, walltime_s=5.0), job(3, 3.0, res=1, walltime_s=5.0)]
    pair, calls = counting(dynamic=True)
    result = run(jobs, pair, decision="commit")
    # keyed at 100 (job 1 fits and starts, job 2 is held) and 110; not at 2 and 3, nor at 0
    # and 1 (one job queued: its own order)
    assert calls == [1, 2, 3, 2, 3]
    starts = {o.job.idx: o.start_s for o in result.outcomes}
    assert starts == {0: 0.0, 1: 100.0, 2: 110.0, 3: 110.0}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 6), st.integers(1, 40),
                          st.integers(1, 40)), min_size=1, max_size=25),
       st.sampled_from(["none", "easy", "easy_first", "conservative"]),
       st.sampled_from(["event", "commit"]))
def test_kept_order_decides_as_sorting_at_every_decision(spec, backfilling, decision):
    def jobs():
        return [job(i, float(s), res=r, walltime_s=float(w), run_time_s=float(min(w, rt)))
                for i, (s, r, w, rt) in enumerate(spec)]

    kept = PolicyPair(JobPolicy("sjf_kept", lambda j, now: j.walltime_s, False, ""), HIGH_GFLOPS)
    sorted_ = PolicyPair(JobPolicy("sjf_sorted", lambda j, now: j.walltime_s, True, ""), HIGH_GFLOPS)
    a = run(jobs(), kept, 6, backfilling=backfilling, decision=decision)
    b = run(jobs(), sorted_, 6, backfilling=backfilling, decision=decision)
    assert [(o.job.idx, o.start_s, tuple(o.cores)) for o in a.outcomes] == [
        (o.job.idx, o.start_s, tuple(o.cores)) for o in b.outcomes]


def test_heuristics_by_name_still_run():
    jobs = [job(0, 0.0, res=2, walltime_s=30.0), job(1, 1.0, res=2, walltime_s=10.0),
            job(2, 1.0, res=1, walltime_s=20.0)]
    result = simulate(Platform.homogeneous(2), jobs, "sjf", contention="none")
    assert {o.job.idx: o.start_s for o in result.outcomes} == {0: 0.0, 1: 30.0, 2: 40.0}


_OPS = st.lists(st.tuples(st.sampled_from(["submit", "submit", "schedule", "end", "pick", "hand"]),
                          st.integers(1, 4), st.integers(1, 3)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(_OPS)
def test_kept_orders_follow_the_queue_through_starts_ends_picks_and_hand_queued_jobs(ops):
    """Two static orders in turn, a job alone in the queue left unfiled: after every step each
    order is the stable sort of the queue, with no job filed twice."""
    from hdrm.core.scheduler import DecisionCore
    from hdrm.policies.job_selection import JOB_POLICIES

    core = DecisionCore(Platform.homogeneous(4), contention="none")
    policies = [JOB_POLICIES.get("sjf"), JOB_POLICIES.get("smallest")]
    pairs = [PolicyPair(p, HIGH_GFLOPS) for p in policies]
    now, made = 0.0, 0
    for k, (op, res, walltime) in enumerate(ops):
        now += 1.0
        if op in ("submit", "hand"):
            made += 1
            j = job(made, now, res=res, walltime_s=10.0 * walltime)
            if op == "submit":
                assert core.submit(j, now) is None
            else:
                core.queue.append(j)  # queued by hand, past submit
        elif op == "schedule":
            core.schedule(now, pairs[k % 2])
        elif op == "end" and core.running:
            core.complete(next(iter(core.running.values())).job, now)
        elif op == "pick" and core.queue:
            core.start_now(core.queue[res % len(core.queue)], HIGH_GFLOPS, now)
        for policy in policies:
            order = core._order(policy, now)
            assert order == sorted(core.queue, key=lambda j: policy.key(j, now))
        for kept in core._orders.values():
            assert kept is None or len(set(map(id, kept.jobs))) == len(kept.jobs)


def test_a_job_alone_in_the_queue_is_filed_when_a_second_comes():
    from hdrm.core.scheduler import DecisionCore
    from hdrm.policies.job_selection import JOB_POLICIES

    core = DecisionCore(Platform.homogeneous(2), contention="none")
    sjf = PolicyPair(JOB_POLICIES.get("sjf"), HIGH_GFLOPS)
    big, first, second = job(0, res=2), job(1, 1.0, walltime_s=30.0), job(2, 2.0, walltime_s=20.0)
    core.submit(big, 0.0)
    core.schedule(0.0, sjf)  # alone, started: never filed (no kept order made yet)
    core.submit(first, 1.0)
    core.schedule(1.0, sjf)  # alone in the queue: its own order, no kept order made
    assert core._orders == {} and core.queue == [first]
    core.submit(second, 2.0)
    core.schedule(2.0, sjf)  # two: the kept order is made from the queue
    assert core._orders["sjf"].jobs == [second, first]
    core.complete(big, 3.0)
    core.schedule(3.0, sjf)  # both start: the queue and the kept order empty
    assert core.queue == [] and core._orders["sjf"].jobs == []
    third, fourth = job(3, 4.0, res=2, walltime_s=5.0), job(4, 5.0, walltime_s=1.0)
    core.submit(third, 4.0)
    assert core._unfiled == (third, core._arrivals) and core._orders["sjf"].jobs == []
    core.submit(fourth, 5.0)  # the first is filed with its own arrival number, then this one
    assert core._unfiled is None and core._orders["sjf"].jobs == [fourth, third]
