"""Objectives of the environment and their per-step rewards.

Each objective is a number to minimise, computed from the episode's outcomes exactly as
:mod:`hdrm.results.metrics` computes it from out_jobs.csv (means over every job of the episode,
rejected ones included, as Batsim does). The reward of a step is the decrease of the objective's
running value since the previous step, so the episode return telescopes to minus the objective::

    return = sum_t (f_{t-1} - f_t) = f_0 - f_T = -objective      (f_0 = 0)

with these units (the documented scale of each objective):

=====================  ===========================================================  ==========
objective              final value f_T                                              unit
=====================  ===========================================================  ==========
avg_job_slowdown       mean of turnaround / execution (Batsim's mean_slowdown)      1
avg_bounded_slowdown   mean of max(1, (wait + run) / max(run, 10 s))                1
avg_waiting_time       mean waiting time                                            hours
avg_job_completion     mean turnaround time                                         hours
avg_utilization        1 - utilisation, utilisation = core-seconds / (cores x       1
                       makespan)
makespan               latest finish time                                           hours
energy_consumption     energy consumed by the platform                              MJ
edp                    energy x makespan                                            MJ x hours
gpu_cost               GPU cost: sum of count x milli / 1000 x run time x price     USD
gpu_allocation         1 - GPU allocation rate, rate = milli-GPU-seconds /          1
                       (milli-GPU x makespan)
sla_satisfaction       deadline miss rate = 1 - SLA satisfaction, over the jobs     1
                       with a deadline (rejected and killed jobs miss)
tardiness              mean of max(0, finish - deadline) over the jobs with a       hours
                       deadline (a rejected job adds 0; it counts as a miss)
fairness               1 - Jain's index of the tenants' mean normalised progress    1
                       (run time alone / turnaround) per share
sla_energy             miss rate + w x energy per job in J, w the environment's         1
                       ``sla_energy_weight_per_j`` (default 1e-6: 1 per MJ)
=====================  ===========================================================  ==========

The four SLA objectives read the tenants and deadlines of :mod:`hdrm.workload.tenants`
(:class:`SlaAccounting` feeds the tracker as jobs end; the metrics of a finished run are those
of :mod:`hdrm.results.sla`).

``avg_jct`` is another name of ``avg_job_completion`` (the job completion time, JCT, of the GPU
scheduling literature). ``gpu_cost`` and ``gpu_allocation`` count the GPUs of a GPU platform
(:mod:`hdrm.env.gpu_env`; a task's cost is charged when it ends, at its model's
``price_usd_per_hour``) and are refused elsewhere.

For the per-job means the running value adds ``value / N`` as each job ends (N = jobs in the
episode), so by default rewards arrive when jobs end (reward timing ``end``). Time-based
objectives decrease as time advances.

Reward timing ``accrued`` (the slowdown reward of DeepRM, Mao et al., HotNets 2016) also counts
the jobs in the system, submitted and not ended: each adds what it has accrued so far, for a job
``j`` submitted at ``s_j`` at time ``t``

=====================  =================================================
avg_bounded_slowdown   ``(t - s_j) / max(r_j, 10 s)``
avg_job_slowdown       ``(t - s_j) / r_j``
avg_job_completion     ``(t - s_j)`` (in hours)
=====================  =================================================

with ``r_j`` the job's run time in the workload. A job that waits is then penalised while it
waits, not only when it ends, much later; when it ends its accrued term gives way to its
outcome, and at the end no job is left in the system, so the return is still minus the
objective. The other objectives have no per-job accrual and refuse it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from hdrm.registry import Registry

HOUR_S = 3600.0
MJ = 1e6


@dataclass
class Tracker:
    """Running totals of an episode, updated by the environment."""

    nb_jobs: int = 0
    nb_cores: int = 1
    now_s: float = 0.0
    energy_j: float = 0.0
    sum_slowdown: float = 0.0
    sum_bsld: float = 0.0
    sum_wait_s: float = 0.0
    sum_turnaround_s: float = 0.0
    core_seconds: float = 0.0
    last_finish_s: float = 0.0
    accrual_w: float = 0.0
    accrual_ws: float = 0.0
    nb_gpu_milli: int = 0
    gpu_milli_seconds: float = 0.0
    gpu_cost_usd: float = 0.0
    nb_deadlines: int = 0
    sla_missed: int = 0
    tardiness_s: float = 0.0
    #: per tenant: sum of normalised progress of its ended jobs, their number, its share
    tenant_progress: np.ndarray | None = None
    tenant_ended: np.ndarray | None = None
    tenant_shares: np.ndarray | None = None

    def job_ended(self, submit_s: float, start_s: float, finish_s: float, res: int) -> None:
        """Account for one job that ran from ``start_s`` to ``finish_s``."""
        run = finish_s - start_s
        wait = start_s - submit_s
        turnaround = finish_s - submit_s
        self.sum_slowdown += turnaround / run if run > 0 else 1.0
        self.sum_bsld += max(1.0, turnaround / max(run, 10.0))
        self.sum_wait_s += wait
        self.sum_turnaround_s += turnaround
        self.core_seconds += res * run
        if finish_s > self.last_finish_s:
            self.last_finish_s = finish_s

    def gpu_job_ended(self, milli_seconds: float, cost_usd: float) -> None:
        """Account for the GPUs of one task that ran: milli-GPU x seconds, and their cost."""
        self.gpu_milli_seconds += milli_seconds
        self.gpu_cost_usd += cost_usd

    def sla_job_ended(self, tenant: int, deadline_s: float, finish_s: float | None,
                      completed: bool, progress: float | None) -> None:
        """Account for one job of ``tenant`` that ended at ``finish_s`` (None: rejected), its
        ``progress`` = run time alone / turnaround (None: unknown)."""
        if math.isfinite(deadline_s):
            if not (completed and finish_s is not None and finish_s <= deadline_s):
                self.sla_missed += 1
            if finish_s is not None:
                self.tardiness_s += max(0.0, finish_s - deadline_s)
        if progress is not None and self.tenant_progress is not None:
            self.tenant_progress[tenant] += progress
            self.tenant_ended[tenant] += 1

    def in_system(self) -> float:
        """What the jobs in the system have accrued by ``now_s``, ``sum_j w_j (now - s_j)``
        (0 without accrual: see :meth:`accrue`)."""
        return self.accrual_w * self.now_s - self.accrual_ws

    def accrue(self, weight: float, weighted_submit_s: float) -> None:
        """Jobs enter the system (``weight = sum w_j``, ``weighted_submit_s = sum w_j s_j``) or,
        with both negated, leave it when they end (their outcome counts instead)."""
        self.accrual_w += weight
        self.accrual_ws += weighted_submit_s


@dataclass
class Accrual:
    """Reward timing ``accrued``: the episode's accrual weights and, in submission order, the
    submission times and cumulative sums of ``w`` and ``w * submit``; ``entered`` jobs so far."""

    weight: np.ndarray
    sorted_submit: np.ndarray
    cum_w: np.ndarray
    cum_ws: np.ndarray
    entered: int = 0

    @classmethod
    def of(cls, weight: np.ndarray, submit: np.ndarray) -> "Accrual":
        order = np.argsort(submit, kind="stable")
        zero = np.zeros(1)
        return cls(weight, submit[order], np.concatenate([zero, np.cumsum(weight[order])]),
                   np.concatenate([zero, np.cumsum((weight * submit)[order])]))

    def enter_until(self, tracker: Tracker, now: float) -> None:
        """The jobs submitted by ``now`` that have not entered yet start accruing."""
        k = int(np.searchsorted(self.sorted_submit, now, side="right"))
        if k > self.entered:
            i = self.entered
            tracker.accrue(self.cum_w[k] - self.cum_w[i], self.cum_ws[k] - self.cum_ws[i])
            self.entered = k

    def leave(self, tracker: Tracker, idx: int, submit_s: float) -> None:
        """Job ``idx`` ended (or was rejected): its outcome counts instead."""
        tracker.accrue(-self.weight[idx], -self.weight[idx] * submit_s)


class Objective:
    """An objective: :meth:`value` is its running value (final at the episode's end)."""

    name = ""
    doc = ""

    def value(self, t: Tracker, final: bool) -> float:
        """The running value of the objective (the objective itself when ``final``)."""
        raise NotImplementedError

    def accrual_weights(self, run_s: np.ndarray) -> np.ndarray | None:
        """Per-job accrual weights for reward timing ``accrued`` (None: not a per-job mean)."""
        return None


OBJECTIVES: Registry[type[Objective]] = Registry("objective")


def _register(name: str, doc: str, *aliases: str):
    def decorator(cls):
        cls.name = name
        cls.doc = doc
        OBJECTIVES.add(name, cls, *aliases)
        return cls
    return decorator


def _mean(total: float, t: Tracker) -> float:
    return total / t.nb_jobs if t.nb_jobs else 0.0


@_register("avg_job_slowdown", "mean slowdown (turnaround / execution)")
class AvgJobSlowdown(Objective):
    def value(self, t: Tracker, final: bool) -> float:
        return _mean(t.sum_slowdown + (0.0 if final else t.in_system()), t)

    def accrual_weights(self, run_s: np.ndarray) -> np.ndarray:
        return np.divide(1.0, run_s, out=np.zeros(len(run_s)), where=run_s > 0)


@_register("avg_bounded_slowdown", "mean bounded slowdown (threshold 10 s)")
class AvgBoundedSlowdown(Objective):
    def value(self, t: Tracker, final: bool) -> float:
        return _mean(t.sum_bsld + (0.0 if final else t.in_system()), t)

    def accrual_weights(self, run_s: np.ndarray) -> np.ndarray:
        return 1.0 / np.maximum(run_s, 10.0)


@_register("avg_waiting_time", "mean waiting time in hours")
class AvgWaitingTime(Objective):
    def value(self, t: Tracker, final: bool) -> float:
        return _mean(t.sum_wait_s, t) / HOUR_S


@_register("avg_job_completion", "mean turnaround time (job completion time) in hours",
           "avg_jct")
class AvgJobCompletion(Objective):
    def value(self, t: Tracker, final: bool) -> float:
        return _mean(t.sum_turnaround_s + (0.0 if final else t.in_system()), t) / HOUR_S

    def accrual_weights(self, run_s: np.ndarray) -> np.ndarray:
        return np.ones(len(run_s))


@_register("avg_utilization", "1 - utilisation over the makespan")
class AvgUtilization(Objective):
    def value(self, t: Tracker, final: bool) -> float:
        span = t.last_finish_s if final else t.now_s
        if span <= 0:
            return 0.0
        return 1.0 - t.core_seconds / (t.nb_cores * span)


@_register("makespan", "latest finish time in hours")
class Makespan(Objective):
    def value(self, t: Tracker, final: bool) -> float:
        return (t.last_finish_s if final else t.now_s) / HOUR_S


@_register("energy_consumption", "energy of the platform in MJ")
class EnergyConsumption(Objective):
    def value(self, t: Tracker, final: bool) -> float:
        return t.energy_j / MJ


@_register("edp", "energy (MJ) x makespan (hours)")
class EnergyDelayProduct(Objective):
    def value(self, t: Tracker, final: bool) -> float:
        span = t.last_finish_s if final else t.now_s
        return t.energy_j / MJ * span / HOUR_S


class GpuObjective(Objective):
    """An objective over the GPUs: only on a GPU platform."""

    needs_gpus = True


@_register("gpu_cost", "GPU cost in USD (GPU-hours x price, a shared GPU for its share)")
class GpuCost(GpuObjective):
    def value(self, t: Tracker, final: bool) -> float:
        return t.gpu_cost_usd


@_register("gpu_allocation", "1 - GPU allocation rate over the makespan")
class GpuAllocation(GpuObjective):
    def value(self, t: Tracker, final: bool) -> float:
        span = t.last_finish_s if final else t.now_s
        if span <= 0 or not t.nb_gpu_milli:
            return 0.0
        return 1.0 - t.gpu_milli_seconds / (t.nb_gpu_milli * span)


#: Default weight of the energy per job in ``sla_energy``, per joule (1 per MJ).
SLA_ENERGY_WEIGHT_PER_J = 1e-6
#: The same default per MJ (its former name).
SLA_ENERGY_WEIGHT = SLA_ENERGY_WEIGHT_PER_J * MJ


def _miss_rate(t: Tracker) -> float:
    return t.sla_missed / t.nb_deadlines if t.nb_deadlines else 0.0


@_register("sla_satisfaction", "deadline miss rate, 1 - SLA satisfaction (needs tenants)")
class SlaSatisfaction(Objective):
    needs_tenants = True

    def value(self, t: Tracker, final: bool) -> float:
        return _miss_rate(t)


@_register("tardiness", "mean tardiness over jobs with a deadline, in hours (needs tenants)")
class Tardiness(Objective):
    needs_tenants = True

    def value(self, t: Tracker, final: bool) -> float:
        return t.tardiness_s / t.nb_deadlines / HOUR_S if t.nb_deadlines else 0.0


@_register("fairness", "1 - Jain's index of share-normalised progress per tenant (needs tenants)")
class Fairness(Objective):
    needs_tenants = True

    def value(self, t: Tracker, final: bool) -> float:
        if t.tenant_progress is None:
            return 0.0
        seen = t.tenant_ended > 0
        if not seen.any():
            return 0.0
        x = t.tenant_progress[seen] / t.tenant_ended[seen] / t.tenant_shares[seen]
        squares = float(np.sum(x * x))
        return 0.0 if squares == 0 else 1.0 - float(np.sum(x)) ** 2 / (len(x) * squares)


@_register("sla_energy", "miss rate + weight x energy per job in J (the environment's "
           "sla_energy_weight_per_j, default 1 per MJ; needs tenants)")
class SlaEnergy(Objective):
    needs_tenants = True
    #: Weight per joule of the energy per job; the environment sets its
    #: ``sla_energy_weight_per_j`` here (:func:`hdrm.env.tenants.env_tenants`).
    weight_per_j = SLA_ENERGY_WEIGHT_PER_J

    def value(self, t: Tracker, final: bool) -> float:
        per_job = t.energy_j / t.nb_jobs if t.nb_jobs else 0.0
        return _miss_rate(t) + self.weight_per_j * per_job


class SlaAccounting:
    """Feeds a :class:`Tracker` the SLA terms of each job that ends, from a tenant table.

    Args:
        table: the episode's :class:`~hdrm.workload.tenants.TenantTable`.
    """

    def __init__(self, table: Any) -> None:
        self.table = table

    def start(self, tracker: Tracker) -> None:
        """Size the tracker's per-tenant sums and count the jobs with a deadline."""
        n = len(self.table)
        tracker.nb_deadlines = int(np.isfinite(self.table.deadline_s).sum())
        tracker.tenant_progress = np.zeros(n)
        tracker.tenant_ended = np.zeros(n)
        tracker.tenant_shares = self.table.shares

    def ended(self, tracker: Tracker, job: Any, finish_s: float | None, completed: bool) -> None:
        """``job`` ended at ``finish_s`` (None: rejected); ``completed``: successfully."""
        progress = None
        if finish_s is not None and job.run_time_s > 0 and finish_s > job.submit_s:
            progress = job.run_time_s / (finish_s - job.submit_s)
        tracker.sla_job_ended(int(self.table.tenant_of[job.idx]),
                              float(self.table.deadline_s[job.idx]), finish_s, completed, progress)


#: How rewards are timed (see the module's docstring).
REWARD_TIMINGS = ("end", "accrued")


def accrues(objective: Objective) -> bool:
    """Whether ``objective`` supports reward timing ``accrued``."""
    return objective.accrual_weights(np.ones(1)) is not None


def make_objective(name: str, where: str = "objective") -> Objective:
    """Instantiate the objective registered as ``name``."""
    return OBJECTIVES.get(name, where)()
