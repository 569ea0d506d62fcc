"""Policy/value networks of the built-in learners.

Every network maps a batch of observations ``(..., *obs_shape)`` to action logits ``(..., n)`` and
state values ``(...)``:

- ``mlp``: a tanh multilayer perceptron on the flattened observation (1-D ``policy_pair``
  observations), with separate actor and critic bodies.
- ``kernel``: for 2-D ``job_pick`` observations (a window of K jobs x F features), the same small
  MLP scores every job row, giving one logit per job (RLScheduler's "kernel" network), so permuting
  the rows permutes the logits. It uses ReLU (about 3x cheaper than tanh on CPU, which matters as
  it runs once per row). The value head reads a mean-pooled encoding of the rows. When the
  action space has K + 1 actions, the extra ("void") action gets a learned bias logit.
- ``attention``: as ``kernel``, but rows first exchange information through a self-attention
  encoder (no positional encoding, so still permutation-equivariant) with a summary token of the
  cluster state; padding rows are masked out of the attention, and the value is read from the
  encoded summary token.
- ``factored``: for ``policy_pair`` actions named ``JOB-CORE`` (the 36 pairs or a selection of
  them), an MLP body with one head of job-selection logits and one of core-selection logits; the
  logit of a pair is the sum of its two parts. The policy over pairs is then a product of a job
  choice and a core choice (before masking), so a change of job order does not drag the placement
  along, and every pair sharing a part learns from it.

``auto`` picks ``kernel`` for 2-D observations with K or K + 1 actions and ``mlp`` otherwise.
Each network has default hidden sizes (:data:`DEFAULT_HIDDEN`); the per-job networks are small
because they run once per job row (RLScheduler's kernel used 32, 16, 8).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from gymnasium import spaces

from hdrm.agents.job_row_networks import (  # the per-job networks, importable from here
    WINDOW_CLUSTER_COLUMNS,
    WINDOW_REAL_COLUMN,
    AttentionNetwork,
    KernelNetwork,
    _JobRowNetwork,
)
from hdrm.agents.network_base import PolicyValueNetwork, _layer, mlp  # noqa: F401
from hdrm.errors import ConfigError
from hdrm.registry import Registry, suggest

#: Network classes by name (``pybatsim.agent.params.network``).
NETWORKS: Registry[type] = Registry("policy network")

#: Hidden layer sizes of each network when ``pybatsim.agent.hidden`` is not given.
DEFAULT_HIDDEN: dict[str, tuple[int, ...]] = {
    "mlp": (64, 64),
    "kernel": (32, 16, 8),
    "attention": (32, 32),
    "factored": (64, 64),
}


@NETWORKS.register("mlp")
class MLPNetwork(PolicyValueNetwork):
    """Actor and critic MLPs on the flattened observation.

    Args:
        obs_shape: shape of one observation.
        n_actions: number of actions.
        hidden: hidden layer sizes.
    """

    def __init__(
        self, obs_shape: tuple[int, ...], n_actions: int, hidden: Sequence[int], **_: object
    ) -> None:
        super().__init__()
        self.obs_shape = tuple(obs_shape)
        n_in = int(np.prod(self.obs_shape))
        self.actor = mlp(n_in, hidden, n_actions, out_gain=0.01)
        self.critic = mlp(n_in, hidden, 1, out_gain=1.0)

    def _flat(self, obs: torch.Tensor) -> torch.Tensor:
        batch = obs.shape[: obs.dim() - len(self.obs_shape)]
        return obs.reshape(*batch, -1)

    def logits(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor(self._flat(obs))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(self._flat(obs)).squeeze(-1)


def pair_parts(action_names: Sequence[str], where: str) -> tuple[list[str], list[str]]:
    """The job and core part of every ``JOB-CORE`` action name, in action order.

    Raises:
        ConfigError: a name without a ``-`` between two non-empty parts.
    """
    jobs, cores = [], []
    for name in action_names:
        job, sep, core = str(name).partition("-")
        if not (sep and job and core):
            raise ConfigError(
                f"{where}: 'factored' needs policy_pair actions named JOB-CORE, got the action "
                f'{name!r}; use "mlp"'
            )
        jobs.append(job)
        cores.append(core)
    return jobs, cores


@NETWORKS.register("factored")
class FactoredPairNetwork(MLPNetwork):
    """``mlp`` whose actor ends in a job-selection head and a core-selection head.

    The logit of the action ``JOB-CORE`` is ``job_logit[JOB] + core_logit[CORE]``.

    Args:
        obs_shape: shape of one observation.
        n_actions: number of actions.
        hidden: hidden layer sizes.
        action_names: one ``JOB-CORE`` name per action.
    """

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        n_actions: int,
        hidden: Sequence[int],
        action_names: Sequence[str] = (),
        where: str = "pybatsim.agent.params.network",
        **_: object,
    ) -> None:
        if len(action_names) != n_actions:
            raise ConfigError(
                f"{where}: 'factored' needs the name of each of the {n_actions} actions, "
                f"the environment gives {len(action_names)}; use \"mlp\""
            )
        jobs, cores = pair_parts(action_names, where)
        job_names, core_names = sorted(set(jobs)), sorted(set(cores))
        super().__init__(obs_shape, n_actions, hidden)
        n_in = int(np.prod(self.obs_shape))
        self.actor = mlp(n_in, hidden, None)
        width = hidden[-1] if hidden else n_in
        self.job_head = _layer(width, len(job_names), 0.01)
        self.core_head = _layer(width, len(core_names), 0.01)
        self.register_buffer("job_index", torch.tensor([job_names.index(j) for j in jobs]))
        self.register_buffer("core_index", torch.tensor([core_names.index(c) for c in cores]))

    def logits(self, obs: torch.Tensor) -> torch.Tensor:
        body = self.actor(self._flat(obs))
        jobs, cores = self.job_head(body), self.core_head(body)
        return jobs[..., self.job_index] + cores[..., self.core_index]


NETWORKS.add("kernel", KernelNetwork)
NETWORKS.add("attention", AttentionNetwork)


def build_network(
    name: str,
    observation_space: spaces.Space,
    n_actions: int,
    hidden: Sequence[int],
    *,
    heads: int = 4,
    layers: int = 1,
    real_column: int | None = WINDOW_REAL_COLUMN,
    cluster_columns: Sequence[int] = WINDOW_CLUSTER_COLUMNS,
    action_names: Sequence[str] | None = None,
    where: str = "pybatsim.agent.params.network",
) -> PolicyValueNetwork:
    """Build the network ``name`` (or pick one when ``name`` is ``"auto"``) for the given spaces.

    ``real_column`` and ``cluster_columns`` only concern the ``attention`` network; their defaults
    follow hdrm's ``job_window`` layout and are dropped for windows of fewer than 2 features.
    ``action_names`` (the environment's) are needed by the ``factored`` network only.

    Raises:
        ConfigError: unknown name, an observation space that is not a Box, a per-job network
            asked for observations that are not a ``K x F`` window with K or K + 1 actions, or a
            column outside the window's features, or a ``factored`` network without
            ``JOB-CORE`` action names.
    """
    name = resolve_network(name, observation_space, n_actions, where)
    shape = tuple(int(d) for d in observation_space.shape)
    cls = NETWORKS.get(name, where)
    if issubclass(cls, _JobRowNetwork):
        _check_job_rows(name, shape, n_actions, where)
    if cls is FactoredPairNetwork:
        return cls(shape, n_actions, hidden, action_names=action_names or (), where=where)
    if cls is not AttentionNetwork:
        return cls(shape, n_actions, hidden, heads=heads, layers=layers)
    if hidden[0] % heads:
        raise ConfigError(
            f"pybatsim.agent.params.heads: {heads} heads do not divide the width {hidden[0]} "
            "(pybatsim.agent.hidden); pick heads dividing it"
        )
    real, cluster = _window_columns(shape[1], real_column, tuple(cluster_columns))
    return cls(
        shape, n_actions, hidden, heads=heads, layers=layers, real_column=real, cluster_columns=cluster
    )


def _window_columns(
    n_features: int, real: int | None, cluster: tuple[int, ...]
) -> tuple[int | None, tuple[int, ...]]:
    """Check the attention network's columns against ``n_features`` (defaults may be dropped)."""
    if (real, cluster) == (WINDOW_REAL_COLUMN, WINDOW_CLUSTER_COLUMNS) and n_features < 2:
        return None, ()
    for key, column in (("real_column", real), *(("cluster_columns", c) for c in cluster)):
        if column is not None and not -n_features <= column < n_features:
            raise ConfigError(
                f"pybatsim.agent.params.{key}: column {column} is outside the {n_features} "
                f"features of a job row; use -{n_features}..{n_features - 1}"
            )
    return real, cluster


def resolve_network(name: str, observation_space: spaces.Space, n_actions: int, where: str) -> str:
    """The network name ``"auto"`` stands for with these spaces (other names are returned as given).

    Raises:
        ConfigError: the observation space is not a Box.
    """
    if not isinstance(observation_space, spaces.Box):
        raise ConfigError(
            f"{where}: the built-in networks need a Box observation space, got {observation_space}"
        )
    if name != "auto":
        if name not in NETWORKS:
            choices = ["auto", *NETWORKS.names()]
            raise ConfigError(
                f"{where}: unknown policy network {name!r}; {suggest(str(name), choices)}"
                f"choose one of: {', '.join(choices)}"
            )
        return name
    shape = observation_space.shape
    return "kernel" if len(shape) == 2 and n_actions in (shape[0], shape[0] + 1) else "mlp"


def _check_job_rows(name: str, shape: tuple[int, ...], n_actions: int, where: str) -> None:
    if len(shape) != 2:
        raise ConfigError(
            f"{where}: {name!r} needs 2-D job_pick observations (K jobs x F features), "
            f'got shape {shape}; use "mlp"'
        )
    if n_actions not in (shape[0], shape[0] + 1):
        raise ConfigError(
            f"{where}: {name!r} needs {shape[0]} or {shape[0] + 1} actions (one per job row, "
            f'plus void), the action space has {n_actions}; use "mlp"'
        )
