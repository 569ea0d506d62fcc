"""The Agent API, ClassicAgent and LearningAgent's returns (no torch needed)."""

from __future__ import annotations

import math
import subprocess
import sys
from types import MappingProxyType

import numpy as np
import pytest
from gymnasium import spaces

from hdrm.agents.base import (
    Agent,
    ClassicAgent,
    LearningAgent,
    discounted_returns,
    first_valid,
    standardised,
)
from hdrm.errors import ConfigError

NAMES = ["shortest-high_gflops", "shortest-low_power", "smallest-high_gflops", "void"]
OBS = spaces.Box(0.0, 1.0, (3,), np.float32)
ACT = spaces.Discrete(len(NAMES))


def classic(policy="shortest-low_power", names=NAMES, **extra) -> ClassicAgent:
    config = MappingProxyType({"type": "classic", "run": "test", "policy": policy, **extra})
    return ClassicAgent(config, OBS, ACT, action_names=names, seed=1)


def test_classic_picks_its_pair():
    agent = classic()
    assert agent.action == 1
    assert agent.decide(np.zeros(3, np.float32), np.ones(4, np.int8)) == 1
    assert agent.fallbacks == 0


def test_classic_falls_back_to_first_valid_action_when_masked():
    agent = classic()
    assert agent.decide(None, np.array([0, 0, 1, 1], dtype=np.int8)) == 2
    assert agent.decide(None, np.array([False, False, False, True])) == 3
    assert agent.fallbacks == 2


def test_classic_name_is_case_insensitive_and_accepts_policy_pair_key():
    assert classic("Smallest-High_GFLOPS").action == 2
    config = {"run": "test", "policy_pair": "void"}
    assert ClassicAgent(config, OBS, ACT, action_names=NAMES).action == 3


def test_classic_unknown_policy_suggests_close_names():
    with pytest.raises(
        ConfigError,
        match=r"^pybatsim\.agent\.policy: unknown action 'shortest-high_flops'; "
        r"did you mean 'shortest-high_gflops'.*choose one of: shortest-high_gflops, shortest-low_power",
    ):
        classic("shortest-high_flops")


def test_classic_needs_a_policy_and_action_names():
    with pytest.raises(
        ConfigError, match=r"pybatsim\.agent\.policy: a classic agent needs the name of its action"
    ):
        ClassicAgent({"run": "test"}, OBS, ACT, action_names=NAMES)
    with pytest.raises(
        ConfigError,
        match=r"pybatsim\.agent\.policy: 'void' cannot be looked up: the environment gives no "
        r"action_names",
    ):
        classic("void", names=None)


def test_agent_rejects_bad_run_and_non_discrete_actions():
    with pytest.raises(
        ConfigError,
        match=r"pybatsim\.agent\.run: invalid value 'trian'; did you mean 'train'\? "
        r"choose one of: train, test",
    ):
        classic(run="trian")
    with pytest.raises(ConfigError, match=r"pybatsim\.agent: agents need a Discrete action space"):
        ClassicAgent({"policy": "void"}, OBS, spaces.Box(0, 1, (2,)), action_names=NAMES)
    with pytest.raises(ConfigError, match=r"pybatsim\.agent: expected an object, got 'ppo'"):
        ClassicAgent("ppo", OBS, ACT, action_names=NAMES)


def test_parsed_options_blocks_are_accepted():
    class Block:  # what hdrm.options blocks offer
        def to_dict(self):
            return {"run": "test", "policy": "void"}

    agent = ClassicAgent(Block(), OBS, ACT, action_names=NAMES)
    assert agent.action == 3 and agent.config["policy"] == "void"


def test_episode_bookkeeping_and_train_mode():
    agent = classic()
    assert agent.training is False  # run = test
    assert agent.train_mode(True) is agent and agent.training is True
    agent.start_episode()
    agent.rewarded(-1.5, False)
    agent.rewarded(0.5, True)
    stats = agent.end_episode()
    assert math.isnan(stats["loss"])
    assert stats["return"] == -1.0 and stats["steps"] == 2.0
    assert agent.state_dict() == {} and agent.optimizer_state_dict() == {}
    agent.load_state_dict({})
    with pytest.raises(ValueError, match="has no learned state"):
        agent.load_state_dict({"w": 1})


def test_abstract_agent_cannot_be_built():
    with pytest.raises(TypeError, match="decide"):
        Agent({}, OBS, ACT)


def test_discounted_returns_hand_checked():
    np.testing.assert_allclose(discounted_returns([1.0, 0.0, 2.0], 0.5), [1.5, 1.0, 2.0])
    np.testing.assert_allclose(discounted_returns([1.0, 1.0], 1.0), [2.0, 1.0])
    assert discounted_returns([], 0.9).shape == (0,)


def test_standardised():
    out = standardised(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(out, [-1.2247449, 0.0, 1.2247449], rtol=1e-6)
    np.testing.assert_array_equal(standardised(np.array([4.0])), [0.0])
    np.testing.assert_array_equal(standardised(np.array([2.0, 2.0])), [0.0, 0.0])


class Counting(LearningAgent):
    def decide(self, observation, mask):
        return first_valid(mask)


def test_learning_agent_keeps_rewards_only_when_training():
    agent = Counting({"gamma": 0.5, "run": "train"}, OBS, ACT)
    agent.start_episode()
    for r in (1.0, 0.0, 2.0):
        agent.rewarded(r, False)
    np.testing.assert_allclose(agent.returns(standardise=False), [1.5, 1.0, 2.0])
    np.testing.assert_allclose(agent.returns(), standardised(np.array([1.5, 1.0, 2.0])))
    agent.train_mode(False)
    agent.rewarded(5.0, True)
    assert agent.rewards == [1.0, 0.0, 2.0]
    with pytest.raises(ConfigError, match=r"pybatsim\.agent\.gamma: 1\.5 is too large"):
        Counting({"gamma": 1.5}, OBS, ACT)


def test_importing_the_agent_api_does_not_import_torch():
    code = (
        "import sys, hdrm.agents, hdrm.agents.base, hdrm.agents.loader;"
        "hdrm.agents.get_agent_class('classic');"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_learning_classes_load_lazily_from_base():
    from hdrm.agents import base
    from hdrm.agents.learning import PolicyLearningAgent, ValueLearningAgent

    assert base.PolicyLearningAgent is PolicyLearningAgent
    assert base.ValueLearningAgent is ValueLearningAgent
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        base.Nope  # noqa: B018
