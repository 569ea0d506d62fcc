"""Python's cycle collector paused while a long run or its outputs are made.

A run keeps a record of every job it has ended (a million, for a million inference requests),
and the rows of its outputs are made the same way. Each full collection of Python's cyclic
garbage collector walks every tracked object alive, and it runs one whenever the objects promoted
to the oldest generation reach a quarter of those already there, so a growing run sets one off
again and again; at 10**6 requests they cost about 6 % of the simulation (EDF: ~14 %). The
engine's records, heaps and queues hold no reference cycles (``tests/sim/test_collector.py``
checks that a run leaves nothing for the collector), so reference counting frees all they drop
and the collector has nothing to find. :func:`collector_paused` turns it off for a block and
back on (if it was on) on the way out, exception or not; what the block dropped in cycles, if
anything, is collected afterwards as usual.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator

__all__ = ["collector_paused"]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the block, then on again if it was on."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
