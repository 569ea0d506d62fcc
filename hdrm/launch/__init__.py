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

from hdrm.launch.experiment import Experiment, build_experiment, check_open_names, seed_globals
from hdrm.launch.logs import ACTIONS_LIMIT, RunLog, TensorBoardHook, tensorboard_writer
from hdrm.launch.loop import (
    EpisodeActions,
    EpisodeRecord,
    HookList,
    Hooks,
    run_episode,
    run_episodes,
    run_experiment,
)

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
