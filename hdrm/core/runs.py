"""Runs of consecutive core ids: how wide allocations are kept and applied in C-level passes."""

from __future__ import annotations

from typing import Sequence

import numpy as np

#: Allocations of more cores than this are kept run by run on one-core nodes (below it, the
#: core-by-core loops cost less than the C-level passes' setup).
WIDE = 64


def core_runs(cores: Sequence[int]) -> list[tuple[int, int]]:
    """``cores`` as runs of consecutive ids ``(first, last + 1)``, in their order.

    ``[4, 5, 6, 0, 1, 9] -> [(4, 7), (0, 2), (9, 10)]``; wide allocations are split in numpy.
    """
    n = len(cores)
    if n == 0:
        return []
    if n > 256:  # numpy pays off on long lists only
        ids = np.fromiter(cores, dtype=np.int64, count=n)
        cut = np.flatnonzero(np.diff(ids) != 1) + 1
        starts = np.concatenate(([0], cut))
        ends = np.concatenate((cut, [n]))
        return list(zip(ids[starts].tolist(), (ids[ends - 1] + 1).tolist()))
    runs = []
    lo = prev = cores[0]
    for c in cores[1:]:
        if c != prev + 1:
            runs.append((lo, prev + 1))
            lo = c
        prev = c
    runs.append((lo, prev + 1))
    return runs
