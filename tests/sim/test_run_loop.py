"""Simulation.run's one loop (hdrm.sim.run_loop) gives what the stepped engine gives:
``while next_decision(): decide(pair)``, outcome for outcome, row for row."""

from __future__ import annotations

import math

import numpy as np
import pytest
from builders import hetero_two_nodes, job, one_node, workload
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.errors import WorkloadError
from hdrm.platform.model import Platform
from hdrm.sim import run_loop
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.sim.preemptive import PreemptiveSimulation
from hdrm.workload.dependencies import Dependencies


def stepped(sim: Simulation, policy: str):
    """The run made by the engine's methods, one decision at a time."""
    pair = sim.resolve(policy)
    while sim.next_decision():
        sim.decide(pair)
    return sim.result()


def same(a, b) -> None:
    assert [(o.job.idx, o.state, o.start_s, o.finish_s, tuple(o.cores), o.energy_j, o.reason)
            for o in a.outcomes] == [
        (o.job.idx, o.state, o.start_s, o.finish_s, tuple(o.cores), o.energy_j, o.reason)
        for o in b.outcomes]
    assert list(a.timeline.column_tuples()) == list(b.timeline.column_tuples())
    assert (a.energy_j, a.makespan_s, a.decisions) == (b.energy_j, b.makespan_s, b.decisions)


def test_run_takes_the_loop_and_progress_by_hand(monkeypatch):
    loops = []
    real = run_loop.run_decisions
    monkeypatch.setattr("hdrm.sim.engine.run_decisions",
                        lambda *args: loops.append(1) or real(*args))
    jobs = workload([job(i, float(i), 1, 2.0) for i in range(5000)])
    seen = []
    result = Simulation(one_node(2), jobs, SimulationConfig(contention="none")).run(
        "fcfs", progress=lambda done, total: seen.append((done, total)))
    # decisions at 0, 1, ..., 4999 (arrivals; job i ends at i + 2, with an arrival but the
    # last two) and at 5000, 5001: 5,002; the 4,096th is at 4095, when jobs 0..4093 have ended
    assert loops == [1] and result.decisions == 5002
    assert seen == [(4094, 5000)]


def test_subclasses_that_change_a_step_keep_the_methods():
    from hdrm.sim.engine import _plain_steps

    assert _plain_steps(Simulation) and not _plain_steps(PreemptiveSimulation)

    class Counting(Simulation):
        def decide(self, pair):
            self.counted = getattr(self, "counted", 0) + 1
            return super().decide(pair)

    sim = Counting(one_node(2), workload([job(0), job(1, 1.0)]), SimulationConfig())
    # decisions at 0 and 1 (arrivals), 10 and 11 (ends): each through the subclass's decide
    assert not _plain_steps(Counting) and sim.run("fcfs").decisions == sim.counted == 4


def random_jobs(draw_sizes, seed: int, cores: int):
    rng = np.random.default_rng(seed)
    jobs = []
    for i, res in enumerate(draw_sizes):
        wall = float(rng.integers(1, 20))
        run = wall if rng.random() < 0.3 else float(rng.integers(1, 25))  # some killed
        kwargs = {"mem_bw_gbps": float(rng.integers(0, 3))}
        if rng.random() < 0.3:
            kwargs["ops_gflop"] = float(rng.integers(1, 40))
        jobs.append(job(i, float(rng.integers(0, 30)), min(res, cores + 1), wall, run, **kwargs))
    return workload(jobs)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=40), st.integers(0, 2**16),
       st.sampled_from(["fcfs", "sjf", "random-high_gflops"]),
       st.sampled_from(["none", "easy", "conservative"]), st.sampled_from(["event", "commit"]),
       st.booleans(), st.booleans())
def test_run_equals_the_stepped_engine(sizes, seed, policy, backfilling, decision, hetero, deps):
    """Rejections (one core too many), kills, parallel jobs under contention, dependencies."""
    platform = hetero_two_nodes(mem_bw_gbps=(3.0, 2.0)) if hetero else Platform.homogeneous(4)
    config = dict(contention="hdeeprm" if hetero else "none", backfilling=backfilling,
                  decision=decision, seed=seed)
    load = random_jobs(sizes, seed, 4)
    if deps and len(load.jobs) > 2:
        n = len(load.jobs)
        load.dependencies = Dependencies(np.array([n - 1, n - 2], dtype=np.int64),
                                         np.array([0, 1], dtype=np.int64),
                                         np.array([2.0, 0.0], dtype=np.float64))
    fused = Simulation(platform, load, SimulationConfig(**config)).run(policy)
    same(fused, stepped(Simulation(platform, load, SimulationConfig(**config)), policy))


