"""Ape-X's parts without Ray: the actors' epsilons, the replay's priorities and memory, an actor."""

from __future__ import annotations

import functools
import subprocess
import sys

import numpy as np
import pytest
import torch

from hdrm.agents.dqn import DQNAgent
from hdrm.agents.replay import PrioritizedReplayBuffer, Transition
from hdrm.distributed.apex import ApexSettings, parse_apex
from hdrm.distributed.apex_actor import (ActorSpec, ApexActor, EpisodeSpec, actor_epsilons,
                                         dqn_factory)
from hdrm.distributed.apex_replay import (ApexReplay, TransitionBlock, bytes_per_transition,
                                          resident_bytes, stack_transitions)
from hdrm.errors import ConfigError

from .apex_helpers import CONFIG, tiny_episodes


# -- the actors' exploration rates ---------------------------------------------------------------
def test_actor_epsilons_by_hand():
    # epsilon^(1 + 7 i / (N - 1)) with epsilon 0.4: 0.4, 0.4^4.5 = 0.0256 * sqrt(0.4), 0.4^8
    assert actor_epsilons(1) == [0.4]
    assert actor_epsilons(2) == pytest.approx([0.4, 0.00065536], rel=1e-12)
    assert actor_epsilons(3) == pytest.approx([0.4, 0.0256 * 0.4**0.5, 0.00065536], rel=1e-12)
    assert actor_epsilons(3, 0.5, 2.0) == pytest.approx([0.5, 0.25, 0.125], rel=1e-12)
    eps = actor_epsilons(8)
    assert eps[0] == 0.4 and all(a > b for a, b in zip(eps, eps[1:]))


@pytest.mark.parametrize("args", [(0,), (2, 1.5), (2, 0.4, -1.0)])
def test_bad_epsilon_settings_are_refused(args):
    with pytest.raises(ValueError, match="Ape-X"):
        actor_epsilons(*args)


def test_apex_settings_errors_name_the_key_and_choices():
    assert parse_apex({"actors": 3}) == ApexSettings(actors=3)
    with pytest.raises(ConfigError, match=r"apex: unknown setting 'actor'; did you mean 'actors'"):
        parse_apex({"actor": 3})
    with pytest.raises(ConfigError, match=r"apex\.epsilon"):
        parse_apex({"epsilon": 2})


# -- the replay: priorities from the actors, sampling, updates --------------------------------------
def block(td: list[float], obs_shape=(2, 3), n_actions=3, first=0) -> TransitionBlock:
    """Transitions whose action is their number (from ``first``), with the given TD errors."""
    items = [Transition(np.full(obs_shape, i, np.float32), np.ones(n_actions, bool), i % n_actions,
                        float(i), np.zeros(obs_shape, np.float32), np.ones(n_actions, bool), 0.9)
             for i in range(first, first + len(td))]
    return stack_transitions(items)._replace(td_errors=np.array(td, dtype=np.float64))


def test_initial_priorities_are_the_actors_td_errors():
    replay = ApexReplay(8, (2, 3), 3, alpha=0.5, eps=0.01)
    replay.add(block([0.0, 3.0, -8.0]))
    # (|td| + eps)^alpha
    assert replay.priorities([0, 1, 2]) == pytest.approx([0.1, 3.01**0.5, 8.01**0.5])
    assert replay.stats()["size"] == 3


def test_sampling_follows_the_priorities():
    replay = ApexReplay(4, (2, 3), 3, alpha=1.0, eps=1e-6, seed=5)
    replay.add(block([1.0, 2.0, 3.0, 4.0]))
    counts = np.zeros(4)
    for _ in range(2000):
        counts += np.bincount(replay.sample(4, beta=1.0).batch.indices, minlength=4)
    expected = np.array([1, 2, 3, 4]) / 10  # p_i / sum p
    assert counts / counts.sum() == pytest.approx(expected, abs=0.01)
    # after an update, sampling follows the new priorities
    replay.update_priorities(np.arange(4), np.ones(4, np.int64), np.array([9.0, 0.0, 0.0, 1.0]))
    draws = np.concatenate([replay.sample(4, 1.0).batch.indices for _ in range(1000)])
    assert set(np.unique(draws)) == {0, 3}
    assert np.mean(draws == 0) == pytest.approx(0.9, abs=0.02)


def test_importance_weights_follow_the_sampling_probabilities():
    replay = ApexReplay(4, (2, 3), 3, alpha=1.0, eps=1e-6)
    replay.add(block([1.0, 2.0, 3.0, 4.0]))
    batch = replay.sample(4, beta=1.0).batch
    p = (np.abs(np.array([1.0, 2.0, 3.0, 4.0])) + 1e-6)[batch.indices]
    # (N P(i))^-beta over its maximum: with beta 1, min p / p
    assert batch.weights == pytest.approx(p.min() / p, rel=1e-5)


