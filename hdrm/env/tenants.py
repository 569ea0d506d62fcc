"""The tenants of an environment's episodes: the SLA objectives' accounting and the SLA orders.

With ``tenants`` in its config (:class:`~hdrm.env.config.EnvConfig`), the environment makes the
tenant table of each episode's jobs (:mod:`hdrm.workload.tenant_files`; files are read once),
feeds :class:`~hdrm.env.objectives.SlaAccounting` as jobs end and binds the ``edf``,
``least_laxity``, ``fair_share`` and ``sla_class`` actions to the episode's decision core
(:func:`~hdrm.policies.sla_orders.bind_tenants`). Without it, an SLA objective or action is a
one-line error.
"""

from __future__ import annotations

import logging
from typing import Any, Sequence

from hdrm.env.config import EnvConfig
from hdrm.env.objectives import Objective, SlaAccounting, Tracker
from hdrm.errors import ConfigError
from hdrm.policies.sla_orders import SLA_POLICIES, bind_tenants
from hdrm.results.sla import SlaReport, report_from_outcomes
from hdrm.sim.machine import COMPLETED_SUCCESSFULLY
from hdrm.workload.job import Job, Workload
from hdrm.workload.tenant_files import tenant_builder

logger = logging.getLogger(__name__)


def env_tenants(config: EnvConfig, trace: Workload, objective: Objective) -> "EnvTenants | None":
    """The tenants of an environment over ``trace``, or None without ``config.tenants``.

    Raises:
        ConfigError: an SLA objective without tenants; a bad tenant source, file or SLA.
    """
    if config.tenants is None:
        if getattr(objective, "needs_tenants", False):
            raise ConfigError(f"objective: {config.objective!r} needs tenants and SLAs; give "
                              "tenants (user, group, qos, job, a mapping CSV or a tenants JSON "
                              "file: docs/tenants.rst)")
        return None
    return EnvTenants(tenant_builder(trace, config.tenants, config.sla, "tenants"))


def check_actions(pairs: Sequence[Any], config: EnvConfig) -> None:
    """Refuse SLA orders among the actions of an environment without tenants (one line)."""
    if config.tenants is None and any(
            getattr(getattr(p, "job", None), "name", None) in SLA_POLICIES for p in pairs):
        raise ConfigError("actions.selection: edf, least_laxity, fair_share and sla_class order "
                          "by tenant; give tenants (docs/tenants.rst)")


class EnvTenants:
    """Makes each episode's :class:`Episode` (picklable with the environment).

    Args:
        builder: makes the tenant table of a selection of jobs.
    """

    def __init__(self, builder: Any) -> None:
        self.builder = builder

    def episode(self, sim: Any, tracker: Tracker) -> "Episode":
        """The tenants of ``sim``'s jobs, their accounting started on ``tracker``."""
        table = self.builder(sim.workload.jobs)
        accounting = SlaAccounting(table)
        accounting.start(tracker)
        return Episode(accounting, sim.core)


class Episode:
    """One episode's tenant table, accounting and decision core."""

    def __init__(self, accounting: SlaAccounting, core: Any) -> None:
        self.accounting = accounting
        self.core = core

    @property
    def table(self) -> Any:
        """The episode's :class:`~hdrm.workload.tenants.TenantTable`."""
        return self.accounting.table

    def bind(self, pairs: Sequence[Any]) -> list[Any]:
        """``pairs`` with their SLA orders bound to this episode (GPU pairs as they are)."""
        return [bind_tenants(p, self.accounting.table, self.core) for p in pairs]

    def report(self, result: Any) -> SlaReport:
        """The :class:`~hdrm.results.sla.SlaReport` of the episode's ``result`` so far."""
        return report_from_outcomes(self.table, result.workload.jobs, result.outcomes)

    def ended(self, tracker: Tracker, job: Job, outcome: Any) -> None:
        """``job`` ended (or was rejected) with ``outcome``."""
        ran = outcome.start_s >= 0
        self.accounting.ended(tracker, job, outcome.finish_s if ran else None,
                              outcome.state == COMPLETED_SUCCESSFULLY)
