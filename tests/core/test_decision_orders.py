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
    assert sorted(calls) == list(range(11))  # was one per queued job at each of 14 decisions
    starts = {o.job.idx: o.start_s for o in result.outcomes}
    assert [starts[i] for i in (10, 9, 8, 7)] == [100.0] * 4  # shortest first at 100


def test_a_held_pick_that_does_not_fit_is_not_ordered_around():
    # commit, no backfilling: job 1 (4 cores) is picked at 1 and held until job 0 ends at 100;
    # the arrivals at 2 and 3 cannot overtake it, so they are not ordered then
    jobs = [job(0, 0.0, res=2, walltime_s=100.0), job(1, 1.0, res=4, walltime_s=10.0),
            job(2, 2.0, res=1, walltime_s=5.0), job(3, 3.0, res=1, walltime_s=5.0)]
    pair, calls = counting(dynamic=True)
    result = run(jobs, pair, decision="commit")
    # keyed at 0, 1, 100 (job 1 fits and starts, job 2 is held) and 110; not at 2 and 3
    assert calls == [0, 1, 1, 2, 3, 2, 3]
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
