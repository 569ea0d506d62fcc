"""What launches with rollout workers carry back besides the out files of the last episode:
the decisions of every episode as its worker played them (actions.csv), the learner's loss
(episodes.csv) and, with tenants, the last episode's SLA report (out_sla.csv). Ray-free: Ape-X's
actor and reporter are driven directly, PPO's workers are environments of this process
(``--num-envs 2``)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from hdrm.distributed.apex import ApexProgress
from hdrm.distributed.apex_actor import ActorSpec, ApexActor, TaskEpisodes
from hdrm.distributed.apex_workers import _Reporter
from hdrm.distributed.learners import WorkerPlan, episode_end
from hdrm.launch.workers import LaunchTask
from hdrm.launcher import main
from launch_options import example_options
from hdrm.results.learning import read_episodes_csv

ROOT = Path(__file__).resolve().parents[2]


def options_file(folder: Path, agent: str, episodes: int, params: dict,
                 tenants: bool = False) -> Path:
    """examples/ppo's setting (policy pairs on hetero) with 20-job episodes; with ``tenants``,
    tenants by user and the ``sla_satisfaction`` objective (the return is minus the miss rate)."""
    return example_options(folder, episodes=episodes, params=params, replace_params=True,
                           tenants=tenants)


DQN = {"learning_starts": 32, "batch_size": 16, "buffer_size": 500, "target_update": 20,
       "torch_threads": 1, "rollout_device": "cpu", "update_device": "cpu"}


def test_an_actors_episode_carries_the_actions_it_played(tmp_path):
    """Replaying the actor's first episode's actions from the same seed gives its decision
    times, its return and its schedule (the old actor sent no actions)."""
    task = LaunchTask(options_file(tmp_path, "dqn", 3, DQN), ROOT / "agents" / "dqn.py", seed=5)
    actor = ApexActor(0, ActorSpec(TaskEpisodes(task), task.make_agent, seed=5), lambda b: None)
    ended = []
    while not ended:
        ended = actor.collect(None, -1, 16)["ended"]
    first = ended[0]
    assert first["episode"] == 0 and len(first["actions"]) == len(first["times_s"]) == \
        first["steps"] > 0
    env = task.make_env(0)
    _, info = env.reset(seed=task.first_seed(0))
    times, total, done = [], 0.0, False
    for action in first["actions"]:
        assert not done and info["action_mask"][action]
        times.append(info["time"])
        _, reward, done, _, info = env.step(action)
        total += reward
    assert done and times == first["times_s"] and total == pytest.approx(first["return"])
    assert env.unwrapped.result().energy_j == first["summary"].energy_j


def figures(episode: int, steps: int = 2) -> dict:
    return {"episode": episode, "return": -1.0, "steps": steps, "wall_s": 0.1, "summary": None,
            "times_s": [0.0, 5.0][:steps], "actions": [3, 1][:steps], "pid": 7}


def test_the_loss_of_reported_episodes_is_the_mean_of_the_steps_since_the_last_report():
    progress, got = ApexProgress(), []
    reporter = _Reporter(WorkerPlan(2, episodes=10), got.append, lambda: False)
    for loss in (1.0, 2.0, 6.0):
        progress.learned.add({"loss": loss, "td_abs": loss / 2})
    assert not reporter(None, progress) and got == []  # no episode yet: the steps wait
    progress.ended = [(0, figures(0)), (1, figures(0))]
    reporter(None, progress)
    for episode in got:  # reported together: the same three steps
        assert episode.stats() == {"loss": 3.0, "td_abs": 1.5, "gradient_steps": 3.0,
                                   "return": -1.0, "steps": 2.0}
        assert episode.times_s == [0.0, 5.0] and episode.actions == [3, 1]
    progress.learned.add({"loss": 4.0, "td_abs": 0.0})
    progress.ended = [(0, figures(1, steps=1))]
    reporter(None, progress)
    assert got[2].stats()["loss"] == 4.0 and got[2].actions == [3]
    progress.ended = [(1, figures(1))]
    reporter(None, progress)
    assert math.isnan(got[3].stats()["loss"])  # no step since the previous report
    assert reporter.last == (1, 1, 7)


def test_episode_end_keeps_the_sla_report(tmp_path):
    task = LaunchTask(options_file(tmp_path, "ppo", 1, {}, tenants=True),
                      ROOT / "agents" / "ppo.py", seed=2)
    env = task.make_env(0)
    _, info = env.reset(seed=2)
    done = False
    while not done:
        _, _, done, _, info = env.step(int(info["action_mask"].argmax()))
    end = episode_end(env)
    assert end.result.energy_j == env.unwrapped.result().energy_j
    assert end.sla_report == env.unwrapped.sla_report() and end.sla_report.overall.jobs == 20


def sla_rows(out: Path) -> dict[str, dict[str, str]]:
    with (out / "out_sla.csv").open(encoding="utf-8") as handle:
        return {row["tenant"]: row for row in csv.DictReader(handle)}


def assert_sla_of_the_last_episode(out: Path) -> None:
    """out_sla.csv is the last episode's: its miss rate is minus episodes.csv's last return."""
    overall = sla_rows(out)["overall"]
    assert int(overall["jobs"]) == 20
    returns = read_episodes_csv(out / "episodes.csv").returns
    assert returns[-1] == pytest.approx(-float(overall["deadline_miss_rate"]), abs=1e-9)


@pytest.mark.parametrize("flag", [("--num-envs", "2"), ("--workers", "1")],
                         ids=["environments", "ray-worker"])
def test_a_ppo_launch_with_workers_writes_the_last_episodes_sla(tmp_path, capsys, flag):
    if flag[0] == "--workers":
        pytest.importorskip("ray")
    params = {"rollout_steps": 16, "minibatch": 8, "epochs": 1, "rollout_device": "cpu",
              "update_device": "cpu"}
    options = options_file(tmp_path, "ppo", 3, params, tenants=True)
    out = tmp_path / "out"
    status = main([str(ROOT / "agents" / "ppo.py"), str(options), "--outdir", str(out), *flag,
                   "--quiet"])
    assert status == 0, capsys.readouterr().err
    if flag[0] == "--workers":
        import ray

        assert not ray.is_initialized()  # the local Ray the launch started was shut down
    assert_sla_of_the_last_episode(out)
