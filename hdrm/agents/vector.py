"""Vectorised rollouts: one learner deciding for the N environments of a Gymnasium vector env.

:func:`run_vector` drives a learner with ``decide_batch``/``rewarded_batch`` (PPO) on a vector
env: every step, one forward pass decides for all N environments. Build the vector env with
Gymnasium's vector API and the ``SAME_STEP`` autoreset mode (an environment whose episode ends is
reset within the same step, so every environment decides at every step)::

    from gymnasium.vector import AutoresetMode, SyncVectorEnv   # or AsyncVectorEnv (processes)

    envs = SyncVectorEnv([make_env] * 8, autoreset_mode=AutoresetMode.SAME_STEP)
    agent = PPOAgent({"params": {"num_envs": 8}}, envs.single_observation_space,
                     envs.single_action_space, seed=0)
    run = run_vector(agent, envs, env_steps=100_000, seed=0)

The environments must put their action mask in ``info["action_mask"]`` (hdrm's
:class:`~hdrm.env.SchedulingEnv` does). This module does not import Gymnasium's vector package:
any object with ``num_envs``, ``metadata["autoreset_mode"]``, ``reset`` and ``step`` of the vector
API works.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hdrm.errors import ConfigError

logger = logging.getLogger(__name__)


@dataclass
class VectorRun:
    """What :func:`run_vector` did.

    Attributes:
        env_steps: environment steps made (decisions, all environments together).
        episodes: one ``{"env", "return", "steps"}`` per finished episode, in finishing order.
        wall_s: wall-clock seconds.
        updates: learner updates made during the run.
    """

    env_steps: int = 0
    episodes: list[dict[str, float]] = field(default_factory=list)
    wall_s: float = 0.0
    updates: int = 0


def check_vector_env(agent: Any, envs: Any) -> int:
    """The number of environments of ``envs``, after checking that ``agent`` can drive them.

    Raises:
        ConfigError: the learner has no ``decide_batch``, its ``num_envs`` differs from the vector
            env's, or the vector env does not reset in the same step.
    """
    if not hasattr(agent, "decide_batch"):
        raise ConfigError(
            f"{type(agent).__name__} has no decide_batch: vectorised rollouts need a learner that "
            "decides for several environments at once (ppo)"
        )
    n = int(envs.num_envs)
    wanted = int(getattr(agent.settings, "num_envs", 1))
    if n != wanted:
        raise ConfigError(
            f"pybatsim.agent.params.num_envs: the learner is set for {wanted} environment(s), the "
            f"vector env has {n}; set num_envs to {n}"
        )
    mode = envs.metadata.get("autoreset_mode")
    if getattr(mode, "value", mode) != "SameStep":
        raise ConfigError(
            f"vector env: autoreset mode {getattr(mode, 'value', mode)!r}; build it with "
            "autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP"
        )
    return n


def run_vector(agent: Any, envs: Any, env_steps: int, seed: int | None = None) -> VectorRun:
    """Train ``agent`` on the vector env ``envs`` for at least ``env_steps`` environment steps.

    The environments are reset once with ``seed`` (Gymnasium gives environment i the seed
    ``seed + i``) and then reset by the vector env itself as their episodes end. With one
    environment this is the single-environment loop (``decide``, ``step``, ``rewarded``, a fresh
    ``reset()`` after each episode) step for step, with the same results for the same seed.

    Args:
        agent: a learner with ``decide_batch`` and ``rewarded_batch`` (:class:`PPOAgent`).
        envs: a Gymnasium vector env with ``SAME_STEP`` autoreset.
        env_steps: environment steps to make, rounded up to a multiple of the environments.
        seed: seed of the first reset (None: the environments' own).

    Raises:
        ConfigError: see :func:`check_vector_env`.
    """
    n = check_vector_env(agent, envs)
    run = VectorRun()
    updates = int(getattr(agent, "updates", 0))
    returns, lengths = np.zeros(n), np.zeros(n, dtype=np.int64)
    t0 = time.perf_counter()
    obs, info = envs.reset(seed=seed)
    while run.env_steps < env_steps:
        actions = agent.decide_batch(obs, info["action_mask"])
        obs, rewards, terminated, truncated, info = envs.step(actions)
        dones = np.logical_or(terminated, truncated)
        agent.rewarded_batch(rewards, dones)
        returns += rewards
        lengths += 1
        run.env_steps += n
        for i in np.flatnonzero(dones):
            run.episodes.append({"env": int(i), "return": float(returns[i]),
                                 "steps": float(lengths[i])})
            returns[i], lengths[i] = 0.0, 0
    run.wall_s = time.perf_counter() - t0
    run.updates = int(getattr(agent, "updates", 0)) - updates
    logger.info("vectorised rollout: %d env steps in %d envs, %d episodes, %d updates, %.1f s",
                run.env_steps, n, len(run.episodes), run.updates, run.wall_s)
    return run


__all__ = ["VectorRun", "check_vector_env", "run_vector"]
