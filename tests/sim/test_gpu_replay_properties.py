"""Issue 19's property over the whole GPU replay: random order x placement pairs (all 45),
decision semantics and backfilling on random small clusters; no GPU over 1,000 milli, no node over
its CPU or memory, every GPU-model constraint honoured, every task ends once, FIFO without
backfilling never lets a later task start first, the allocation integrals equal the GPU-seconds
the tasks held, and the schedule does not depend on keeping the timeline."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gpu_builders import check_capacities, gpu_platform, task  # noqa: E402

from hdrm.core.gpu_scheduler import gpu_pairs  # noqa: E402
from hdrm.sim.engine import REJECTED, SimulationConfig  # noqa: E402
from hdrm.sim.gpu_engine import GpuSimulation  # noqa: E402
from hdrm.sim.gpu_outputs import gpu_summary, job_cost_usd, timeline_averages  # noqa: E402
from hdrm.workload.job import Workload  # noqa: E402

MODELS = ("T4", "V100M16", "A10")


@st.composite
def clusters(draw):
    """1 to 4 nodes of (cores, memory MiB, GPUs, model), at least one with a GPU."""
    nodes = [(draw(st.integers(1, 8)), draw(st.integers(1024, 16384)), draw(st.integers(0, 4)),
              draw(st.sampled_from(MODELS))) for _ in range(draw(st.integers(1, 4)))]
    first = nodes[0]
    nodes[0] = (first[0], first[1], max(1, first[2]), first[3])
    return nodes


@st.composite
def workloads(draw):
    """1 to 16 tasks: whole or shared GPUs (or none), model constraints, CPU and memory."""
    jobs = []
    for i in range(draw(st.integers(1, 16))):
        gpus = draw(st.integers(0, 3))
        milli = draw(st.sampled_from((100, 250, 500, 1000))) if gpus == 1 else 1000
        models = tuple(draw(st.lists(st.sampled_from(MODELS), max_size=2, unique=True)))
        jobs.append(task(i, draw(st.integers(0, 60)), draw(st.integers(1, 40)), gpus, milli,
                         models, draw(st.integers(0, 6000)), draw(st.integers(0, 8192))))
    jobs.sort(key=lambda j: j.submit_s)
    for i, job in enumerate(jobs):
        job.idx = job.id = i
    return jobs


def _run(nodes, jobs, policy, backfilling, decision, seed, record):
    config = SimulationConfig(backfilling=backfilling, decision=decision, seed=seed,
                              record_timeline=record)
    sim = GpuSimulation(gpu_platform(nodes), Workload(jobs), config, ties="shuffled")
    return sim, sim.run(policy)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), workloads(), st.sampled_from(gpu_pairs()), st.sampled_from(("none", "greedy")),
       st.sampled_from(("event", "commit")), st.integers(0, 3))
def test_any_pair_on_any_small_cluster_keeps_the_invariants(nodes, jobs, policy, backfilling,
                                                            decision, seed):
    sim, result = _run(nodes, jobs, policy, backfilling, decision, seed, record=True)
    assert sorted(o.job.idx for o in result.outcomes) == list(range(len(jobs)))  # once each
    placed = result.gpu.placements
    for o in result.outcomes:
        if o.state == REJECTED:
            assert o.job.idx not in placed and o.reason
            continue
        p = placed[o.job.idx]
        assert o.job.submit_s <= o.start_s and o.finish_s == o.start_s + p.run_s
        assert len(p.gpus) == p.shape.gpus and len(set(p.gpus)) == len(p.gpus)
        assert all(g < nodes[p.node][2] for g in p.gpus)
        if p.gpus:
            assert p.model == nodes[p.node][3]
            assert not p.shape.models or p.model in p.shape.models  # the constraint holds
    check_capacities(nodes, placed)
    if policy.startswith("fifo") and backfilling == "none":  # nobody overtakes
        starts = [o.start_s for o in result.outcomes if o.state != REJECTED]
        assert starts == sorted(starts)
    # the allocation integrals are the GPU-milli-seconds the tasks held, per model
    report, summary = result.gpu, gpu_summary(result)
    held = {m: 0.0 for m in report.model_names}
    for p in placed.values():
        if p.gpus:
            held[p.model] += p.shape.gpus * p.shape.milli * p.run_s
    assert report.allocated_milli_s == pytest.approx([held[m] for m in report.model_names])
    rates, frag = timeline_averages(report, summary["makespan_s"])
    assert list(summary["gpu_allocation_rate"].values()) == pytest.approx(rates, abs=1e-12)
    assert summary["mean_frag_milli"] == pytest.approx(frag, abs=1e-9) and frag >= 0
    assert all(0 <= r <= 1 + 1e-12 for r in rates)
    assert summary["cost_usd"] == pytest.approx(
        math.fsum(job_cost_usd(report, i) for i in placed))
    # everything is free at the end, and the schedule does not depend on the timeline
    cluster = sim.core.cluster
    assert (cluster.gpu_left == cluster.gpu_cap).all()
    assert (cluster.cpu_left == cluster.cpu_cap).all()
    assert not sim.machine.allocated.any() and sim.machine.cpu_milli == 0
    _, bare = _run(nodes, jobs, policy, backfilling, decision, seed, record=False)
    assert [(o.start_s, o.finish_s) for o in bare.outcomes] == [
        (o.start_s, o.finish_s) for o in result.outcomes]
    assert gpu_summary(bare)["gpu_allocation_rate"] == pytest.approx(summary["gpu_allocation_rate"])
    assert gpu_summary(bare)["mean_frag_milli"] == pytest.approx(summary["mean_frag_milli"])
