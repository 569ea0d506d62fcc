"""Tenants and service-level agreements (SLAs) of a workload, as compact side tables.

A tenant owns jobs, has a share (a weight, 1 by default) and an SLA that gives each of its jobs
a deadline:

``relative`` (``k``)
    ``submit + k x run time alone``: the job's run time at the reference speed with nothing else
    on the machine (``Job.run_time_s``).
``latency`` (``seconds``)
    ``submit + target``: a latency target, usually given per SLA class.
``absolute``
    a deadline per job, in the trace's own clock, from a mapping file's ``deadline_s`` column
    (kept when a selection shifts the submission times).
``none``
    no deadline: the job counts in neither the SLA satisfaction nor the miss rate.

SLA classes are named SLAs listed in priority order (the first is the most urgent); a tenant
refers to one, or carries its own SLA, or takes the default SLA.

Which tenant a job belongs to comes from its user (SWF field 12, Batsim JSON ``user_id``), its
group (SWF field 13), its QoS class (openb's ``qos`` column) or a mapping file
(:mod:`hdrm.workload.tenant_files`). Nothing is added to the :class:`~hdrm.workload.job.Job`
objects: a :class:`TenantTable` holds one int32 tenant index and one float64 deadline per job
(12 bytes a job), indexed by ``Job.idx``.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from hdrm.lazy import numpy as np

from hdrm.errors import ConfigError
from hdrm.workload.job import Job

logger = logging.getLogger(__name__)

#: How a job's tenant is found when no mapping names it.
TENANT_SOURCES = ("user", "group", "qos", "job")
#: SLA kinds.
SLA_KINDS = ("relative", "latency", "absolute", "none")


@dataclass(frozen=True)
class Sla:
    """A service-level agreement: how a job's deadline follows from the job.

    Attributes:
        kind: one of :data:`SLA_KINDS`.
        value: ``k`` for ``relative``, the target in seconds for ``latency``; unused otherwise.
    """

    kind: str = "none"
    value: float = 0.0

    def deadline_s(self, job: Job) -> float:
        """The deadline of ``job`` in the workload's clock (``inf``: none; ``absolute``
        deadlines come from the mapping, not from here)."""
        if self.kind == "relative":
            return job.submit_s + self.value * job.run_time_s
        if self.kind == "latency":
            return job.submit_s + self.value
        return math.inf

    def describe(self) -> str:
        """``"relative 3 x run time"``, ``"latency 600 s"``, ``"absolute"`` or ``"none"``."""
        if self.kind == "relative":
            return f"relative {self.value:g} x run time"
        if self.kind == "latency":
            return f"latency {self.value:g} s"
        return self.kind


def parse_sla(text: str, where: str = "--sla") -> Sla:
    """``"relative:3"``, ``"latency:600"``, ``"absolute"`` or ``"none"`` as an :class:`Sla`.

    Raises:
        ConfigError: an unknown kind, or a value that is not a positive number.
    """
    kind, _, value = str(text).strip().partition(":")
    kind = kind.strip().lower()
    if kind not in SLA_KINDS:
        raise ConfigError(f"{where}: unknown SLA kind {kind!r} in {text!r}; choose one of "
                          f"{', '.join(SLA_KINDS)} (e.g. relative:3 or latency:600)")
    if kind in ("absolute", "none"):
        return Sla(kind)
    return Sla(kind, positive(value, f"{where} ({kind})"))


def positive(value: object, where: str) -> float:
    """``value`` as a finite number > 0, else a one-line :class:`ConfigError`."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        number = math.nan
    if not (math.isfinite(number) and number > 0):
        raise ConfigError(f"{where}: expected a positive number, got {value!r}")
    return number


@dataclass(frozen=True)
class Tenant:
    """One tenant.

    Attributes:
        name: its name.
        share: its weight in fair sharing (> 0).
        sla: the SLA of its jobs (None in a spec: the class's SLA, else the default SLA).
        sla_class: the SLA class it belongs to ("" when none).
        rank: the priority of its class, 0 the most urgent; tenants without a class come after
            every class.
    """

    name: str
    share: float = 1.0
    sla: Sla | None = None
    sla_class: str = ""
    rank: int = 0


@dataclass
class TenantTable:
    """The tenants of a workload and, per job (by ``Job.idx``), its tenant and deadline.

    Attributes:
        tenants: the tenants, in order of first appearance in the workload (or of the spec).
        tenant_of: int32 array, the index in ``tenants`` of each job's tenant.
        deadline_s: float64 array, each job's deadline in the workload's clock (``inf``: none).
    """

    tenants: tuple[Tenant, ...]
    tenant_of: np.ndarray
    deadline_s: np.ndarray
    _index: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._index = {t.name: i for i, t in enumerate(self.tenants)}

    def __len__(self) -> int:
        return len(self.tenants)

    def index(self, name: str) -> int:
        """Position of tenant ``name``."""
        return self._index[name]

    @property
    def shares(self) -> np.ndarray:
        """Each tenant's share, as a float64 array."""
        return np.array([t.share for t in self.tenants], dtype=np.float64)

    @property
    def ranks(self) -> np.ndarray:
        """Each tenant's class priority (0 first), as an int32 array."""
        return np.array([t.rank for t in self.tenants], dtype=np.int32)

    def tenant(self, job: Job) -> Tenant:
        """The tenant of ``job``."""
        return self.tenants[int(self.tenant_of[job.idx])]

    def nbytes_per_job(self) -> float:
        """Bytes the per-job arrays hold per job."""
        n = max(len(self.tenant_of), 1)
        return (self.tenant_of.nbytes + self.deadline_s.nbytes) / n


