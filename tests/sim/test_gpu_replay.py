"""Time-based replay on GPU platforms: hand-checked JCT, cost, energy, sharing, and invariants."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gpu_builders import check_capacities, gpu_platform, replay, task  # noqa: E402

from hdrm.errors import ConfigError  # noqa: E402
from hdrm.policies.gpu_orders import QUEUE_ORDERS  # noqa: E402
from hdrm.sim.engine import REJECTED, SimulationConfig  # noqa: E402
from hdrm.sim.gpu_engine import GpuSimulation  # noqa: E402
from hdrm.workload.job import Workload  # noqa: E402
from hdrm.sim.gpu_outputs import gpu_summary, job_cost_usd, write_gpu_outputs  # noqa: E402

V100_PRICE, T4_PRICE = 2.48, 0.35


def _three_jobs():
    platform = gpu_platform([(8, 65536, 2, "V100M16"), (4, 16384, 1, "T4")])
    jobs = [task(0, 0, 100, gpus=1, models=("V100M16",), cpu_milli=2000),
            task(1, 10, 50, gpus=2, models=("V100M16",), cpu_milli=2000),
            task(2, 20, 30, gpus=1, milli=500, models=("T4",), cpu_milli=1000)]
    return platform, jobs


def test_jct_cost_and_energy_of_three_jobs_computed_by_hand():
    # t=0 j0 takes V100 0 of n0; t=10 j1 needs both V100s: waits, and with no backfilling so does
    # j2 (t=20); t=100 j0 ends: j1 takes V100s 0,1 (ends 150), j2 half the T4 (ends 130).
    platform, jobs = _three_jobs()
    result = replay(platform, jobs)
    assert isinstance(result.gpu.placements, dict)
    starts = [o.start_s for o in result.outcomes]
    ends = [o.finish_s for o in result.outcomes]
    assert (starts, ends) == ([0, 100, 100], [100, 150, 130])
    summary = gpu_summary(result)
    assert summary["mean_jct_s"] == pytest.approx((100 + 140 + 110) / 3)
    assert summary["mean_waiting_time_s"] == pytest.approx((0 + 90 + 80) / 3)
    assert summary["makespan_s"] == 150
    # cost: GPU-hours x price, a shared GPU charged for its share
    costs = [job_cost_usd(result.gpu, i) for i in range(3)]
    assert costs == pytest.approx([100 / 3600 * V100_PRICE, 2 * 50 / 3600 * V100_PRICE,
                                   0.5 * 30 / 3600 * T4_PRICE])
    assert summary["cost_usd"] == pytest.approx(sum(costs))
    assert summary["cost_usd_by_model"]["T4"] == pytest.approx(costs[2])
    # energy: idle 2 x 40 + 10 W (GPUs) + 12 cores x 1.2 W over 150 s; each task adds its
    # GPUs' (busy - idle) x share and 2.8 W per core it holds, while it runs
    own = [(260 + 2 * 2.8) * 100, (2 * 260 + 2 * 2.8) * 50, (60 * 0.5 + 2.8) * 30]
    assert [o.energy_j for o in result.outcomes] == pytest.approx(own)
    assert result.energy_j == pytest.approx((90 + 14.4) * 150 + sum(own))
    placed = result.gpu.placements
    assert (placed[1].node, placed[1].gpus, placed[2].node, placed[2].gpus) == (0, (0, 1), 1, (0,))
    # the usual timeline: CPU held in whole cores, and the power after each instant
    rows = [(r.time_s, r.queue_size, r.running_jobs, r.busy_cores) for r in result.timeline]
    assert rows == [(0, 0, 1, 2), (10, 1, 1, 2), (20, 2, 1, 2), (100, 0, 2, 3), (130, 0, 1, 2),
                    (150, 0, 0, 0)]
    assert result.timeline[3].power_w == pytest.approx(104.4 + 525.6 + 32.8)


def test_greedy_backfilling_lets_a_later_task_that_fits_go_first():
    platform, jobs = _three_jobs()
    result = replay(platform, jobs, backfilling="greedy")
    assert [o.start_s for o in result.outcomes] == [0, 100, 20]
    assert gpu_summary(result)["mean_jct_s"] == pytest.approx((100 + 140 + 30) / 3)


def test_backfilling_with_reservations_is_refused_on_gpu_platforms():
    platform, jobs = _three_jobs()
    with pytest.raises(ConfigError, match="'easy' is not supported on GPU platforms"):
        replay(platform, jobs, backfilling="easy")


def test_fractional_tasks_share_a_gpu_and_release_their_share_over_time():
    # three half-GPU tasks on one T4: two share it at t=0, the third waits for the first (t=10)
    platform = gpu_platform([(4, 16384, 1, "T4")])
    jobs = [task(0, 0, 10, gpus=1, milli=500), task(1, 0, 20, gpus=1, milli=500),
            task(2, 0, 5, gpus=1, milli=500)]
    result = replay(platform, jobs)
    assert [(o.start_s, o.finish_s) for o in result.outcomes] == [(0, 10), (0, 20), (10, 15)]
    assert {p.gpus for p in result.gpu.placements.values()} == {(0,)}
    timeline = [(r.time, r.allocated_milli, r.running_jobs) for r in result.gpu.timeline]
    assert timeline == [(0, (1000,), 2), (10, (1000,), 2), (15, (500,), 1), (20, (0,), 0)]
    # allocation rate: 1000 milli over [0, 15), 500 over [15, 20): (15 + 2.5) / 20
    assert gpu_summary(result)["gpu_allocation_rate"]["T4"] == pytest.approx(17.5 / 20)


def test_tasks_that_can_never_fit_are_rejected_with_a_counted_reason():
    platform = gpu_platform([(8, 65536, 2, "V100M16"), (4, 16384, 1, "T4")])
    jobs = [task(0, 0, 10, gpus=3), task(1, 0, 10, gpus=1, models=("A10",)),
            task(2, 0, 10, cpu_milli=16000), task(3, 0, 10, gpus=2, models=("T4",)),
            task(4, 0, 10, gpus=1)]
    jobs[4].extra["ran"] = False
    result = replay(platform, jobs)
    reasons = [o.reason for o in result.outcomes]
    assert [o.state for o in result.outcomes] == [REJECTED] * 5
    assert reasons == [
        "asks 3 GPUs on one node, a node of an allowed model has at most 2",
        "asks GPU model(s) A10, the platform has T4, V100M16",
        "asks 16000 milli-CPU, the largest node has 8000",
        "asks 2 GPUs on one node, a node of an allowed model has at most 1",
        "never ran in the trace: no run time to replay"]
    assert gpu_summary(result)["nb_rejected"] == 5


def test_gavel_run_time_follows_the_model_the_task_got(tmp_path):
    from hdrm.workload.gavel import read_gavel

    shared = Path(__file__).resolve().parents[3] / "shared" / "traces" / "gpu" / "gavel"
    trace = tmp_path / "t.trace"
    trace.write_text("ResNet-18 (batch size 64)\tcmd\t\t-s\t1\t1000\t0\t1\n"
                     "ResNet-18 (batch size 64)\tcmd\t\t-s\t1\t1000\t0\t1\n")
    workload = read_gavel(trace, shared / "simulation_throughputs.json")
    times = workload.jobs[0].extra["gavel"]["run_time_s"]
    platform = gpu_platform([(4, 16384, 1, "K80"), (4, 16384, 1, "V100M16")])
    sim = GpuSimulation(platform, workload, ties="name")
    result = sim.run("fifo-first_fit")  # first task on the K80 node, second on the V100 node
    got = [(p.model, p.run_s) for p in result.gpu.placements.values()]
    assert got == [("K80", times["K80"]), ("V100M16", times["V100M16"])]
    assert [o.finish_s for o in result.outcomes] == [times["K80"], times["V100M16"]]


def test_outputs_add_the_gpu_columns(tmp_path):
    platform, jobs = _three_jobs()
    result = replay(platform, jobs)
    paths = write_gpu_outputs(result, tmp_path)
    lines = paths["jobs"].read_text().splitlines()
    assert lines[0].endswith(",metadata,node,gpu_indices,gpu_milli,gpu_model,cpu_milli,jct,"
                             "cost_usd")
    assert lines[2].split(",")[14] == "0-1"  # allocated_resources: the GPUs' global ids
    assert lines[2].split(",")[-7:] == ["openb-n0", "0 1", "1000", "V100M16", "2000",
                                        "140.000000", f"{100 / 3600 * V100_PRICE:.6f}"]
    assert lines[3].split(",")[-7:-2] == ["openb-n1", "0", "500", "T4", "1000"]
    header = paths["gpu_timeline"].read_text().splitlines()[0]
    assert header == "time,queue_size,running_jobs,alloc_T4,alloc_V100M16,frag_milli,power_w"


# ---------------------------------------------------------------------- property
MODELS = ("T4", "V100M16")


@st.composite
def _case(draw):
    nodes = [(draw(st.integers(1, 8)), draw(st.integers(1024, 16384)), draw(st.integers(0, 4)),
              draw(st.sampled_from(MODELS))) for _ in range(draw(st.integers(1, 3)))]
    nodes[0] = nodes[0][:2] + (max(1, nodes[0][2]),) + nodes[0][3:]  # a GPU platform
    jobs = []
    for i in range(draw(st.integers(1, 14))):
        gpus = draw(st.integers(0, 3))
        milli = draw(st.sampled_from((250, 500, 1000))) if gpus == 1 else 1000
        models = tuple(draw(st.lists(st.sampled_from(MODELS), max_size=2, unique=True)))
        jobs.append(task(i, draw(st.integers(0, 50)), draw(st.integers(1, 40)), gpus, milli,
                         models, draw(st.integers(0, 6000)), draw(st.integers(0, 8192))))
    jobs.sort(key=lambda j: j.submit_s)
    for i, job in enumerate(jobs):
        job.idx = job.id = i
    policy = f"{draw(st.sampled_from(QUEUE_ORDERS.names()))}-" + draw(st.sampled_from(
        ("first_fit", "best_fit", "fgd", "random", "gpu_packing", "dot_product")))
    return nodes, jobs, policy, draw(st.sampled_from(("none", "greedy")))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_case())
def test_no_capacity_or_model_constraint_is_ever_broken_and_every_task_ends_once(case):
    nodes, jobs, policy, backfilling = case
    platform = gpu_platform(nodes)
    result = replay(platform, jobs, policy, backfilling, ties="shuffled")
    assert sorted(o.job.idx for o in result.outcomes) == list(range(len(jobs)))  # once each
    times = [r.time for r in result.gpu.timeline]
    assert times == sorted(times)  # time never goes back
    placed = result.gpu.placements
    for o in result.outcomes:
        if o.state == REJECTED:
            assert o.job.idx not in placed
            continue
        p = placed[o.job.idx]
        assert o.job.submit_s <= o.start_s and o.finish_s == o.start_s + p.run_s
        if p.shape.models and p.gpus:
            assert p.model in p.shape.models
    check_capacities(nodes, placed)
    for p in placed.values():
        assert all(g < nodes[p.node][2] for g in p.gpus)
    assert math.isfinite(result.energy_j) and result.energy_j >= 0


def test_everything_is_free_again_at_the_end():
    platform, jobs = _three_jobs()
    sim = GpuSimulation(platform, Workload(jobs), ties="name")
    sim.run("las-fgd")
    cluster = sim.core.cluster
    assert (cluster.gpu_left == cluster.gpu_cap).all()
    assert (cluster.cpu_left == cluster.cpu_cap).all()
    assert not sim.core.running and not sim.core.queue and sim.machine.running == 0


def test_commit_semantics_hold_the_first_blocked_pick_as_on_cpu_platforms():
    # one T4; x holds it 0..100; y (50 s, t=1) is blocked, then z (5 s, t=2) arrives. SJF with
    # event semantics lets z overtake at t=100; with commit y keeps its place.
    platform = gpu_platform([(4, 16384, 1, "T4")])

    def starts(decision):
        jobs = [task(0, 0, 100, gpus=1), task(1, 1, 50, gpus=1), task(2, 2, 5, gpus=1)]
        sim = GpuSimulation(platform, Workload(jobs), SimulationConfig(decision=decision),
                            ties="name")
        return [o.start_s for o in sim.run("sjf-first_fit").outcomes]

    assert starts("event") == [0, 105, 100]
    assert starts("commit") == [0, 100, 150]


def test_an_environment_can_step_the_gpu_engine_and_pick_tasks():
    platform = gpu_platform([(4, 16384, 1, "T4")])
    jobs = [task(0, 0, 10, gpus=1, milli=500), task(1, 0, 20, gpus=1, milli=500),
            task(2, 0, 5, gpus=1)]
    sim = GpuSimulation(platform, Workload(jobs), ties="name")
    assert sim.next_decision() and [j.idx for j in sim.core.queue] == [0, 1, 2]
    assert sim.pick(jobs[2], "first_fit", hold=False) == [(jobs[2], [0])]  # the whole GPU
    assert sim.pick(jobs[0], "first_fit", hold=True) == []  # does not fit: held
    assert sim.core.committed is jobs[0]
    assert sim.next_decision() and sim.now == 5
    assert sim.decide(sim.resolve("fifo-first_fit")) == [(jobs[0], [0]), (jobs[1], [0])]
    assert sim.core.committed is None
    assert [o.start_s for o in sim.run("fifo-first_fit").outcomes] == [5, 5, 0]


def test_simulation_on_a_gpu_platform_is_a_gpu_simulation_and_copies():
    import copy

    from hdrm.sim.engine import Simulation

    platform, jobs = _three_jobs()
    sim = Simulation(platform, Workload(jobs))
    assert type(sim) is GpuSimulation
    twin = copy.deepcopy(sim)  # copy and pickle build instances without arguments
    assert type(twin) is GpuSimulation
    assert [o.finish_s for o in twin.run("fifo").outcomes] == [100, 150, 130]


def test_same_seed_same_schedule():
    platform = gpu_platform([(8, 65536, 4, "T4"), (8, 65536, 4, "T4"), (8, 65536, 2, "V100M16")])
    jobs = [task(i, i % 7, 10 + i % 5, gpus=1 + i % 2, milli=1000) for i in range(30)]

    def placements(seed):
        result = replay(platform, jobs, "fifo-random", seed=seed, ties="shuffled")
        return [(p.node, p.gpus, p.start_s) for p in result.gpu.placements.values()]

    assert placements(3) == placements(3)
    assert placements(3) != placements(4)


def test_fragmentation_over_time_by_hand_and_against_a_full_recount():
    # task types: half a GPU (freq 0.5) and one whole GPU (0.5). At t=0 the half task takes
    # GPU 0 and the whole one GPU 1: free [500, 0]; the 500 serves a half task (no fragment) but
    # no whole one (all 500 are fragment): 0.5 x 0 + 0.5 x 500 = 250. At 10 the half task ends:
    # free [1000, 0], nothing is fragment; at 20 everything is free.
    platform = gpu_platform([(4, 16384, 2, "T4")])
    jobs = [task(0, 0, 10, gpus=1, milli=500), task(1, 0, 20, gpus=1)]
    result = replay(platform, jobs)
    assert [(r.time, r.frag_milli) for r in result.gpu.timeline] == [(0, 250), (10, 0), (20, 0)]
    # the event-driven tracker equals a full recount of every node after each decision
    from hdrm.policies.gpu_frag import FragMeter

    platform = gpu_platform([(8, 65536, 4, "T4"), (4, 16384, 2, "V100M16"), (8, 8192, 0, "")])
    jobs = [task(i, i % 9, 5 + i % 7, gpus=i % 3, milli=(250, 500, 1000)[i % 3] if i % 3 == 1
                 else 1000, cpu_milli=500 + 700 * (i % 4)) for i in range(40)]
    sim = GpuSimulation(platform, Workload(jobs), ties="name")
    policy = sim.resolve("tetris-fgd")
    meter = FragMeter(sim.core.cluster, sim.core.types)
    while sim.next_decision():
        sim.decide(policy)
        full = meter.of_cluster(sim.core.cluster).sum()
        assert sim.gpu_timeline[-1].frag_milli == pytest.approx(full)


def _summary_with_timeline(platform, jobs, policy, record_timeline):
    config = SimulationConfig(record_timeline=record_timeline)
    result = GpuSimulation(platform, Workload(jobs), config, ties="name").run(policy)
    return result, gpu_summary(result)


def test_allocation_and_fragmentation_averages_by_hand_without_the_timeline():
    # the fragmentation case above plus a 3-GPU task that never fits (rejected at t=50, past
    # the makespan 20). Task types: half, whole and triple GPU (1/3 each). Over [0, 10] free
    # [500, 0]: fragment 0 (half), 500 (whole), 500 (triple fits no node) -> 333.3; over
    # [10, 20] free [1000, 0]: 0, 0, 1000 -> 333.3; after 20, free [1000, 1000] -> 666.7 but
    # past the makespan. Allocation: 1500 milli over [0, 10], 1000 over [10, 20] of 2,000 ->
    # 2500 x 10 / 2000 / 20 = 62.5%.
    platform = gpu_platform([(4, 16384, 2, "T4")])
    jobs = [task(0, 0, 10, gpus=1, milli=500), task(1, 0, 20, gpus=1), task(2, 50, 5, gpus=3)]
    for record in (True, False):
        result, summary = _summary_with_timeline(platform, jobs, "fifo-first_fit", record)
        assert bool(result.gpu.timeline) is record
        assert summary["makespan_s"] == 20 and summary["nb_rejected"] == 1
        assert summary["mean_frag_milli"] == pytest.approx(1000 / 3)
        assert summary["gpu_allocation_rate"]["T4"] == pytest.approx(0.625)
        assert summary["gpu_allocation_rate_all"] == pytest.approx(0.625)


def test_averages_are_the_same_with_or_without_the_timeline_on_an_openb_slice():
    from hdrm.sim.gpu_inputs import load_gpu_inputs
    from hdrm.sim.gpu_outputs import timeline_averages

    gpu = Path(__file__).resolve().parents[2].parent / "shared" / "traces" / "gpu"
    if not gpu.is_dir():
        pytest.skip("needs ../shared/traces/gpu")
    platform, workload = load_gpu_inputs(str(gpu / "openb_node_list_gpu_node.csv"),
                                         str(gpu / "openb_pod_list_gpushare40.csv"), nb_jobs=400)
    results = {}
    for record in (True, False):
        config = SimulationConfig(record_timeline=record, seed=1)
        result = GpuSimulation(platform, workload, config).run("drf-fgd")
        results[record] = (result, gpu_summary(result))
    (with_rows, on), (without, off) = results[True], results[False]
    assert off["mean_frag_milli"] > 0 and off["gpu_allocation_rate_all"] > 0
    for key in ("mean_frag_milli", "gpu_allocation_rate_all"):
        assert off[key] == pytest.approx(on[key], rel=1e-12)
    assert off["gpu_allocation_rate"] == pytest.approx(on["gpu_allocation_rate"], rel=1e-12)
    # and the running integrals equal the time averages of the timeline itself
    rates, frag = timeline_averages(with_rows.gpu, on["makespan_s"])
    assert list(on["gpu_allocation_rate"].values()) == pytest.approx(rates, rel=1e-9)
    assert on["mean_frag_milli"] == pytest.approx(frag, rel=1e-9)


def test_the_node_state_memo_and_the_batch_measure_give_the_same_fragmentation(monkeypatch):
    from hdrm.sim.gpu_engine import FragTracker

    platform = gpu_platform([(8, 65536, 4, "T4"), (4, 16384, 2, "V100M16"), (8, 8192, 0, "")])
    jobs = [task(i, i % 9, 5 + i % 7, gpus=i % 3, milli=(250, 500, 1000)[i % 3] if i % 3 == 1
                 else 1000, cpu_milli=500 + 700 * (i % 4)) for i in range(40)]

    def frags():
        result = replay(platform, jobs, "tetris-fgd")
        return [r.frag_milli for r in result.gpu.timeline], result.gpu.frag_milli_s

    memo_rows, memo_integral = frags()
    monkeypatch.setattr(FragTracker, "MEMO_SIZE", 3)  # the memo starts again often
    small_rows, small_integral = frags()
    monkeypatch.setattr(FragTracker, "FEW", 0)  # every change measured in one batch call
    batch_rows, batch_integral = frags()
    assert memo_rows == pytest.approx(batch_rows, abs=1e-9) == small_rows
    assert memo_integral == pytest.approx(batch_integral) == small_integral
    assert max(memo_rows) > 0
