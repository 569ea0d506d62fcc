"""The multi-agent GPU environment: PettingZoo's API tests, the phases and masks on a three-task
case checked by hand, heuristic pairs against the engine's own schedule, shared rewards that
telescope to the objective, the summary against ``hdrm replay``'s, one-line errors."""

from __future__ import annotations

import copy
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test

from hdrm.env.gpu_multiagent import GpuMultiAgentEnv, env as aec_env, parallel_env
from hdrm.env.gpu_multiagent_heuristics import heuristic_order_action, heuristic_place_action
from hdrm.errors import ConfigError
from hdrm.sim.engine import Simulation, SimulationConfig
from hdrm.sim.gpu_outputs import gpu_summary

from gpu_builders import SLICE, TINY_PODS as PODS, write_tiny  # noqa: E402



@pytest.fixture
def tiny(tmp_path: Path) -> dict:
    return dict(write_tiny(tmp_path), window=4)


def play(env: GpuMultiAgentEnv, order: str, placement: str, seed: int = 0) -> list[float]:
    """One episode driven by a heuristic pair; the shared rewards, checked equal per step."""
    env.reset(seed=seed)
    rewards = []
    while env.agents:
        actions = {"order": heuristic_order_action(env, order),
                   "place": heuristic_place_action(env, placement)}
        _, reward, _, _, _ = env.step(actions)
        assert reward["order"] == reward["place"]
        rewards.append(reward["order"])
    return rewards


def test_pettingzoo_parallel_and_aec_api_tests():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's advice on dict spaces and agent names
        parallel_api_test(parallel_env(nb_jobs=120, **SLICE), num_cycles=400)
        api_test(aec_env(nb_jobs=60, **SLICE), num_cycles=200)


def test_phases_masks_and_features_on_the_tiny_cluster_by_hand(tiny):
    env = parallel_env(placement="best_fit", **tiny)
    assert (env.window, env.nb_nodes, env.possible_agents) == (4, 2, ["order", "place"])
    obs, infos = env.reset(seed=0)
    assert env.agents == ["order", "place"]
    assert infos["order"]["active"] and not infos["place"]["active"]
    # t = 0: t1 and t2 fit, two padding rows, wait is valid (t3 will arrive)
    assert obs["order"]["action_mask"].tolist() == [1, 1, 0, 0, 1]
    assert obs["order"]["action_mask"].dtype == np.int8
    assert obs["place"]["action_mask"].tolist() == [1, 0]  # inactive: only 0
    assert not obs["place"]["nodes"].any()
    jobs = obs["order"]["jobs"]
    assert jobs[:2, env.job_features.index("gpus")] == pytest.approx([0.5, 0.25])  # of 2000
    assert jobs[2:].sum() == 0
    # the ordering agent picks t2 (half a GPU); the placing agent's inactive action is ignored
    obs, rewards, terms, truncs, infos = env.step({"order": 1, "place": 7})
    assert rewards == {"order": 0.0, "place": 0.0} and not any(terms.values())
    assert infos["place"]["active"] and infos["place"]["phase"] == "place"
    assert obs["order"]["action_mask"].tolist() == [1, 0, 0, 0, 0]
    nodes = obs["place"]["nodes"]
    col = {name: nodes[:, i].tolist() for i, name in enumerate(env.node_features)}
    assert col["gpus"] == pytest.approx([1, 0.5]) and col["price"] == pytest.approx([0.35 / 3.9, 1])
    assert col["fits"] == [1, 1] and obs["place"]["action_mask"].tolist() == [1, 1]
    assert col["cpu_after"] == pytest.approx([0.5, 0.5])           # 4000 of 8000 left
    assert col["gpu_after"] == pytest.approx([1500 / 2000, 500 / 1000])
    assert obs["place"]["job"] == pytest.approx(jobs[1])
    # t2 on b (node 1): its V100M32 keeps 500 milli-GPU free, too little for t1 (a whole GPU)
    env.step({"order": 0, "place": 1})
    placed = env.core.sim.core.placements[1]
    assert (placed.node, placed.gpus, placed.model) == (1, (0,), "V100M32")
    obs, _, _, _, _ = env.step({"order": 0, "place": 0})  # t1: fits on a only
    assert obs["place"]["action_mask"].tolist() == [1, 0]
    nodes = obs["place"]["nodes"]
    assert nodes[:, env.node_features.index("free_gpu")] == pytest.approx([1, 0.5])
    with pytest.raises(ValueError, match="place: action 1 is masked"):
        env.step({"order": 0, "place": 1})
    env.step({"order": 0, "place": 0})
    assert env.core.sim.core.placements[0].node == 0 and env.core.sim.now == 100.0


