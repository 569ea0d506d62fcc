"""Ape-X's central replay: the prioritized buffer that the actors fill and the learner samples.

:class:`ApexReplay` is a plain object (tests use it directly); :mod:`hdrm.distributed.apex` runs
it as one Ray actor. Actors send :class:`TransitionBlock` s (their transitions stacked, with the
TD errors they computed as initial priorities); the learner draws batches by priority and sends
back new TD errors. Between a draw and its priority update the actors may have overwritten some
of the drawn slots (the buffer is a ring): every slot carries a write counter, and an update
whose slot was rewritten since the draw is dropped, so a new transition never gets the priority
of the old one.

Memory: :func:`bytes_per_transition` is what one stored transition costs, every array of the
buffer included (two observations, two masks, action, return, discount, write counter and the
sum tree's share); the buffer allocates ``capacity`` times that when it is created.
:meth:`ApexReplay.memory` gives the arrays' bytes and the process's resident set, to check it.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import NamedTuple, Sequence

import numpy as np

from hdrm.agents.replay import PrioritizedReplayBuffer, ReplayBatch, Transition

logger = logging.getLogger(__name__)

#: Bytes of one int64 / float32 / float64 entry.
_I64, _F32, _F64 = 8, 4, 8


class TransitionBlock(NamedTuple):
    """Transitions of one actor, stacked, with their initial TD errors."""

    obs: np.ndarray
    masks: np.ndarray
    actions: np.ndarray
    returns: np.ndarray
    next_obs: np.ndarray
    next_masks: np.ndarray
    discounts: np.ndarray
    td_errors: np.ndarray

    @property
    def size(self) -> int:
        """Number of transitions."""
        return int(self.actions.shape[0])

    def transitions(self) -> list[Transition]:
        """The block's rows as :class:`~hdrm.agents.replay.Transition` s."""
        return [Transition(self.obs[i], self.masks[i], int(self.actions[i]), float(self.returns[i]),
                           self.next_obs[i], self.next_masks[i], float(self.discounts[i]))
                for i in range(self.size)]

    def as_batch(self) -> ReplayBatch:
        """The block as a replay batch of unit weights (to compute its TD errors)."""
        n = self.size
        return ReplayBatch(self.obs, self.masks, self.actions, self.returns, self.next_obs,
                           self.next_masks, self.discounts, np.ones(n, dtype=np.float32),
                           np.zeros(n, dtype=np.int64))


def stack_transitions(transitions: list[Transition]) -> TransitionBlock:
    """Stack transitions into a block (TD errors zero until computed).

    Raises:
        ValueError: no transitions.
    """
    if not transitions:
        raise ValueError("stack_transitions: no transitions")
    return TransitionBlock(
        np.stack([t.obs for t in transitions]).astype(np.float32, copy=False),
        np.stack([t.mask for t in transitions]).astype(bool, copy=False),
        np.array([t.action for t in transitions], dtype=np.int64),
        np.array([t.ret for t in transitions], dtype=np.float32),
        np.stack([t.next_obs for t in transitions]).astype(np.float32, copy=False),
        np.stack([t.next_mask for t in transitions]).astype(bool, copy=False),
        np.array([t.discount for t in transitions], dtype=np.float32),
        np.zeros(len(transitions), dtype=np.float64),
    )


def bytes_per_transition(capacity: int, obs_shape: tuple[int, ...], n_actions: int) -> float:
    """Bytes the replay spends per stored transition, for a buffer of ``capacity``.

    Two float32 observations, two bool masks of ``n_actions``, an int64 action, float32 return
    and discount, an int64 write counter, and the sum tree: ``2 x leaves`` float64 nodes, where
    ``leaves`` is the power of two at or above ``capacity``, shared by the transitions.
    """
    obs = int(np.prod(obs_shape, dtype=np.int64)) * _F32
    leaves = 1 << (int(capacity) - 1).bit_length()
    return 2 * obs + 2 * n_actions + _I64 + 2 * _F32 + _I64 + 2 * leaves * _F64 / capacity


class Sample(NamedTuple):
    """A batch drawn by the learner and the write counters of its slots at the draw."""

    batch: ReplayBatch
    writes: np.ndarray


