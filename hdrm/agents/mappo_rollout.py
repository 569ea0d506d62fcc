"""Driving a :class:`~hdrm.agents.mappo.MAPPOAgent` on a PettingZoo ``ParallelEnv`` directly.

The environment's contract (:mod:`hdrm.env.gpu_multiagent`): both agents stay in ``env.agents``
until the episode ends, ``infos[agent]["active"]`` says which one acts, the other passes 0, and
the reward is shared. :func:`play_episode` asks the agent for the acting agent's action, or a
*driver* (a heuristic: ``driver(env) -> action``) for an agent frozen to one; this module never
imports the environment, so the caller hands the drivers in (:func:`hdrm.launch.multiagent.drivers`
builds them from the env's ``heuristic_order_action`` / ``heuristic_place_action``).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from gymnasium import spaces

from hdrm.agents.mappo import MAPPOAgent
from hdrm.agents.mappo_networks import PHASES

#: A heuristic that plays one agent's phases: the environment in, the action out.
Driver = Callable[[Any], int]


def agent_spaces(env: Any) -> tuple[spaces.Dict, spaces.Discrete]:
    """The observation and action spaces a :class:`MAPPOAgent` is built with, for ``env``:
    ``Dict(order, place, phase)`` and ``Discrete(max(W + 1, N))`` (the widest action set)."""
    order, place = env.observation_space("order"), env.observation_space("place")
    observation = spaces.Dict({"order": order, "place": place, "phase": spaces.Discrete(2)})
    width = max(int(order["action_mask"].shape[0]), int(place["action_mask"].shape[0]))
    return observation, spaces.Discrete(width)


def make_agent(env: Any, config: Mapping[str, Any], seed: int = 0,
               cls: type[MAPPOAgent] = MAPPOAgent) -> MAPPOAgent:
    """A MAPPO agent (or a subclass) for ``env`` with the agent block ``config``."""
    observation, action = agent_spaces(env)
    return cls(config, observation, action, seed=seed)


def acting_agent(infos: Mapping[str, Mapping[str, Any]]) -> str:
    """The agent whose ``infos[agent]["active"]`` is true.

    Raises:
        ValueError: none or both are active (the environment broke its contract).
    """
    active = [a for a in PHASES if infos.get(a, {}).get("active")]
    if len(active) != 1:
        raise ValueError(f"multi-agent env: expected one active agent, infos say {active}")
    return active[0]


def play_episode(env: Any, agent: MAPPOAgent, drivers: Mapping[str, Driver] | None = None,
                 seed: int | None = None) -> dict[str, float]:
    """One episode of ``agent`` (learning when it is training); returns ``end_episode``'s stats.

    Args:
        env: the ParallelEnv.
        agent: the learner.
        drivers: heuristics for the agents in ``agent.frozen`` (each must have one).
        seed: seed of ``env.reset``.

    Raises:
        ValueError: a frozen agent without a driver.
    """
    drivers = dict(drivers or {})
    missing = [a for a in agent.frozen if a not in drivers]
    if missing:
        raise ValueError(f"no driver for the frozen agent(s) {missing}: pass drivers=")
    observations, infos = env.reset(seed=seed)
    agent.start_episode()
    while env.agents:
        active = acting_agent(infos)
        if active in agent.frozen:
            action = int(drivers[active](env))
        else:
            turn = {**observations, "phase": PHASES.index(active)}
            action = agent.decide(turn, observations[active]["action_mask"])
        actions = {a: (action if a == active else 0) for a in env.agents}
        observations, rewards, terminations, truncations, infos = env.step(actions)
        done = all(terminations.get(a, False) or truncations.get(a, False) for a in PHASES)
        agent.rewarded(float(rewards[active]), done or not env.agents)
    return agent.end_episode()


__all__ = ["Driver", "acting_agent", "agent_spaces", "make_agent", "play_episode"]
