"""Runs of consecutive core ids: how wide allocations are kept and applied in C-level passes.

:func:`core_runs` splits a list of ids into runs; :class:`CoreRuns` keeps a job's cores as
runs (both live with the interval sets of :mod:`hdrm.results.records`, which the outputs write).
"""

from __future__ import annotations

from hdrm.results.records import CoreRuns, consecutive_runs

#: Allocations of more cores than this are kept run by run on one-core nodes (below it, the
#: core-by-core loops cost less than the C-level passes' setup).
WIDE = 64

#: ``cores`` as runs of consecutive ids ``(first, last + 1)``, in their order:
#: ``[4, 5, 6, 0, 1, 9] -> [(4, 7), (0, 2), (9, 10)]``.
core_runs = consecutive_runs

__all__ = ["WIDE", "CoreRuns", "core_runs"]