@pytest.mark.parametrize("timeline", [True, False])
def test_outcome_callbacks_see_the_same_runs(timeline):
    load = workload([job(i, float(i % 7), 1 + i % 3, 5.0, 3.0 + i % 4) for i in range(60)])
    seen = {}
    for name in ("fused", "stepped"):
        sim = Simulation(one_node(4), load, SimulationConfig(record_timeline=timeline))
        calls = seen[name] = []
        sim.on_outcome = lambda j, o, calls=calls, sim=sim: calls.append((j.idx, sim.now, o.state))
        result = sim.run("fcfs") if name == "fused" else stepped(sim, "fcfs")
        assert len(result.timeline) == (result.decisions if timeline else 0)
    assert seen["fused"] == seen["stepped"] and len(seen["fused"]) == 60


def test_machine_follows_the_jobs_on_one_core_nodes(monkeypatch):
    """On one-core nodes at nominal speeds the machine switches hosts with starts and ends and
    the core queues nothing: the same run, bit for bit, as with the queued changes."""
    from hdrm.sim.machine import Machine

    load = random_jobs([1, 3, 2, 5, 4, 1, 2] * 30, 7, 8)
    config = dict(contention="none", backfilling="easy", decision="commit")
    sim = Simulation(Platform.homogeneous(8), load, SimulationConfig(**config))
    assert sim._follows and sim.machine.follows
    followed = sim.run("sjf")
    assert not sim.core.state._pending_runs and not sim.core.state._pending  # nothing queued
    stepped_run = stepped(Simulation(Platform.homogeneous(8), load, SimulationConfig(**config)),
                          "sjf")
    monkeypatch.setattr(Machine, "can_follow", lambda self, running, free: False)
    queued = Simulation(Platform.homogeneous(8), load, SimulationConfig(**config))
    assert not queued._follows and not queued.machine.follows
    same(followed, queued.run("sjf"))
    same(stepped_run, followed)
    assert followed.energy_j > 0 and len({o.energy_j for o in followed.outcomes}) > 10
    # processors of several cores (idle siblings), or a contention model: changes are queued
    monkeypatch.undo()
    assert not Simulation(one_node(4), load, SimulationConfig(**config))._follows
    assert not Simulation(hetero_two_nodes(mem_bw_gbps=(3.0, 2.0)), load,
                          SimulationConfig(contention="hdeeprm"))._follows



def test_hosts_that_follow_are_taken_by_the_placements_runs(monkeypatch):
    """On a machine whose hosts follow their jobs, the loop hands each narrow job's runs of
    consecutive core ids (those its placement made, held by the core) to the machine's start:
    exactly core_runs of its cores, several runs among them, and the run unchanged."""
    from hdrm.core.runs import core_runs
    from hdrm.sim.machine import Machine

    load = random_jobs([1, 3, 2, 5, 4, 1, 2] * 30, 7, 8)
    config = SimulationConfig(contention="none", backfilling="easy", decision="commit")
    plain = Simulation(Platform.homogeneous(8), load, config).run("sjf")
    given: list[tuple] = []
    start = Machine.start

    def spy(self, key, cores, **kwargs):
        given.append((tuple(cores), kwargs.get("runs")))
        return start(self, key, cores, **kwargs)

    monkeypatch.setattr(Machine, "start", spy)
    sim = Simulation(Platform.homogeneous(8), load, config)
    assert sim._follows
    same(plain, sim.run("sjf"))
    assert len(given) == 210 and all(runs == core_runs(cores) for cores, runs in given)
    assert sum(len(runs) > 1 for _, runs in given) > 10  # allocations in several runs

def test_machine_snapshot_is_the_timeline_part():
    sim = Simulation(one_node(4), workload([job(0, 0.0, 2, 5.0), job(1, 1.0, 1, 2.0)]),
                     SimulationConfig())
    pair = sim.resolve("fcfs")
    while sim.next_decision():
        sim.decide(pair)
        m = sim.machine
        assert m.snapshot() == (m.running, m.power_w, m.energy_j())
        row = sim.timeline[-1]
        assert (row.running_jobs, row.power_w, row.energy_j) == m.snapshot()


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_submission_time_that_is_not_finite_is_refused_naming_the_job(bad):
    # a NaN job was never submitted (the run waited for it) and an infinite one was lost from the
    # outcomes; the readers refuse such times, a workload made in code reaches the engine
    jobs = [job(0, 0.0), job(1, bad), job(2, 5.0)]
    with pytest.raises(WorkloadError, match=rf"^test: job 1: submission time {bad}: expected a "
                                            r"finite number of seconds$"):
        Simulation(one_node(2), workload(jobs))
    finite = Simulation(one_node(2), workload([job(0, 0.0), job(1, 3.0)])).run("fcfs")
    assert len(finite.outcomes) == 2
