"""Agents: the Agent API, the built-in learners (REINFORCE, A2C, PPO) and agent.py loading.

Importing this package does not import torch; the learners, networks and checkpoints (which do)
load on first use: ``from hdrm.agents import PPOAgent`` or ``get_agent_class("ppo")``.
"""

from __future__ import annotations

import importlib
from typing import Any

from hdrm.agents.base import (
    Agent,
    ClassicAgent,
    LearningAgent,
    discounted_returns,
    first_valid,
    standardised,
)
from hdrm.agents.catalog import AGENTS, get_agent_class
from hdrm.agents.loader import load_agent_class

#: Names importable from here that need torch, and their modules.
_LAZY = {
    "PolicyLearningAgent": "hdrm.agents.learning",
    "ValueLearningAgent": "hdrm.agents.learning",
    "ReinforceAgent": "hdrm.agents.reinforce",
    "A2CAgent": "hdrm.agents.a2c",
    "PPOAgent": "hdrm.agents.ppo",
    "save_checkpoint": "hdrm.agents.checkpoint",
    "load_checkpoint": "hdrm.agents.checkpoint",
}


def __getattr__(name: str) -> Any:
    """Import the torch-based names on first access."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AGENTS",
    "Agent",
    "ClassicAgent",
    "LearningAgent",
    "discounted_returns",
    "first_valid",
    "get_agent_class",
    "load_agent_class",
    "standardised",
    *_LAZY,
]
