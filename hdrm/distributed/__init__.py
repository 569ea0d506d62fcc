"""Scale-out: experiment sweeps on Ray (and without it), and distributed learners.

Sweeps: :mod:`~hdrm.distributed.sweep`. Learners: :mod:`~hdrm.distributed.learners` routes an
agent to its distributed learner (PPO with rollout workers, :mod:`~hdrm.distributed.ppo`; DQN
with Ape-X), for ``hdeeprm-launch --workers`` and ``benchmarks/train.py --workers``.

This package is the only part of hdrm that imports ``ray``, and only when a Ray backend is used:
``import hdrm.distributed`` works without Ray installed. Ray is the optional ``distributed`` extra
(``pip install 'hdrm[distributed]'``); every sweep also runs in-process or in local worker
processes, with the same outputs.

Layer: top (like the launcher): may import anything in hdrm; nothing in hdrm imports it but the
command line.
"""

from __future__ import annotations

import importlib.util

#: The one-line advice given when a Ray feature is asked for without Ray installed.
RAY_MISSING = ("Ray is not installed; install the 'distributed' extra: "
               "python -m pip install -c constraints.txt -e \".[distributed]\" "
               "(or pip install 'hdrm[distributed]')")


def ray_installed() -> bool:
    """Whether ``import ray`` would find Ray (without importing it)."""
    return importlib.util.find_spec("ray") is not None
