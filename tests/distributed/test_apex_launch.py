"""``hdeeprm-launch agents/dqn.py ... --workers N``: DQN agents route to Ape-X, whose actors play
the launch's environments; the learner's checkpoint is the single-process DQN's and resumes with
``--inmodel``; bad Ape-X settings are one line; the out files are those of the last reported
episode. Launches with workers run on the folder's shared local Ray (conftest.py), which they
leave running (test_worker_outputs has a launch start and stop its own); they are skipped when
Ray is not installed."""

from __future__ import annotations

import csv
import functools
from pathlib import Path

import pytest
import torch

from hdrm.launcher import main
from launch_options import example_options

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "agents" / "dqn.py"


def write_options(folder: Path, episodes: int = 6, apex: dict | None = None,
                  tenants: bool = False) -> Path:
    """examples/ppo's setting (policy pairs on hetero) with 20-job episodes and fast DQN
    options; with ``tenants``, tenants by user and the ``sla_satisfaction`` objective."""
    params = {"learning_starts": 32, "batch_size": 16, "buffer_size": 500, "target_update": 20,
              "torch_threads": 1, "rollout_device": "cpu", "update_device": "cpu",
              "apex": {"actor_steps": 16, "weight_sync": 5, **(apex or {})}}
    return example_options(folder, episodes=episodes, params=params, replace_params=True,
                           tenants=tenants)


def launch(capsys, *argv) -> tuple[int, str]:
    status = main([str(a) for a in argv])
    return status, capsys.readouterr().err


def test_dqn_agents_route_to_apex(tmp_path):
    from hdrm.distributed.learners import route
    from hdrm.launch.experiment import build_experiment
    from hdrm.options import load_options

    agent = build_experiment(load_options(write_options(tmp_path)), AGENT).agent
    assert route(agent) == "hdrm.distributed.apex_workers:train_apex_workers"


def test_bad_apex_settings_are_one_line(tmp_path, capsys):
    pytest.importorskip("ray")
    options = write_options(tmp_path, apex={"actor": 2})
    status, err = launch(capsys, AGENT, options, "--outdir", tmp_path / "out", "--workers", 2,
                         "--quiet")
    assert status != 0
    assert "pybatsim.agent.params.apex: unknown setting 'actor'; did you mean 'actors'" in err
    assert len(err.strip().splitlines()) == 1


def test_a_launch_with_workers_trains_with_apex_and_resumes(ray, tmp_path, capsys):
    options = write_options(tmp_path)
    out = tmp_path / "out"
    status, err = launch(capsys, AGENT, options, "--outdir", out, "--workers", 2, "--quiet")
    assert status == 0, err
    saved = torch.load(out / "model.pt", weights_only=True)
    steps, updates = (int(v) for v in saved["model_state_dict"]["counters"])
    assert steps >= 6 * 20 - 2 * 16 and updates > 0  # 6 episodes of about 20 decisions
    assert len(assert_out_files_are_the_last_episodes(out)) == 6  # of either actor
    status, err = launch(capsys, AGENT, options, "--outdir", tmp_path / "more", "--workers", 2,
                         "--quiet", "--inmodel", out / "model.pt")
    assert status == 0, err
    more = torch.load(tmp_path / "more" / "model.pt", weights_only=True)["model_state_dict"]
    assert int(more["counters"][1]) > updates  # the learner went on from the checkpoint
    assert ray.is_initialized()  # a Ray the caller started is left running