def test_masked_and_missing_actions_are_refused(tiny):
    env = parallel_env(**tiny)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="order: action 2 is masked"):
        env.step({"order": 2, "place": 0})
    with pytest.raises(ValueError, match="no action for agent 'order'"):
        env.step({"place": 0})
    with pytest.raises(ValueError, match=r"outside Discrete\(5\)"):
        env.step({"order": 9, "place": 0})


@pytest.mark.parametrize("objective, weights, value", [
    # fifo x best_fit: t1 -> b (3.90 USD/h for 1 h), t2 -> a (half a T4 for 2 h), t3 at 100 s
    ("gpu_cost", None, 3.90 + 0.35),
    # JCT: 3600, 7200 and 1800 s; mean 4200 s = 7/6 h
    ("avg_jct", None, 7 / 6),
    ("avg_jct", {"avg_jct": 1.0, "gpu_cost": 2.0}, 7 / 6 + 2 * 4.25),
    # 1000 x 3600 + 500 x 7200 milli-GPU-seconds of 3000 milli-GPU x 7200 s: 1/3 allocated
    ("gpu_allocation", None, 2 / 3),
])
def test_shared_rewards_telescope_to_the_objective_by_hand(tiny, objective, weights, value):
    env = parallel_env(placement="best_fit", objective=objective, objective_weights=weights,
                       **tiny)
    rewards = play(env, "fifo", "best_fit")
    assert -math.fsum(rewards) == pytest.approx(value, rel=1e-9)
    summary = env.summary()
    assert summary["gpu_cost"] == pytest.approx(4.25) and summary["avg_jct"] == 4200.0
    assert (summary["p95_jct"], summary["max_wait"], summary["makespan"]) == (7200.0, 0.0, 7200.0)


CASES = [("fifo", "fgd", "none"), ("sjf", "best_fit", "none"), ("drf", "first_fit", "greedy"),
         ("las", "random", "none"), ("tetris", "price_aware", "greedy")]


@pytest.mark.parametrize("order, placement, backfilling", CASES)
def test_heuristic_pairs_reproduce_the_engines_schedule(order, placement, backfilling):
    env = parallel_env(placement=placement, backfilling=backfilling, window=400,
                       objective="avg_jct", **SLICE)
    env.reset(seed=3)
    rng_state = copy.deepcopy(env.core.sim.rng.bit_generator.state)  # the run's tie order
    rewards = play(env, order, placement, seed=3)
    sim = env.core.sim
    reference = Simulation(env.core.platform, sim.workload,
                           SimulationConfig(backfilling=backfilling))
    reference.rng = reference.core.rng = np.random.default_rng()
    reference.rng.bit_generator.state = rng_state
    result = reference.run(f"{order}-{placement}")
    expected = {o.job.idx: (o.state, o.start_s, o.finish_s) for o in result.outcomes}
    assert {i: (o.state, o.start_s, o.finish_s) for i, o in sim.outcomes.items()} == expected
    assert ({i: (p.node, p.gpus) for i, p in sim.core.placements.items()}
            == {i: (p.node, p.gpus) for i, p in result.gpu.placements.items()})
    assert len(sim.core.placements) == 376  # 24 of the 400 tasks never ran in the trace
    # the return is minus the objective; the summary is the replay's
    replay = gpu_summary(result)
    summary = env.summary()
    assert summary["avg_jct"] == pytest.approx(replay["mean_jct_s"])
    assert summary["makespan"] == replay["makespan_s"]
    assert summary["gpu_cost"] == pytest.approx(replay["cost_usd"])
    assert summary["gpu_allocation_rate"] == pytest.approx(replay["gpu_allocation_rate_all"])
    jct_h = [(o.finish_s - o.job.submit_s) / 3600 for o in result.outcomes if o.start_s >= 0]
    assert -math.fsum(rewards) == pytest.approx(math.fsum(jct_h) / 400, rel=1e-9)


