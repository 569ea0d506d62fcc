"""The PPO launch of the distributed PPO tests: short episodes and rollouts of examples/ppo, and
the learner the launch builds with the task its workers use."""

from __future__ import annotations

from pathlib import Path

from hdrm.launch.workers import LaunchTask
from launch_options import example_options

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "agents" / "ppo.py"


def write_options(folder: Path, episodes: int = 5, **params) -> Path:
    """examples/ppo with 20-job episodes (20 decisions each) and 16-step rollouts: rollouts end
    mid-episode (bootstrapped) and, at step 80, with the episode (not bootstrapped)."""
    return example_options(folder, episodes=episodes, params={
        "rollout_steps": 16, "minibatch": 8, "epochs": 2, "rollout_device": "cpu",
        "update_device": "cpu", **params})


def learner(options: Path, num_envs: int = 1):
    """The launch's agent for ``options`` and the task its workers use."""
    from hdrm.launch.experiment import build_experiment
    from hdrm.launch.workers import apply_num_envs
    from hdrm.options import load_options

    opts = load_options(options)
    exp = build_experiment(opts, AGENT)
    apply_num_envs(exp, num_envs)
    return exp.agent, LaunchTask(options, AGENT, opts.seed)
