"""The environment runs the generated inference workload with its tenants: an episode that always
picks FCFS returns minus the miss rate that the replay of the same files measures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hdrm.cli.main import main
from hdrm.env.scheduling_env import SchedulingEnv
from hdrm.platform.loader import load_platform
from hdrm.policies.pairs import resolve_policy
from hdrm.policies.sla_orders import bind_tenants
from hdrm.results.sla import report_from_outcomes
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.workload.batsim_json import read_batsim_json
from hdrm.workload.tenant_files import tenants_for

ROOT = Path(__file__).resolve().parents[2]
SPEC = str(ROOT / "hdrm" / "data" / "inference_tenants.json")
PLATFORM = str(ROOT / "hdrm" / "data" / "inference_platform.json")


def test_an_fcfs_episode_returns_minus_the_replayed_miss_rate(tmp_path, capsys):
    out = tmp_path / "inf"
    assert main(["workload", "inference", "--tenants", SPEC, "--requests", "4000",
                 "-o", str(out)]) == 0
    workload_file, tenants_file = str(out / "workload.json"), str(out / "tenants.json")
    env = SchedulingEnv(workload_file=workload_file, platform_file=PLATFORM,
                        tenants=tenants_file, objective="sla_satisfaction",
                        selection=("first-high_gflops",))
    _, info = env.reset(seed=0)
    total, done = 0.0, False
    while not done:
        action = int(np.flatnonzero(info["action_mask"])[0])
        _, reward, terminated, truncated, info = env.step(action)
        total += reward
        done = terminated or truncated
    workload = read_batsim_json(workload_file, 78_000.0)
    table = tenants_for(workload, tenants_file)
    sim = Simulation(load_platform(PLATFORM), workload, SimulationConfig())
    result = sim.run(bind_tenants(resolve_policy("fcfs"), table, sim.core))
    miss = report_from_outcomes(table, workload.jobs, result.outcomes).overall.deadline_miss_rate
    assert miss > 0  # the case is not trivial
    assert total == pytest.approx(-miss, abs=1e-12)
