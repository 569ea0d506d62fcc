"""The tenants of an environment's episodes: the SLA objectives' accounting and the SLA orders.

With ``tenants`` in its config (:class:`~hdrm.env.config.EnvConfig`), the environment makes the
tenant table of each episode's jobs (:mod:`hdrm.workload.tenant_files`; files are read once),
feeds :class:`~hdrm.env.objectives.SlaAccounting` as jobs end and binds the ``edf``,
``least_laxity``, ``fair_share`` and ``sla_class`` actions to the episode's decision core
(:func:`~hdrm.policies.sla_orders.bind_tenants`). Without it, an SLA objective or action is a
one-line error.

For a learner in ``job_pick`` mode it also offers what a window of queued jobs cannot show by
itself (the waiting times of the ``job_window`` observation are on a scale of days):

* the window order ``laxity`` (``window_order`` of :class:`~hdrm.env.config.EnvConfig`): the
  window shows the queued jobs that can still meet their deadline, least laxity first (laxity
  ``d - now - e``, ``e`` the run time the scheduler assumes), then the lost ones (negative
  laxity) in submission order, then jobs without a deadline. Under overload the oldest queued
  jobs are lost ones, and a window in submission order would show nothing else;
* the observation ``job_window_sla``: ``job_window`` with two columns before the real-job flag,
  ``laxity`` (the laxity as a fraction of the job's SLA budget ``d - s``, clipped to [0, 1]) and
  ``lost`` (1 when the laxity is negative: the deadline cannot be met any more).
"""

from __future__ import annotations

import logging
from typing import Any, Sequence

import numpy as np

from hdrm.env.config import EnvConfig
from hdrm.env.job_window import JOB_FEATURES, JobWindowObservation
from hdrm.env.objectives import Objective, SlaAccounting, Tracker
from hdrm.env.observations import OBSERVATIONS
from hdrm.errors import ConfigError
from hdrm.policies.backfill import estimated_duration_s
from hdrm.policies.sla_orders import SLA_POLICIES, bind_tenants
from hdrm.results.sla import SlaReport, report_from_outcomes
from hdrm.sim.machine import COMPLETED_SUCCESSFULLY
from hdrm.workload.job import Job, Workload
from hdrm.workload.tenant_files import tenant_builder

logger = logging.getLogger(__name__)


def env_tenants(config: EnvConfig, trace: Workload, objective: Objective) -> "EnvTenants | None":
    """The tenants of an environment over ``trace``, or None without ``config.tenants``.

    The objective gets the configuration's ``sla_energy_weight_per_j`` when it has a weight
    (``sla_energy``).

    Raises:
        ConfigError: an SLA objective, the ``laxity`` window order or the ``job_window_sla``
            observation without tenants; a bad tenant source, file or SLA.
    """
    if hasattr(objective, "weight_per_j"):
        objective.weight_per_j = config.sla_energy_weight_per_j
    if config.tenants is None:
        if config.window_order == "laxity" or config.observation == "job_window_sla":
            raise ConfigError("window_order 'laxity' and observation 'job_window_sla' read "
                              "deadlines; give tenants (docs/tenants.rst)")
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
        return Episode(accounting, sim.core, sim.workload.jobs)


class Episode:
    """One episode's tenant table, accounting and decision core."""

    def __init__(self, accounting: SlaAccounting, core: Any, jobs: Sequence[Job] = ()) -> None:
        self.accounting = accounting
        self.core = core
        self._estimate = np.array([estimated_duration_s(j) for j in jobs], dtype=float)
        self._budget = np.array([j.submit_s for j in jobs], dtype=float)
        if len(jobs):
            self._budget = self.table.deadline_s - self._budget

    def laxity(self, idx: np.ndarray, now: float) -> np.ndarray:
        """Laxity ``d - now - e`` of the jobs at positions ``idx`` (inf without a deadline)."""
        return self.table.deadline_s[idx] - now - self._estimate[idx]

    def laxity_columns(self, idx: np.ndarray, now: float) -> tuple[np.ndarray, np.ndarray]:
        """The ``laxity`` (fraction of the SLA budget left, in [0, 1]; 1 without a deadline)
        and ``lost`` (0/1) columns of the jobs at positions ``idx``."""
        lax = self.laxity(idx, now)
        with np.errstate(invalid="ignore", divide="ignore"):
            frac = np.where(np.isfinite(lax), lax / self._budget[idx], 1.0)
        return np.clip(np.nan_to_num(frac), 0.0, 1.0), (lax < 0).astype(float)

    def laxity_window(self, queue: Sequence[Job], now: float, size: int) -> list[Job]:
        """The first ``size`` jobs of ``queue`` in the ``laxity`` window order (see the
        module docstring)."""
        if len(queue) <= 1:
            return list(queue[:size])
        idx = np.fromiter((j.idx for j in queue), dtype=np.int64, count=len(queue))
        lax = self.laxity(idx, now)
        finite = np.isfinite(lax)
        group = np.where(~finite, 2, np.where(lax >= 0, 0, 1))  # feasible, lost, no deadline
        key = np.where(group == 0, lax, 0.0)  # lost ones and those without: submission order
        order = np.lexsort((np.arange(len(queue)), key, group))[:size]
        return [queue[i] for i in order]

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


@OBSERVATIONS.register("job_window_sla")
class JobWindowSlaObservation(JobWindowObservation):
    """``job_window`` with the ``laxity`` and ``lost`` columns (see the module docstring)."""

    name = "job_window_sla"
    features = JOB_FEATURES[:6] + ("laxity", "lost") + JOB_FEATURES[6:]

    def extra_columns(self, rows: np.ndarray, window: list, idx: np.ndarray, fits: np.ndarray
                      ) -> None:
        episode = self.env._sla
        rows[:, 6], rows[:, 7] = episode.laxity_columns(idx, self.env.sim.now)
