"""The heterogeneity-aware placement: the GPU model where a task runs fastest per unit of price.

``price_aware`` ranks a cluster's GPU models for each task by the work it gets done per dollar,
``speed / price``: ``speed`` is the task's relative speed on the model
(:attr:`~hdrm.policies.gpu_state.TaskShape.speeds`, from Gavel's measured throughputs: 1.0 on the
task's fastest model) and ``price`` the model's ``price_usd_per_hour``. Equivalently, it picks the
model on which the task costs least (run time x price). Among the nodes of the best-ranked model
that fit, the one with the least free resources left wins (``best_fit``'s 0..100 score), so that
cheap capacity is packed rather than spread. The score is ``1000 x rank + best_fit``.

Fallback without throughput data (openb tasks): every model is taken as equally fast, so the task
goes to the cheapest allowed model; a task with measured speeds values a model without a
measurement at 0 (it goes there only when nothing else fits; Gavel jobs are constrained to their
measured models anyway). A model priced 0 ranks first.

A task without GPUs goes where the free GPUs its CPU and memory could strand are worth the least
per hour (a node without GPUs, or with all its GPUs busy, first), then best fit.

Prices are given per model; the decision core gives those of the run's platform
(:func:`platform_prices`: a type the platform file defines, or redefines, costs what the file
says). Without prices (a bare cluster, as in the placement-only protocol) they come from the type
library (``hdrm/platform/data/accelerators.json``).
"""

from __future__ import annotations

import logging
from typing import Mapping

import numpy as np

from hdrm.errors import ConfigError
from hdrm.policies.gpu_frag import TaskTypes
from hdrm.policies.gpu_state import MILLI, GpuCluster, TaskShape
from hdrm.policies.placement import PLACEMENTS, BestFit, Placement

logger = logging.getLogger(__name__)

#: Primary scores are multiplied by this, so that the 0..100 best-fit score only breaks ties.
_PRIMARY = 1000


def library_prices(models: list[str]) -> dict[str, float]:
    """Price per GPU-hour of each model, from the shipped type library; a model named as
    traces write it (``NVIDIA A100-SXM4-80GB``) is priced as its library key through the alias
    table (:data:`hdrm.platform.accelerators.ALIASES`).

    Raises:
        ConfigError: a model is neither a library key nor an alias of one (its name and the
            fix are given).
    """
    from hdrm.platform.library import default_library

    types = default_library().accelerator_types
    prices = known_prices(models, types)
    missing = [m for m in models if m not in prices]
    if missing:
        raise ConfigError(f"price_aware: GPU model(s) {', '.join(missing)} not in the type "
                          "library; add them to accelerator_types (with price_usd_per_hour) or "
                          f"pass prices; known: {', '.join(sorted(types))}")
    return prices


def known_prices(models: list[str], types: Mapping) -> dict[str, float]:
    """Price per GPU-hour of the ``models`` that ``types`` (accelerator types by name) holds,
    as keys or through the alias table; the others are left out."""
    from hdrm.platform.accelerators import resolve_model

    keys = {m: resolve_model(m, types) for m in models}
    return {m: types[k].price_usd_per_hour for m, k in keys.items() if k is not None}


def platform_prices(platform) -> dict[str, float]:
    """Price per GPU-hour of every accelerator model of a
    :class:`~hdrm.platform.model.Platform` (its own types included)."""
    return {a.type.name: a.type.price_usd_per_hour for a in platform.accelerators}


def work_per_dollar(shape: TaskShape, models: list[str],
                    prices: np.ndarray) -> np.ndarray:
    """``speed / price`` of the task on each model (``inf`` where the price is 0)."""
    if shape.speeds:
        known = dict(shape.speeds)
        speed = np.array([known.get(m, 0.0) for m in models])
    else:
        speed = np.ones(len(models))
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(prices > 0, speed / np.where(prices > 0, prices, 1.0), np.inf)
    return np.where(speed > 0, value, 0.0)


@PLACEMENTS.register("price_aware")
class PriceAware(Placement):
    """See the module docstring."""

    name = "price_aware"

    def __init__(self, cluster: GpuCluster, types: TaskTypes | None = None,
                 prices: Mapping[str, float] | None = None) -> None:
        super().__init__(cluster, types, prices)
        given = dict(prices) if prices is not None else library_prices(cluster.model_names)
        missing = [m for m in cluster.model_names if m not in given]
        if missing:
            raise ConfigError(f"price_aware: no price for GPU model(s) {', '.join(missing)}; "
                              f"prices given for: {', '.join(sorted(given)) or 'none'}")
        #: price per GPU-hour per model index, then 0 for "no GPU" (model index -1)
        self.model_prices = np.array([float(given[m]) for m in cluster.model_names] + [0.0])
        self._best_fit = BestFit(cluster)
        self._ranks: dict[TaskShape, np.ndarray] = {}

    def model_rank(self, shape: TaskShape) -> np.ndarray:
        """Per model index (last: no GPU), the rank of its work per dollar for the task
        (0 the worst; equal values share a rank)."""
        rank = self._ranks.get(shape)
        if rank is None:
            value = work_per_dollar(shape, self.cluster.model_names, self.model_prices[:-1])
            value = np.append(value, -np.inf)  # a GPU task never fits a node without GPUs
            rank = self._ranks[shape] = np.unique(value, return_inverse=True)[1].astype(float)
        return rank

    def node_scores(self, shape, nodes):
        c = self.cluster
        fit = self._best_fit.node_scores(shape, nodes)
        if shape.gpus:
            return _PRIMARY * self.model_rank(shape)[c.model[nodes]] + fit
        stranded_cents = np.round(c.gpu_left[nodes].sum(axis=1) / MILLI
                                  * self.model_prices[c.model[nodes]] * 100)
        return -_PRIMARY * stranded_cents + fit
