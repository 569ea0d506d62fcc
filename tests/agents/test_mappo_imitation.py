"""Imitation warm start of MAPPO (behaviour cloning of heuristic teachers) on the two-node toy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hdrm.agents.mappo_imitation import agreement, behaviour_clone, collect_demonstrations
from hdrm.agents.mappo_rollout import make_agent, play_episode
from mappo_toy import ToyGpuEnv, fast_rate


def agent_for(env: ToyGpuEnv, **params):
    config = {"lr": 1e-3, "gamma": 1.0,
              "params": {"dim": 16, "heads": 2, "rollout_steps": 10_000, **params}}
    return make_agent(env, config, seed=0)


def smallest(env: ToyGpuEnv) -> int:
    """The window's smallest task, the first of equals (an SJF); the place agent's pass: 0."""
    return int(np.argmin(env.queue[:env.window])) if env.phase == "order" else 0


def fastest(env: ToyGpuEnv) -> int:
    if env.phase != "place":
        return 0
    return env.fast if env.place_mask[env.fast] else int(np.argmax(env.place_mask))


TEACHERS = {"order": smallest, "place": fastest}


def greedy_fast_rate(env: ToyGpuEnv, agent, episodes: int = 30) -> float:
    agent.train_mode(False)
    since = len(env.decisions)
    for k in range(episodes):
        play_episode(env, agent, seed=500 + k)
    agent.train_mode(True)
    return fast_rate(env, since)


def test_records_hold_the_teachers_actions_and_the_returns_that_followed():
    """One 6-task episode: 6 order and 6 place records; the return of a record is the sum of
    every reward after it (gamma 1), so the first one is the episode's total reward."""
    env = ToyGpuEnv(seed=0)
    agent = agent_for(env)
    rewards: list[float] = []
    step = env.step

    def spy(actions):
        out = step(actions)
        rewards.append(out[1]["order"])
        return out

    env.step = spy
    demos = collect_demonstrations(env, agent, TEACHERS, episodes=1, seed=4)
    batch = demos.batch
    assert len(demos) == 12 and demos.skipped == 0
    assert batch["phase"].tolist() == [0, 1] * 6
    sizes = batch["jobs"][batch["has_order"]][..., 0]  # size / 4 of the shown tasks
    sizes = sizes.masked_fill(~batch["order_mask"][batch["has_order"]][:, :-1], 9.0)  # padding
    picked = batch["order_action"][batch["has_order"]]
    assert torch.equal(sizes.gather(1, picked[:, None])[:, 0], sizes.min(1).values)
    place_rows = batch["has_place"].nonzero()[:, 0]
    assert all(batch["place_mask"][r, batch["place_action"][r]] for r in place_rows)
    expected = np.cumsum(rewards[::-1])[::-1]  # every phase is recorded: one reward each
    np.testing.assert_allclose(batch["returns"].numpy(), expected, rtol=1e-5)
    assert env.decisions and fast_rate(env) == 1.0  # the teacher played the fast node


def test_cloning_a_placer_that_takes_the_fast_node_makes_the_greedy_policy_take_it():
    """Without any reinforcement learning, 40 demonstration episodes and 30 epochs of cloning
    take the greedy placer from about half to > 95 % fast-node choices (the teacher's rule),
    and both agents agree with their teachers on > 95 % of the recorded decisions."""
    torch.set_num_threads(1)
    env = ToyGpuEnv(seed=1)
    agent = agent_for(env)
    before = greedy_fast_rate(env, agent)
    demos = collect_demonstrations(env, agent, TEACHERS, episodes=40, seed=0)
    stats = behaviour_clone(agent, demos, epochs=30, lr=3e-3, minibatch=64)
    assert stats["agreement"] > 0.95 and stats["agreement"] == agreement(agent, demos)
    assert greedy_fast_rate(env, agent) > 0.95 > before + 0.2
    assert env.masked_picks == 0


def test_a_frozen_agent_is_played_but_not_recorded():
    env = ToyGpuEnv(seed=2)
    agent = agent_for(env, freeze_order="fifo")
    demos = collect_demonstrations(env, agent, TEACHERS, episodes=2, seed=0)
    assert len(demos) == 12 and not demos.batch["has_order"].any()


def test_a_teacher_action_the_learner_may_not_take_is_skipped():
    """A teacher that always waits while tasks fit: a work-conserving learner may not wait, so
    those decisions are not recorded (the episode is truncated after 4 x 6 phases)."""
    env = ToyGpuEnv(seed=3)
    agent = agent_for(env, work_conserving=True)
    waits = {"order": lambda e: e.window, "place": fastest}
    demos = collect_demonstrations(env, agent, waits, episodes=1, seed=0)
    assert len(demos) == 0 and demos.skipped == 24
    assert behaviour_clone(agent, demos)["records"] == 0


def test_missing_teacher_or_no_episode_is_refused():
    env = ToyGpuEnv()
    agent = agent_for(env)
    with pytest.raises(ValueError, match=r"missing \['place'\]"):
        collect_demonstrations(env, agent, {"order": smallest}, episodes=1)
    with pytest.raises(ValueError, match="at least one episode"):
        collect_demonstrations(env, agent, TEACHERS, episodes=0)
