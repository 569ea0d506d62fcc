"""The library parts of ``hdeeprm-launch`` (layer L5): nothing here prints or exits.

* :mod:`~hdrm.launch.experiment`: options + agent.py -> a checked, seeded environment and agent;
* :mod:`~hdrm.launch.loop`: the episode loop and its per-episode records;
* :mod:`~hdrm.launch.logs`: episodes.csv, actions.csv, the engine outputs and TensorBoard scalars;
* :mod:`~hdrm.launch.actions`: every action checked against the mask (type, range, mask);
* :mod:`~hdrm.launch.saving`: periodic and on-stop checkpoints, and resuming a training;
* :mod:`~hdrm.launch.outdir`: the output folder's lock, stale outputs and leftover temp files;
* :mod:`~hdrm.launch.signals`: SIGINT and SIGTERM as a stop request, shielded saves;
* :mod:`~hdrm.launch.progress`: progress bars on a terminal, lines otherwise.

:mod:`hdrm.launcher` turns the command line into calls of these and does the printing.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Where each re-exported name lives; imported on first use, so that a command needing one
#: module (``hdrm replay`` takes :mod:`~hdrm.launch.outdir`) does not import the launcher's others.
_HOMES = {
    "Experiment": "experiment", "build_experiment": "experiment",
    "check_open_names": "experiment", "seed_globals": "experiment",
    "ACTIONS_LIMIT": "logs", "RunLog": "logs", "TensorBoardHook": "logs",
    "tensorboard_writer": "logs",
    "EpisodeActions": "loop", "EpisodeRecord": "loop", "HookList": "loop", "Hooks": "loop",
    "run_episode": "loop", "run_episodes": "loop", "run_experiment": "loop",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'hdrm.launch' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"hdrm.launch.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "ACTIONS_LIMIT",
    "EpisodeActions",
    "EpisodeRecord",
    "Experiment",
    "HookList",
    "Hooks",
    "RunLog",
    "TensorBoardHook",
    "build_experiment",
    "check_open_names",
    "run_episode",
    "run_episodes",
    "run_experiment",
    "seed_globals",
    "tensorboard_writer",
]
