"""Our PyBatsim scheduler against ``hdrm serve``: the same decisions as the built-in engine.

The adapter runs pybatsim's own ``Batsim`` loop (in a thread, :class:`DecisionThread`) and the server
plays Batsim over a real ZeroMQ socket. For each policy the jobs, allocations (in selection order),
start and finish times, energy and power-state changes must equal those of
:class:`hdrm.sim.engine.Simulation` run directly on the same inputs.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from batsim_helpers import GOLDEN, PLATFORMS, pybatsim_command

from hdrm.batsim.adapter import HdrmScheduler, Pick
from hdrm.batsim.process import DecisionThread
from hdrm.batsim.server import BatsimServer, ServeOptions
from hdrm.batsim.simulator import ServerConfig
from hdrm.errors import ConfigError, ProtocolError
from hdrm.platform.loader import load_platform
from hdrm.platform.power import CONTENDED, RUNNING, SLEEPING
from hdrm.policies.pairs import ALL_PAIRS, resolve_policy
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.workload.batsim_json import read_batsim_json

HETERO = PLATFORMS / "tiny_hetero.json"
TINY4 = PLATFORMS / "tiny4.json"


def write_workload(path: Path, seed: int, nb_jobs: int, max_res: int) -> Path:
    """Parallel homogeneous jobs with memory and bandwidth demands, some over their walltime."""
    rng = np.random.default_rng(seed)
    jobs, profiles, t = [], {}, 0.0
    for i in range(nb_jobs):
        t += float(rng.integers(0, 15))
        jobs.append({"id": i, "subtime": t, "res": int(rng.integers(1, max_res + 1)), "walltime": 150,
                     "profile": f"p{i}", "mem_bw_gbps": float(rng.choice([0, 4, 8, 12])),
                     "mem_mb": float(rng.choice([0, 512, 1024]))})
        profiles[f"p{i}"] = {"type": "parallel_homogeneous", "cpu": float(rng.integers(50, 3000)) * 1e9, "com": 0}
    path.write_text(json.dumps({"nb_res": max_res, "jobs": jobs, "profiles": profiles}))
    return path


def run_adapter(scheduler: HdrmScheduler, platform: Path, workload: Path, timeout_s: float = 10.0):
    """Run ``scheduler`` against hdrm serve; returns the server (its simulation holds the outcome)."""
    thread = DecisionThread(scheduler, timeout_s)
    thread.start()
    try:
        server = BatsimServer(platform, workload, ServeOptions(
            f"tcp://localhost:{thread.port()}", None, timeout_s, ServerConfig(energy=True)))
        server.result = server.run()
        thread.join(10)
    finally:
        if thread.is_alive():
            thread.stop()
    assert thread.error is None, thread.error
    return server


def spy_states(sim: Simulation) -> list[tuple[float, dict[int, int]]]:
    """Record the power states the engine applies, core by core or by runs of cores:
    [(time, {core: state})]."""
    log: list[tuple[float, dict[int, int]]] = []
    apply = sim.machine.apply_states

    def spy(changes):
        log.append((sim.now, {c: s for c, (s, _) in changes.items()}))
        apply(changes)

    sim.machine.apply_states = spy
    apply_runs = sim.machine.apply_runs

    def spy_runs(runs):  # runs of cores (platforms of several cores a processor, wide jobs)
        runs = list(runs)
        log.append((sim.now, {c: s for lo, hi, (s, _) in runs for c in range(lo, hi)}))
        apply_runs(runs)

    sim.machine.apply_runs = spy_runs
    return log


def timeline(initial: list[int], entries) -> list[tuple[float, tuple[int, ...]]]:
    """Every core's state after each instant where it changed: [(time, states)], from ``initial``."""
    state = list(initial)
    out = [(0.0, tuple(state))]
    for t, changes in entries:
        state_before = tuple(state)
        for c, s in changes.items():
            state[c] = s
        if tuple(state) == state_before:
            continue
        if out[-1][0] == t:
            out[-1] = (t, tuple(state))
        else:
            out.append((t, tuple(state)))
    return [entry for i, entry in enumerate(out) if i == 0 or entry[1] != out[i - 1][1]]


def assert_net_requests(requests, nb_cores: int) -> None:
    """Every SET_RESOURCE_STATE changes the P-state of each core it names (hosts start in 0)."""
    pstate = [RUNNING] * nb_cores
    for _, state, cores in requests:
        assert all(pstate[c] != state for c in cores), (state, cores)
        for c in cores:
            pstate[c] = state


