"""Batsim's platform size limit (``--mmax``, ``--mmax-workload``) for ``hdrm serve``.

Batsim 4.2.1 (``src/batsim.cpp``, ``machines.cpp``) keeps the first M compute hosts in resource
order (by name), M being ``--mmax`` when it is > 0, the largest ``nb_res`` of the workloads with
``--mmax-workload``, or the smaller of the two with both; the other hosts stay in the platform
but are no resource (no id, no job, not in the energy totals). An M larger than the number of
compute hosts aborts Batsim ("Impossible to compute on M=... machines"); ``--mmax`` 0 or
negative is no limit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence, TypeVar

from hdrm.errors import ConfigError

T = TypeVar("T")


def machine_count(mmax: int, by_workload: bool, workloads: Sequence[str | Path]) -> int | None:
    """How many compute hosts Batsim keeps (None: all of them).

    Args:
        mmax: ``--mmax`` (0 or less: no limit).
        by_workload: ``--mmax-workload``: at most the largest ``nb_res`` of ``workloads``.
        workloads: the workload files (already read and checked: ``nb_res`` >= 1).
    """
    limit = mmax if mmax > 0 else None
    if by_workload and workloads:
        largest = max(_nb_res(path) for path in workloads)
        limit = largest if limit is None else min(limit, largest)
    return limit


def keep_machines(hosts: Sequence[T], count: int | None, platform: str | Path) -> list[T]:
    """The first ``count`` of ``hosts`` (in resource order).

    Raises:
        ConfigError: ``count`` is more than there are hosts, as Batsim refuses it.
    """
    if count is None:
        return list(hosts)
    if count > len(hosts):
        raise ConfigError(f"--mmax/--mmax-workload: {count} machines, but {platform} describes "
                          f"only {len(hosts)} compute hosts (Batsim 4: 'Impossible to compute on "
                          f"M={count} machines'); ask for {len(hosts)} at most")
    return list(hosts[:count])


def _nb_res(path: str | Path) -> int:
    with open(path, encoding="utf-8") as handle:
        return int(json.load(handle)["nb_res"])
