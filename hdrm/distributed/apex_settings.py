"""The settings of Ape-X's distribution: the ``apex`` block of the agent's options.

:class:`ApexSettings` holds how many actors run, their exploration rates, how often weights are
published and how the learner and the actors keep pace; :func:`parse_apex` reads it from a
mapping, refusing unknown keys and bad values in one line
(:func:`hdrm.agents.settings.parse_settings`). The DQN options block sets the learning itself.
Used by :mod:`hdrm.distributed.apex` (which re-exports these names); this module needs no Ray.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from hdrm.agents.settings import parse_settings

#: JSON path of the Ape-X settings in messages.
APEX_PATH = "apex"


@dataclass(frozen=True)
class ApexSettings:
    """Settings of Ape-X's distribution (the DQN options block sets the learning itself)."""

    actors: int = field(default=2, metadata={"min": 1})
    """Actor processes."""
    epsilon: float = field(default=0.4, metadata={"min": 0.0, "max": 1.0})
    """Base of the actors' exploration rates: actor i explores with epsilon^(1 + alpha i/(N-1))."""
    epsilon_alpha: float = field(default=7.0, metadata={"min": 0.0})
    """Exponent spread of the actors' exploration rates (7 in the paper)."""
    actor_steps: int = field(default=64, metadata={"min": 1})
    """Decisions per actor call: the transitions are sent and newer weights picked up after each."""
    weight_sync: int = field(default=50, metadata={"min": 1})
    """Gradient steps between two publications of the learner's weights (K)."""
    max_replay_ratio: float = field(default=0.0, metadata={"min": 0.0})
    """Most gradient steps per collected decision (0: the DQN's 1 / train_freq): the learner
    waits for the actors when it is ahead."""
    min_replay_ratio: float = field(default=0.0, metadata={"min": 0.0})
    """Fewest gradient steps per collected decision (0: no bound, as in the paper): actors wait
    for the learner when they are ahead (on few cores, this leaves the learner its share)."""
    actor_cpus: float = field(default=1.0, metadata={"min": 0.0})
    """CPUs Ray reserves for each actor."""
    replay_batches: int = field(default=4, metadata={"min": 1})
    """Batches the learner draws in one call to the replay actor; the new priorities of their
    gradient steps go back with a later call (1: a call per gradient step)."""


def parse_apex(params: Mapping[str, Any] | None, where: str = APEX_PATH) -> ApexSettings:
    """The Ape-X settings from a mapping (unknown keys and bad values: one-line ConfigError)."""
    return parse_settings(ApexSettings, params, where=where)