def assert_same_run(sim: Simulation, server: BatsimServer, scheduler: HdrmScheduler, states) -> None:
    engine = {o.job.idx: o for o in sim.result().outcomes}
    assert len(scheduler.starts) == len(engine)
    for t, job, cores in scheduler.starts:  # same decisions, same order of cores
        out = engine[job.idx]
        assert (t, cores) == (pytest.approx(out.start_s, abs=1e-6), list(out.cores))
    rows = {r.job_id: r for r in server.result.results}
    for out in engine.values():
        row = rows[str(out.job.id)]
        assert (row.final_state, row.core_ids()) == (out.state, sorted(out.cores))
        assert row.starting_time == pytest.approx(out.start_s, rel=1e-12, abs=1e-9)
        assert row.finish_time == pytest.approx(out.finish_s, rel=1e-12, abs=1e-9)
        assert row.consumed_energy == pytest.approx(out.energy_j, rel=1e-9)
    assert server.result.energy_j == pytest.approx(sim.machine.energy_j(), rel=1e-12)
    nb = sim.platform.nb_cores
    assert_net_requests(scheduler.state_requests, nb)
    sent = timeline([RUNNING] * nb, ((t, dict.fromkeys(cores, s)) for t, s, cores in scheduler.state_requests))
    applied = timeline([SLEEPING] * nb, states)
    assert [v for _, v in sent] == [v for _, v in applied]
    assert [t for t, _ in sent] == pytest.approx([t for t, _ in applied], abs=1e-6)
    assert server.simulation.board.pstate == [SLEEPING] * sim.platform.nb_cores


CASES = [
    ("shortest-high_gflops", "hdeeprm", "none", "event"),
    ("random-random", "hdeeprm", "easy", "event"),
    ("smallest-high_mem_bw", "hdeeprm", "conservative", "event"),
    ("first-low_power", "hdeeprm", "easy", "commit"),
    ("low_mem_bw-high_cores", "none", "none", "event"),
]


@pytest.mark.parametrize("policy, contention, backfilling, decision", CASES)
def test_same_decisions_as_the_builtin_engine(policy, contention, backfilling, decision, tmp_path):
    workload = write_workload(tmp_path / "wl.json", 7, 30, 5)
    platform = load_platform(HETERO)
    config = SimulationConfig(contention=contention, backfilling=backfilling, decision=decision, seed=11)
    sim = Simulation(platform, read_batsim_json(workload, platform.reference_gflops), config)
    states = spy_states(sim)
    sim.run(policy)
    scheduler = HdrmScheduler(platform=str(HETERO), policy=policy, contention=contention,
                              backfilling=backfilling, decision=decision, seed=11)
    server = run_adapter(scheduler, HETERO, workload)
    assert_same_run(sim, server, scheduler, states)
    contended = [r for r in scheduler.state_requests if r[1] == CONTENDED]
    assert bool(contended) == (contention == "hdeeprm")  # contention reaches Batsim as P-state 1


def test_contention_on_tiny4_as_pstate_changes(tmp_path):
    """Two 2-core jobs of 6 GB/s per core on one 10 GB/s processor: P-state 1 while both run."""
    workload = tmp_path / "two.json"
    workload.write_text(json.dumps({"nb_res": 4, "jobs": [
        {"id": "a", "subtime": 0, "res": 1, "profile": "w", "mem_bw_gbps": 6},
        {"id": "b", "subtime": 0, "res": 1, "profile": "w", "mem_bw_gbps": 6}],
        "profiles": {"w": {"type": "parallel_homogeneous", "cpu": 8e10, "com": 0}}}))
    scheduler = HdrmScheduler(platform=str(TINY4), policy="first-high_gflops")
    server = run_adapter(scheduler, TINY4, workload)
    assert [(t, s, c) for t, s, c in scheduler.state_requests] == [
        (0.0, 3, [0, 1, 2, 3]),  # hosts start in P-state 0: the core puts them to sleep at once
        (0.0, 1, [0, 1]), (pytest.approx(80 / 6, abs=1e-6), 3, [0, 1])]  # proc 1 stays asleep
    rows = {r.job_id: r for r in server.result.results}
    assert rows["a"].finish_time == pytest.approx(80 / 6)  # 80 GFLOP at 0.75 x 8 GFLOP/s
    assert rows["a"].allocated_resources == "0" and rows["b"].allocated_resources == "1"