def test_priority_updates_of_rewritten_slots_are_dropped():
    replay = ApexReplay(4, (2, 3), 3, alpha=1.0, eps=0.0)
    replay.add(block([1.0, 1.0, 1.0, 1.0]))
    sample = replay.sample(4, beta=0.4)  # equal priorities, stratified: every slot once
    assert sorted(sample.batch.indices) == [0, 1, 2, 3]
    replay.add(block([5.0, 5.0], first=4))  # overwrites slots 0 and 1 (a ring)
    kept = replay.update_priorities(sample.batch.indices, sample.writes, np.full(4, 2.0))
    assert kept == 2
    assert replay.priorities([0, 1, 2, 3]) == pytest.approx([5.0, 5.0, 2.0, 2.0])
    assert replay.stats()["stale"] == 2 and replay.stats()["updated"] == 2


def test_nothing_is_sampled_before_a_batch_is_stored():
    replay = ApexReplay(8, (2, 3), 3)
    replay.add(block([1.0, 1.0]))
    assert replay.sample(3, beta=0.4) is None


@pytest.mark.parametrize("start, rows", [(0, 3), (5, 6), (2, 11), (0, 0)])
def test_a_block_is_stored_as_its_rows_one_by_one(start, rows):
    """add_rows (the replay actor's write) leaves what add row after row leaves: slots, arrays,
    priorities, the largest priority, the ring's position; 11 rows overwrite a ring of 7."""
    one, many = (PrioritizedReplayBuffer(7, (2, 3), 3, alpha=0.5, eps=0.01) for _ in range(2))
    lead = block([1.0] * start)._replace(td_errors=np.ones(start)) if start else None
    rng = np.random.default_rng(start + rows)
    data = block(list(rng.normal(0, 4, rows)), first=100) if rows else None
    for buf in (one, many):
        if lead is not None:
            buf.add_rows(lead, lead.td_errors)
    slots_one = ([one.add(t, td) for t, td in zip(data.transitions(), data.td_errors)]
                 if rows else [])
    slots_many = many.add_rows(data, data.td_errors) if rows else []
    assert list(slots_many) == slots_one
    for name in ("obs", "next_obs", "masks", "next_masks", "actions", "returns", "discounts"):
        assert np.array_equal(getattr(one, name), getattr(many, name)), name
    assert np.allclose(one.tree._tree, many.tree._tree)
    assert (one.pos, one.size, one.max_priority) == (many.pos, many.size, many.max_priority)


def test_a_block_with_a_nan_td_error_is_refused_whole():
    buffer = PrioritizedReplayBuffer(4, (2, 3), 3)
    data = block([1.0, float("nan")])
    with pytest.raises(ValueError, match="finite, got nan"):
        buffer.add_rows(data, data.td_errors)
    assert len(buffer) == 0 and buffer.tree.total == 0.0


def test_an_exchange_updates_the_priorities_then_draws():
    replay = ApexReplay(4, (2, 3), 3, alpha=1.0, eps=0.0, seed=3)
    assert replay.exchange([], 2, 2, beta=0.4) == []  # nothing stored yet: no batch
    replay.add(block([1.0, 1.0, 1.0, 1.0]))
    drawn = replay.exchange([], 3, 4, beta=0.4)
    assert len(drawn) == 3 and replay.stats()["drawn"] == 12
    first = drawn[0]
    # the updates of the learner's steps come first: slot 2 gets all the mass, then the draws
    td = np.where(first.batch.indices == 2, 7.0, 0.0)
    after = replay.exchange([(first.batch.indices, first.writes, td)], 2, 4, beta=0.4)
    assert replay.priorities([0, 1, 2, 3]) == pytest.approx([0.0, 0.0, 7.0, 0.0])
    assert all(set(s.batch.indices) == {2} for s in after)


def test_a_new_transition_keeps_the_largest_priority_without_a_td_error():
    buffer = PrioritizedReplayBuffer(4, (1,), 2, alpha=1.0, eps=0.0)
    item = Transition(np.zeros(1), np.ones(2, bool), 0, 0.0, np.zeros(1), np.ones(2, bool), 0.0)
    buffer.add(item, td_error=-6.0)
    buffer.add(item)  # the single-process DQN's rule: the largest priority seen, 6
    assert buffer.tree.get([0, 1]) == pytest.approx([6.0, 6.0])
    with pytest.raises(ValueError, match="finite"):
        buffer.add(item, td_error=float("nan"))


# -- memory -----------------------------------------------------------------------------------------
def test_bytes_per_transition_by_hand():
    # 8 x 3 float32 observations (96 B) twice, masks of 9 bools twice, int64 action and write
    # counter, float32 return and discount, and the sum tree: 2 x 1024 float64 nodes for 1,000
    assert bytes_per_transition(1000, (8, 3), 9) == pytest.approx(
        2 * 96 + 2 * 9 + 8 + 8 + 4 + 4 + 2 * 1024 * 8 / 1000)
    replay = ApexReplay(1000, (8, 3), 9)
    memory = replay.memory()
    assert memory["arrays_bytes"] == pytest.approx(memory["formula_bytes"])


