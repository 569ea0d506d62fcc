"""Seeded random periodic task sets: UUniFast utilisations and layered DAGs.

:func:`generate` makes, from a :class:`PeriodicSpec` and a seed (one ``numpy.random.Generator``,
nothing global):

1. the utilisation of each graph, by UUniFast (Bini and Buttazzo, "Measuring the performance of
   schedulability tests", Real-Time Systems 30(1-2), 2005): ``graphs`` values uniform over the
   simplex of sum ``utilisation`` (in cores: 2.0 is the work of two busy cores);
2. per graph, a seed, then a layered DAG of :func:`hdrm.dag.generator.draw` with the spec's
   ``depth``, ``width``, ``density`` and ``ccr`` (one processor, mean task work 1, bandwidth 1);
3. a period log-uniform in ``[period_min_s, period_max_s]`` and the relative deadline
   ``deadline_ratio * period``;
4. the CPU times: the drawn works (each at least 1% of the mean, so that no task is empty) scaled
   so that they add up to ``utilisation_i * period``; each edge's transfer time is its drawn data
   scaled alike, so transfers average ``ccr`` times a task's mean CPU time;
5. per task, with probability ``gpu_fraction``, a GPU time: the CPU time over a speed-up uniform
   in ``[gpu_speedup_min, gpu_speedup_max]``; else CPU only.

The horizon is ``horizon_periods`` times the longest period. Same spec and seed, same task set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

from hdrm.dag.generator import DagSpec, draw
from hdrm.dag.periodic import PeriodicTask, TaskGraph, TaskSet
from hdrm.errors import ConfigError


@dataclass(frozen=True)
class PeriodicSpec:
    """Parameters of a random periodic task set.

    Attributes:
        graphs: number of task graphs (>= 1).
        utilisation: total CPU utilisation, in cores (> 0).
        depth: layers per DAG (>= 1).
        width: mean tasks per layer (>= 1).
        density: probability of an edge to each task of the layer above (0-1).
        ccr: mean transfer time over mean task CPU time (>= 0).
        period_min_s: shortest period (> 0).
        period_max_s: longest period (>= period_min_s).
        deadline_ratio: relative deadline over period (> 0).
        gpu_fraction: probability that a task has a GPU time (0-1).
        gpu_speedup_min: lowest CPU time / GPU time (> 0).
        gpu_speedup_max: highest CPU time / GPU time (>= gpu_speedup_min).
        horizon_periods: horizon in longest periods (> 0).
    """

    graphs: int = 2
    utilisation: float = 1.0
    depth: int = 4
    width: int = 3
    density: float = 0.5
    ccr: float = 0.1
    period_min_s: float = 10.0
    period_max_s: float = 100.0
    deadline_ratio: float = 1.0
    gpu_fraction: float = 0.5
    gpu_speedup_min: float = 2.0
    gpu_speedup_max: float = 10.0
    horizon_periods: float = 10.0

    def __post_init__(self) -> None:
        rules = {
            "graphs": (self.graphs >= 1, "an integer >= 1"),
            "utilisation": (0 < self.utilisation < math.inf, "finite and > 0"),
            "period_min_s": (0 < self.period_min_s < math.inf, "finite and > 0"),
            "period_max_s": (self.period_min_s <= self.period_max_s < math.inf,
                             "finite and >= period_min_s"),
            "deadline_ratio": (0 < self.deadline_ratio < math.inf, "finite and > 0"),
            "gpu_fraction": (0 <= self.gpu_fraction <= 1, "between 0 and 1"),
            "gpu_speedup_min": (0 < self.gpu_speedup_min < math.inf, "finite and > 0"),
            "gpu_speedup_max": (self.gpu_speedup_min <= self.gpu_speedup_max < math.inf,
                                "finite and >= gpu_speedup_min"),
            "horizon_periods": (0 < self.horizon_periods < math.inf, "finite and > 0"),
        }
        for spec_field in fields(self):
            ok, rule = rules.get(spec_field.name, (True, ""))
            if not ok:
                value = getattr(self, spec_field.name)
                raise ConfigError(f"PeriodicSpec.{spec_field.name}: {value!r} is not {rule}")
        self.dag_spec()  # depth, width, density, ccr checked there

    def dag_spec(self) -> DagSpec:
        """The spec of each graph's layered DAG."""
        return DagSpec(depth=self.depth, width=self.width, density=self.density, ccr=self.ccr,
                       heterogeneity=0.0, processors=1, mean_cost_s=1.0, bandwidth_mb_s=1.0)


def uunifast(n: int, total: float, rng: np.random.Generator) -> list[float]:
    """``n`` utilisations uniform over the simplex summing to ``total`` (UUniFast)."""
    left, out = total, []
    for i in range(1, n):
        after = left * rng.random() ** (1.0 / (n - i))
        out.append(left - after)
        left = after
    out.append(left)
    return out


def generate(spec: PeriodicSpec, seed: int) -> TaskSet:
    """Draw a periodic task set (see the module's description)."""
    rng = np.random.default_rng(seed)
    shares = uunifast(spec.graphs, spec.utilisation, rng)
    graphs = [_graph(spec, f"g{i}", share, rng) for i, share in enumerate(shares)]
    horizon = spec.horizon_periods * max(g.period_s for g in graphs)
    return TaskSet(tuple(graphs), horizon, name=f"periodic(seed={seed})")


def _graph(spec: PeriodicSpec, name: str, share: float, rng: np.random.Generator) -> TaskGraph:
    drawn = draw(spec.dag_spec(), int(rng.integers(2 ** 31)))
    period = math.exp(rng.uniform(math.log(spec.period_min_s), math.log(spec.period_max_s)))
    work = [max(w, 0.01) for w in drawn.work]
    scale = share * period / math.fsum(work)
    gpu = rng.random(len(work)) < spec.gpu_fraction
    speedup = rng.uniform(spec.gpu_speedup_min, spec.gpu_speedup_max, size=len(work))
    tasks = tuple(PeriodicTask(f"t{i}", w * scale,
                               w * scale / float(speedup[i]) if gpu[i] else None)
                  for i, w in enumerate(work))
    edges = tuple((s, d, data * scale) for s, d, data in drawn.dag.edges)
    return TaskGraph(name, period, spec.deadline_ratio * period, tasks, edges)
