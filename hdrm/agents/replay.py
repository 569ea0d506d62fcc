"""Experience replay for value learners: a sum tree, n-step transitions and prioritized sampling.

- :class:`SumTree`: leaf priorities with every internal node holding the sum of its children, so
  setting a priority and finding the leaf at a prefix sum both take O(log n) (vectorised over a
  batch with numpy).
- :class:`NStepAccumulator`: turns a stream of steps into n-step transitions
  ``(s_t, a_t, R_t = sum_i gamma^i r_{t+i}, s_{t+n}, gamma^n)``; at an episode end the pending
  steps are emitted with the rewards left and a discount of 0 (no bootstrap past a terminal state).
- :class:`PrioritizedReplayBuffer`: a ring of transitions sampled with probability
  ``p_i / sum p`` where ``p_i = (|delta_i| + eps)^alpha`` (Schaul et al., 2016), with the
  importance-sampling weights ``(N P(i))^-beta`` divided by their batch maximum. ``alpha = 0`` gives
  uniform sampling with unit weights. Masks of both states are stored, so maxima over next actions
  can be restricted to the valid ones.

Memory: ``capacity x 2 x`` one observation (e.g. 20,000 windows of 128 x 8 float32: 164 MB).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any, NamedTuple

import numpy as np

from hdrm.agents.replay_state import pack, unpack


class SumTree:
    """Non-negative priorities of ``capacity`` leaves, with O(log n) update and prefix-sum search.

    Args:
        capacity: number of leaves (at least 1).
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"SumTree capacity must be >= 1, got {capacity}")
        self.capacity = int(capacity)
        self._leaves = 1 << (self.capacity - 1).bit_length()  # a power of two >= capacity
        self._depth = self._leaves.bit_length() - 1
        self._tree = np.zeros(2 * self._leaves, dtype=np.float64)  # node 1 is the root

    @property
    def total(self) -> float:
        """Sum of every priority."""
        return float(self._tree[1])

    def get(self, indices: np.ndarray | int) -> np.ndarray:
        """Priorities of the leaves ``indices``."""
        return self._tree[self._leaves + np.asarray(indices, dtype=np.int64)]

    def update(self, indices: np.ndarray | int, priorities: np.ndarray | float) -> None:
        """Set the priorities of the leaves ``indices`` (a repeated index keeps its last value).

        Raises:
            ValueError: an index outside ``0..capacity-1`` or a negative or non-finite priority.
        """
        idx = np.atleast_1d(np.asarray(indices, dtype=np.int64))
        values = np.broadcast_to(np.asarray(priorities, dtype=np.float64), idx.shape)
        if idx.size and (idx.min() < 0 or idx.max() >= self.capacity):
            raise ValueError(f"SumTree index out of 0..{self.capacity - 1}: {idx.tolist()}")
        if not np.all(np.isfinite(values) & (values >= 0)):
            raise ValueError(f"SumTree priorities must be finite and >= 0, got {values.tolist()}")
        if idx.size == 1:  # the common case (a new transition): scalar steps are faster
            self._update_one(int(idx[0]), float(values[0]))
            return
        nodes = self._leaves + idx
        self._tree[nodes] = values  # numpy assigns in order: the last value of an index wins
        for _ in range(self._depth):  # parents are recomputed from children: repeats are harmless
            nodes = nodes >> 1
            self._tree[nodes] = self._tree[2 * nodes] + self._tree[2 * nodes + 1]

    def _update_one(self, index: int, priority: float) -> None:
        tree = self._tree
        node = self._leaves + index
        tree[node] = priority
        node >>= 1
        while node:
            tree[node] = tree[2 * node] + tree[2 * node + 1]
            node >>= 1

    def find(self, values: np.ndarray) -> np.ndarray:
        """Leaf index of each prefix sum in ``values``: the leaf i with ``S_i <= v < S_i + p_i``.

        ``S_i`` is the sum of the priorities of the leaves before i. Values are clipped to
        ``[0, total)``; only leaves of positive priority are ever returned.

        Raises:
            ValueError: every priority is zero.
        """
        total = self.total
        if total <= 0:
            raise ValueError("SumTree.find: every priority is zero")
        vals = np.clip(np.asarray(values, dtype=np.float64), 0.0, np.nextafter(total, 0.0))
        node = np.ones(vals.shape, dtype=np.int64)
        for _ in range(self._depth):
            left = 2 * node
            left_sum = self._tree[left]
            right = (vals >= left_sum) & (self._tree[left + 1] > 0)
            vals = np.where(right, vals - left_sum, np.minimum(vals, np.nextafter(left_sum, 0.0)))
            node = left + right
        return node - self._leaves


class Transition(NamedTuple):
    """One n-step transition: the return of up to n rewards and the state to bootstrap from."""

    obs: np.ndarray
    mask: np.ndarray
    action: int
    ret: float
    next_obs: np.ndarray
    next_mask: np.ndarray
    discount: float
    """``gamma^n`` to bootstrap from ``next_obs``; 0 when the episode ended within the n steps."""


