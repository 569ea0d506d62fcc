"""The FGD paper's own random draws: arrival order and node tie order as its simulator draws them.

The paper's simulator (Go) seeds Go's ``math/rand`` generator with the experiment's seed and
draws, in this order: one integer (logged, unused); a shuffle of the task list sorted by name; the
tuning of the list to ``tuning_ratio`` times the cluster's GPUs (a uniform index per removed or
appended task); ten floats drawn by the scheduler's start-up (observed: with exactly ten, every
published per-seed value of the five deterministic policies is reproduced); and a permutation of
the nodes sorted by name, whose ranks become the prefixes of the node names, so that ties between
equal scores go to the node of lowest rank.

:func:`paper_order` replays that sequence from the generator's raw values (``Int63() >> 31``, the
32 bits that every draw used here reads), shipped for the paper's seeds 42-51 in
``hdrm/data/fgd_paper_draws.npz`` (written by ``benchmarks/fgd_draws.go`` with Go's standard
library). The bounded draws follow Go's rules: ``Intn`` rejects values above the largest multiple
of ``n`` and takes the remainder (a mask for a power of two); the shuffle's draw is the high half of
``value x n`` (a rejection when its low half falls under ``2**32 mod n``); the shuffle swaps
position ``i`` with a draw in ``[0, i]`` for ``i`` from the end; the permutation builds the
inverse ``inside-out`` (``m[i] = m[j]; m[j] = i`` with ``j`` drawn in ``[0, i]``). The tuning
appends copies drawn from the name-sorted list until a copy's *per-GPU* share would pass the
target (the simulator compares that share, not the task's total).
"""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np

from hdrm.errors import ConfigError
from hdrm.policies.gpu_state import TaskShape

logger = logging.getLogger(__name__)

#: The shipped raw values of Go's generator, one array per seed ("42" ... "51").
DRAWS_FILE = Path(__file__).resolve().parents[1] / "data" / "fgd_paper_draws.npz"
#: Floats drawn by the simulator's scheduler start-up between the tuning and the node permutation.
STARTUP_DRAWS = 10
_MASK32 = (1 << 32) - 1


class GoStream:
    """Go ``math/rand`` draws from the raw values ``Int63() >> 31`` of one seed.

    Args:
        values: the raw values, in the generator's order.
        seed: the seed they come from (for errors).
    """

    def __init__(self, values: Sequence[int], seed: int | str = "?") -> None:
        self.values = [int(v) for v in values]
        self.seed = seed
        self.used = 0

    def _next(self) -> int:
        if self.used >= len(self.values):
            raise ConfigError(f"the paper's draws of seed {self.seed} end after "
                              f"{len(self.values):,} values; this task list needs more: use "
                              "--draws numpy")
        self.used += 1
        return self.values[self.used - 1]

    def skip(self, count: int) -> None:
        """Consume ``count`` draws (Go's ``Int``, ``Float64``: one value each)."""
        for _ in range(count):
            self._next()

    def intn(self, n: int) -> int:
        """A uniform integer in ``[0, n)`` as Go's ``Intn`` draws it (``0 < n < 2**31``)."""
        if n & (n - 1) == 0:
            return (self._next() >> 1) & (n - 1)
        limit = (1 << 31) - 1 - (1 << 31) % n
        value = self._next() >> 1
        while value > limit:
            value = self._next() >> 1
        return value % n

    def below(self, n: int) -> int:
        """A uniform integer in ``[0, n)`` as Go's shuffle draws it (multiply and shift)."""
        product = self._next() * n
        if product & _MASK32 < n:
            threshold = ((1 << 32) - n) % n
            while product & _MASK32 < threshold:
                product = self._next() * n
        return product >> 32

    def shuffle(self, items: list) -> None:
        """Shuffle ``items`` in place as Go's ``Shuffle`` does."""
        for i in range(len(items) - 1, 0, -1):
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]

    def perm(self, n: int) -> list[int]:
        """A permutation of ``range(n)`` as Go's ``Perm`` draws it."""
        out = [0] * n
        for i in range(n):
            j = self.intn(i + 1)
            out[i] = out[j]
            out[j] = i
        return out


@lru_cache(maxsize=1)
def _shipped() -> dict[str, np.ndarray]:
    with np.load(DRAWS_FILE) as data:
        return {key: data[key] for key in data.files}


def paper_seeds() -> list[int]:
    """The seeds whose draws are shipped."""
    return sorted(int(s) for s in _shipped())


def load_stream(seed: int) -> GoStream:
    """The shipped draws of ``seed``.

    Raises:
        ConfigError: the seed is not one of the shipped ones.
    """
    values = _shipped().get(str(seed))
    if values is None:
        seeds = paper_seeds()
        raise ConfigError(f"--draws paper: the paper's draws are shipped for seeds "
                          f"{seeds[0]}-{seeds[-1]}, not {seed}; give --seeds within them or "
                          "--draws numpy")
    return GoStream(values.tolist(), seed)


def paper_order(shapes: Sequence[TaskShape], names: Sequence[str], total_milli: int,
                ratio: float, nb_nodes: int, stream: GoStream) -> tuple[np.ndarray, np.ndarray]:
    """The arrival order (indices into ``shapes``) and, per node in name order, its tie rank,
    drawn from ``stream`` in the simulator's sequence (see the module docstring)."""
    by_name = sorted(range(len(shapes)), key=lambda i: names[i])
    stream.skip(1)
    order = list(by_name)
    stream.shuffle(order)
    if ratio > 0:
        order = _tuned(order, by_name, shapes, ratio * total_milli, stream)
    stream.skip(STARTUP_DRAWS)
    ranks = np.array(stream.perm(nb_nodes), dtype=np.int64)
    logger.debug("seed %s: %d draws used", stream.seed, stream.used)
    return np.array(order, dtype=np.int64), ranks


def _tuned(order: list[int], by_name: list[int], shapes: Sequence[TaskShape], target: float,
           stream: GoStream) -> list[int]:
    """The simulator's tuning: random removals down to the target, or copies appended until one's
    per-GPU share would pass it."""
    requested = sum(shapes[i].total_milli for i in order)
    if not any(shapes[i].total_milli for i in by_name):  # it would append copies for ever
        raise ValueError("no task asks a GPU: the requests can never be tuned to the target")
    if requested > target:
        while requested > target and order:
            requested -= shapes[order.pop(stream.intn(len(order)))].total_milli
    elif requested < target:
        while True:
            pick = by_name[stream.intn(len(by_name))]
            if requested + shapes[pick].milli > target:
                break
            order.append(pick)
            requested += shapes[pick].total_milli
    return order
