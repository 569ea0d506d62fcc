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

What the block made and kept (a run's records: a million objects) would otherwise all sit in the
youngest generation, to be walked by the collection that the next allocation sets off (~0.3 s
per million objects). On the way out they are moved to the oldest generation instead
(``gc.freeze()`` then ``gc.unfreeze()``, which also clears the youngest generation's count):
long-lived, as they are, and walked only by a later full collection, if one comes.
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
            # what the block made and kept lives on (records, rows): moved to the oldest
            # generation, so the young collection due at the next allocation walks none of it
            gc.freeze()
            gc.unfreeze()
            gc.enable()