@dataclass(frozen=True)
class TenantSpec:
    """How to give a workload's jobs tenants and SLAs.

    Attributes:
        source: how a job not named by ``mapping`` finds its tenant (:data:`TENANT_SOURCES`):
            its user (tenant ``"user 12"``), group (``"group 3"``), QoS class (``"LS"``) or
            its own id (``"job 7"``).
        mapping: ``"user:12"``, ``"group:3"``, ``"qos:LS"`` or ``"job:7"`` -> tenant name.
        deadlines: ``"job:7"`` -> absolute deadline in the trace's clock (s).
        tenants: tenant name -> :class:`Tenant` (share, SLA, class) for the tenants a spec
            describes; any other tenant has share 1 and the default SLA.
        default_sla: the SLA of tenants without one.
        classes: SLA class name -> :class:`Sla`, in priority order.
        where: where the spec came from, for messages.
    """

    source: str = "user"
    mapping: Mapping[str, str] = field(default_factory=dict)
    deadlines: Mapping[str, float] = field(default_factory=dict)
    tenants: Mapping[str, Tenant] = field(default_factory=dict)
    default_sla: Sla = Sla("relative", 3.0)
    classes: Mapping[str, Sla] = field(default_factory=dict)
    where: str = "--tenants"

    def __post_init__(self) -> None:
        if self.source not in TENANT_SOURCES:
            raise ConfigError(f"{self.where}: unknown tenant source {self.source!r}; choose one "
                              f"of {', '.join(TENANT_SOURCES)} (or give a mapping file)")


def job_key(job: Job, source: str, group_of: Callable[[Job], int] | None = None) -> str:
    """The ``"user:12"``-style key of ``job`` for ``source``."""
    if source == "user":
        return f"user:{job.user_id}"
    if source == "group":
        return f"group:{group_of(job) if group_of is not None else -1}"
    if source == "qos":
        return f"qos:{job.extra.get('qos', '') or 'none'}"
    return f"job:{job.id}"


def _default_name(key: str) -> str:
    kind, _, value = key.partition(":")
    return value if kind == "qos" else f"{kind} {value}"


def build_tenants(jobs: Sequence[Job], spec: TenantSpec,
                  group_of: Callable[[Job], int] | None = None) -> TenantTable:
    """The :class:`TenantTable` of ``jobs`` (``jobs[i].idx == i``) under ``spec``.

    Args:
        jobs: the workload's jobs.
        spec: tenant sources, mapping, shares and SLAs.
        group_of: a job's SWF group id (needed with ``source="group"``).

    Raises:
        ConfigError: an ``absolute`` SLA for a job the mapping gives no deadline.
    """
    n = len(jobs)
    tenant_of = np.empty(n, dtype=np.int32)
    deadline = np.empty(n, dtype=np.float64)
    tenants: list[Tenant] = []
    index: dict[str, int] = {}
    for name in spec.tenants:  # described tenants first, in the spec's order
        index[name] = len(tenants)
        tenants.append(_complete(spec, spec.tenants[name]))
    for job in jobs:
        job_id = f"job:{job.id}"
        name = spec.mapping.get(job_id)
        if name is None:
            key = job_key(job, spec.source, group_of)
            name = spec.mapping.get(key) or _default_name(key)
        t = index.get(name)
        if t is None:
            t = index[name] = len(tenants)
            tenants.append(_complete(spec, Tenant(name)))
        tenant_of[job.idx] = t
        deadline[job.idx] = _deadline(job, tenants[t], spec.deadlines.get(job_id), spec.where)
    table = TenantTable(tuple(tenants), tenant_of, deadline)
    logger.debug("%d tenants over %d jobs (%s)", len(table), n, spec.where)
    return table


def _complete(spec: TenantSpec, tenant: Tenant) -> Tenant:
    """``tenant`` with its class's SLA and rank, or the default SLA."""
    names = list(spec.classes)
    if tenant.sla_class:
        return Tenant(tenant.name, tenant.share, spec.classes[tenant.sla_class],
                      tenant.sla_class, names.index(tenant.sla_class))
    sla = tenant.sla if tenant.sla is not None else spec.default_sla
    return Tenant(tenant.name, tenant.share, sla, "", len(names))


def _deadline(job: Job, tenant: Tenant, absolute: float | None, where: str) -> float:
    if absolute is not None:  # a per-job deadline wins over the tenant's SLA
        return job.submit_s + (absolute - job.trace_submit_s)
    sla = tenant.sla or Sla()
    if sla.kind == "absolute":
        raise ConfigError(f"{where}: tenant {tenant.name!r} has an absolute SLA but job "
                          f"{job.id} has no deadline_s in the mapping; add a row "
                          f"'{job.id},{tenant.name},DEADLINE' or give the tenant another SLA")
    return sla.deadline_s(job)
