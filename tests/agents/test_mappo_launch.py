"""MAPPO on the real multi-agent GPU environment: hdeeprm-launch agents/mappo.py end to end
(train, save, test with --inmodel), a heuristic-frozen agent, one-line errors, and the turns of
hdrm.launch.multiagent.TurnEnv against the ParallelEnv's own phases."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from hdrm.agents.checkpoint import read_checkpoint
from hdrm.env.gpu_multiagent import GpuMultiAgentEnv
from hdrm.env.gpu_multiagent_heuristics import heuristic_place_action
from hdrm.launch.multiagent import TurnEnv
from hdrm.launcher import main
from hdrm.results.learning import read_episodes_csv

ROOT = Path(__file__).resolve().parents[2]
SLICE = dict(platform_file=str(ROOT / "workloads" / "openb_nodes_41.csv"),
             workload_file=str(ROOT / "workloads" / "openb_pods_400.csv"))
PARAMS = {"rollout_steps": 64, "minibatch": 32, "dim": 16, "heads": 2, "torch_threads": 1}


def options(tmp_path: Path, run: str = "train", episodes: int = 2, nb_jobs: int = 40,
            **params) -> Path:
    data = {"seed": 7, "nb_jobs": nb_jobs,
            "workload_file_path": SLICE["workload_file"],
            "platform_file_path": SLICE["platform_file"],
            "simulation": {"backfilling": "none"},
            "pybatsim": {"log_level": "WARNING",
                         "env": {"objective": "avg_jct", "actions": {"mode": "job_pick",
                                                                     "window": 8}},
                         "agent": {"run": run, "episodes": episodes,
                                   "params": {**PARAMS, **params}}}}
    path = tmp_path / f"options_{run}.json"
    path.write_text(json.dumps(data))
    return path


def launch(*args: str) -> int:
    return main([str(ROOT / "agents" / "mappo.py"), *args, "--quiet"])


def test_train_then_test_a_model_with_the_launcher(tmp_path):
    out, model = tmp_path / "train", tmp_path / "mappo.pt"
    assert launch(str(options(tmp_path)), "--outdir", str(out), "--outmodel", str(model)) == 0
    episodes = read_episodes_csv(out / "episodes.csv")
    assert len(episodes) == 2
    # the return is minus the objective: the mean JCT (hours) of the last episode's 40 tasks
    jcts = [float(r["jct"] or 0) for r in csv.DictReader((out / "out_jobs.csv").open())]
    assert len(jcts) == 40
    assert episodes.returns[-1] == pytest.approx(-sum(jcts) / 40 / 3600, rel=1e-6)
    saved = read_checkpoint(model)
    assert saved["agent_class"] == "mappo.py:MAPPO"
    assert {k.split(".")[0] for k in saved["model_state_dict"]} == {
        "order", "place", "critic", "value_norm"}
    test_options = options(tmp_path, run="test", episodes=1)
    runs = []
    for name in ("test1", "test2"):
        assert launch(str(test_options), "--outdir", str(tmp_path / name), "--inmodel",
                      str(model)) == 0
        runs.append((tmp_path / name / "actions.csv").read_text())
    assert runs[0] == runs[1] and len(runs[0].splitlines()) > 40  # greedy: the same decisions


def test_a_frozen_placer_places_every_task_as_its_heuristic(tmp_path):
    env = GpuMultiAgentEnv(nb_jobs=30, window=8, **SLICE)
    turns = TurnEnv(env, {"place": "best_fit"})
    obs, info = turns.reset(seed=3)
    expected, got = [], []
    original = turns.drivers["place"]

    def spy(e):
        action = original(e)
        got.append(action)
        expected.append(heuristic_place_action(e, "best_fit"))
        return action

    turns.drivers["place"] = spy
    total, steps, done = 0.0, 0, False
    while not done:
        assert obs["phase"] == 0 and info["phase"] == "order"  # only the order agent's turns
        # the environment's info is passed on (the launcher's progress lines read jobs_done)
        assert {"time", "jobs_done", "queue_size", "objective", "action_mask"} <= set(info)
        mask = info["action_mask"]
        action = int(np.flatnonzero(mask)[0])
        obs, reward, terminated, truncated, info = turns.step(action)
        total += reward
        steps += 1
        done = terminated or truncated
    assert got == expected and len(got) == 30
    assert total == pytest.approx(-env.core.objective_value, rel=1e-9)


def cheap_node_env(folder: Path, models: tuple[str, str]) -> GpuMultiAgentEnv:
    """Two one-GPU nodes of ``models``; twelve one-GPU tasks of 1 h, one every 2 h (both nodes
    are free at every placement); objective gpu_cost; window 2."""
    nodes = "".join(f"{name},8000,16384,1,{model}\n" for name, model in zip("ab", models))
    (folder / "nodes.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\n" + nodes)
    rows = ["name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
            "deletion_time,scheduled_time"]
    rows += [f"t{i},1000,1024,1,1000,,LS,Succeeded,{7200 * i},{7200 * i + 3600},{7200 * i}"
             for i in range(12)]
    (folder / "pods.csv").write_text("\n".join(rows) + "\n")
    return GpuMultiAgentEnv(platform_file=str(folder / "nodes.csv"),
                            workload_file=str(folder / "pods.csv"), objective="gpu_cost", window=2)


@pytest.mark.parametrize("models", [("V100M32", "T4"), ("T4", "V100M32")])
def test_mappo_learns_the_cheap_node_of_a_two_node_gpu_platform(tmp_path, models):
    """A T4 node (0.35 USD/h) and a V100 node (3.90 USD/h): under gpu_cost the best placement is
    the T4. With the order agent frozen to FIFO, after 60 training episodes the placer's policy
    (sampled, not greedy: an untrained one samples each node about half of the time) takes the
    T4 in > 90 % of the decisions, whichever node is listed first."""
    from hdrm.agents.mappo_rollout import make_agent, play_episode
    from hdrm.launch.multiagent import drivers

    env = cheap_node_env(tmp_path, models)
    cheap = models.index("T4")
    torch.set_num_threads(1)
    agent = make_agent(env, {"lr": 3e-3, "gamma": 0.9, "params": {
        **PARAMS, "freeze_order": "fifo"}}, seed=1)
    fifo = drivers(agent.frozen)

    def sampled_rate() -> float:
        agent.train_mode(False)
        agent.greedy = False
        picks = []
        decide = agent.decide
        agent.decide = lambda obs, mask: picks.append(decide(obs, mask)) or picks[-1]
        for seed in range(4):
            play_episode(env, agent, fifo, seed=99 + seed)
        del agent.decide
        agent.train_mode(True)
        return float(np.mean(np.array(picks) == cheap))

    before = sampled_rate()
    for episode in range(60):
        play_episode(env, agent, fifo, seed=episode)
    assert before < 0.7 < 0.9 < sampled_rate()


def test_mappo_on_a_cpu_workload_is_a_one_line_error(tmp_path, capsys):
    data = json.loads((ROOT / "examples" / "ppo" / "options.json").read_text())
    for key in ("workload_file_path", "platform_file_path"):
        data[key] = str((ROOT / "examples" / "ppo" / data[key]).resolve())
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(data))
    assert launch(str(path), "--outdir", str(tmp_path / "out")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "needs GPU inputs" in err and str(path) in err


def test_an_unknown_frozen_placement_is_a_one_line_error(tmp_path, capsys):
    path = options(tmp_path, freeze_place="fgdd")
    assert launch(str(path), "--outdir", str(tmp_path / "out")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "pybatsim.agent.params.freeze_place" in err and "fgd" in err and str(path) in err
