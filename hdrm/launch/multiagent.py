"""The launcher's hook for the two-agent GPU environment: its phases as one Gymnasium env of turns.

``hdeeprm-launch`` drives one Gymnasium environment with one agent (:mod:`hdrm.launch.loop`).
An agent class with ``multi_agent = True`` (:class:`hdrm.agents.mappo.MAPPOAgent`) gets a
:class:`TurnEnv` instead: the PettingZoo :class:`~hdrm.env.gpu_multiagent.GpuMultiAgentEnv` seen
one phase at a time. Each turn's observation is ``{"order": ..., "place": ..., "phase": 0 or 1}``
(both agents' observations and the acting agent), its mask the acting agent's mask padded to
``Discrete(max(window + 1, nodes))``, and its reward the shared reward. Phases of an agent frozen
to a heuristic (``params.freeze_order`` / ``freeze_place``) are played inside :meth:`TurnEnv.step`
by :func:`~hdrm.env.gpu_multiagent_heuristics.heuristic_order_action` /
:func:`~hdrm.env.gpu_multiagent_heuristics.heuristic_place_action`, and their rewards are added
to the next turn's, so an episode's return is still minus the objective.

``env.unwrapped`` is the environment's GPU decision core (a
:class:`~hdrm.env.gpu_env.GpuSchedulingEnv`), so the loop's records, the saver and the GPU
outputs read it as they read the single-agent environment.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Mapping

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hdrm.env.gpu_multiagent import GpuMultiAgentEnv
from hdrm.env.gpu_multiagent_heuristics import heuristic_order_action, heuristic_place_action
from hdrm.errors import ConfigError
from hdrm.options import Options
from hdrm.policies.gpu_orders import QUEUE_ORDERS
from hdrm.policies.placement import PLACEMENTS

logger = logging.getLogger(__name__)

PHASES = ("order", "place")
#: JSON path of the freeze settings, for errors.
FREEZE_PATH = "pybatsim.agent.params.freeze_"


def wants_turns(agent_class: type) -> bool:
    """Whether the agent class asks for the multi-agent environment (``multi_agent = True``)."""
    return bool(getattr(agent_class, "multi_agent", False))


def drivers(frozen: Mapping[str, str]) -> dict[str, Callable[[Any], int]]:
    """The heuristic driver of each frozen agent: ``{"place": "fgd"}`` -> ``{"place": f(env)}``.

    Raises:
        ConfigError: an unknown agent, queue order or placement (with the closest names).
    """
    out: dict[str, Callable[[Any], int]] = {}
    for agent, name in frozen.items():
        if agent == "order":
            QUEUE_ORDERS.get(name, f"{FREEZE_PATH}order")
            out[agent] = lambda env, name=name: heuristic_order_action(env, name)
        elif agent == "place":
            PLACEMENTS.get(name, f"{FREEZE_PATH}place")
            out[agent] = lambda env, name=name: heuristic_place_action(env, name)
        else:
            raise ConfigError(f"frozen agent {agent!r}: the agents are {', '.join(PHASES)}")
    return out


class TurnEnv(gym.Env):
    """A :class:`GpuMultiAgentEnv` as a Gymnasium env whose steps are the learned phases.

    Args:
        env: the multi-agent environment.
        frozen: agent -> heuristic name for the agents played by heuristics (see :func:`drivers`).
    """

    def __init__(self, env: GpuMultiAgentEnv, frozen: Mapping[str, str] | None = None) -> None:
        self.env = env
        order, place = env.observation_space("order"), env.observation_space("place")
        self.observation_space = spaces.Dict({"order": order, "place": place,
                                              "phase": spaces.Discrete(2)})
        width = max(env.window + 1, env.nb_nodes)
        self.action_space = spaces.Discrete(width)
        self.action_names = [f"choice_{i}" for i in range(width)]
        self.drivers = drivers(frozen or {})
        self._carry = 0.0

    @property
    def unwrapped(self) -> Any:
        """The decision core (a GpuSchedulingEnv): ``sim``, ``result()``, ``config`` ..."""
        return self.env.core

    @property
    def platform(self) -> Any:
        """The platform of the decision core."""
        return self.env.core.platform

    def set_frozen(self, frozen: Mapping[str, str]) -> None:
        """Play the agents of ``frozen`` with their heuristics from now on."""
        self.drivers = drivers(frozen)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start an episode; returns the first learned turn's observation and info (frozen
        phases before it are played, their rewards kept for the first step)."""
        observations, infos = self.env.reset(seed=seed, options=options)
        observations, infos, reward, _ = self._play_frozen(observations, infos)
        self._carry = reward  # the frozen phases' rewards before the first turn
        return self._turn(observations, infos)

    def step(self, action: int):
        """Apply the acting agent's action, then play the frozen phases up to the next turn.

        Returns:
            ``(observation, reward, terminated, truncated, info)``: the reward sums the shared
            rewards of every phase played; ``info`` is the environment's (``time``,
            ``jobs_done``, ``queue_size``, ``objective``) with the acting agent's ``phase`` and
            padded ``action_mask``.
        """
        active = _acting(self.env, self._infos)
        actions = {a: (int(action) if a == active else 0) for a in self.env.agents}
        observations, rewards, terms, truncs, infos = self.env.step(actions)
        reward = float(rewards[active]) + self._carry
        self._carry = 0.0
        done = _ended(self.env, terms, truncs)
        if not done:
            observations, infos, extra, done = self._play_frozen(observations, infos)
            reward += extra
        obs, info = self._turn(observations, infos)
        truncated = any(truncs.values()) and not any(terms.values())
        return obs, reward, done and not truncated, truncated, info

    def _play_frozen(self, observations: dict, infos: dict) -> tuple[dict, dict, float, bool]:
        """Play the frozen agents' phases until a learned agent acts or the episode ends."""
        total, done = 0.0, not self.env.agents
        while not done:
            active = _acting(self.env, infos)
            if active not in self.drivers:
                break
            action = int(self.drivers[active](self.env))
            actions = {a: (action if a == active else 0) for a in self.env.agents}
            observations, rewards, terms, truncs, infos = self.env.step(actions)
            total += float(rewards[active])
            done = _ended(self.env, terms, truncs)
        return observations, infos, total, done

    def _turn(self, observations: dict, infos: dict) -> tuple[dict, dict]:
        self._infos = infos
        mask = np.zeros(self.action_space.n, dtype=np.int8)
        phase = 0
        if self.env.agents:
            active = _acting(self.env, infos)
            phase = PHASES.index(active)
            own = np.asarray(observations[active]["action_mask"])
            mask[:own.shape[0]] = own
        common = dict(next(iter(infos.values()), {})) if infos else {}
        common.pop("active", None)
        sim = self.env.core.sim
        common.setdefault("time", sim.now)
        common.setdefault("jobs_done", len(sim.outcomes))
        common.setdefault("objective", self.env.core.objective_value)
        info = {**common, "phase": PHASES[phase], "action_mask": mask}
        return {**observations, "phase": phase}, info

    def close(self) -> None:
        self.env.close()


def _acting(env: GpuMultiAgentEnv, infos: Mapping[str, Mapping[str, Any]]) -> str:
    active = [a for a in PHASES if infos.get(a, {}).get("active")]
    if len(active) != 1:
        raise RuntimeError(f"multi-agent env: expected one active agent, infos say {active}")
    return active[0]


def _ended(env: GpuMultiAgentEnv, terms: Mapping[str, bool], truncs: Mapping[str, bool]) -> bool:
    return not env.agents or any(terms.values()) or any(truncs.values())


def turn_env(options: Options, **settings: Any) -> TurnEnv:
    """The :class:`TurnEnv` of ``options`` (extra environment ``settings`` passed on).

    Raises:
        ConfigError: inputs that are not a GPU workload and platform (prefixed with the file).
    """
    try:
        return TurnEnv(GpuMultiAgentEnv(options=options, **settings))
    except ConfigError as exc:
        message = str(exc)
        source = options.source
        raise ConfigError(message if source in message else f"{source}: {message}") from None


__all__ = ["TurnEnv", "drivers", "turn_env", "wants_turns"]
