"""The cycle collector is paused while a run is simulated, and the run makes no cycles."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from hdrm.platform.loader import load_platform
from hdrm.policies.pairs import resolve_policy
from hdrm.policies.sla_orders import bind_tenants
from hdrm.sim.collector import collector_paused
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.workload.inference import generate_inference, load_spec, tenant_spec
from hdrm.workload.tenants import build_tenants

DATA = Path(__file__).resolve().parents[2] / "hdrm" / "data"


def test_paused_then_restored_as_it_was():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # off before: left off
    finally:
        gc.enable()


def _inference_run(policy: str, requests: int = 3000) -> tuple[Simulation, object]:
    spec = load_spec(DATA / "inference_tenants.json")
    load = generate_inference(spec, None, requests)
    table = build_tenants(load.jobs, tenant_spec(spec))
    sim = Simulation(load_platform(DATA / "inference_platform.json"), load,
                     SimulationConfig(contention="hdeeprm"))
    return sim, bind_tenants(resolve_policy(policy), table, sim.core)


def test_a_run_is_simulated_with_the_collector_paused():
    sim, pair = _inference_run("fcfs", 9000)
    seen = []
    sim.run(pair, progress=lambda done, total: seen.append(gc.isenabled()))
    assert seen and not any(seen) and gc.isenabled()


@pytest.mark.parametrize("policy", ["fcfs", "edf", "fair_share", "first-high_mem_bw"])
def test_a_run_leaves_nothing_for_the_collector(policy):
    """What justifies the pause: a whole run (queues, heaps, records, kept orders, tenants'
    usage) creates no reference cycle, so reference counting frees all it drops."""
    sim, pair = _inference_run(policy)
    gc.collect()
    gc.disable()
    try:
        result = sim.run(pair)
        found = gc.collect()
    finally:
        gc.enable()
    assert found == 0 and len(result.outcomes) == 3000


def test_what_the_block_kept_is_old_and_cycles_are_still_collected():
    class Node:
        def __init__(self) -> None:
            self.links: list = []

    with collector_paused():
        kept = [Node() for _ in range(5000)]  # records a run keeps
        loop = Node()
        loop.links.append(loop)  # a cycle dropped in the block
        del loop
        assert gc.get_count()[0] > 5000
    # the young collection due now would have walked all of them: they are in the oldest
    # generation instead, with nothing left counted against the youngest
    young = {id(o) for o in gc.get_objects(0)} | {id(o) for o in gc.get_objects(1)}
    assert not any(id(k) in young for k in kept[::97])
    assert any(o is kept[0] for o in gc.get_objects(2))
    assert gc.get_count()[0] < 1000
    assert gc.collect() >= 2  # the dropped cycle (the node and its list) is found as before


def test_inputs_are_read_with_the_collector_paused(monkeypatch):
    """load_inputs reads with the collector off (its readers make thousands of objects and no
    cycle), and leaves it on as it was."""
    import hdrm.sim.inputs as inputs

    seen = []
    read = inputs.read_workload_any

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return read(*args, **kwargs)

    monkeypatch.setattr(inputs, "read_workload_any", spy)
    root = DATA.parents[1]
    platform, workload = inputs.load_inputs(inputs.InputSpec(
        str(root / "workloads" / "SDSC-SP2-1998-4.2-cln_first500.swf"),
        str(root / "platforms" / "tiny4.json"), nb_jobs=20))
    assert seen == [False] and gc.isenabled() and len(workload) == 20
