"""The engine hands the cluster mirror's power-state changes to the machine only after a job
started or left (:attr:`hdrm.core.scheduler.DecisionCore.changed`)."""

from __future__ import annotations

from builders import job, workload

from hdrm.platform.model import Platform
from hdrm.sim.engine import Simulation, SimulationConfig


def test_changes_are_taken_only_after_starts_and_ends(monkeypatch):
    # two cores; job 0 (2 cores, 0-10), job 1 (1 core) queued at 2 and 3 until 10, then both run
    jobs = [job(0, 0.0, 2, 10.0), job(1, 2.0, 1, 5.0), job(2, 3.0, 1, 5.0)]
    sim = Simulation(Platform.homogeneous(2), workload(jobs), SimulationConfig(contention="none"))
    taken = []
    real = sim.core.state.take_pending_runs  # the first thing a flush asks
    monkeypatch.setattr(sim.core.state, "take_pending_runs",
                        lambda: taken.append(sim.now) or real())
    pair = sim.resolve("fcfs")
    assert not sim.core.changed
    while sim.next_decision():
        sim.decide(pair)
        assert not sim.core.changed  # every change went to the machine
    # 0: job 0 starts; 2, 3: submissions only (nothing taken); 10: job 0 ends, jobs 1 and 2
    # start; 15: both end
    assert taken == [0.0, 10.0, 10.0, 15.0]
    assert sim.machine.energy_j() == sim.result().energy_j
    assert [o.start_s for o in sim.result().outcomes] == [0.0, 10.0, 10.0]
