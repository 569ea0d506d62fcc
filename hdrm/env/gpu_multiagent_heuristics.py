"""Heuristic drivers of the multi-agent GPU environment's two agents.

:func:`heuristic_order_action` plays the ordering agent with a queue order of
:mod:`hdrm.policies.gpu_orders` (``fifo``, ``sjf``, ``drf``, ``tetris``, ``las``) and
:func:`heuristic_place_action` the placing agent with a placement of
:mod:`hdrm.policies.placement` (``first_fit``, ``best_fit``, ``load_balance``, ``dot_product``,
``fgd``, ``price_aware`` ...), so that a learned agent can be paired with a heuristic one.

The order follows the engine's ``"ORDER-PLACEMENT"`` decisions exactly: at each decision instant
the whole queue is ordered once (the keys read the cluster and the tenants as they are at the
start of the instant, as :meth:`~hdrm.core.gpu_scheduler.GpuDecisionCore.schedule` does); the
window's tasks then go in that order, a task that enters the window during the instant (one
before it started) taking its place in it. With backfilling ``none`` the first task of the order that fits nowhere
makes the agent wait (no later task overtakes it); with ``greedy`` the next one that fits goes.
The placement scores the nodes with the engine's own placer (its score cache and tie rule),
so a pair driven through the environment starts the same tasks at the same times on the same
nodes as ``Simulation.run("ORDER-PLACEMENT")`` (with a window at least as long as the queue when
the order is not submission order, since the agent only sees the window).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hdrm.policies.gpu_orders import QUEUE_ORDERS
from hdrm.policies.placement import PLACEMENTS

if TYPE_CHECKING:  # pragma: no cover
    from hdrm.env.gpu_multiagent import GpuMultiAgentEnv


def heuristic_order_action(env: "GpuMultiAgentEnv", order_name: str) -> int:
    """The ordering agent's action under queue order ``order_name``: a window index, or
    ``env.window`` (wait); 0 when the ordering agent is not the one to act.

    Raises:
        ConfigError: an unknown order (with the closest names).
    """
    order = QUEUE_ORDERS.get(order_name, "order_name")
    core = env.core
    if env.phase != "order" or core.done:
        return 0
    window = core.window_jobs()
    ordered = _instant_order(env, order)
    position = {id(job): i for i, job in enumerate(window)}
    fits, shape = core.view.fits, core.sim.core.shape
    greedy = core.config.backfilling == "greedy"
    mask = core.order_mask()
    for job in ordered:
        i = position.get(id(job))
        if i is None:
            continue  # started since the instant began
        if fits(shape(job)):
            return i
        if not greedy:
            break
    if mask[env.window]:
        return env.window
    return int(mask.argmax())  # nothing to wait for: the first task that fits


def heuristic_place_action(env: "GpuMultiAgentEnv", placement_name: str) -> int:
    """The placing agent's action under placement ``placement_name``: the node the engine's
    placer would choose for the chosen task; 0 when the placing agent is not the one to act.

    Raises:
        ConfigError: an unknown placement (with the closest names).
    """
    PLACEMENTS.get(placement_name, "placement_name")
    core = env.core
    if env.phase != "place" or core.chosen is None:
        return 0
    sim_core = core.sim.core
    node = sim_core.placer(placement_name).choose_node(sim_core.shape(core.chosen))
    return 0 if node is None else node


def _instant_order(env: "GpuMultiAgentEnv", order) -> list:
    """The queue in ``order`` as it was at the start of the current decision instant."""
    core = env.core
    cache = env.heuristic_cache
    key = (order.name, core.instant)
    ordered = cache.get(order.name)
    if ordered is None or ordered[0] != key:
        sim = core.sim
        ordered = cache[order.name] = (key, order.order(list(sim.core.queue),
                                                        sim.core.context(sim.now)))
    return ordered[1]
