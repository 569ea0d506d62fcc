"""Seeded random layered DAGs, in the manner of Topcuoglu et al.'s parametric graph generator.

A draw (:func:`draw`) makes, from a :class:`DagSpec` and a seed (one ``numpy.random.Generator``,
nothing global):

1. ``depth`` layers; each layer holds a number of tasks drawn uniformly from ``1 .. 2 * width - 1``
   (mean ``width``), numbered layer by layer (``t0``, ``t1`` ...);
2. for each task of layers 1 and up, an edge from each task of the layer above with probability
   ``density``, and always at least one (a parent drawn uniformly when none came): no task but
   those of layer 0 is an entry;
3. a mean cost per task, ``w(i)``, uniform in ``[0, 2 * mean_cost_s]``;
4. the cost matrix. Unrelated machines (``related=False``, the paper's ``beta``): ``cost(i, p)``
   uniform in ``w(i) * [1 - heterogeneity / 2, 1 + heterogeneity / 2]``. Related machines
   (``related=True``): a speed per processor, uniform in ``[1 - heterogeneity / 2, 1 +
   heterogeneity / 2]``, and ``cost(i, p) = w(i) / speed(p)`` (the work ``w(i)`` at speed 1);
5. the data of each edge, uniform in ``[0, 2 * ccr * mean_cost_s * bandwidth_mb_s]``, so that a
   transfer takes ``ccr`` times a task's mean cost on average (communication-to-computation ratio);
6. a uniform network of ``processors`` processors linked at ``bandwidth_mb_s`` (no latency).

The same spec and seed always give the same DAG.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

from hdrm.dag.model import Dag, Network
from hdrm.errors import ConfigError


@dataclass(frozen=True)
class DagSpec:
    """Parameters of a random layered DAG.

    Attributes:
        depth: number of layers (>= 1).
        width: mean number of tasks per layer (>= 1).
        density: probability of an edge between a task and each task of the layer above (0-1).
        ccr: communication-to-computation ratio: mean transfer time over mean cost (>= 0).
        heterogeneity: spread of a task's costs (or of the speeds) around the mean, 0 to < 2.
        processors: number of processors (>= 1).
        mean_cost_s: mean computation cost of a task in seconds (> 0).
        bandwidth_mb_s: bandwidth of every link in MB/s (> 0).
        related: related machines (cost = work / speed) instead of unrelated costs.
    """

    depth: int = 5
    width: int = 4
    density: float = 0.5
    ccr: float = 1.0
    heterogeneity: float = 0.5
    processors: int = 3
    mean_cost_s: float = 10.0
    bandwidth_mb_s: float = 1.0
    related: bool = False

    def __post_init__(self) -> None:
        rules = {
            "depth": (self.depth >= 1, "an integer >= 1"),
            "width": (self.width >= 1, "an integer >= 1"),
            "density": (0 <= self.density <= 1, "between 0 and 1"),
            "ccr": (0 <= self.ccr < math.inf, "finite and >= 0"),
            "heterogeneity": (0 <= self.heterogeneity < 2, "in [0, 2)"),
            "processors": (self.processors >= 1, "an integer >= 1"),
            "mean_cost_s": (0 < self.mean_cost_s < math.inf, "finite and > 0"),
            "bandwidth_mb_s": (0 < self.bandwidth_mb_s < math.inf, "finite and > 0"),
        }
        for spec_field in fields(self):
            ok, rule = rules.get(spec_field.name, (True, ""))
            if not ok:
                value = getattr(self, spec_field.name)
                raise ConfigError(f"DagSpec.{spec_field.name}: {value!r} is not {rule}")


@dataclass(frozen=True)
class RandomDag:
    """A drawn DAG with what it was drawn from.

    Attributes:
        dag: the DAG.
        work: per task, its mean cost ``w(i)`` (its work at speed 1 on related machines).
        speeds: per processor, its speed on related machines; empty for unrelated ones.
    """

    dag: Dag
    work: tuple[float, ...]
    speeds: tuple[float, ...]


def draw(spec: DagSpec, seed: int) -> RandomDag:
    """Draw a random layered DAG (see the module's description)."""
    rng = np.random.default_rng(seed)
    layers = _layer_sizes(spec, rng)
    edges_by_index = _edges(layers, spec.density, rng)
    n = sum(layers)
    work = rng.uniform(0.0, 2.0 * spec.mean_cost_s, size=n)
    low, high = 1.0 - spec.heterogeneity / 2, 1.0 + spec.heterogeneity / 2
    if spec.related:
        speeds = rng.uniform(low, high, size=spec.processors)
        costs = [[float(w / s) for s in speeds] for w in work]
    else:
        speeds = np.empty(0)
        spread = rng.uniform(low, high, size=(n, spec.processors))
        costs = [[float(w * f) for f in row] for w, row in zip(work, spread)]
    mean_data = spec.ccr * spec.mean_cost_s * spec.bandwidth_mb_s
    data = rng.uniform(0.0, 2.0 * mean_data, size=len(edges_by_index))
    edges = tuple((s, d, float(x)) for (s, d), x in zip(edges_by_index, data))
    network = Network.uniform(spec.processors, spec.bandwidth_mb_s)
    dag = Dag(tuple(f"t{i}" for i in range(n)), tuple(tuple(r) for r in costs), edges, network,
              name=f"random(seed={seed})")
    return RandomDag(dag, tuple(float(w) for w in work), tuple(float(s) for s in speeds))


def random_dag(spec: DagSpec, seed: int) -> Dag:
    """The DAG of :func:`draw`."""
    return draw(spec, seed).dag


def _layer_sizes(spec: DagSpec, rng: np.random.Generator) -> list[int]:
    return [int(k) for k in rng.integers(1, 2 * spec.width, size=spec.depth)]


def _edges(layers: list[int], density: float, rng: np.random.Generator) -> list[tuple[int, int]]:
    """Edges between consecutive layers, each with probability ``density``, one parent at least."""
    edges: list[tuple[int, int]] = []
    first = 0
    for above, size in zip(layers, layers[1:]):
        below = first + above
        links = rng.random((size, above)) < density
        lonely = rng.integers(0, above, size=size)
        for row in range(size):
            parents = np.flatnonzero(links[row])
            if parents.size == 0:
                parents = lonely[row:row + 1]
            edges.extend((first + int(p), below + row) for p in parents)
        first = below
    return edges
