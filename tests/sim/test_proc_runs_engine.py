"""Platform files (processors of several cores): the run-by-run path of the cluster mirror
decides and measures exactly as the core-by-core rules: same outcomes, timeline, bandwidth
records and total energy, and the same energy of every host, bit for bit, with contention (a
bandwidth drawn per job, some processors slowed) and without."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hdrm.core import state as state_module
from hdrm.core.state import ClusterState
from hdrm.platform.loader import load_platform
from hdrm.platform.power import SLEEPING
from hdrm.sim import engine
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.sim.machine import Machine
from hdrm.workload.generate import generate_workload
from hdrm.workload.requirements import attach_requirements


def machine_with_accounts(platform, kill_on_walltime=True):
    """The engine's machine, keeping each host's energy account."""
    from hdrm.platform.power import state_power_w, state_speeds_gflops

    speeds = [state_speeds_gflops(g) for g in platform.core_gflops]
    powers = [state_power_w(w) for w in platform.core_power_w]
    return Machine(speeds, powers, SLEEPING, kill_on_walltime, host_energy=True, compact=True)


def run(path, bandwidth: bool, contention: str, general: bool, monkeypatch) -> tuple:
    platform = load_platform(path)
    rng = np.random.default_rng(3)
    workload = generate_workload(250, platform.nb_cores, rng, load=1.1)
    if bandwidth:
        workload = attach_requirements(workload, platform.reference_gflops, rng)
    with monkeypatch.context() as patch:
        patch.setattr(engine, "machine_for", machine_with_accounts)
        if general:
            patch.setattr(ClusterState, "fast_paths", False)
        else:  # narrow jobs too take the run-by-run path, as on a platform of 2**16 cores
            patch.setattr(state_module, "RUNS_ALWAYS_CORES", 0)
        sim = Simulation(platform, workload, SimulationConfig(contention=contention,
                                                              backfilling="easy"))
        assert (sim.core.state._layout is None) == general
        result = sim.run("fcfs")
    rows = [(o.job.idx, o.state, o.start_s, o.finish_s, tuple(o.cores), o.energy_j)
            for o in result.outcomes]
    timeline = [tuple(getattr(r, f) for f in r.__slots__) for r in result.timeline]
    hosts = [sim.machine.host_energy_j(h) for h in range(platform.nb_cores)]
    return rows, timeline, result.overutilizations, result.energy_j, hosts


def two_types(tmp_path, nodes: int) -> str:
    """A file of 40-core nodes and 8-core nodes, alternating in groups (``nodes`` of each)."""
    path = tmp_path / "two.json"
    path.write_text(json.dumps({"clusters": [{"name": "c", "network": "infiniband_edr", "nodes": [
        {"type": "dell_r640_gold6148", "count": nodes // 2}, {"type": "small", "count": nodes},
        {"type": "dell_r640_gold6148", "count": nodes - nodes // 2}]}],
        "node_types": {"small": {"processors": [{"type": "quad", "count": 2}], "memory_gb": 16}},
        "processor_types": {"quad": {"cores": 4, "clock_ghz": 2.5, "flops_per_cycle": 16,
                                     "mem_bw_gbps": 20, "tdp_w": 60}}}))
    return str(path)


@pytest.mark.parametrize("contention", ["hdeeprm", "smooth", "none"])
@pytest.mark.parametrize("bandwidth", [True, False])
def test_hetero_file_same_as_core_by_core(contention, bandwidth, monkeypatch):
    fast = run("platforms/hetero.json", bandwidth, contention, False, monkeypatch)
    assert max(len(row[4]) for row in fast[0]) > 64  # wide jobs did run
    assert fast == run("platforms/hetero.json", bandwidth, contention, True, monkeypatch)


@pytest.mark.parametrize("contention", ["hdeeprm", "none"])
def test_arrays_of_hosts_same_as_core_by_core(tmp_path, contention, monkeypatch):
    """1,536 hosts (the machine keeps arrays from 1,024): the same."""
    path = two_types(tmp_path, 32)
    fast = run(path, True, contention, False, monkeypatch)
    assert fast == run(path, True, contention, True, monkeypatch)