def test_a_window_shorter_than_the_queue_still_reproduces_fifo():
    env = parallel_env(window=4, **SLICE)
    env.reset(seed=1)
    rng_state = copy.deepcopy(env.core.sim.rng.bit_generator.state)
    play(env, "fifo", "fgd", seed=1)
    reference = Simulation(env.core.platform, env.core.sim.workload, SimulationConfig())
    reference.rng = reference.core.rng = np.random.default_rng()
    reference.rng.bit_generator.state = rng_state
    result = reference.run("fifo-fgd")
    assert {o.job.idx: o.start_s for o in result.outcomes} == {
        i: o.start_s for i, o in env.core.sim.outcomes.items()}


def test_state_render_and_load_factor(tiny):
    env = parallel_env(render_mode="ansi", load_factor=2.0, **tiny)
    env.reset(seed=0)
    state = env.state()
    assert state.shape == env.state_space.shape and env.state_space.contains(state)
    assert state[-1] == 0.0
    env.step({"order": 0, "place": 0})
    assert env.state()[-1] == 1.0
    assert "t = 0.0 s" in env.render()
    assert env.core.sim.workload.jobs[2].submit_s == 50.0  # 100 s / 2
    env.reset(seed=0, options={"load_factor": 1})
    assert env.core.sim.workload.jobs[2].submit_s == 100.0


def test_one_line_errors(tiny):
    with pytest.raises(ConfigError, match="mode: the multi-agent .* fixes it to 'job_pick'"):
        parallel_env(mode="policy_pair", **tiny)
    with pytest.raises(ConfigError, match="observation: .* to 'gpu_job_window'.*got 'gpu'"):
        parallel_env(observation="gpu", **tiny)
    with pytest.raises(ConfigError, match=r"objective_weights.avg_jtc.*avg_jct"):
        parallel_env(objective_weights={"avg_jtc": 1.0}, **tiny)
    with pytest.raises(ConfigError, match=r"objective_weights.gpu_cost: expected a finite number"):
        parallel_env(objective_weights={"gpu_cost": "high"}, **tiny)
    with pytest.raises(ConfigError, match="needs GPU inputs"):
        parallel_env()
    with pytest.raises(ConfigError, match=r"load_factor: expected a finite number > 0.*got 0"):
        parallel_env(load_factor=0, **tiny)


def test_an_order_is_fixed_for_the_instant_as_in_the_engine(tmp_path):
    """Tetris on one node (8 cores, 4 T4), three tasks at 0: A 6 cores, B 2 cores, C 0.1 core
    and 0.8 GPU. Its keys at 0 (free = all): A 0.75, B 0.25, C 0.2125: A, B, C. A and B start
    (2 cores left for B, then none for C), C starts when B ends at 50 s. Ordering again after
    A started (free CPU 0.25) would put C (0.203) before B (0.0625): C at 0, B at 10 s."""
    (tmp_path / "nodes.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\na,8000,16384,4,T4\n")
    (tmp_path / "pods.csv").write_text(PODS.splitlines()[0] + "\n"
                                       "A,6000,0,0,0,,LS,Succeeded,0,100,0\n"
                                       "B,2000,0,0,0,,LS,Succeeded,0,50,0\n"
                                       "C,100,0,1,800,,LS,Succeeded,0,10,0\n")
    env = parallel_env(platform_file=str(tmp_path / "nodes.csv"),
                       workload_file=str(tmp_path / "pods.csv"), placement="first_fit")
    play(env, "tetris", "first_fit")
    starts = [env.core.sim.outcomes[i].start_s for i in range(3)]
    assert starts == [0.0, 0.0, 50.0]
    reference = Simulation(env.core.platform, env.core.sim.workload, SimulationConfig())
    assert [o.start_s for o in reference.run("tetris-first_fit").outcomes] == starts


