"""A tiny job_pick environment and fast DQN options for the Ape-X tests."""

from __future__ import annotations

from pathlib import Path

from hdrm.distributed.apex_actor import EpisodeSpec
from hdrm.env import EnvConfig

ROOT = Path(__file__).resolve().parents[2]
LUBLIN = ROOT / "workloads" / "lublin_256_first500.swf"

#: Fast DQN options: a batch of 32 from the 64th transition, a small replay, one torch thread.
CONFIG = {
    "lr": 1e-3, "gamma": 0.99,
    "params": {"learning_starts": 64, "batch_size": 32, "buffer_size": 2000, "n_step": 3,
               "target_update": 50, "torch_threads": 1},
}


def tiny_episodes() -> EpisodeSpec:
    """Episodes of 20 Lublin jobs on 32 identical processors, a window of 8 jobs."""
    config = EnvConfig(workload_file=str(LUBLIN), platform_file=None, homogeneous_procs=32,
                       nb_jobs=20, mode="job_pick", window=8, start_index="random",
                       conventions="rlscheduler")
    return EpisodeSpec(config)
