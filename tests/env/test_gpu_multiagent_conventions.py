"""PettingZoo conventions on the multi-agent GPU environment beyond its API tests:
``max_cycles`` (the keyword PettingZoo's own environments take) truncates an episode after that
many steps, on the parallel and the AEC versions; PettingZoo's seed tests (AEC and parallel) and
``max_cycles_test`` pass: the action spaces sample among the current valid actions when
``sample()`` gets no mask (the environment refuses a masked action), and a random policy drawing
that way plays whole episodes, parallel and AEC, without one refused action."""

from __future__ import annotations

import functools
import types
import warnings

import numpy as np
import pytest
from pettingzoo.test import max_cycles_test, parallel_seed_test, seed_test

from hdrm.env.gpu_multiagent import env as aec_env, parallel_env
from hdrm.errors import ConfigError

from gpu_builders import SLICE, write_tiny


@pytest.fixture
def tiny(tmp_path) -> dict:
    return dict(write_tiny(tmp_path), window=4)


def test_max_cycles_truncates_both_agents_after_that_many_steps(tiny):
    # The tiny case takes 5 steps to its end (order t1, place, order t2, place, order t3 ...);
    # max_cycles=3 cuts it after the third: truncated, not terminated, no agent left.
    env = parallel_env(max_cycles=3, **tiny)
    env.reset(seed=0)
    for step in range(1, 4):
        assert env.agents == ["order", "place"]
        actions = {a: int(env.action_space(a).sample(mask)) for a, mask in
                   ((a, o["action_mask"]) for a, o in env._observations().items())}
        _, _, terminations, truncations, _ = env.step(actions)
        cut = step == 3
        assert truncations == {"order": cut, "place": cut}, step
        assert terminations == {"order": False, "place": False}, step
    assert env.agents == [] and not env.core.done
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step({"order": 0, "place": 0})
    env.reset(seed=0)  # the count starts again
    assert env.agents == ["order", "place"]


def test_without_max_cycles_the_episode_runs_to_its_end_and_terminates(tiny):
    env = parallel_env(**tiny)
    obs, _ = env.reset(seed=0)
    steps = 0
    while env.agents:
        actions = {a: int(env.action_space(a).sample(obs[a]["action_mask"])) for a in env.agents}
        obs, _, terminations, truncations, _ = env.step(actions)
        steps += 1
    assert env.core.done and steps > 3
    assert all(terminations.values()) and not any(truncations.values())


def test_aec_version_counts_max_cycles_turns_per_agent_as_pettingzoo_does():
    # what pettingzoo.test.max_cycles_test checks, with masked actions (a masked action is a
    # ValueError here: docs/multiagent.rst): each agent is met max_cycles + 1 times, the last
    # one to step out with None
    env = aec_env(max_cycles=4, nb_jobs=60, **SLICE)
    env.reset(seed=0)
    counts = {"order": 0, "place": 0}
    for agent in env.agent_iter():
        counts[agent] += 1
        obs, _, terminated, truncated, _ = env.last()
        action = None if terminated or truncated else int(
            env.action_space(agent).sample(obs["action_mask"]))
        env.step(action)
    assert counts == {"order": 5, "place": 5}


def test_pettingzoo_seed_tests_and_max_cycles_test_pass():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's advice on dict spaces and agent names
        seed_test(lambda: aec_env(nb_jobs=60, **SLICE))  # samples with the masks
        parallel_seed_test(lambda: parallel_env(nb_jobs=60, **SLICE))  # samples bare
        for fitting_first in (False, True):
            mod = types.SimpleNamespace(
                parallel_env=functools.partial(parallel_env, nb_jobs=60,
                                               fitting_first=fitting_first, **SLICE),
                env=functools.partial(aec_env, nb_jobs=60, fitting_first=fitting_first,
                                      **SLICE))
            max_cycles_test(mod)  # samples bare, parallel and AEC


