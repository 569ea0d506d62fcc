"""Train hdrm's Gymnasium environment with RLlib's PPO, invalid actions masked.

RLlib (Ray's RL library, new API stack) knows nothing of ``info["action_mask"]``: an RLModule
only sees observations. This example therefore does two small things, then hands everything else
to RLlib:

1. :class:`MaskedSchedulingEnv` wraps :class:`hdrm.env.SchedulingEnv` so that each observation is
   a dict: ``{"observations": <hdrm's observation>, "action_mask": <0/1 per action>}``.
2. :class:`MaskedPPOModule` is a torch RLModule for PPO (policy logits and state values) built on
   hdrm's own networks (the kernel network for job windows, an MLP for vectors): it scores the
   actions, then pushes the logits of the masked ones to the smallest float, so that the
   action distribution gives them probability 0 when sampling, in the loss and in the entropy.

Both action modes work: ``policy_pair`` (HDeepRM's job-core pairs, a vector observation) and
``job_pick`` (RLScheduler's pick of one queued job, a job-window observation, the void action
valid when waiting is allowed).

Run (a few PPO iterations on 40-job episodes of the shipped SDSC-SP2 slice, about a minute)::

    python examples/rllib/rllib_ppo.py --mode job_pick --iterations 3
    python examples/rllib/rllib_ppo.py --mode policy_pair --iterations 3

It needs RLlib's dependencies, hdrm's ``rllib`` extra:
``python -m pip install -c constraints.txt -e ".[rllib]"`` (see ``docs/distributed.rst``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
SDSC = ROOT / "workloads" / "SDSC-SP2-1998-4.2-cln_first500.swf"
TINY = ROOT / "platforms" / "tiny_hetero.json"

#: The environment of each mode (any SchedulingEnv keyword works here).
ENV_CONFIGS: dict[str, dict[str, Any]] = {
    "policy_pair": {"workload_file": str(SDSC), "platform_file": str(TINY), "nb_jobs": 40,
                    "start_index": "random", "observation": "small", "mode": "policy_pair"},
    "job_pick": {"workload_file": str(SDSC), "platform_file": None, "homogeneous_procs": 64,
                 "nb_jobs": 40, "start_index": "random", "mode": "job_pick", "window": 16,
                 "conventions": "rlscheduler"},
}


class MaskedSchedulingEnv(gym.Env):
    """hdrm's environment with the action mask inside the observation, as RLModules see it.

    Args:
        config: keyword arguments of :class:`hdrm.env.SchedulingEnv` (RLlib's ``env_config``).
    """

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        from hdrm.env import SchedulingEnv

        self.env = SchedulingEnv(**dict(config or {}))
        n = int(self.env.action_space.n)
        self.action_space = self.env.action_space
        self.observation_space = gym.spaces.Dict({
            "observations": self.env.observation_space,
            "action_mask": gym.spaces.Box(0.0, 1.0, (n,), np.float32),
        })

    def _masked(self, obs: np.ndarray, info: dict[str, Any]) -> dict[str, np.ndarray]:
        return {"observations": obs, "action_mask": np.asarray(info["action_mask"], np.float32)}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        obs, info = self.env.reset(seed=seed, options=options)
        return self._masked(obs, info), info

    def step(self, action: int):
        obs, reward, terminated, truncated, info = self.env.step(int(action))
        return self._masked(obs, info), reward, terminated, truncated, info


def rl_module_class() -> type:
    """:class:`MaskedPPOModule`, defined when RLlib is importable."""
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.apis import ValueFunctionAPI
    from ray.rllib.core.rl_module.torch import TorchRLModule

    from hdrm.agents.networks import DEFAULT_HIDDEN, build_network, resolve_network

    class MaskedPPOModule(TorchRLModule, ValueFunctionAPI):
        """PPO's policy and value on hdrm's networks, invalid actions masked.

        ``model_config`` keys: ``network`` (``auto``, ``mlp``, ``kernel`` or ``attention``;
        ``auto`` picks the kernel network for job windows) and ``hidden`` (layer sizes).
        """

        def setup(self) -> None:
            inner = self.observation_space["observations"]
            n_actions = int(self.action_space.n)
            config = dict(self.model_config or {})
            name = resolve_network(config.get("network", "auto"), inner, n_actions,
                                   "model_config.network")
            hidden = tuple(config.get("hidden", DEFAULT_HIDDEN.get(name, (64, 64))))
            self.net = build_network(name, inner, n_actions, hidden)

        def _masked_logits(self, batch: dict[str, Any]) -> torch.Tensor:
            obs = batch[Columns.OBS]
            logits = self.net.logits(obs["observations"].float())
            invalid = obs["action_mask"] < 0.5
            return logits.masked_fill(invalid, torch.finfo(logits.dtype).min)

        def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            return {Columns.ACTION_DIST_INPUTS: self._masked_logits(batch)}

        def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
            return self.net.value(batch[Columns.OBS]["observations"].float())

    return MaskedPPOModule


def ppo_config(mode: str, seed: int = 0, train_batch: int = 400) -> Any:
    """RLlib's PPO configuration for ``mode``: one local env runner, small batches."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    return (
        PPOConfig()
        .environment(MaskedSchedulingEnv, env_config=ENV_CONFIGS[mode])
        .env_runners(num_env_runners=0, rollout_fragment_length=train_batch)
        .training(train_batch_size_per_learner=train_batch, minibatch_size=100, num_epochs=2,
                  lr=3e-4, gamma=1.0, lambda_=0.97)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=rl_module_class(),
                                               model_config={"network": "auto"}))
        .debugging(seed=seed)
    )


def train(mode: str, iterations: int, seed: int = 0) -> list[dict[str, Any]]:
    """Build PPO for ``mode`` and train ``iterations`` times; returns each iteration's result."""
    algo = ppo_config(mode, seed).build_algo()
    try:
        return [algo.train() for _ in range(iterations)]
    finally:
        algo.stop()


def main(argv: list[str] | None = None) -> int:
    """Entry point: train on a local Ray (loopback only, as ``hdrm sweep`` starts it), print
    each iteration's figures."""
    from hdrm.distributed.ray_backend import connect

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=sorted(ENV_CONFIGS), default="job_pick")
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    with connect(None, num_cpus=2):
        for i, result in enumerate(train(a.mode, a.iterations, a.seed), 1):
            runners = result.get("env_runners", {})
            print(f"iteration {i}: {runners.get('num_env_steps_sampled_lifetime', 0)} env steps, "
                  f"mean episode return {runners.get('episode_return_mean', float('nan')):.2f}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