def test_agent_hook_with_a_seeded_random_agent(tmp_path):
    """A fixed-seed 'agent' choosing a policy pair at each decision, on both engines."""
    workload = write_workload(tmp_path / "wl.json", 3, 30, 6)
    platform = load_platform(HETERO)
    pairs = [resolve_policy(name) for name in ALL_PAIRS]

    def agent(seed):
        rng = np.random.default_rng(seed)
        return lambda now: pairs[int(rng.integers(len(pairs)))]

    sim = Simulation(platform, read_batsim_json(workload, platform.reference_gflops), SimulationConfig(seed=2))
    states = spy_states(sim)
    act = agent(99)
    while sim.next_decision():
        if sim.core.queue:
            sim.decide(act(sim.now))
    scheduler = HdrmScheduler(platform=str(HETERO), seed=2, decide=agent(99))
    assert_same_run(sim, run_adapter(scheduler, HETERO, workload), scheduler, states)


def test_pick_hook_holds_and_backfills_like_the_engine(tmp_path):
    workload = write_workload(tmp_path / "wl.json", 5, 25, 8)
    platform = load_platform(HETERO)
    core = resolve_policy("first-high_gflops").core

    def choose(queue):
        return max(queue, key=lambda j: (j.res, -j.idx))

    sim = Simulation(platform, read_batsim_json(workload, platform.reference_gflops),
                     SimulationConfig(backfilling="easy", seed=1))
    states = spy_states(sim)
    while sim.next_decision():
        if sim.core.queue:
            sim.pick(choose(sim.core.queue), core, True)
    scheduler = HdrmScheduler(platform=str(HETERO), backfilling="easy", seed=1, policy="first-high_gflops")
    scheduler.decide_hook = lambda now: Pick(choose(scheduler.core.queue), hold=True)
    assert_same_run(sim, run_adapter(scheduler, HETERO, workload), scheduler, states)


def test_bad_hook_result_is_named(tmp_path):
    workload = write_workload(tmp_path / "wl.json", 5, 3, 2)
    scheduler = HdrmScheduler(platform=str(TINY4), decide=lambda now: "shortest")
    thread = DecisionThread(scheduler, 5.0)
    thread.start()
    options = ServeOptions(f"tcp://localhost:{thread.port()}", None, 0.5, ServerConfig(energy=True))
    server = BatsimServer(TINY4, workload, options)
    with pytest.raises(ProtocolError, match="no reply"):
        server.run()
    thread.join(5)
    assert isinstance(thread.error, ConfigError)
    assert "the decide hook returned 'shortest'; return a PolicyPair, a Job, a Pick or None" in str(thread.error)


def test_platform_mismatch_is_reported(tmp_path):
    workload = write_workload(tmp_path / "wl.json", 5, 3, 2)
    scheduler = HdrmScheduler(platform=str(TINY4))
    thread = DecisionThread(scheduler, 5.0)
    thread.start()
    server = BatsimServer(HETERO, workload, ServeOptions(f"tcp://localhost:{thread.port()}", None, 0.5))
    with pytest.raises(ProtocolError):
        server.run()
    thread.join(5)
    assert str(thread.error) == ("Batsim simulates 8 compute resources but platform 'tiny4' has 4 cores; "
                                 "give the adapter the platform Batsim runs")


@pytest.mark.parametrize("kwargs, error", [
    ({"platform": str(TINY4), "contention": "smooth"},
     "model 'smooth' slows cores by continuous factors, which Batsim's four power states cannot express"),
    ({"platfrom": str(TINY4)}, "unknown option 'platfrom'; did you mean 'platform'"),
    ({}, "no platform; pass platform="),
    ({"platform": str(TINY4), "policy": "shortestt"}, "unknown policy 'shortestt'"),
    ({"platform": str(GOLDEN / "small_delays" / "platform.xml")},
     "host 'Bourassa' has fewer than 4 power states"),
])
def test_configuration_errors(kwargs, error):
    with pytest.raises(ConfigError, match=error):
        HdrmScheduler(kwargs)


def test_pybatsim_launcher_runs_the_adapter_file(tmp_path):
    """``pybatsim .../hdrmScheduler.py -o '{...}'`` finds HdrmScheduler and schedules."""
    import hdrm.batsim.hdrmScheduler as module
    from batsim_helpers import free_port

    assert module.HdrmScheduler is HdrmScheduler
    workload = write_workload(tmp_path / "wl.json", 1, 6, 4)
    port = free_port()
    options = json.dumps({"platform": str(TINY4), "policy": "smallest-low_power"})
    command = pybatsim_command(module.__file__, f"tcp://127.0.0.1:{port}") + ["-o", options]
    with open(tmp_path / "sched.log", "w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            options = ServeOptions(f"tcp://localhost:{port}", None, 10.0, ServerConfig(energy=True))
            server = BatsimServer(TINY4, workload, options)
            result = server.run()
            assert process.wait(10) == 0
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(5)
    assert len(result.results) == 6 and all(r.final_state.startswith("COMPLETED") for r in result.results)
