"""The MAPPO rollout: one record per learned decision, advantages by GAE over the record sequence.

A *record* is what one PPO ratio is taken over. Under MAPPO each phase is a record of its own:
an ``order`` record holds the order agent's action and log-probability, a ``place`` record the
place agent's, and the other agent's head is absent from it (``has_order`` / ``has_place``), so
a step where an agent was inactive never enters that agent's policy loss. Under the factored
single-agent ablation, the place phase is folded into the record of the order phase that chose
its job: one joint action ``(job, node)`` whose log-probability is the sum of the two heads'.

Every record keeps both agents' observations (the order observation of its first phase, the
place observation of its place phase, zeros when it has none), the value the critic gave its
first phase, and the sum of the rewards until the next record.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

import numpy as np
import torch

from hdrm.agents.buffers import gae

#: Observation arrays of a record, by name: (agent, key in that agent's observation).
OBS_KEYS = {
    "jobs": ("order", "jobs"),
    "cluster": ("order", "cluster"),
    "order_mask": ("order", "action_mask"),
    "job": ("place", "job"),
    "nodes": ("place", "nodes"),
    "place_mask": ("place", "action_mask"),
}
_MASKS = ("order_mask", "place_mask")
#: Per-record scalars, with their dtypes.
SCALARS = {
    "phase": np.int64, "has_order": np.bool_, "has_place": np.bool_, "order_action": np.int64,
    "place_action": np.int64, "log_prob": np.float32, "value": np.float32,
    "reward": np.float64, "done": np.bool_,
}


def observation_arrays(observations: Mapping[str, Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """The six arrays of a record from a ParallelEnv's ``{agent: observation}`` (copies)."""
    out = {}
    for name, (agent, key) in OBS_KEYS.items():
        dtype = np.bool_ if name in _MASKS else np.float32
        value = np.asarray(observations[agent][key])
        out[name] = (value != 0) if dtype is np.bool_ else np.array(value, dtype=np.float32)
    return out


def stack_steps(steps: list[dict[str, np.ndarray]]) -> dict[str, torch.Tensor]:
    """A batch of observation dicts as tensors (each key stacked on a new first axis)."""
    return {name: torch.from_numpy(np.stack([s[name] for s in steps])) for name in OBS_KEYS}


class MultiRollout:
    """The records of a rollout, across episode boundaries."""

    def __init__(self) -> None:
        self.obs: list[dict[str, np.ndarray]] = []
        self.scalars: dict[str, list] = {name: [] for name in SCALARS}

    def __len__(self) -> int:
        return len(self.obs)

    def open(self, obs: dict[str, np.ndarray], phase: int, value: float) -> None:
        """Start a record at a decision of agent ``phase`` (0 order, 1 place) valued ``value``."""
        self.obs.append(obs)
        start = {"phase": phase, "has_order": False, "has_place": False, "order_action": 0,
                 "place_action": 0, "log_prob": 0.0, "value": value, "reward": 0.0,
                 "done": False}
        for name, item in start.items():
            self.scalars[name].append(item)

    def act(self, phase: int, action: int, log_prob: float,
            place_obs: dict[str, np.ndarray] | None = None) -> None:
        """Put an agent's action in the open record (a place phase's observation with it)."""
        head = "order" if phase == 0 else "place"
        self.scalars[f"has_{head}"][-1] = True
        self.scalars[f"{head}_action"][-1] = int(action)
        self.scalars["log_prob"][-1] += float(log_prob)
        if place_obs is not None:
            for name in ("job", "nodes", "place_mask"):
                self.obs[-1][name] = place_obs[name]

    def reward(self, reward: float, done: bool) -> None:
        """Add a reward to the open record; ``done`` ends the episode after it. A reward with no
        open record of this episode (its first steps were driven by heuristics) is dropped."""
        if self.obs and not self.scalars["done"][-1]:
            self.scalars["reward"][-1] += float(reward)
            self.scalars["done"][-1] = self.scalars["done"][-1] or bool(done)

    @property
    def last_done(self) -> bool:
        """Whether the last record ended an episode (nothing to bootstrap from)."""
        return bool(self.scalars["done"][-1]) if self.obs else True

    def finish(self, last_value: float, gamma: float, lam: float) -> dict[str, torch.Tensor]:
        """Advantages and returns (GAE over the records), everything as tensors; then clear.

        Args:
            last_value: value of the state after the last record (unused when it ended an episode).
            gamma: discount per record.
            lam: GAE lambda.
        """
        arrays = {name: np.asarray(v, dtype=SCALARS[name]) for name, v in self.scalars.items()}
        advantages, returns = gae(arrays["reward"], arrays["value"].astype(np.float64),
                                  arrays["done"], last_value, gamma, lam)
        batch = stack_steps(self.obs)
        batch.update({name: torch.from_numpy(a) for name, a in arrays.items()})
        batch["advantages"] = torch.from_numpy(advantages.astype(np.float32))
        batch["returns"] = torch.from_numpy(returns.astype(np.float32))
        self.__init__()
        return batch


def minibatches(batch: Mapping[str, torch.Tensor], size: int, generator: torch.Generator
                ) -> Iterator[dict[str, torch.Tensor]]:
    """Shuffled minibatches of ``size`` records (the last one smaller), from a seeded generator."""
    n = int(batch["phase"].shape[0])
    order = torch.randperm(n, generator=generator)
    for start in range(0, n, size):
        index = order[start:start + size]
        yield {name: tensor[index] for name, tensor in batch.items()}


__all__ = ["MultiRollout", "OBS_KEYS", "SCALARS", "minibatches", "observation_arrays",
           "stack_steps"]