def rollout(env: GpuMultiAgentEnv, seed: int) -> list:
    """Random masked actions (seeded) to the end: every observation and reward."""
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    trace = []
    while env.agents:
        actions = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents}
        obs, rewards, _, _, _ = env.step(actions)
        trace.append((rewards["order"], {a: {k: v.copy() for k, v in o.items()}
                                         for a, o in obs.items()}))
    return trace


def test_two_seeded_rollouts_are_identical_and_the_env_pickles():
    import pickle

    env = parallel_env(nb_jobs=80, placement="random", **SLICE)
    first = rollout(env, 5)
    copy_env = pickle.loads(pickle.dumps(env))
    for other in (rollout(env, 5), rollout(copy_env, 5)):
        assert len(other) == len(first) > 80
        for (r1, o1), (r2, o2) in zip(first, other):
            assert r1 == r2
            assert all(np.array_equal(o1[a][k], o2[a][k]) for a in o1 for k in o1[a])


def test_a_gavel_task_sees_its_speed_per_node_and_runs_at_the_chosen_models_speed(tmp_path):
    """1,000 steps at 2 steps/s on a K80 (500 s) or 8 on a V100 (125 s): the place agent sees
    speeds 0.25 and 1; on the K80 the task runs 500 s, costing 500 / 3600 x 0.45 USD."""
    (tmp_path / "nodes.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nk,4000,16384,1,K80\n"
                                        "v,4000,16384,1,V100M16\n")
    job = "ResNet-18 (batch size 64)"
    (tmp_path / "t.trace").write_text(f"{job}\tcmd\t\t-s\t1\t1000\t0\t1\n")
    (tmp_path / "tp.json").write_text(json.dumps({"k80": {f"('{job}', 1)": {"null": 2.0}},
                                                  "v100": {f"('{job}', 1)": {"null": 8.0}}}))
    env = parallel_env(workload_file=str(tmp_path / "t.trace"),
                       platform_file=str(tmp_path / "nodes.csv"),
                       throughputs=str(tmp_path / "tp.json"), objective="gpu_cost")
    env.reset(seed=0)
    obs, _, _, _, _ = env.step({"order": 0, "place": 0})
    speed = obs["place"]["nodes"][:, env.node_features.index("speed")]
    assert speed == pytest.approx([0.25, 1.0])
    _, rewards, terminations, _, _ = env.step({"order": 0, "place": 0})
    assert all(terminations.values()) and env.agents == []
    assert rewards["order"] == pytest.approx(-500 / 3600 * 0.45)
    assert env.summary()["avg_jct"] == 500.0


def test_the_fgd_score_column_ranks_the_node_fgd_picks_first():
    """With ``fgd_features``, at every place step of FIFO x FGD the node the engine's FGD placer
    picks has the highest ``fgd_score`` (the column is FGD's own score / 100), 0 where masked."""
    env = parallel_env(fgd_features=True, nb_jobs=150, **SLICE)
    assert env.node_features[-1] == "fgd_score"
    assert env.observation_space("place")["nodes"].shape == (41, 13)
    obs, _ = env.reset(seed=0)
    places = 0
    while env.agents:
        actions = {"order": heuristic_order_action(env, "fifo"),
                   "place": heuristic_place_action(env, "fgd")}
        if env.phase == "place":
            score, mask = obs["place"]["nodes"][:, -1], obs["place"]["action_mask"]
            assert score[actions["place"]] == score.max() > 0 and not score[mask == 0].any()
            places += 1
        obs, _, _, _, _ = env.step(actions)
    assert places == len(env.core.sim.core.placements) == 136  # 14 never ran in the trace