#: Fills an Ape-X replay of the protocol's job windows in a fresh process and prints how much its
#: resident set grew and the documented size. A fresh process: inside the suite, pages that earlier
#: tests freed are reused, so the growth of the pytest process says little.
_FILL = """
import numpy as np
from hdrm.agents.replay import Transition
from hdrm.distributed.apex_replay import ApexReplay, bytes_per_transition, resident_bytes
capacity, shape, n_actions = 3000, (128, 8), 129
before = resident_bytes()
replay = ApexReplay(capacity, shape, n_actions)
obs = np.ones(shape, np.float32)
item = Transition(obs, np.ones(n_actions, bool), 1, 1.0, obs, np.ones(n_actions, bool), 0.9)
for _ in range(capacity):
    replay.buffer.add(item, 1.0)
replay.writes += 1
print(resident_bytes() - before, bytes_per_transition(capacity, shape, n_actions) * capacity)
"""


@pytest.mark.skipif(resident_bytes() == 0, reason="needs /proc/self/statm (Linux)")
def test_a_full_replay_takes_the_documented_memory():
    """The resident set grows by capacity x bytes per transition once every slot is written."""
    out = subprocess.run([sys.executable, "-c", _FILL], capture_output=True, text=True,
                         timeout=300, check=True)
    grown, expected = map(float, out.stdout.split())
    assert expected == pytest.approx(25.4e6, rel=0.01)  # the protocol's job windows: ~25 MB
    assert grown == pytest.approx(expected, rel=0.15)


# -- an actor and the learner's hooks --------------------------------------------------------------
def test_an_actor_sends_its_transitions_with_their_td_errors():
    blocks: list[TransitionBlock] = []
    spec = ActorSpec(tiny_episodes(), functools.partial(dqn_factory, CONFIG), seed=3,
                     epsilons=(0.4, 0.0))
    actor = ApexActor(1, spec, blocks.append)
    assert actor.epsilon == 0.0 and actor.agent.epsilon == 0.0
    result = actor.collect(None, -1, 60)
    assert result["steps"] == 60 and result["transitions"] == sum(b.size for b in blocks) > 0
    assert len(blocks) == 1 and result["ended"]  # 20-job episodes end within 60 decisions
    assert all(e["steps"] > 0 and e["summary"] is None for e in result["ended"])
    assert not actor.agent.replay.size  # acting only: nothing in the agent's own replay
    assert actor.agent.updates == 0
    sent = blocks[0]
    # the initial priorities are the TD errors of the actor's networks
    assert sent.td_errors == pytest.approx(actor.agent.td_errors(sent.as_batch()), rel=1e-6)
    assert not np.allclose(sent.td_errors, 0.0)


def test_an_actor_loads_newer_weights_only():
    learner = tiny_learner()
    spec = ActorSpec(tiny_episodes(), functools.partial(dqn_factory, CONFIG), epsilons=(0.4,))
    actor = ApexActor(0, spec, lambda b: None)
    with torch.no_grad():
        for p in learner.network.parameters():
            p.add_(1.0)
    actor.collect(learner.state_dict(), 1, 1)
    assert actor.version == 1
    same = [torch.equal(a, b) for a, b in zip(actor.agent.network.parameters(),
                                               learner.network.parameters())]
    assert all(same)
    with torch.no_grad():
        for p in learner.network.parameters():
            p.add_(1.0)
    actor.collect(learner.state_dict(), 1, 1)  # the same version: not loaded again
    assert not torch.equal(next(actor.agent.network.parameters()),
                           next(learner.network.parameters()))


def test_learn_on_returns_the_td_errors_before_its_step():
    learner = tiny_learner()
    blocks: list[TransitionBlock] = []
    spec = ActorSpec(tiny_episodes(), functools.partial(dqn_factory, CONFIG))
    ApexActor(0, spec, blocks.append).collect(None, -1, 40)
    batch = blocks[0].as_batch()
    before = learner.td_errors(batch)
    stats, td = learner.learn_on(batch)
    assert td == pytest.approx(before, rel=1e-6)
    assert stats["td_abs"] == pytest.approx(np.abs(before).mean(), rel=1e-5)
    assert learner.updates == 1
    assert not np.allclose(learner.td_errors(batch), before)  # the step moved the network


def tiny_learner() -> DQNAgent:
    env = tiny_episodes().make_env()
    return DQNAgent(CONFIG, env.observation_space, env.action_space,
                    action_names=env.action_names, seed=0).train_mode(True)


def test_episode_spec_draws_its_starts():
    spec = EpisodeSpec(tiny_episodes().env_config, starts=(5, 7))
    rng = np.random.default_rng(0)
    assert {spec.reset_options(rng)["start_index"] for _ in range(40)} == {5, 7}
    assert EpisodeSpec(spec.env_config).reset_options(rng) == {}
