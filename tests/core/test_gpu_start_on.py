"""The decision core's node-choice hook (the multi-agent environment's placing agent):
:meth:`GpuDecisionCore.start_on` starts a task on a given node with the configured placement's
GPU choice within it, refuses a node where it does not fit without changing anything, and the
engine's :meth:`GpuSimulation.place_on` runs it; :meth:`Placer.choose_node` is
:meth:`Placer.choose`'s node."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_builders import gpu_platform, task
from hdrm.core.gpu_scheduler import GpuDecisionCore
from hdrm.policies.gpu_placer import Placer
from hdrm.policies.placement import PLACEMENTS, make_placement
from hdrm.sim.engine import Simulation
from hdrm.workload.job import Workload

#: node 0: 8 cores, 2 T4; node 1: 4 cores, 1 V100M16
NODES = [(8, 16384, 2, "T4"), (4, 16384, 1, "V100M16")]


def core_with(jobs) -> GpuDecisionCore:
    core = GpuDecisionCore(gpu_platform(NODES), jobs, ties="name")
    for job in jobs:
        core.submit(job, 0.0)
    return core


@pytest.mark.parametrize("placement, gpu", [("best_fit", 1), ("fgd", 1), ("first_fit", 1)])
def test_start_on_the_chosen_node_takes_the_placements_gpu_there(placement, gpu):
    # 0.7 of GPU 1 of node 0 taken first: a 0.2-GPU task then goes to GPU 1 (the least free
    # share that fits: best fit; FGD fills the fragment too), never node 1 (not chosen)
    first, second = task(0, 0, 10, 1, 700), task(1, 0, 10, 1, 200)
    core = core_with([first, second])
    core.cluster.allocate(0, core.shape(first), (1,))
    core.queue.remove(first)
    devices = core.start_on(second, 0, placement, 0.0)
    placed = core.placements[1]
    assert (placed.node, placed.gpus, placed.model) == (0, (gpu,), "T4")
    assert devices == [gpu] and core.queue == []
    assert core.cluster.gpu_left[0].tolist() == [1000, 100]


def test_start_on_a_node_where_it_does_not_fit_changes_nothing():
    big = task(0, 0, 10, 2, 1000, cpu_milli=2000)  # 2 whole GPUs: node 1 has one
    core = core_with([big])
    version = core.cluster.version.copy()
    assert core.start_on(big, 1, "fgd", 0.0) is None
    assert core.start_on(big, 7, "fgd", 0.0) is None  # no such node
    assert core.queue == [big] and not core.placements
    assert np.array_equal(core.cluster.version, version)
    assert core.start_on(big, 0, "fgd", 0.0) == [0, 1]


def test_the_engine_places_on_a_node_and_runs_to_the_end():
    jobs = [task(0, 0, 30, 1, 1000), task(1, 0, 20, 0, cpu_milli=4000)]
    sim = Simulation(gpu_platform(NODES), Workload(jobs, name="w"))
    assert sim.next_decision()
    assert [j.idx for j, _ in sim.place_on(jobs[0], 1, "fgd")] == [0]
    assert sim.place_on(jobs[1], 1, "fgd") == []  # 4 cores asked, 3 left on node 1
    assert sim.place_on(jobs[1], 0, "fgd") == [(jobs[1], [])]
    while sim.next_decision():
        sim.decide_nothing()
    outcomes = sim.result().outcomes
    assert [(o.start_s, o.finish_s) for o in outcomes] == [(0.0, 30.0), (0.0, 20.0)]
    assert sim.core.placements[0].model == "V100M16"


@pytest.mark.parametrize("name", PLACEMENTS.names())
def test_choose_node_is_the_node_choose_picks(name):
    jobs = [task(i, 0, 10, g, m) for i, (g, m) in enumerate([(1, 300), (2, 1000), (0, 0)])]
    core = core_with(jobs)
    for shape in map(core.shape, jobs):
        a = Placer(make_placement(name, core.cluster, core.types), np.random.default_rng(4),
                   "shuffled")
        b = Placer(make_placement(name, core.cluster, core.types), np.random.default_rng(4),
                   "shuffled")
        assert a.choose_node(shape) == b.choose(shape)[0]
