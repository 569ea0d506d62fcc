"""Block preemption through the environment (options.json ``pybatsim.env.preemption``): the
hand-checked two-tenant case of tests/sim/test_preemption.py in ``policy_pair`` mode gives the
engine's starts and finishes, each job is counted once, and the refusals are one line."""

from __future__ import annotations

import json

import pytest

from hdrm.env.config import EnvConfig
from hdrm.env.scheduling_env import SchedulingEnv
from hdrm.errors import ConfigError
from hdrm.options import options_from_dict
from hdrm.sim.preemptive import PreemptedOutcome, PreemptiveSimulation

#: one core of 1 GFLOP/s: a request of w GFLOP runs w seconds alone, a 1 s block is 1 GFLOP
PLATFORM = {
    "name": "one_core",
    "processor_types": {"p": {"cores": 1, "clock_ghz": 1.0, "flops_per_cycle": 1.0,
                              "mem_bw_gbps": 100, "tdp_w": 100}},
    "node_types": {"n": {"processors": [{"type": "p", "count": 1}], "memory_gb": 8}},
    "clusters": [{"name": "c", "network": "ethernet_10g", "nodes": [{"type": "n", "count": 1}]}],
}
#: the bulk request (10 s, deadline 30) and the urgent one arriving at 3.5 (2 s, deadline 9.5)
WORKLOAD = {
    "nb_res": 1,
    "jobs": [{"id": "bulk", "subtime": 0.0, "walltime": 100, "res": 1, "profile": "w10"},
             {"id": "urgent", "subtime": 3.5, "walltime": 100, "res": 1, "profile": "w2"}],
    "profiles": {"w10": {"type": "parallel_homogeneous", "cpu": 10e9, "com": 0},
                 "w2": {"type": "parallel_homogeneous", "cpu": 2e9, "com": 0}},
}


def _files(tmp_path):
    (tmp_path / "platform.json").write_text(json.dumps(PLATFORM))
    (tmp_path / "workload.json").write_text(json.dumps(WORKLOAD))
    return str(tmp_path / "workload.json"), str(tmp_path / "platform.json")


def _episode(tmp_path, preemption):
    workload, platform = _files(tmp_path)
    env = SchedulingEnv(workload_file=workload, platform_file=platform, tenants="job",
                        sla="relative:3", objective="sla_satisfaction", contention="none",
                        selection=("edf-high_gflops",), preemption=preemption)
    env.reset(seed=0)
    done, total, ended = False, 0.0, []
    inner = env._on_outcome
    env.sim.on_outcome = lambda job, outcome: (ended.append(job.id), inner(job, outcome))
    while not done:
        _, reward, done, _, _ = env.step(0)
        total += reward
    return env, {o.job.id: o for o in env.sim.result().outcomes}, total, ended


def test_block_preemption_in_policy_pair_mode_gives_the_engines_run(tmp_path):
    env, out, total, ended = _episode(tmp_path, "block:1")
    assert isinstance(env.sim, PreemptiveSimulation)
    # by hand (as the engine's test): the bulk request stops at its 4 s boundary, the urgent
    # one runs 4-6, the bulk one resumes at 6 and ends at 12 after one suspension
    assert (out["urgent"].start_s, out["urgent"].finish_s) == (4.0, 6.0)
    bulk = out["bulk"]
    assert isinstance(bulk, PreemptedOutcome)
    assert (bulk.start_s, bulk.finish_s, bulk.preemptions, bulk.run_s) == (0.0, 12.0, 1, 10.0)
    assert sorted(ended) == ["bulk", "urgent"]  # each job reaches the reward tracker once
    assert env.tracker.nb_deadlines == 2 and env.tracker.sla_missed == 0
    assert total == pytest.approx(-0.0)  # both deadlines met (the bulk one: 12 <= 30)


def test_without_preemption_the_urgent_request_misses(tmp_path):
    _, out, total, ended = _episode(tmp_path, "none")
    assert (out["urgent"].start_s, out["urgent"].finish_s) == (10.0, 12.0)  # 12 > 9.5
    assert sorted(ended) == ["bulk", "urgent"] and total == pytest.approx(-0.5)


def test_options_reach_the_environment_and_bad_values_are_one_line(tmp_path):
    workload, platform = _files(tmp_path)
    data = {"workload_file_path": workload, "platform_file_path": platform,
            "pybatsim": {"env": {"preemption": "block:0.5", "preemption_overhead_s": 0.25}}}
    config = EnvConfig.from_options(options_from_dict(data, source="options.json"))
    assert (config.preemption, config.preemption_overhead_s) == ("block:0.5", 0.25)
    data["pybatsim"]["env"]["preemption"] = "block:"
    with pytest.raises(ConfigError, match=r"^options\.json: pybatsim\.env\.preemption: 'block:' "
                                          r"needs a block size in seconds > 0, e\.g\. block:0\.002$"):
        EnvConfig.from_options(options_from_dict(data, source="options.json"))
    data["pybatsim"]["env"]["preemption_overhead_s"] = -1
    with pytest.raises(ConfigError, match=r"pybatsim\.env\.preemption_overhead_s"):
        options_from_dict(data, source="options.json")