class NStepAccumulator:
    """Builds n-step transitions from consecutive steps of one episode.

    Args:
        n: steps per transition (1 gives one-step Q-learning).
        gamma: discount factor.
    """

    def __init__(self, n: int, gamma: float) -> None:
        if n < 1:
            raise ValueError(f"n-step returns need n >= 1, got {n}")
        self.n = int(n)
        self.gamma = float(gamma)
        self._steps: deque[tuple[np.ndarray, np.ndarray, int, float]] = deque()

    def __len__(self) -> int:
        return len(self._steps)

    def push(
        self,
        obs: np.ndarray,
        mask: np.ndarray,
        action: int,
        reward: float,
        next_obs: np.ndarray,
        next_mask: np.ndarray,
        done: bool,
    ) -> list[Transition]:
        """Add step ``(obs, mask, action, reward)`` followed by ``next_obs``; return the finished ones.

        When ``done``, every pending step is emitted with discount 0 (``next_obs`` is then only a
        placeholder); otherwise the oldest step is emitted once n steps are pending.
        """
        self._steps.append((obs, mask, int(action), float(reward)))
        if done:
            out = [self._emit(i, next_obs, next_mask, 0.0) for i in range(len(self._steps))]
            self._steps.clear()
            return out
        if len(self._steps) < self.n:
            return []
        out = [self._emit(0, next_obs, next_mask, self.gamma**self.n)]
        self._steps.popleft()
        return out

    def _emit(
        self, first: int, next_obs: np.ndarray, next_mask: np.ndarray, discount: float
    ) -> Transition:
        rewards = [step[3] for step in list(self._steps)[first:]]
        ret = float(sum(r * self.gamma**i for i, r in enumerate(rewards)))
        obs, mask, action, _ = self._steps[first]
        return Transition(obs, mask, action, ret, next_obs, next_mask, discount)

    def clear(self) -> None:
        """Drop the pending steps (an episode cut before its end: nothing to bootstrap from)."""
        self._steps.clear()


class ReplayBatch(NamedTuple):
    """A sampled batch: the transitions' arrays, importance weights and buffer indices."""

    obs: np.ndarray
    masks: np.ndarray
    actions: np.ndarray
    returns: np.ndarray
    next_obs: np.ndarray
    next_masks: np.ndarray
    discounts: np.ndarray
    weights: np.ndarray
    indices: np.ndarray


def importance_weights(probs: np.ndarray, size: int, beta: float) -> np.ndarray:
    """``(size * probs)^-beta`` divided by its maximum (the largest weight is 1)."""
    weights = (size * np.asarray(probs, dtype=np.float64)) ** (-beta)
    return weights / weights.max()