def test_an_actor_keeps_the_results_of_its_last_two_calls_that_ended_episodes(tmp_path):
    """Each ended episode's result is the one its summary was made from; it is forgotten once
    two later calls ended episodes (the learner asks before that: see ApexActor.result)."""
    from hdrm.distributed.apex_actor import ActorSpec, ApexActor, TaskEpisodes
    from hdrm.launch.workers import LaunchTask

    task = LaunchTask(write_options(tmp_path), AGENT, seed=5)
    actor = ApexActor(0, ActorSpec(TaskEpisodes(task), task.make_agent, seed=5), lambda b: None)
    calls = [actor.collect(None, -1, 30)["ended"] for _ in range(8)]
    ending = [ended for ended in calls if ended]
    assert len(ending) >= 3  # 20-job episodes: about one per 20 decisions
    numbers = [e["episode"] for ended in calls for e in ended]
    assert numbers == list(range(len(numbers)))
    for ended in ending[-2:]:
        for figures in ended:
            result = actor.result(figures["episode"])
            assert len(result.result.outcomes) == figures["summary"].nb_jobs == 20
            assert result.result.energy_j == figures["summary"].energy_j
    assert all(actor.result(e["episode"]) is None for ended in ending[:-2] for e in ended)
    assert actor.result(len(numbers)) is None  # not ended yet


def test_the_out_files_are_the_last_reported_episodes(ray, tmp_path, capsys):
    """With one actor, out_jobs.csv and out_schedule.csv are those of episodes.csv's last row
    (the old code wrote the driver's environment, which played no episode: no job rows)."""
    out = tmp_path / "out"
    status, err = launch(capsys, AGENT, write_options(tmp_path, episodes=3), "--outdir", out,
                         "--workers", 1, "--quiet")
    assert status == 0, err
    episodes = assert_out_files_are_the_last_episodes(out)
    assert len(episodes) == 3 and len({row["energy_j"] for row in episodes}) == 3


def test_a_launch_writes_the_actors_actions_the_learners_loss_and_the_sla(ray, tmp_path,
                                                                          capsys):
    """actions.csv holds every episode's decisions (the old actors sent none: header only),
    episodes.csv's loss the learner's (was empty) and, with tenants, out_sla.csv is the last
    episode's (was missing)."""
    from tests.distributed.test_worker_outputs import assert_sla_of_the_last_episode

    out = tmp_path / "out"
    status, err = launch(capsys, AGENT, write_options(tmp_path, episodes=4, tenants=True),
                         "--outdir", out, "--workers", 1, "--quiet")
    assert status == 0, err
    episodes = assert_out_files_are_the_last_episodes(out)
    assert any(row["loss"] not in ("", "nan") and float(row["loss"]) > 0 for row in episodes)
    assert_sla_of_the_last_episode(out)
    with (out / "actions.csv").open(encoding="utf-8") as f:
        actions = list(csv.DictReader(f))
    for episode in range(4):
        mine = [row for row in actions if int(row["episode"]) == episode]
        assert [int(row["step"]) for row in mine] == list(range(len(mine))) and mine
        times = [float(row["time"]) for row in mine]
        assert times == sorted(times) and all(row["action_name"] for row in mine)


def assert_out_files_are_the_last_episodes(out: Path) -> list[dict[str, str]]:
    """out_jobs.csv has the 20 jobs of episodes.csv's last episode (its makespan and mean
    waiting), out_schedule.csv its energy; returns episodes.csv's rows."""
    from hdrm.results import metrics
    from hdrm.results.csvio import read_jobs_csv

    with (out / "episodes.csv").open(encoding="utf-8") as f:
        episodes = list(csv.DictReader(f))
    last = episodes[-1]
    jobs = read_jobs_csv(out / "out_jobs.csv")
    assert len(jobs) == 20 and len({j.job_id for j in jobs}) == 20
    close = functools.partial(pytest.approx, rel=1e-6)
    assert metrics.makespan(jobs) == close(float(last["makespan"]))
    assert metrics.avg_waiting_time(jobs) == close(float(last["mean_waiting"]), abs=1e-6)
    with (out / "out_schedule.csv").open(encoding="utf-8") as f:
        schedule = next(csv.DictReader(f))
    assert float(schedule["consumed_joules"]) == close(float(last["energy_j"]))
    assert int(schedule["nb_jobs"]) == 20
    return episodes
