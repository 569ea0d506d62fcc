"""Queue orders by tenant and SLA: EDF, least laxity, weighted fair share, SLA-class priority.

They order by what a :class:`~hdrm.workload.tenants.TenantTable` says of each job, so they are
registered (by name, like every job selection) as templates and become usable once bound to a
run's table with :func:`bind_tenants`; a template used unbound says so in one line.

``edf``
    Earliest deadline first: smallest deadline ``d`` first; jobs without a deadline last.
``least_laxity``
    Least laxity first: smallest ``d - now - e`` first, ``e`` the scheduler's estimate of the
    remaining time (the requested time, else the run time: what backfilling assumes). A queued
    job has not started, so its remaining time is all of ``e``, and as ``now`` is the same for
    every queued job the order is that of ``d - e``.
``fair_share``
    Weighted fair share: the tenant with the least usage per share first, usage being the
    core-seconds its jobs have received so far (running jobs up to ``now``); ties (and jobs of
    the same tenant) in submission order.
``sla_class``
    Priority by SLA class: the jobs of the most urgent class first (the order of the classes in
    the tenant spec; tenants without a class last), submission order within a class.

With EASY backfilling the first job of the order that does not fit gets a reservation and later
jobs start only where they do not delay it, so the job with the earliest deadline (or least
laxity, or most urgent class) is never delayed by the jobs behind it; those behind are started
out of order only into holes that leave its reservation intact. Deadlines are respected where the
machine can respect them: a job whose deadline is already lost is not dropped but keeps its
place in the order (its laxity is negative, it comes first).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import Any

from hdrm.lazy import numpy as np

from hdrm.errors import ConfigError
from hdrm.policies.backfill import estimated_duration_s
from hdrm.policies.job_selection import JobPolicy
from hdrm.policies.sla_names import SLA_POLICIES  # noqa: F401 (re-exported; registers the names)
from hdrm.workload.job import Job
from hdrm.workload.tenants import TenantTable

logger = logging.getLogger(__name__)

class TenantUsage:
    """Core-seconds each tenant's jobs have received, kept up to date as jobs start and end.

    Args:
        table: the run's tenants.
    """

    def __init__(self, table: TenantTable) -> None:
        self.table = table
        self.shares = table.shares
        self._done = np.zeros(len(table))  # core-seconds up to ``_since``
        self._cores = np.zeros(len(table))  # cores held now
        self._since = np.zeros(len(table))

    def __call__(self, job: Job, now: float, sign: int) -> None:
        """``job`` started (``sign`` 1) or left the machine (-1) at ``now``."""
        t = int(self.table.tenant_of[job.idx])
        self._done[t] += self._cores[t] * (now - self._since[t])
        self._since[t] = now
        self._cores[t] += sign * job.res

    def usage(self, now: float) -> np.ndarray:
        """Core-seconds per tenant by ``now``."""
        return self._done + self._cores * (now - self._since)


def _reader(values: np.ndarray) -> Any:
    """``values`` read one item at a time as Python numbers: a memoryview of the array (no
    numpy scalar made per read, the same value), or the array itself when it has no buffer."""
    try:
        return memoryview(np.ascontiguousarray(values))
    except (TypeError, ValueError, BufferError):
        return values


class _TableKey:
    """A key reading the run's :class:`~hdrm.workload.tenants.TenantTable` by job (its
    memoryviews are made again when a pickled copy is loaded: environments are copied)."""

    def __init__(self, table: TenantTable) -> None:
        self.table = table
        self._read()

    def _read(self) -> None:
        self.deadline = _reader(self.table.deadline_s)
        self.tenant_of = _reader(self.table.tenant_of)

    def __getstate__(self) -> dict[str, Any]:
        return {"table": self.table}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.table = state["table"]
        self._read()


class _Deadline(_TableKey):
    def __call__(self, job: Job, now: float) -> float:
        return float(self.deadline[job.idx])


class _Laxity(_TableKey):
    def __call__(self, job: Job, now: float) -> float:
        d = float(self.deadline[job.idx])
        return d - estimated_duration_s(job) if math.isfinite(d) else math.inf


class _ClassRank(_TableKey):
    def _read(self) -> None:
        super()._read()
        self.rank = self.table.ranks.tolist()

    def __call__(self, job: Job, now: float) -> float:
        return float(self.rank[self.tenant_of[job.idx]])


class _FairShare(_TableKey):
    def __init__(self, usage: TenantUsage) -> None:
        self.usage = usage
        super().__init__(usage.table)

    def _read(self) -> None:
        super()._read()
        self._at: float | None = None
        self._per_share: list[float] = []

    def __call__(self, job: Job, now: float) -> float:
        if self._at != now:  # one usage vector per decision, not per job
            self._per_share = (self.usage.usage(now) / self.usage.shares).tolist()
            self._at = now
        return self._per_share[self.tenant_of[job.idx]]

    def __getstate__(self) -> dict[str, Any]:
        return {"table": self.table, "usage": self.usage}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.usage = state["usage"]
        super().__setstate__(state)


def bind_tenants(pair: Any, table: TenantTable, core: Any) -> Any:
    """``pair`` (a :class:`~hdrm.policies.pairs.PolicyPair`) ready for a run with ``table``: an
    SLA policy gets the table (and, for
    ``fair_share``, a :class:`TenantUsage` that ``core``, the run's decision core, keeps up to
    date); any other pair is returned as it is.

    Raises:
        ConfigError: ``sla_class`` with tenants none of which has a class.
    """
    name = getattr(getattr(pair, "job", None), "name", None)  # GPU pairs have no job policy
    if name not in SLA_POLICIES:
        return pair
    if name == "edf":
        key, dynamic = _Deadline(table), False
    elif name == "least_laxity":
        key, dynamic = _Laxity(table), False
    elif name == "sla_class":
        if all(t.sla_class == "" for t in table.tenants):
            raise ConfigError("policy 'sla_class': no tenant has an SLA class; give a tenants "
                              "JSON file with 'classes' and a 'class' per tenant")
        key, dynamic = _ClassRank(table), False
    else:
        usage = TenantUsage(table)
        core.usage_hooks.append(usage)
        key, dynamic = _FairShare(usage), True
    bound = JobPolicy(name, key, dynamic, pair.job.doc)
    logger.debug("policy %s bound to %d tenants", name, len(table))
    return dataclasses.replace(pair, job=bound)

