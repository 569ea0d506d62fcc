"""The registry of built-in agents by name (``pybatsim.agent.type``).

``classic`` is registered when :mod:`hdrm.agents.base` is imported; the torch learners
(``reinforce``, ``a2c``, ``ppo``, ``dqn``) register when their modules are imported, which
:func:`get_agent_class` does on demand, so looking up ``classic`` never imports torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from hdrm.errors import ConfigError
from hdrm.registry import Registry

if TYPE_CHECKING:  # pragma: no cover
    from hdrm.agents.base import Agent

#: Agent classes by name; lookups of unknown names suggest close ones.
AGENTS: Registry[type] = Registry("agent type")

#: Modules whose import registers the built-in agents.
BUILTIN_MODULES = (
    "hdrm.agents.base",
    "hdrm.agents.reinforce",
    "hdrm.agents.a2c",
    "hdrm.agents.ppo",
    "hdrm.agents.dqn",
)


def get_agent_class(name: str, where: str = "pybatsim.agent.type") -> type["Agent"]:
    """Return the built-in agent class registered as ``name`` (case-insensitive).

    Args:
        name: ``"classic"``, ``"reinforce"``, ``"a2c"`` (alias ``"actor_critic"``), ``"ppo"``
            or ``"dqn"``.
        where: JSON path of the name, for error messages.

    Raises:
        ConfigError: unknown name (with "did you mean"), or a learner asked for without torch.
    """
    importlib.import_module("hdrm.agents.base")
    if name not in AGENTS:
        _import_learners(name, where)
    return AGENTS.get(name, where)


def agent_names() -> list[str]:
    """The names of every built-in agent (imports the learners, hence torch)."""
    _import_learners("", "")
    return AGENTS.names()


def _import_learners(name: str, where: str) -> None:
    for module in BUILTIN_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != "torch":
                raise
            raise ConfigError(
                f"{where}: agent type {name!r} needs torch, which is not installed; "
                "install it with: pip install 'hdrm[learn]'"
            ) from None
