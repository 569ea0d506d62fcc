"""Ape-X DQN on the folder's shared local Ray (2 CPUs; conftest.py): end to end with the replay's
priorities updated by the learner, an actor killed with SIGKILL restarted while training goes on,
and the single-process DQN's checkpoint format. Skipped when Ray is not installed."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest
import torch

pytest.importorskip("ray")

from hdrm.agents.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from hdrm.agents.dqn import DQNAgent  # noqa: E402
from hdrm.distributed.apex import ApexSettings, ApexTrainer, train_apex  # noqa: E402

from .apex_helpers import CONFIG, tiny_episodes  # noqa: E402

SETTINGS = ApexSettings(actors=2, actor_steps=32, weight_sync=10, max_replay_ratio=1.0,
                        min_replay_ratio=0.5)


def new_learner(seed: int = 0) -> DQNAgent:
    env = tiny_episodes().make_env()
    return DQNAgent(CONFIG, env.observation_space, env.action_space,
                    action_names=env.action_names, seed=seed).train_mode(True)


@pytest.fixture
def trainer(ray):
    """An Ape-X trainer with 2 actors on the tiny environment, closed at the end."""
    made = ApexTrainer(ray, new_learner(), tiny_episodes(), SETTINGS, seed=1)
    yield made
    made.close()


def test_the_learner_updates_the_priorities_it_samples(ray, trainer):
    progress = trainer.run(lambda agent, p: p.updates >= 30)
    assert progress.updates >= 30 and progress.transitions >= 64
    assert trainer.learner.replay.capacity == 1  # the learner draws from the replay actor
    assert progress.weights_version >= 3  # every 10 gradient steps
    assert progress.updates <= progress.env_steps  # max_replay_ratio 1
    # min_replay_ratio 0.5: the actors wait when more than the lead ahead (a call may be running)
    assert progress.env_steps <= progress.updates / 0.5 + trainer.lead + 2 * 32
    slots = np.arange(CONFIG["params"]["buffer_size"])  # actors go on adding: every slot
    before = ray.get(trainer.replay.priorities.remote(slots))
    step = trainer.learn_step()
    assert step is not None
    ray.get(trainer.flush_priorities())  # the new priorities go with the next call otherwise
    after = ray.get(trainer.replay.priorities.remote(slots))
    alpha, eps = trainer.learner.settings.alpha, trainer.learner.settings.priority_eps
    drawn = np.unique(step.indices)
    # the drawn slots now hold (|TD error| + eps)^alpha of the learner's step (those an actor
    # rewrote meanwhile excepted)
    expected = (np.abs(step.td_errors) + eps) ** alpha
    assert np.isclose(after[step.indices], expected, rtol=1e-6).mean() > 0.9
    assert (~np.isclose(before[drawn], after[drawn])).mean() > 0.9  # they changed
    stats = ray.get(trainer.replay.stats.remote())
    assert stats["updated"] >= 0.9 * 31 * 32 and stats["added"] >= progress.transitions
    # sampling follows the priorities: the top tenth of the priority mass's slots are drawn
    # about as often as their share of it (uniform draws would give them a tenth)
    counts = np.zeros(len(slots))
    for _ in range(40):
        sample = ray.get(trainer.replay.sample.remote(32, 1.0))
        np.add.at(counts, sample.batch.indices, 1)
    now = ray.get(trainer.replay.priorities.remote(slots))
    stored = now > 0
    top = stored & (now >= np.quantile(now[stored], 0.9))
    assert counts[top].sum() / counts.sum() > now[top].sum() / now.sum() * 0.7


def test_the_actors_use_the_apex_epsilons_and_the_newest_weights(ray, trainer):
    progress = trainer.run(lambda agent, p: p.updates >= 25)
    results = ray.get([a.collect.remote(trainer._weights, progress.weights_version, 1)
                       for a in trainer.actors])
    assert [r["epsilon"] for r in results] == pytest.approx([0.4, 0.4**8])
    assert {r["version"] for r in results} == {progress.weights_version}


def test_a_killed_actor_is_restarted_and_training_goes_on(ray, trainer):
    progress = trainer.run(lambda agent, p: p.updates >= 10)
    pids = ray.get([a.pid.remote() for a in trainer.actors])
    os.kill(pids[0], signal.SIGKILL)  # kill -9 of actor 0's process
    steps, updates = progress.env_steps, progress.updates
    progress = trainer.run(lambda agent, p: p.restarts >= 1 and p.env_steps >= steps + 400)
    assert progress.restarts >= 1
    assert progress.updates > updates
    new_pids = ray.get([a.pid.remote() for a in trainer.actors])
    assert new_pids[0] != pids[0] and new_pids[1] == pids[1]
    # the restarted actor plays again, with the newest weights
    result = ray.get(trainer.actors[0].collect.remote(trainer._weights,
                                                      progress.weights_version, 40))
    assert result["steps"] == 40 and result["version"] == progress.weights_version


def test_train_apex_writes_the_single_process_checkpoint(ray, tmp_path):
    agent, progress = train_apex(CONFIG, tiny_episodes(), SETTINGS,
                                 lambda a, p: p.updates >= 20, seed=2)
    assert isinstance(agent, DQNAgent) and agent.updates == progress.updates >= 20
    assert agent.env_steps == progress.env_steps
    path = save_checkpoint(agent, tmp_path / "apex.pt", {"learner": "dqn", "agent": CONFIG})
    loaded = new_learner(seed=9)
    load_checkpoint(loaded, path)
    for a, b in zip(loaded.network.state_dict().values(), agent.network.state_dict().values()):
        assert torch.equal(a, b)
    assert (loaded.env_steps, loaded.updates) == (agent.env_steps, agent.updates)
    assert progress.stats["updated"] > 0 and progress.stats["size"] > 0
    assert ray.is_initialized()  # the module's Ray was used, not stopped