class ApexReplay:
    """The prioritized buffer of Ape-X, with per-slot write counters.

    Args:
        capacity: transitions kept (the oldest is overwritten).
        obs_shape: shape of one observation.
        n_actions: width of the action masks.
        alpha: priority exponent (0 samples uniformly).
        eps: added to ``|TD error|`` so that every transition can be drawn.
        seed: seed of the sampling generator.
    """

    def __init__(self, capacity: int, obs_shape: tuple[int, ...], n_actions: int,
                 alpha: float = 0.6, eps: float = 1e-6, seed: int = 0) -> None:
        self.buffer = PrioritizedReplayBuffer(capacity, tuple(obs_shape), n_actions, alpha, eps)
        self.writes = np.zeros(int(capacity), dtype=np.int64)
        self.rng = np.random.default_rng((seed, 2))
        self.obs_shape, self.n_actions = tuple(obs_shape), int(n_actions)
        self.added = self.drawn = self.updated = self.stale = 0

    def __len__(self) -> int:
        return len(self.buffer)

    def add(self, block: TransitionBlock) -> int:
        """Store a block with its TD errors as priorities; returns the replay's size."""
        slots = self.buffer.add_rows(block, block.td_errors)
        np.add.at(self.writes, slots, 1)  # a slot the block wrote twice counts twice
        self.added += block.size
        return len(self.buffer)

    def sample(self, batch_size: int, beta: float) -> Sample | None:
        """Draw ``batch_size`` transitions by priority; None while fewer are stored."""
        if len(self.buffer) < batch_size:
            return None
        batch = self.buffer.sample(batch_size, beta, self.rng)
        self.drawn += batch_size
        return Sample(batch, self.writes[batch.indices].copy())

    def exchange(self, updates: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
                 batches: int, batch_size: int, beta: float) -> list[Sample]:
        """Apply the learner's priority updates (``(indices, writes, td_errors)`` of its steps,
        as :meth:`update_priorities`), then draw ``batches`` batches: one call a few gradient
        steps instead of two a step. An empty list while fewer than ``batch_size`` are stored."""
        for indices, writes, td_errors in updates:
            self.update_priorities(indices, writes, td_errors)
        drawn = [self.sample(batch_size, beta) for _ in range(batches)]
        return [d for d in drawn if d is not None]

    def update_priorities(self, indices: np.ndarray, writes: np.ndarray,
                          td_errors: np.ndarray) -> int:
        """Set the priorities of drawn slots not rewritten since the draw; returns how many."""
        indices = np.asarray(indices, dtype=np.int64)
        fresh = self.writes[indices] == np.asarray(writes, dtype=np.int64)
        if fresh.any():
            self.buffer.update_priorities(indices[fresh], np.asarray(td_errors)[fresh])
        kept = int(fresh.sum())
        self.updated += kept
        self.stale += len(indices) - kept
        return kept

    def priorities(self, indices: np.ndarray) -> np.ndarray:
        """The sum tree's priorities of slots ``indices`` (``(|TD| + eps)^alpha``)."""
        return self.buffer.tree.get(np.asarray(indices, dtype=np.int64)).copy()

    def stats(self) -> dict[str, int]:
        """Counters: size, transitions added, drawn, priorities updated and dropped as stale."""
        return {"size": len(self.buffer), "added": self.added, "drawn": self.drawn,
                "updated": self.updated, "stale": self.stale}

    def memory(self) -> dict[str, float]:
        """The buffer's array bytes, the formula's (:func:`bytes_per_transition` x capacity)
        and this process's resident set size in bytes (0 where /proc is missing)."""
        b = self.buffer
        arrays = [b.obs, b.next_obs, b.masks, b.next_masks, b.actions, b.returns, b.discounts,
                  self.writes, b.tree._tree]
        capacity = b.capacity
        return {"arrays_bytes": float(sum(a.nbytes for a in arrays)),
                "formula_bytes": bytes_per_transition(capacity, self.obs_shape, self.n_actions)
                * capacity,
                "rss_bytes": float(resident_bytes())}


def resident_bytes() -> int:
    """This process's resident set size in bytes (Linux ``/proc/self/statm``; 0 elsewhere)."""
    try:
        pages = int(Path("/proc/self/statm").read_text(encoding="ascii").split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")
