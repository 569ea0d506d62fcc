"""Gymnasium environment (L4): a thin view of the decision core for any RL library.

Importing this package registers ``hdrm/Scheduling-v0``.
"""

from hdrm.env.registration import ENV_ID, register_envs

register_envs()

from hdrm.env.config import EnvConfig  # noqa: E402
from hdrm.env.scheduling_env import SchedulingEnv  # noqa: E402

__all__ = ["ENV_ID", "EnvConfig", "SchedulingEnv", "register_envs"]
