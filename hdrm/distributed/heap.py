"""Worker processes keep what they built before their work out of Python's cyclic garbage collector.

A rollout worker or an Ape-X actor is a process of its own that imports torch, numpy, Ray and
hdrm, reads its trace and builds its environments and agent before it plays a single step:
about 345,000 objects that stay alive until the process ends. Python's collector traverses every
tracked object in each full (generation 2) collection, and it runs one whenever the objects
promoted to the oldest generation since the last one reach a quarter of those already there;
the episodes' simulations promote many, so a fresh worker ran two full collections in its first
~1,000 steps, each about 0.19 s of its CPU (a worker of the examples' PPO collects at ~3,500
steps per CPU second: 0.38 s is a fifth of a 512-step share's CPU over the first rollouts).

:func:`freeze_setup` collects once, then moves every object alive into the collector's
permanent generation (:func:`gc.freeze`): later collections traverse only what the work itself
creates (a few thousand objects), and what the setup built is never freed, as it would not have
been. A process calls it once, when its setup is done; it is for processes that hdrm owns (a Ray
worker), not for the caller's own process.
"""

from __future__ import annotations

import gc
import logging

logger = logging.getLogger(__name__)


def freeze_setup(what: str) -> int:
    """Collect garbage, then freeze every object alive in this process (see the module doc).

    Args:
        what: the process's role, for the log line.

    Returns:
        The number of objects frozen (:func:`gc.get_freeze_count`).
    """
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    logger.debug("%s: %d objects built at setup frozen out of garbage collection", what, frozen)
    return frozen


__all__ = ["freeze_setup"]
