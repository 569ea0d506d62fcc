"""The tenant-aware job selections by name, registered as templates without their machinery.

``edf``, ``least_laxity``, ``fair_share`` and ``sla_class`` order jobs by what a run's tenant
table says (:mod:`hdrm.policies.sla_orders`, which binds them). Their names are valid policies
everywhere (``hdrm replay --policy edf``, the lists of valid names in error messages), so they
are registered here, where a template needs only its name and its definition: a run that uses
none of them never loads the tenants' code. A template used unbound says so in one line.
"""

from __future__ import annotations

from hdrm.errors import ConfigError
from hdrm.policies.job_selection import JOB_POLICIES, JobPolicy
from hdrm.workload.job import Job

__all__ = ["SLA_POLICIES"]

#: The tenant-aware job selections and their definitions.
SLA_POLICIES = {
    "edf": "Earliest deadline first: smallest deadline first (needs tenants and SLAs).",
    "least_laxity": "Least laxity first: smallest deadline - now - requested time first "
                    "(needs tenants and SLAs).",
    "fair_share": "Weighted fair share: the tenant with the least core-seconds received per "
                  "share first, then submission order (needs tenants).",
    "sla_class": "Priority by SLA class: most urgent class first, then submission order "
                 "(needs tenants with SLA classes).",
}


class _Unbound:
    """The key of a template: refuses to order, naming what is missing."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, job: Job, now: float) -> float:
        raise ConfigError(f"policy {self.name!r} orders jobs by tenant and SLA; give the run "
                          "tenants (hdrm replay --tenants user|group|qos|FILE)")


def _register() -> None:
    """Register the templates as job selections (once, when this module is first imported)."""
    for name, doc in SLA_POLICIES.items():
        if name not in JOB_POLICIES:
            JOB_POLICIES.add(name, JobPolicy(name, _Unbound(name), True, doc))


_register()
