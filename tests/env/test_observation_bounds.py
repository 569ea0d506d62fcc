"""Every environment's observations lie in its declared space (``space.contains``) over whole
episodes of random valid actions, and the periodic DAG environment's space has finite bounds
derived from its features (checked by hand), so that libraries that normalise by bounds work.

The DAG episodes run on real workflow shapes: the WfCommons instances of the DAG readers' tests
(``tests/dag/test_wfformat*.py``) and, where wfcommons is installed, the Montage and Epigenomics
recipes those tests generate, made periodic at a light and an overloaded utilisation."""

from __future__ import annotations

import json
import random
import warnings
from pathlib import Path

import numpy as np
import pytest

from hdrm.dag.periodic import PeriodicTask, TaskGraph, TaskSet
from hdrm.dag.periodic_gen import PeriodicSpec, generate
from hdrm.dag.wfformat import Workflow, read_workflow
from hdrm.env import SchedulingEnv
from hdrm.env.dag_env import DagEnv
from hdrm.env.dag_view import TIME_CAP
from hdrm.env.gpu_multiagent import parallel_env

from dag.periodic_gpu_case import write_case
from dag.test_wfformat import DIAMOND
from dag.test_wfformat_variants import CHAIN
from gpu_builders import SLICE

from .conftest import LUBLIN, PLATFORMS, SDSC


def _outside(space, obs) -> str:
    """What of ``obs`` lies outside the Box ``space`` (for the failure message)."""
    o = np.asarray(obs)
    where = np.argwhere((o < space.low) | (o > space.high) | ~np.isfinite(o))
    if not len(where):
        return f"dtype {o.dtype}, shape {o.shape} (space {space.dtype}, {space.shape})"
    i = tuple(where[0])
    return f"{len(where)} entries; first {i}: {o[i]} outside [{space.low[i]}, {space.high[i]}]"


