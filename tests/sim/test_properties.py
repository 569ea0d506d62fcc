"""Invariants of the built-in engine on random small workloads, platforms and settings (hypothesis).

Checked from the outcomes and the timeline of each run: no core runs two jobs at once, every job
ends (or is rejected) exactly once, time never goes back, no job starts before its submission,
node memory never goes negative, EASY and conservative backfilling never delay the head past its
reserved time, and the same
seed gives byte-identical outcomes.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from unittest import mock

from builders import Proc, make_platform, workload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hdrm.core.backfilling as backfilling_module
from hdrm.core.scheduler import DecisionCore
from hdrm.platform.model import Platform
from hdrm.policies.backfill import NodeProfile, Profile, estimated_duration_s
from hdrm.policies.pairs import ALL_PAIRS
from hdrm.sim.engine import REJECTED, Simulation, SimulationConfig
from hdrm.sim.machine import COMPLETED_SUCCESSFULLY, COMPLETED_WALLTIME_REACHED
from hdrm.workload.job import PROFILE_DELAY, PROFILE_PARALLEL_HOMOGENEOUS, Job

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HEURISTICS = ("fcfs", "sjf", "ljf", "wfp3", "unicep", "f1", "random")
END_STATES = {COMPLETED_SUCCESSFULLY, COMPLETED_WALLTIME_REACHED, REJECTED}


@st.composite
def platforms(draw) -> Platform:
    """Homogeneous or heterogeneous, 1-3 nodes of 1-2 processors of 1-3 cores, with finite
    memory (500-4000 MB per node) and bandwidth (2-20 GB/s per processor), or unbounded ones."""
    bounded = draw(st.booleans())
    same = draw(st.booleans())
    nodes = []
    for _ in range(draw(st.integers(1, 3))):
        procs = []
        for _ in range(draw(st.integers(1, 2))):
            gflops = 2.0 if same else draw(st.sampled_from([1.0, 2.0, 4.0]))
            bw = draw(st.sampled_from([2.0, 5.0, 10.0, 20.0])) if bounded else math.inf
            procs.append(Proc(draw(st.integers(1, 3)), gflops, 50.0 * gflops, bw))
        memory = float(draw(st.sampled_from([500, 1000, 2000, 4000]))) if bounded else math.inf
        nodes.append((memory, procs))
    return make_platform(nodes)


@st.composite
def jobs(draw, platform: Platform, exact: bool = False, memory: bool = True) -> list[Job]:
    """1-30 jobs; ``exact``: every job runs exactly its requested time (as the scheduler
    assumes); ``memory``: jobs may ask for memory per core."""
    out = []
    ref = platform.reference_gflops
    for i in range(draw(st.integers(1, 30))):
        walltime = float(draw(st.integers(1, 40)))
        run = walltime if exact else float(draw(st.integers(1, 60)))
        if not exact and draw(st.integers(0, 9)) == 0:
            walltime = math.inf  # no requested time: never killed, estimated by its run time
        parallel = draw(st.booleans())
        kind = PROFILE_PARALLEL_HOMOGENEOUS if parallel else PROFILE_DELAY
        out.append(Job(
            i, i, float(draw(st.integers(0, 60))), draw(st.integers(1, platform.nb_cores + 1)),
            walltime, run,
            mem_mb=float(draw(st.sampled_from([0, 0, 100, 300, 700, 1500]))) if memory else 0.0,
            mem_bw_gbps=float(draw(st.sampled_from([0, 1, 3, 8]))),
            ops_gflop=run * ref if parallel else 0.0,
            trace_submit_s=float(draw(st.integers(0, 1000))), profile=kind, profile_type=kind,
        ))
    return out


@st.composite
def cases(draw, exact: bool = False, memory: bool = True):
    platform = draw(platforms())
    config = SimulationConfig(
        contention=draw(st.sampled_from(["hdeeprm", "none", "smooth"])),
        backfilling=draw(st.sampled_from(["none", "easy", "easy_first", "conservative"])),
        decision=draw(st.sampled_from(["event", "commit"])),
        seed=draw(st.integers(0, 2**16)),
    )
    policy = draw(st.sampled_from(HEURISTICS + ALL_PAIRS))
    return platform, draw(jobs(platform, exact, memory)), config, policy


def run(platform, job_list, config, policy):
    """Run; also returns ``(time, job idx, outcome)`` for every call of ``on_outcome``."""
    sim = Simulation(platform, workload(job_list), config)
    reported: list = []
    sim.on_outcome = lambda job, outcome: reported.append((sim.now, job.idx, outcome))
    return sim.run(policy), reported


def check_no_core_overlap(outcomes) -> None:
    per_core = defaultdict(list)
    for o in outcomes:
        if o.state != REJECTED:
            for c in o.cores:
                per_core[c].append((o.start_s, o.finish_s, o.job.idx))
    for c, spans in per_core.items():
        spans.sort()
        for (s0, e0, j0), (s1, _, j1) in zip(spans, spans[1:]):
            assert s1 >= e0, f"core {c}: job {j1} starts at {s1} before job {j0} ends at {e0}"


def check_memory(platform: Platform, outcomes) -> None:
    events = []
    for o in outcomes:
        if o.state == REJECTED or o.job.mem_mb <= 0:
            continue
        per_node = Counter(platform.core_node[c] for c in o.cores)
        for node, n in per_node.items():
            events.append((o.start_s, 1, node, n * o.job.mem_mb))
            events.append((o.finish_s, 0, node, -n * o.job.mem_mb))  # ends first at equal times
    free = list(platform.node_memory_mb)
    for _, _, node, used in sorted(events):
        free[node] -= used
        assert free[node] >= -1e-6, f"node {node} memory went negative: {free[node]}"


def check_outcomes(platform: Platform, job_list, result, reported) -> None:
    outcomes = result.outcomes
    assert sorted(o.job.idx for o in outcomes) == list(range(len(job_list)))
    assert sorted(idx for _, idx, _ in reported) == list(range(len(job_list)))  # once each
    report_times = [t for t, _, _ in reported]
    assert report_times == sorted(report_times), "outcomes reported out of time order"
    for t, _, o in reported:
        if o.state == REJECTED:
            assert t == o.job.submit_s  # rejected on arrival
        else:
            assert o.finish_s == t  # reported when it ends
    for o in outcomes:
        assert o.state in END_STATES
        if o.state == REJECTED:
            assert o.reason and o.cores == ()
            continue
        job = o.job
        assert o.start_s >= job.submit_s, f"job {job.idx} started before its submission"
        assert o.finish_s >= o.start_s
        assert len(o.cores) == len(set(o.cores)) == job.res
        assert all(0 <= c < platform.nb_cores for c in o.cores)
        assert o.finish_s <= o.start_s + job.walltime_s + 1e-9  # walltime kills
        assert o.energy_j >= 0.0
    check_no_core_overlap(outcomes)
    check_memory(platform, outcomes)
    times = [r.time_s for r in result.timeline]
    assert times == sorted(times), "time went back in the timeline"
    energies = [r.energy_j for r in result.timeline]
    assert all(b >= a - 1e-6 for a, b in zip(energies, energies[1:]))
    assert all(0 <= r.busy_cores <= platform.nb_cores for r in result.timeline)
    assert math.fsum(o.energy_j for o in outcomes) <= result.energy_j * (1 + 1e-9) + 1e-6
    finished = [o.finish_s for o in outcomes if o.state != REJECTED]
    assert result.makespan_s == max(finished, default=0.0)


@SETTINGS
@given(cases())
def test_invariants(case):
    platform, job_list, config, policy = case
    result, reported = run(platform, job_list, config, policy)
    check_outcomes(platform, job_list, result, reported)


def run_recording_reservations(platform, job_list, config, policy):
    """Run and record each head reservation as ``(time, head idx, reserved start)``: EASY's
    shadow time, or conservative backfilling's start for the head."""
    seen = []
    real_reservation = backfilling_module.reservation
    real_conservative = DecisionCore._conservative

    def reservation(state, ends, head, now, first_release=False):
        shadow, extra = real_reservation(state, ends, head, now, first_release)
        seen.append((now, head.idx, shadow))
        return shadow, extra

    def conservative(core, now, head, rest, placement):
        if core.state.bounded_memory:
            profile = NodeProfile(core.state, now, core.expected_ends(now))
            reserved = profile.earliest(head, estimated_duration_s(head))
        else:
            profile = Profile(now, core.state.free_cores, core.expected_ends(now))
            reserved = profile.earliest(head.res, estimated_duration_s(head))
        seen.append((now, head.idx, reserved))
        return real_conservative(core, now, head, rest, placement)

    with mock.patch.object(backfilling_module, "reservation", reservation), \
            mock.patch.object(DecisionCore, "_conservative", conservative):
        result, _ = run(platform, job_list, config, policy)
    return result, seen


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(exact=True), st.booleans(), st.sampled_from(["easy", "easy_first", "conservative"]))
def test_backfilling_never_delays_the_head(case, fcfs, backfilling):
    """Jobs run exactly their requested time (or less, on fast cores; contention can only make
    them hit the walltime), so the head must start by its reserved time. The head keeps its
    place under FCFS (any semantics) and under ``commit`` (any policy). Jobs may ask for memory:
    both modes then reserve cores that can hold it."""
    platform, job_list, config, policy = case
    config.backfilling = backfilling
    if fcfs:
        policy = "fcfs-" + policy.partition("-")[2] if "-" in policy else "fcfs"
    else:
        config.decision = "commit"
    result, seen = run_recording_reservations(platform, job_list, config, policy)
    start = {o.job.idx: o.start_s for o in result.outcomes}
    for now, head, reserved in seen:
        assert start[head] <= reserved, (
            f"head {head} reserved at {reserved} (decided at {now}) started at {start[head]}")


def signature(result) -> bytes:
    rows = [(o.job.idx, o.state, o.start_s, o.finish_s, o.cores, o.energy_j, o.reason)
            for o in result.outcomes]
    return repr((rows, result.energy_j, result.makespan_s)).encode()


@settings(max_examples=25, deadline=None)
@given(cases())
def test_same_seed_same_outcomes(case):
    platform, job_list, config, policy = case
    first, _ = run(platform, job_list, config, policy)
    again = [Job(**{f: getattr(j, f) for f in Job.__slots__}) for j in job_list]
    second, _ = run(platform, again, config, policy)
    assert signature(first) == signature(second)
