"""Place tasks one by one with a placement policy, caching node scores per task shape.

A placement's score of a node depends only on that node's state and the task's shape, so the
:class:`Placer` keeps, per distinct shape, the score of every node and the node version it was
computed at; each placement changes one node, so a new task recomputes only the nodes that
changed since its shape was last scored (vectorised). Choice: the highest score; ties go to

* ``ties="shuffled"``: the node first in an order of the nodes drawn once per run with the run's
  generator (the rule of the FGD paper's simulator: its Kubernetes scheduler is patched to take
  the first name among equal scores, and it renames every node at start-up with a prefix from a
  random permutation, so the first name is the first node of a random order fixed for the run);
* ``ties="name"``: the node first in name order (deterministic: hand-checked examples);
* ``ties="random"``: a node drawn uniformly at each choice (stock Kubernetes).

The difference matters for policies with many equal scores: ``gpu_clustering`` and
``gpu_packing`` score every node 0 for a task without GPUs, so all such tasks go to the first
node in the tie order that fits; in name order they pile onto the same few nodes run after run.
"""

from __future__ import annotations

import numpy as np

from hdrm.errors import ConfigError
from hdrm.policies.gpu_state import GpuCluster, TaskShape
from hdrm.policies.placement import Placement


#: How ties between equal best scores are broken.
TIE_RULES = ("shuffled", "name", "random")


class Placer:
    """Places tasks on a :class:`GpuCluster` with one :class:`Placement`.

    Args:
        placement: the policy (bound to the cluster).
        rng: the run's generator (the shuffled order, random ties, random choices).
        ties: ``"shuffled"``, ``"name"`` or ``"random"`` (see the module docstring); the
            shuffled order is drawn here, so creating the placer advances ``rng``.
        tie_rank: with ``ties="shuffled"``, a given order instead of drawing one: the rank of
            each node, in name order (the FGD paper's draws,
            :func:`hdrm.fragmentation.paper_draws.paper_order`); ``rng`` is then not advanced.
    """

    def __init__(self, placement: Placement, rng: np.random.Generator,
                 ties: str = "name", tie_rank: np.ndarray | None = None) -> None:
        if ties not in TIE_RULES:
            raise ConfigError(f"ties: unknown rule {ties!r}; choose one of: {', '.join(TIE_RULES)}")
        self.ties = ties
        self.placement = placement
        self.cluster: GpuCluster = placement.cluster
        self.rng = rng
        self._cache: dict[TaskShape, tuple[np.ndarray, np.ndarray]] = {}
        self._all = np.arange(self.cluster.nb_nodes)
        #: each node's rank in the tie order ("shuffled": a random permutation of the name order)
        self.tie_rank = self.cluster.name_rank
        if ties == "shuffled":
            ranks = rng.permutation(self.cluster.nb_nodes) if tie_rank is None else tie_rank
            if len(ranks) != self.cluster.nb_nodes:
                raise ConfigError(f"tie_rank: {len(ranks)} ranks for {self.cluster.nb_nodes} nodes")
            self.tie_rank = np.asarray(ranks)[self.cluster.name_rank]

    def scores(self, shape: TaskShape) -> np.ndarray:
        """Current scores of every node for the shape (``-inf`` where it does not fit)."""
        entry = self._cache.get(shape)
        version = self.cluster.version
        if entry is None:
            entry = (self.placement.score(shape, self._all), version.copy())
            self._cache[shape] = entry
            return entry[0]
        scores, seen = entry
        stale = np.flatnonzero(seen != version)
        if len(stale):
            scores[stale] = self.placement.score(shape, stale)
            seen[stale] = version[stale]
        return scores

    def choose_node(self, shape: TaskShape) -> int | None:
        """The node for the task (best score, ties by the tie rule), or None when it fits
        nowhere; nothing changes (a random tie draws from the generator)."""
        scores = self.scores(shape)
        best = scores.max()
        if best == -np.inf:
            return None
        ties = np.flatnonzero(scores == best)
        if len(ties) == 1:
            return int(ties[0])
        if (self.placement.ties or self.ties) != "random":
            return int(ties[np.argmin(self.tie_rank[ties])])
        return int(ties[self.rng.integers(len(ties))])

    def choose(self, shape: TaskShape) -> tuple[int, tuple[int, ...]] | None:
        """The node and GPUs for the task, or None when it fits nowhere (nothing changes)."""
        node = self.choose_node(shape)
        if node is None:
            return None
        return node, self.placement.choose_gpus(node, shape, self.rng)

    def place(self, shape: TaskShape) -> tuple[int, tuple[int, ...]] | None:
        """Choose and allocate; returns the (node, GPUs), or None when the task fails."""
        choice = self.choose(shape)
        if choice is not None:
            self.cluster.allocate(choice[0], shape, choice[1])
        return choice
