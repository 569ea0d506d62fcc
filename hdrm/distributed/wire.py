"""What distributed learners send between processes: numpy arrays, never torch objects.

A rollout worker's fragment (one share of a rollout) and the learner's weights cross process
boundaries through Ray's object store once per rollout. Ray stores numpy arrays as raw buffers
(written once, read without a copy), while a torch tensor goes through torch's own pickling:
about 1 ms for a 1,024-step fragment of the examples' PPO against 0.03 ms for the same arrays
(``benchmarks/bench_distributed.py`` prints the measured cost per fragment). These helpers turn
the learner's objects into numpy before sending and back into tensors after receiving; every
value keeps its dtype and bits, so a rollout played with received weights is the one played
with the originals.

Nothing here imports Ray, and torch only inside the functions (``import hdrm.distributed.wire``
stays light, like the rest of the package's light modules).
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:
    import torch

    from hdrm.agents.buffers import RolloutBatch

logger = logging.getLogger(__name__)


def to_wire(state: Mapping[str, Any]) -> dict[str, Any]:
    """A flat state (``state_dict``) with every tensor as a numpy array on the CPU (other values
    are kept as they are)."""
    return {key: _array(value) for key, value in state.items()}


def from_wire(state: Mapping[str, Any]) -> dict[str, Any]:
    """The state of :func:`to_wire` with its arrays as (writable, owned) tensors again."""
    return {key: _tensor(value) for key, value in state.items()}


def batch_to_wire(batch: RolloutBatch) -> RolloutBatch:
    """The fragment ``batch`` with numpy columns (no copy of CPU tensors)."""
    return type(batch)(*(_array(column) for column in batch))


def join_batches(parts: Sequence[RolloutBatch]) -> RolloutBatch:
    """The fragments (numpy or tensor columns) end to end, in order, as one batch of tensors."""
    import torch

    from hdrm.agents.buffers import RolloutBatch

    return RolloutBatch(*(torch.from_numpy(np.concatenate([_array(c) for c in column]))
                          for column in zip(*parts)))


def generator_to_wire(state: torch.Tensor | None) -> np.ndarray | None:
    """A torch generator's state (a byte tensor) as an array; None stays None."""
    return None if state is None else _array(state)


def generator_from_wire(state: Any) -> torch.Tensor | None:
    """The byte tensor :meth:`torch.Generator.set_state` takes; None stays None."""
    return None if state is None else _tensor(state)


def _array(value: Any) -> Any:
    torch = _torch()
    if torch is not None and isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        return value if value.dtype == torch.bfloat16 else value.numpy()  # numpy has no bf16
    return value


def _tensor(value: Any) -> Any:
    if isinstance(value, np.ndarray):  # arrays read from Ray's store are read-only: copy
        import torch

        return torch.from_numpy(np.array(value, copy=True))
    return value


def _torch() -> Any:
    """torch when something has imported it (a tensor cannot exist otherwise), else None."""
    return sys.modules.get("torch")


__all__ = ["batch_to_wire", "from_wire", "generator_from_wire", "generator_to_wire",
           "join_batches", "to_wire"]
