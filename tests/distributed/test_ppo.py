"""Distributed PPO (hdrm.distributed.ppo): one rollout worker is the single-process learner bit
for bit, a killed worker is restarted and training goes on, and K environments in this process
are :func:`hdrm.agents.vector.run_vector`. Ray tests share one local Ray (2 CPUs) and are skipped
when Ray is not installed."""

from __future__ import annotations

import csv
import os
import signal
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from hdrm.agents.vector import run_vector
from hdrm.distributed.learners import WorkerPlan
from hdrm.distributed.ppo import PPOWorkers, share_steps, train_ppo
from hdrm.launcher import main

from .ppo_helpers import AGENT, ROOT, learner, write_options


def launch(capsys, *argv) -> tuple[int, str]:
    status = main([str(a) for a in argv])
    return status, capsys.readouterr().err


def rows(path: Path, drop: tuple[str, ...] = ("wall_s",)) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return [{k: v for k, v in row.items() if k not in drop} for row in csv.DictReader(handle)]


def weights(path: Path) -> dict[str, torch.Tensor]:
    return torch.load(path, weights_only=True)["model_state_dict"]


def test_shares_of_a_rollout():
    assert share_steps(16, 1, 1) == 16
    assert share_steps(16, 2, 2) == 8  # 4 environments of 4 steps
    assert share_steps(17, 2, 2) == 10  # each environment rounds up: 5 steps


# ------------------------------------------------------------------------- equivalence


def test_one_worker_is_the_single_process_learner_bit_for_bit(ray, tmp_path, capsys):
    """Same seed, one worker of one environment: the same decisions, episodes, losses and final
    weights as hdeeprm-launch without workers. The worker samples with the learner's generator
    state and hands its state back with the rollout, so sampling and minibatch shuffling draw
    from one stream in the same order as in one process: equality is exact, not approximate."""
    options = write_options(tmp_path)
    assert launch(capsys, AGENT, options, "--outdir", tmp_path / "one", "--quiet")[0] == 0
    status, err = launch(capsys, AGENT, options, "--outdir", tmp_path / "ray", "--quiet",
                         "--workers", 1)
    assert status == 0, err
    single, distributed = tmp_path / "one", tmp_path / "ray"
    episodes = rows(single / "episodes.csv")
    assert len(episodes) == 5 and sum(r["loss"] != "nan" for r in episodes) >= 4
    assert rows(distributed / "episodes.csv") == episodes
    assert rows(distributed / "actions.csv") == rows(single / "actions.csv")
    assert (distributed / "out_jobs.csv").read_bytes() == (single / "out_jobs.csv").read_bytes()
    a, b = weights(single / "model.pt"), weights(distributed / "model.pt")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_two_ray_workers_play_the_rollouts_of_their_bodies_in_this_process(ray, tmp_path):
    """Seeded rollouts do not depend on where a worker runs: two Ray workers return, over two
    iterations (the second with the learner's updated weights), exactly the shares, generator
    state and episodes that the same two worker bodies return when called in this process with
    the same numpy weights."""
    from hdrm.distributed import wire
    from hdrm.distributed.ppo import RolloutWorker

    options = write_options(tmp_path, rollout_steps=48)
    agent, task = learner(options)
    trainer = PPOWorkers(ray, agent, task, WorkerPlan(2, 1))
    share = share_steps(48, 2, 1)
    local = [RolloutWorker(task, w, 1, share, agent.seed + w) for w in range(2)]
    try:
        for _ in range(2):
            generator = wire.generator_to_wire(agent.generator.get_state())
            weights = wire.to_wire(agent.state_dict())
            here = [w.collect(weights, generator if i == 0 else None, None, float("inf"))[0]
                    for i, w in enumerate(local)]
            remote = trainer.collect(None, float("inf"))
            for a, b in zip(remote, here):
                assert all(np.array_equal(x, y) for x, y in zip(a.batch, b.batch))
                assert [(e.env, e.steps, e.return_, e.actions) for e in a.episodes] == [
                    (e.env, e.steps, e.return_, e.actions) for e in b.episodes]
            assert np.array_equal(remote[0].generator_state, here[0].generator_state)
            assert sum(len(e.actions) for c in remote for e in c.episodes) > 0
            assert trainer.learn(remote) is not None
    finally:
        trainer.close()


def test_environments_in_this_process_are_run_vector(tmp_path):
    """--workers 0 --num-envs 2 is the vectorised learner of hdrm.agents.vector, with records."""
    options = write_options(tmp_path)
    agent, task = learner(options, num_envs=2)
    ended = []
    run = train_ppo(agent, task, WorkerPlan(0, 2, env_steps=64), ended.append)
    reference, _ = learner(options, num_envs=2)
    envs = SyncVectorEnv([lambda: task.make_env(0)] * 2, autoreset_mode=AutoresetMode.SAME_STEP)
    # the 4th rollout fills mid-episode at step 64: the collector bootstraps and learns at once,
    # run_vector at its next decision (step 65, one step of each environment more)
    vector = run_vector(reference, envs, 66, seed=task.seed)
    assert run.env_steps == 64 and run.updates == vector.updates == 4
    assert [(e.env, e.return_, e.steps) for e in ended] == [
        (e["env"], e["return"], e["steps"]) for e in vector.episodes]
    a, b = agent.state_dict(), reference.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