@pytest.mark.parametrize("kwargs, message", [
    ({"engine": "batsim"}, r"^preemption: Batsim cannot suspend"),
    ({"mode": "job_pick"}, r"^preemption: block preemption ranks requests .* job_pick mode"),
    ({"selection": ("fcfs-high_gflops",)}, r"^actions\.selection: .* policy 'first' ranks none"),
])
def test_refusals_at_construction(tmp_path, kwargs, message):
    workload, platform = _files(tmp_path)
    with pytest.raises(ConfigError, match=message):
        SchedulingEnv(workload_file=workload, platform_file=platform, tenants="job",
                      preemption="block:1", **{"selection": ("edf-high_gflops",), **kwargs})


def test_refused_on_gpu_inputs_and_request_mode_runs_as_none(tmp_path):
    from gpu_builders import write_tiny

    files = write_tiny(tmp_path)
    with pytest.raises(ConfigError, match=r"^preemption: block preemption runs on the built-in "
                                          r"CPU engine; the GPU engine cannot suspend"):
        SchedulingEnv(**files, selection=("fifo-best_fit",), preemption="block:1")
    SchedulingEnv(**files, selection=("fifo-best_fit",), preemption="request")  # accepted
    _, out, total, _ = _episode(tmp_path, "request")
    assert (out["urgent"].start_s, out["urgent"].finish_s) == (10.0, 12.0)
    assert total == pytest.approx(-0.5)


def test_refused_by_the_periodic_dag_environment(tmp_path):
    from dag.periodic_gpu_case import write_case

    from hdrm.env.dag_env import DagEnv

    taskset, platform = write_case(tmp_path, gpus=1)
    with pytest.raises(ConfigError, match=r"^preemption: the periodic DAG environment runs its "
                                          r"tasks to their end; got 'block:1', use none"):
        DagEnv(workload_file=str(taskset), platform_file=str(platform), preemption="block:1")


def test_env_matches_the_engine_on_generated_inference_requests(tmp_path, capsys):
    """Every request's start, end and suspensions equal the engine's (the env's episode clock
    starts at the first submission: times shifted by it)."""
    from pathlib import Path

    from hdrm.cli.main import main
    from hdrm.platform.loader import load_platform
    from hdrm.policies.pairs import resolve_policy
    from hdrm.policies.sla_orders import bind_tenants
    from hdrm.sim.engine import Simulation, SimulationConfig
    from hdrm.workload.batsim_json import read_batsim_json
    from hdrm.workload.tenant_files import tenants_for

    data = Path(__file__).resolve().parents[2] / "hdrm" / "data"
    platform, out = str(data / "inference_platform.json"), tmp_path / "inf"
    assert main(["workload", "inference", "--tenants", str(data / "inference_tenants.json"),
                 "--requests", "3000", "-o", str(out)]) == 0
    capsys.readouterr()
    workload, tenants = str(out / "workload.json"), str(out / "tenants.json")
    env = SchedulingEnv(workload_file=workload, platform_file=platform, tenants=tenants,
                        objective="sla_satisfaction", selection=("edf-high_gflops",),
                        preemption="block:0.002")
    env.reset(seed=0)
    done = False
    while not done:
        _, _, done, _, _ = env.step(0)
    load = read_batsim_json(workload, load_platform(platform).reference_gflops)
    sim = Simulation(load_platform(platform), load, SimulationConfig(preemption="block:0.002"))
    result = sim.run(bind_tenants(resolve_policy("edf"), tenants_for(load, tenants), sim.core))
    mine = {o.job.id: o for o in env.sim.result().outcomes}
    shift = min(o.job.submit_s for o in result.outcomes) - min(o.job.submit_s for o in mine.values())
    suspended = 0
    for o in result.outcomes:
        e = mine[o.job.id]
        assert e.start_s + shift == pytest.approx(o.start_s, abs=1e-9)
        assert e.finish_s + shift == pytest.approx(o.finish_s, abs=1e-9)
        assert getattr(e, "preemptions", 0) == getattr(o, "preemptions", 0)
        suspended += getattr(o, "preemptions", 0)
    assert len(mine) == len(result.outcomes) == 3000 and suspended > 0
