"""Wide jobs on one-core nodes: the run-by-run paths decide and measure exactly as the
core-by-core ones (same outcomes, timeline and energy, bit for bit)."""

from __future__ import annotations

import numpy as np
import pytest

from hdrm.core.state import ClusterState
from hdrm.platform.model import Platform
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.sim.machine import Machine
from hdrm.workload.generate import generate_workload


def signature(result) -> tuple:
    rows = [(o.job.idx, o.state, o.start_s, o.finish_s, tuple(o.cores), o.energy_j)
            for o in result.outcomes]
    return rows, [tuple(getattr(r, f) for f in r.__slots__) for r in result.timeline], result.energy_j


def run(policy: str, backfilling: str, general: bool, monkeypatch, cores: int) -> tuple:
    workload = generate_workload(300, cores, np.random.default_rng(5), load=1.2)
    with monkeypatch.context() as patch:
        if general:
            patch.setattr(ClusterState, "fast_paths", False)
            patch.setattr(Machine, "_free_runs", lambda self, runs: False)
            patch.setattr(Machine, "_apply_free_runs", lambda self, runs: False)
        sim = Simulation(Platform.homogeneous(cores), workload,
                         SimulationConfig(contention="none", backfilling=backfilling))
        assert sim.core.state._singletons != general
        return signature(sim.run(policy))


@pytest.mark.parametrize(("policy", "backfilling"), [
    ("fcfs", "easy"), ("sjf", "conservative"), ("random-random", "easy_first"),
    ("fcfs-high_cores", "none"),
])
@pytest.mark.parametrize("cores", [256, 2048])
def test_same_schedule_and_energy_as_core_by_core(policy, backfilling, cores, monkeypatch):
    fast = run(policy, backfilling, False, monkeypatch, cores)
    assert max(len(row[4]) for row in fast[0]) > 100  # wide jobs did run
    assert fast == run(policy, backfilling, True, monkeypatch, cores)