def test_bare_sample_draws_exactly_the_current_valid_actions(tiny):
    env = parallel_env(**tiny)
    order, place = env.action_space("order"), env.action_space("place")
    # before any reset there is no state: any action, as Discrete
    assert {int(order.sample()) for _ in range(200)} == set(range(5))
    obs, _ = env.reset(seed=0)
    # tiny at 0 s: t1 (index 0) and t2 (index 1) fit, wait (index 4) is valid (t3 comes later)
    assert obs["order"]["action_mask"].tolist() == [1, 1, 0, 0, 1]
    assert {int(order.sample()) for _ in range(200)} == {0, 1, 4}
    assert {int(place.sample()) for _ in range(50)} == {0}  # the inactive agent passes 0
    obs, *_ = env.step({"order": 1, "place": 0})  # t2, half a GPU: fits on a and on b
    assert obs["place"]["action_mask"].tolist() == [1, 1]
    assert {int(place.sample()) for _ in range(200)} == {0, 1}
    assert {int(order.sample()) for _ in range(50)} == {0}
    # an explicit mask or probabilities still decide as in Gymnasium
    assert {int(place.sample(np.array([0, 1], dtype=np.int8))) for _ in range(50)} == {1}
    assert int(order.sample(probability=np.array([0, 0, 0, 1, 0.0]))) == 3


def _random_parallel_episode(env, seed: int) -> tuple[int, list[float]]:
    """One parallel episode of bare ``sample()`` actions; each drawn action checked valid."""
    obs, _ = env.reset(seed=seed)
    for i, agent in enumerate(env.possible_agents):
        env.action_space(agent).seed(seed + i)
    steps, rewards = 0, []
    while env.agents:
        actions = {a: env.action_space(a).sample() for a in env.agents}
        for agent, action in actions.items():
            assert obs[agent]["action_mask"][action] == 1, (steps, agent, action)
        obs, reward, terminations, truncations, _ = env.step(actions)
        steps += 1
        rewards.append(reward["order"])
    assert all(terminations.values()) and not any(truncations.values())
    return steps, rewards


@pytest.mark.parametrize("fitting_first", [False, True])
def test_a_random_masked_policy_plays_whole_episodes_parallel_and_aec(fitting_first):
    settings = dict(nb_jobs=80, load_factor=200, fitting_first=fitting_first, **SLICE)
    env = parallel_env(**settings)
    for seed in (0, 1):
        steps, rewards = _random_parallel_episode(env, seed)
        assert env.core.done and steps >= 2 * 80 - 10  # one order and one place per started task
        # the shared rewards telescope to minus the objective of the finished episode
        assert -sum(rewards) == pytest.approx(env.core.objective_value, rel=1e-9, abs=1e-9)
        assert env.summary()["nb_finished"] > 0
    # the same seed, the same episode
    assert _random_parallel_episode(env, 0) == _random_parallel_episode(parallel_env(
        **settings), 0)
    aec = aec_env(**settings)
    aec.reset(seed=3)
    turns = 0
    for agent in aec.agent_iter():
        obs, _, terminated, truncated, _ = aec.last()
        action = None if terminated or truncated else aec.action_space(agent).sample()
        assert action is None or obs["action_mask"][action] == 1, (turns, agent, action)
        aec.step(action)
        turns += 1
    assert aec.unwrapped.core.done and turns > 2 * 80


@pytest.mark.parametrize("value", [0, -2, 2.5, True, "10"])
def test_a_bad_max_cycles_is_a_one_line_error(tiny, value):
    with pytest.raises(ConfigError, match=rf"^max_cycles: expected a whole number of steps >= 1 "
                                          rf"\(or None: no limit\), got {value!r}$"):
        parallel_env(max_cycles=value, **tiny)


def test_parallel_aec_conversions_round_trip_and_pass_the_api_tests():
    from pettingzoo.test import api_test, parallel_api_test
    from pettingzoo.utils import aec_to_parallel, parallel_to_aec

    par = parallel_env(nb_jobs=40, **SLICE)
    back = aec_to_parallel(aec_env(nb_jobs=40, **SLICE))  # env() unwraps to its parallel env
    assert type(back) is type(par) and back.possible_agents == par.possible_agents
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's advice on dict spaces and agent names
        api_test(parallel_to_aec(par), num_cycles=100)
        parallel_api_test(back, num_cycles=100)
    # (parallel_api_test set back.max_cycles = 100) a fresh round trip plays the same episode
    # as the parallel environment, bare samples
    assert _random_parallel_episode(aec_to_parallel(aec_env(nb_jobs=40, **SLICE)), 5) \
        == _random_parallel_episode(parallel_env(nb_jobs=40, **SLICE), 5)