# ------------------------------------------------------------------------- faults


def test_a_killed_worker_is_restarted_and_training_goes_on(ray, tmp_path):
    """SIGKILL to a worker 0.1 s into its second rollout (100 steps: during it, or just after on
    an idle machine; eight more follow): Ray restarts the process and plays the rollout again;
    the training ends as planned."""
    options = write_options(tmp_path, episodes=100, rollout_steps=200)
    agent, task = learner(options)
    trainer = PPOWorkers(ray, agent, task, WorkerPlan(2, 1, episodes=100))
    victim = trainer.pids[1]
    collect, calls = trainer.collect, []

    def collect_and_kill(*args):
        calls.append(args)
        if len(calls) == 2:
            threading.Timer(0.1, os.kill, (victim, signal.SIGKILL)).start()
        return collect(*args)

    trainer.collect = collect_and_kill
    seen = []
    try:
        run = trainer.run(seen.append, lambda: False)
    finally:
        trainer.close()
    assert run.restarts == 1 and trainer.pids[1] != victim
    assert run.episodes == len(seen) == 100 and agent.updates == run.updates >= 9
    assert all(np.isfinite(e.return_) and e.steps > 0 for e in seen)


def test_the_learners_checkpoint_resumes_with_workers(ray, tmp_path, capsys):
    """A training launched with workers saves the learner's checkpoint (atomically, as always);
    --inmodel continues it with workers."""
    options = write_options(tmp_path, episodes=2)
    out = tmp_path / "out"
    assert launch(capsys, AGENT, options, "--outdir", out, "--workers", 1, "--quiet")[0] == 0
    first = weights(out / "model.pt")
    status, err = launch(capsys, AGENT, options, "--outdir", tmp_path / "more", "--workers", 1,
                         "--quiet", "--inmodel", out / "model.pt")
    assert status == 0, err
    assert [f.name for f in out.iterdir() if f.name.endswith(".tmp")] == []
    second = weights(tmp_path / "more" / "model.pt")
    assert any(not torch.equal(first[k], second[k]) for k in first)


def test_a_launch_joins_a_running_ray_with_address(ray, tmp_path):
    """--address HOST:PORT: a second process's launch joins this module's (loopback) Ray as a
    cluster, its worker runs there, and the running Ray is left as it was. (The subprocess runs
    from the repository root, whose folder Ray puts on its workers' path.)"""
    import subprocess
    import sys

    address = ray.get_runtime_context().gcs_address
    assert address.startswith("127.0.0.1:")
    env = dict(os.environ, RAY_AUTH_MODE=os.environ.get("RAY_AUTH_MODE", "token"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    options = write_options(tmp_path, episodes=2)
    done = subprocess.run(
        [sys.executable, "-m", "hdrm.launcher", str(AGENT), str(options), "--workers", "1",
         "--address", address, "--outdir", str(tmp_path / "o"), "--quiet"],
        env=env, capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == f"hdeeprm-launch: 2 episodes, outputs in {tmp_path / 'o'}\n"
    assert len(rows(tmp_path / "o" / "episodes.csv")) == 2 and ray.is_initialized()


# ------------------------------------------------------------------------- routing


def test_ppo_agents_and_their_subclasses_route_to_distributed_ppo(tmp_path):
    from hdrm.agents.reinforce import ReinforceAgent
    from hdrm.distributed.learners import route
    from hdrm.errors import ConfigError

    agent, _ = learner(write_options(tmp_path))  # agents/ppo.py's AnnealedPPO
    assert type(agent).__name__ == "AnnealedPPO"
    assert route(agent) == "hdrm.distributed.ppo:train_ppo"
    other = ReinforceAgent({"run": "train"}, agent.observation_space, agent.action_space)
    with pytest.raises(ConfigError, match=r"^--workers: ReinforceAgent has no distributed "
                                          r"learner; rollout workers train agents derived from "
                                          r"PPOAgent"):
        route(other)


def test_an_episodes_statistics_are_the_mean_of_its_updates():
    from hdrm.distributed.learners import EndedEpisode

    episode = EndedEpisode(0, 4, -2.5, None, update_stats=[{"loss": 1.0, "approx_kl": 0.5},
                                                           {"loss": 2.0, "approx_kl": 0.0}])
    assert episode.stats() == {"loss": 1.5, "approx_kl": 0.25, "return": -2.5, "steps": 4.0}
    assert np.isnan(EndedEpisode(1, 3, 0.0, None).stats()["loss"])


def test_the_final_result_is_the_last_reported_episodes(tmp_path):
    """The launcher writes out_jobs.csv from the learner's final result: with rollouts longer
    than episodes (several end in each environment per rollout), it is the last one reported."""
    options = write_options(tmp_path, episodes=7, rollout_steps=100)
    agent, task = learner(options, num_envs=2)
    ended = []
    run = train_ppo(agent, task, WorkerPlan(0, 2, episodes=7), ended.append)
    assert run.episodes == 7 and len({e.summary.energy_j for e in ended}) == 7
    assert run.final.result.energy_j == ended[-1].summary.energy_j
    assert run.final.sla_report is None  # no tenants
    assert len(run.final.result.outcomes) == ended[-1].summary.nb_jobs == 20
