"""The drop-in agent files in agents/: each loads to one class that runs and learns as built in."""

from __future__ import annotations

from pathlib import Path

import pytest

from hdrm.agents.a2c import A2CAgent
from hdrm.agents.base import ClassicAgent
from hdrm.agents.checkpoint import read_checkpoint, save_checkpoint
from hdrm.agents.loader import load_agent_class
from hdrm.agents.ppo import PPOAgent
from hdrm.agents.reinforce import ReinforceAgent
from hdrm.agents.testing import check_agent
from hdrm.errors import ConfigError

AGENTS_DIR = Path(__file__).resolve().parents[2] / "agents"

EXPECTED = {
    "classic.py": ClassicAgent,
    "reinforce.py": ReinforceAgent,
    "actor_critic.py": A2CAgent,
    "ppo.py": PPOAgent,
}


@pytest.mark.parametrize("name, base", sorted(EXPECTED.items()))
def test_each_file_defines_one_subclass_of_its_builtin(name, base):
    cls = load_agent_class(AGENTS_DIR / name)
    assert issubclass(cls, base) and cls is not base
    assert cls.__doc__


def test_classic_dropin_picks_its_pair_and_falls_back(bandit):
    cls = load_agent_class(AGENTS_DIR / "classic.py")
    agent = cls(
        {"run": "test", "policy": "arm_1"},
        bandit.observation_space,
        bandit.action_space,
        action_names=bandit.action_names,
    )
    assert agent.decide(None, [1, 1, 1, 0]) == 1
    assert agent.decide(None, [0, 0, 1, 0]) == 2


@pytest.mark.parametrize("name", ["reinforce.py", "actor_critic.py", "ppo.py"])
def test_learner_dropins_run_episodes(name, window, driver):
    cls = load_agent_class(AGENTS_DIR / name)
    params = {"rollout_steps": 8, "minibatch": 4, "epochs": 1} if name == "ppo.py" else {}
    agent = driver.make(cls, window, params=params)
    stats = driver.run(agent, window, 3)
    assert all(stats[i]["steps"] == window.length for i in range(3))


def test_checkpoints_name_the_agent_file_and_class(tmp_path, bandit, driver):
    cls = load_agent_class(AGENTS_DIR / "reinforce.py")
    path = save_checkpoint(driver.make(cls, bandit), tmp_path / "m.pt", {})
    assert read_checkpoint(path)["agent_class"] == "reinforce.py:Reinforce"


def test_annealed_ppo_decays_the_learning_rate(bandit, driver):
    cls = load_agent_class(AGENTS_DIR / "ppo.py")
    params = {"rollout_steps": 8, "minibatch": 8, "epochs": 1, "anneal_updates": 4}
    agent = driver.make(cls, bandit, lr=0.01, params=params)
    lrs = []
    for _ in range(5):
        driver.run(agent, bandit, 1)
        lrs.append(agent.optimizer.param_groups[0]["lr"])
    assert lrs == pytest.approx([0.01, 0.0075, 0.005, 0.0025, 0.0])
    with pytest.raises(ConfigError, match=r"pybatsim\.agent\.params\.anneal_updates: -1 is too small"):
        driver.make(cls, bandit, params={"anneal_updates": -1})


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_dropins_pass_the_conformance_check(name):
    config = {"run": "train", "policy": "a1", "params": {}}
    if name == "ppo.py":
        config["params"] = {"rollout_steps": 10, "minibatch": 5, "anneal_updates": 3}
    if name == "classic.py":
        del config["params"]
    check_agent(load_agent_class(AGENTS_DIR / name), config)
