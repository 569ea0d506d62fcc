"""PettingZoo conventions on the multi-agent GPU environment beyond its API tests:
``max_cycles`` (the keyword PettingZoo's own environments take) truncates an episode after that
many steps, on the parallel and the AEC versions; PettingZoo's AEC seed test passes (its parallel
one samples without masks, which this environment refuses)."""

from __future__ import annotations

import warnings

import pytest
from pettingzoo.test import parallel_seed_test, seed_test

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


def test_pettingzoo_aec_seed_test_passes_and_the_parallel_one_needs_masks():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's advice on dict spaces and agent names
        seed_test(lambda: aec_env(nb_jobs=60, **SLICE))  # samples with the masks
        # parallel_seed_test samples without masks; a masked action is refused in one line
        # (a documented departure, docs/multiagent.rst)
        with pytest.raises(ValueError, match=r"^order: action \d+ is masked"):
            parallel_seed_test(lambda: parallel_env(nb_jobs=60, **SLICE))


@pytest.mark.parametrize("value", [0, -2, 2.5, True, "10"])
def test_a_bad_max_cycles_is_a_one_line_error(tiny, value):
    with pytest.raises(ConfigError, match=rf"^max_cycles: expected a whole number of steps >= 1 "
                                          rf"\(or None: no limit\), got {value!r}$"):
        parallel_env(max_cycles=value, **tiny)