def play(env, seed: int = 0, options: dict | None = None) -> np.ndarray:
    """One episode of random valid actions; every observation checked in the space. Returns the
    observations stacked (for the caller's own checks)."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed, options=options)
    seen, done = [], False
    while True:
        assert env.observation_space.contains(obs), (len(seen),
                                                     _outside(env.observation_space, obs))
        seen.append(obs)
        if done:
            return np.stack(seen)
        obs, _, terminated, truncated, info = env.step(
            int(rng.choice(np.flatnonzero(info["action_mask"]))))
        done = terminated or truncated


# ---------------------------------------------------------------------- the DAG environment
@pytest.mark.parametrize("gpus, high", [
    # times over the longest deadline (8 s): without the GPU every task runs on a core for its
    # CPU time (a 2, b 6, c 3, d 1): rank_u a = 2 + max(6 + 1, 3 + 1 + 1) = 9, rank_d d = 8,
    # rank_oct a = max(1 + 6, 1 + 3) = 7; the longest task b = 6; c's GPU time 2 (a feature
    # even with no GPU). With it: costs a 2, b 1, c 2, d 1 (the module's figures: rank_u 6,
    # rank_d 5, rank_oct 4); b's CPU time 6.
    (0, {"rank_u": 9, "rank_d": 8, "rank_oct": 7, "cost": 6, "cpu": 6, "gpu": 2}),
    (1, {"rank_u": 6, "rank_d": 5, "rank_oct": 4, "cost": 2, "cpu": 6, "gpu": 2}),
])
def test_dag_bounds_by_hand(tmp_path, gpus, high):
    taskset, platform = write_case(tmp_path, gpus)
    env = DagEnv(workload_file=str(taskset), platform_file=str(platform), mode="job_pick",
                 window=2)
    space = env.observation_space
    assert space.shape == (4 + 2 * 10 + 2 * 3,) and space.is_bounded()
    # clock: horizon 10 s plus TIME_CAP deadlines of 8 s, over 10 s; 4 tasks over a window of 2
    assert space.low[:4].tolist() == [0] * 4
    assert space.high[:4].tolist() == [(10 + TIME_CAP * 8) / 10, 2, 1, 1]
    task_high = [1, high["rank_u"] / 8, high["rank_d"] / 8, high["rank_oct"] / 8, 1,
                 high["cost"] / 8, high["cpu"] / 8, high["gpu"] / 8, 1, TIME_CAP]
    task_low = [0, 0, 0, 0, -TIME_CAP, 0, 0, 0, 0, 0]
    assert space.high[4:24].reshape(2, 10).tolist() == [task_high] * 2  # eighths: exact
    assert space.low[4:24].reshape(2, 10).tolist() == [task_low] * 2
    # per processor: is_gpu, free share, time to its next end (at most the longest task)
    assert space.high[24:].reshape(2, 3).tolist() == [[1, 1, high["cost"] / 8]] * 2
    assert space.low[24:].tolist() == [0] * 6
    for seed in (0, 1):
        play(env, seed)


def test_a_processors_time_to_its_next_end_is_capped_at_the_longest_task(tmp_path):
    """Cores only, the hand case: at 2 s b runs on core 0 until 8 s (6 / 8 ahead); the bound of
    that column is the longest task, 6 / 8, and ``most`` caps it (a guard against rounding)."""
    taskset, platform = write_case(tmp_path, gpus=0)
    env = DagEnv(workload_file=str(taskset), platform_file=str(platform), mode="job_pick",
                 window=2)
    _, info = env.reset()
    _, _, _, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))  # a on core 0
    obs, *_ = env.step(int(np.flatnonzero(env.action_masks())[0]))  # b on core 0, 2-8
    assert obs[24:].reshape(2, 3)[:, 2].tolist() == [6 / 8, 0]
    assert env.observation_space.high[24:].reshape(2, 3)[:, 2].tolist() == [6 / 8] * 2
    capped = env.procs.features(env.sim.now, 8.0, env._ends, most=0.5)
    assert capped[:, 2].tolist() == [0.5, 0]


def _workflows(tmp_path: Path, recipes: bool) -> list[Workflow]:
    """The DAG readers' hand workflows, and WfCommons' Montage and Epigenomics recipes."""
    flows = []
    for doc in (DIAMOND, CHAIN):
        path = tmp_path / f"{doc['name']}.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        flows.append(read_workflow(path))
    if recipes:
        wfcommons = pytest.importorskip("wfcommons", reason="wfcommons is not installed")
        from wfcommons.wfchef import recipes as wfchef

        for name, size in (("MontageRecipe", 60), ("EpigenomicsRecipe", 50)):
            random.seed(size)  # the recipes draw from the global generator, as in test_wfformat
            recipe = getattr(wfchef, name).from_num_tasks(size)
            path = tmp_path / f"{name}.json"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                wfcommons.WorkflowGenerator(recipe).build_workflow().write_json(path)
            flows.append(read_workflow(path))
    return flows


def _periodic(flows: list[Workflow], utilisation: float, periods: float = 3) -> TaskSet:
    """Each workflow as a periodic graph (implicit deadline) so that the set's CPU utilisation
    is ``utilisation``; every other task may also run on a GPU, 4 times faster; a transfer takes
    a second per 100 MB; the horizon is ``periods`` of the shortest period (the largest workflow
    has one instance or a few)."""
    graphs = []
    for flow in flows:
        period = sum(flow.runtime_s) * len(flows) / utilisation
        tasks = tuple(PeriodicTask(name, max(run, 0.01), max(run, 0.01) / 4 if i % 2 else None)
                      for i, (name, run) in enumerate(zip(flow.tasks, flow.runtime_s)))
        edges = tuple((src, dst, mb / 100) for src, dst, mb in flow.edges)
        graphs.append(TaskGraph(flow.name, period, period, tasks, edges))
    return TaskSet(tuple(graphs), periods * min(g.period_s for g in graphs), "workflows")


@pytest.mark.parametrize("recipes", [False, True], ids=["readers", "wfcommons"])
@pytest.mark.parametrize("mode", ["policy_pair", "job_pick"])
@pytest.mark.parametrize("gpus", [0, 1])
def test_dag_observations_of_workflow_episodes_lie_in_the_space(tmp_path, recipes, mode, gpus):
    flows = _workflows(tmp_path, recipes)
    _, platform = write_case(tmp_path, gpus, cores=2)
    sets = [_periodic(flows, 0.5), _periodic(flows, 3.0)]  # a list of sets: one space for both
    env = DagEnv(platform_file=str(platform), workload_file="unused.json", mode=mode, window=4,
                 tasksets=sets)
    assert env.observation_space.is_bounded()
    # the light set, then the overloaded one
    assert sum(len(play(env, episode)) for episode in range(2)) > 5
    assert env.missed > 0  # the overloaded set misses deadlines: late tasks were observed


def test_dag_time_features_saturate_at_the_cap(tmp_path):
    """Four times more work than one core can do, for 40 periods: queued instances grow older
    than TIME_CAP deadlines and their laxity falls below -TIME_CAP; both saturate there (and the
    clock stays within its bound), so that every observation stays in the space."""
    _, platform = write_case(tmp_path, 0, cores=1)
    spec = PeriodicSpec(graphs=2, utilisation=4.0, depth=3, width=2, period_min_s=5.0,
                        period_max_s=10.0, horizon_periods=40.0)
    env = DagEnv(platform_file=str(platform), workload_file="unused.json", mode="job_pick",
                 window=3, tasksets=[generate(spec, 3)])
    seen = play(env)
    rows = seen[:, 4:34].reshape(len(seen), 3, 10)
    present = rows[:, :, 0] == 1
    assert rows[:, :, 9][present].max() == TIME_CAP  # age
    assert rows[:, :, 4][present].min() == -TIME_CAP  # laxity
    assert seen[:, 0].max() <= env.observation_space.high[0]


# ---------------------------------------------------------------------- the other environments
SINGLE = {
    # CPU platforms, both action modes, every observation kind, both decision kinds
    **{f"policy_pair {obs} {decision}": dict(
        workload_file=SDSC, nb_jobs=120, observation=obs, decision=decision,
        **PLATFORMS["tiny_hetero"])
       for obs in ("normal", "small", "small_waits", "small_waits_predicted", "minimal")
       for decision in ("event", "commit")},
    **{f"job_pick {obs} {backfilling}": dict(
        workload_file=LUBLIN, nb_jobs=120, mode="job_pick", window=8, observation=obs,
        backfilling=backfilling, **PLATFORMS["homogeneous"])
       for obs in ("job_window", "job_window_reservation", "job_window_predicted",
                   "job_window_queue")
       for backfilling in ("none", "easy")},
    # SLA (tenants, deadlines), both window orders
    **{f"sla {order}": dict(workload_file=SDSC, nb_jobs=120, platform_file=None,
                            homogeneous_procs=64, tenants="user", sla="relative:3",
                            mode="job_pick", window=8, observation="job_window_sla",
                            window_order=order, objective="sla_satisfaction")
       for order in ("submission", "laxity")},
    # GPU (openb slice)
    "gpu policy_pair": dict(mode="policy_pair", observation="gpu", nb_jobs=200, **SLICE),
    "gpu job_pick": dict(mode="job_pick", observation="gpu_job_window", nb_jobs=200, **SLICE),
}


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_single_agent_observations_lie_in_the_space(name):
    env = SchedulingEnv(**SINGLE[name])
    loads = (1, 1000) if "gpu" in name else (1,)  # GPU: light and queued (load_factor)
    for load in loads:
        seen = play(env, 0, {"load_factor": load})
        assert len(seen) > 20, name


@pytest.mark.parametrize("extra", [{}, {"fgd_features": True, "node_rank": True},
                                   {"fitting_first": True}], ids=["plain", "fgd_rank", "fitting"])
def test_multi_agent_observations_and_state_lie_in_their_spaces(extra):
    env = parallel_env(nb_jobs=150, **extra, **SLICE)
    for load in (1, 1000):
        obs, _ = env.reset(seed=0, options={"load_factor": load})
        steps = 0
        while True:
            for agent, o in obs.items():
                space = env.observation_space(agent)
                assert space.contains(o), (steps, agent, {
                    k: _outside(space[k], v) for k, v in o.items() if not space[k].contains(v)})
            state = env.state()
            assert env.state_space.contains(state), (steps, _outside(env.state_space, state))
            if not env.agents:
                break
            obs, *_ = env.step({a: env.action_space(a).sample() for a in env.agents})
            steps += 1
        assert steps > 150