class PrioritizedReplayBuffer:
    """A ring buffer of transitions with proportional prioritized sampling.

    Args:
        capacity: transitions kept (the oldest is overwritten).
        obs_shape: shape of one observation.
        n_actions: width of the action masks.
        alpha: priority exponent; 0 samples uniformly.
        eps: added to ``|delta|`` so no transition has zero probability.
    """

    def __init__(
        self,
        capacity: int,
        obs_shape: tuple[int, ...],
        n_actions: int,
        alpha: float = 0.6,
        eps: float = 1e-6,
    ) -> None:
        self.capacity = int(capacity)
        self.alpha = float(alpha)
        self.eps = float(eps)
        self.tree = SumTree(self.capacity)
        self.obs = np.zeros((self.capacity, *obs_shape), dtype=np.float32)
        # np.zeros (not zeros_like, which writes every byte): pages are taken as slots are written
        self.next_obs = np.zeros(self.obs.shape, dtype=np.float32)
        self.masks = np.zeros((self.capacity, n_actions), dtype=bool)
        self.next_masks = np.zeros(self.masks.shape, dtype=bool)
        self.actions = np.zeros(self.capacity, dtype=np.int64)
        self.returns = np.zeros(self.capacity, dtype=np.float32)
        self.discounts = np.zeros(self.capacity, dtype=np.float32)
        self.max_priority = 1.0  # largest |delta| + eps seen: what new transitions get
        self.pos = 0
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def add(self, t: Transition, td_error: float | None = None) -> int:
        """Store a transition; returns its index.

        Its priority is ``(|td_error| + eps)^alpha`` when ``td_error`` is given (Ape-X's actors
        compute it), else the largest priority seen so far.
        """
        i = self.pos
        raw = self.max_priority if td_error is None else abs(float(td_error)) + self.eps
        if not math.isfinite(raw):
            raise ValueError(f"replay: a new transition's TD error must be finite, got {td_error}")
        self.obs[i], self.masks[i], self.actions[i] = t.obs, t.mask, t.action
        self.returns[i], self.discounts[i] = t.ret, t.discount
        self.next_obs[i], self.next_masks[i] = t.next_obs, t.next_mask
        self.tree.update(i, raw**self.alpha)
        self.max_priority = max(self.max_priority, raw)
        self.pos = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)
        return i

    def add_rows(self, rows: Any, td_errors: np.ndarray) -> np.ndarray:
        """Store stacked transitions, row ``k`` with priority ``(|td_errors[k]| + eps)^alpha``;
        returns the slot of each row. The same slots, priorities and largest priority as
        :meth:`add` row after row, in one vectorised write (a block longer than the capacity
        leaves its last ``capacity`` rows, as the ring would). ``rows`` has the arrays ``obs``,
        ``masks``, ``actions``, ``returns``, ``next_obs``, ``next_masks`` and ``discounts`` (a
        :class:`ReplayBatch`, or an Ape-X actor's block of transitions).

        Raises:
            ValueError: a TD error is not finite, or the rows and TD errors differ in number.
        """
        raw = np.abs(np.asarray(td_errors, dtype=np.float64)) + self.eps
        n = int(rows.actions.shape[0])
        if raw.shape != (n,):
            raise ValueError(f"replay: {n} transitions but TD errors of shape {raw.shape}")
        if not np.all(np.isfinite(raw)):
            raise ValueError("replay: a new transition's TD error must be finite, got "
                             f"{td_errors[~np.isfinite(raw)][0]}")
        slots = (self.pos + np.arange(n, dtype=np.int64)) % self.capacity
        kept = slice(max(0, n - self.capacity), n)  # the rows the ring keeps: no repeated slot
        idx = slots[kept]
        self.obs[idx], self.masks[idx], self.actions[idx] = (rows.obs[kept], rows.masks[kept],
                                                            rows.actions[kept])
        self.returns[idx], self.discounts[idx] = rows.returns[kept], rows.discounts[kept]
        self.next_obs[idx], self.next_masks[idx] = rows.next_obs[kept], rows.next_masks[kept]
        if n:
            self.tree.update(idx, raw[kept] ** self.alpha)
            self.max_priority = max(self.max_priority, float(raw.max()))
        self.pos = (self.pos + n) % self.capacity
        self.size = min(self.size + n, self.capacity)
        return slots

    def sample(self, batch_size: int, beta: float, rng: np.random.Generator) -> ReplayBatch:
        """Draw ``batch_size`` transitions (stratified over the priority mass) with their weights.

        Raises:
            ValueError: the buffer is empty.
        """
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        total = self.tree.total
        bounds = (np.arange(batch_size) + rng.random(batch_size)) * (total / batch_size)
        idx = self.tree.find(bounds)
        weights = importance_weights(self.tree.get(idx) / total, self.size, beta)
        return ReplayBatch(
            self.obs[idx],
            self.masks[idx],
            self.actions[idx],
            self.returns[idx],
            self.next_obs[idx],
            self.next_masks[idx],
            self.discounts[idx],
            weights.astype(np.float32),
            idx,
        )

    #: The per-slot arrays (their filled rows are what :meth:`resume_state` keeps).
    ARRAYS = ("obs", "next_obs", "masks", "next_masks", "actions", "returns", "discounts")

    def resume_state(self) -> dict[str, Any]:
        """The buffer's content, for a resumed training run: the filled slots of each array
        (compressed, the next observations that repeat a later slot's observation left out:
        :mod:`hdrm.agents.replay_state`), the priority tree, the largest priority, the write
        position and the size."""
        import torch

        state = pack({name: getattr(self, name) for name in self.ARRAYS}, self.size,
                     self.capacity)
        state["tree"] = torch.from_numpy(self.tree._tree.copy())
        state.update(max_priority=float(self.max_priority), pos=int(self.pos),
                     size=int(self.size), capacity=int(self.capacity))
        return state

    def load_resume_state(self, state: Any) -> None:
        """Put back what :meth:`resume_state` took (into a buffer of the same capacity and shapes),
        bit for bit.

        Raises:
            ValueError: the saved buffer has another capacity or other row shapes.
        """
        if int(state["capacity"]) != self.capacity:
            raise ValueError(f"replay: the saved buffer holds {int(state['capacity'])} "
                             f"transitions, this one {self.capacity}")
        size = int(state["size"])
        unpack(state, {name: getattr(self, name) for name in self.ARRAYS}, size, self.capacity)
        self.tree._tree[...] = state["tree"].numpy()
        self.max_priority = float(state["max_priority"])
        self.pos, self.size = int(state["pos"]), size

    def update_priorities(self, indices: np.ndarray, td_errors: np.ndarray) -> None:
        """Set the priorities of sampled transitions to ``(|td_error| + eps)^alpha``."""
        raw = np.abs(np.asarray(td_errors, dtype=np.float64)) + self.eps
        self.max_priority = max(self.max_priority, float(raw.max(initial=0.0)))
        self.tree.update(indices, raw**self.alpha)
