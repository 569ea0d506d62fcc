"""hdeeprm-launch trains the built-in DQN on periodic DAG pipelines (tiny budget), trains its
model further, and evaluates it greedily."""

import csv
import json

from hdrm.launcher import main

from dag.periodic_gpu_case import write_case

AGENT = {"type": "learning", "run": "train", "episodes": 2, "lr": 0.0005, "gamma": 0.99,
         "params": {"n_step": 3, "buffer_size": 200, "batch_size": 4, "learning_starts": 4,
                    "target_update": 8, "epsilon_steps": 10, "layers": 1, "torch_threads": 1}}


def _options(tmp_path, run="train", episodes=2):
    taskset, platform = write_case(tmp_path, gpus=1)
    data = json.loads(taskset.read_text())
    data["horizon_s"] = 60.0  # 6 instances
    taskset.write_text(json.dumps(data))
    (tmp_path / "list.json").write_text(json.dumps({"tasksets": [taskset.name, taskset.name]}))
    options = {"seed": 3, "workload_file_path": "list.json", "platform_file_path": platform.name,
               "pybatsim": {"env": {"actions": {"mode": "policy_pair", "window": 4}},
                            "agent": dict(AGENT, run=run, episodes=episodes)}}
    path = tmp_path / f"options_{run}.json"
    path.write_text(json.dumps(options))
    return path


def test_dqn_trains_and_evaluates_on_periodic_pipelines(tmp_path):
    options, model = _options(tmp_path), tmp_path / "dqn.pt"
    assert main(["agents/dqn.py", str(options), "--outmodel", str(model), "--outdir",
                 str(tmp_path / "train"), "--quiet"]) == 0
    episodes = list(csv.DictReader(open(tmp_path / "train" / "episodes.csv")))
    assert len(episodes) == 2 and model.exists()
    # each episode: 6 instances of the hand graph; every decision is a rule of the 8
    actions = list(csv.DictReader(open(tmp_path / "train" / "actions.csv")))
    assert actions and {a["action_name"] for a in actions} <= {
        "heft_edf", "cpop_edf", "peft_edf", "llf", "heft_edf_defer", "cpop_edf_defer",
        "peft_edf_defer", "llf_defer"}
    jobs = list(csv.DictReader(open(tmp_path / "train" / "out_jobs.csv")))
    assert len(jobs) == 24 and {j["gpu_model"] for j in jobs} == {"T4", ""}
    more = _options(tmp_path, episodes=3)
    assert main(["agents/dqn.py", str(more), "--inmodel", str(model), "--outmodel", str(model),
                 "--outdir", str(tmp_path / "resumed"), "--quiet"]) == 0
    # a finished training's model trains further from its weights (3 more episodes)
    assert len(list(csv.DictReader(open(tmp_path / "resumed" / "episodes.csv")))) == 3
    test = _options(tmp_path, run="test", episodes=1)
    assert main(["agents/dqn.py", str(test), "--inmodel", str(model), "--outdir",
                 str(tmp_path / "test"), "--quiet"]) == 0
    assert (tmp_path / "test" / "out_jobs.csv").exists()
