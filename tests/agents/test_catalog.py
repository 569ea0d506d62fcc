"""The registry of built-in agents by name."""

from __future__ import annotations

import pytest

from hdrm import agents
from hdrm.agents.catalog import agent_names, get_agent_class
from hdrm.errors import ConfigError


def test_builtin_names_resolve_to_their_classes():
    from hdrm.agents.a2c import A2CAgent
    from hdrm.agents.base import ClassicAgent
    from hdrm.agents.ppo import PPOAgent
    from hdrm.agents.reinforce import ReinforceAgent

    assert get_agent_class("classic") is ClassicAgent
    assert get_agent_class("REINFORCE") is ReinforceAgent
    assert get_agent_class("a2c") is get_agent_class("actor_critic") is A2CAgent
    assert get_agent_class("ppo") is PPOAgent
    assert {"classic", "reinforce", "a2c", "ppo"} <= set(agent_names())


def test_unknown_name_suggests():
    with pytest.raises(
        ConfigError, match=r"^pybatsim\.agent\.type: unknown agent type 'pop'; did you mean 'ppo'\?"
    ):
        get_agent_class("pop")


def test_package_exports_learners_lazily():
    from hdrm.agents.checkpoint import save_checkpoint
    from hdrm.agents.ppo import PPOAgent

    assert agents.PPOAgent is PPOAgent
    assert agents.save_checkpoint is save_checkpoint
    with pytest.raises(AttributeError):
        agents.NoSuchAgent  # noqa: B018
