"""Registration of ``hdrm/Scheduling-v0`` with Gymnasium.

``gymnasium.make("hdrm:hdrm/Scheduling-v0")`` imports :mod:`hdrm.env`, which registers the
environment; the ``gymnasium.envs`` entry point of the package does the same at start-up.
"""

from __future__ import annotations

import gymnasium

from hdrm import ENV_ID

#: The periodic DAG pipeline environment's id.
DAG_ENV_ID = "hdrm/PeriodicDag-v0"


def register_envs() -> None:
    """Register the hdrm environments (idempotent)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="hdrm.env.scheduling_env:SchedulingEnv")
    if DAG_ENV_ID not in gymnasium.registry:  # periodic DAG pipelines (hdrm/env/dag_env.py)
        gymnasium.register(id=DAG_ENV_ID, entry_point="hdrm.env.dag_env:DagEnv")
