"""SLA and fairness metrics per tenant and overall, from job records and a tenant table.

For job ``j`` with submission ``s``, finish ``f``, deadline ``d`` and run time alone ``a`` (its
run time at the reference speed with the machine to itself, :mod:`hdrm.workload.tenants`):

* it **meets its SLA** when it completed successfully and ``f <= d``; jobs without a deadline
  (``d = inf``) count in neither rate; rejected and killed jobs miss;
* **SLA satisfaction** = met / jobs with a deadline; **deadline miss rate** = 1 - satisfaction;
* **tardiness** ``max(0, f - d)`` over the jobs with a deadline that ran (a rejected job has no
  finish: it is a miss but has no tardiness); its mean, and its 99th percentile by nearest rank
  (the ``ceil(0.99 n)``-th smallest value);
* **normalised turnaround** ``NTT = (f - s) / a`` and **normalised progress** ``NP = 1 / NTT``
  (Eyerman and Eeckhout, "System-level performance metrics for multiprogram workloads", IEEE
  Micro 28(3), 2008, with a batch job's turnaround, waiting included, as its shared time);
  **ANTT** = mean NTT; **STP** = sum of NP (the number of jobs' worth of alone progress the
  machine delivered per unit of their time in the system); jobs with ``a <= 0`` are left out;
* **fairness** over tenants: ``x_t`` = mean NP of tenant ``t``'s jobs / its share; **Jain's
  index** ``(sum x_t)^2 / (n sum x_t^2)`` (1: every tenant progresses in proportion to its
  share; 1/n: one tenant takes everything) and the **max/min ratio** ``max x_t / min x_t``.
"""

from __future__ import annotations

import csv
import logging
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from hdrm.lazy import numpy as np

from hdrm.durable import write_text_atomically
from hdrm.errors import ConfigError
from hdrm.results.records import JobResult
from hdrm.workload.job import Job
from hdrm.workload.tenants import TenantTable

logger = logging.getLogger(__name__)

#: The final state of a job that completed (Batsim's name).
COMPLETED = "COMPLETED_SUCCESSFULLY"
#: Columns of out_sla.csv.
SLA_COLUMNS = ("tenant", "share", "sla", "jobs", "with_deadline", "sla_satisfaction",
               "deadline_miss_rate", "tardiness_mean_s", "tardiness_p99_s", "antt", "stp",
               "normalised_progress", "jain_fairness", "max_min_ratio")


@dataclass(frozen=True)
class SlaMetrics:
    """SLA metrics of a set of jobs (one tenant, or all)."""

    jobs: int
    with_deadline: int
    sla_satisfaction: float
    deadline_miss_rate: float
    tardiness_mean_s: float
    tardiness_p99_s: float
    antt: float
    stp: float
    normalised_progress: float


@dataclass(frozen=True)
class SlaReport:
    """Per-tenant and overall SLA metrics of a run.

    Attributes:
        overall: every job.
        tenants: tenant name -> its jobs' metrics (tenants with jobs, in table order).
        shares: tenant name -> share.
        slas: tenant name -> its SLA in words.
        jain_fairness: Jain's index of the tenants' share-normalised progress.
        max_min_ratio: the largest over the smallest share-normalised progress.
    """

    overall: SlaMetrics
    tenants: dict[str, SlaMetrics]
    shares: dict[str, float]
    slas: dict[str, str]
    jain_fairness: float
    max_min_ratio: float


def nearest_rank(values: np.ndarray, q: float) -> float:
    """The ``q``-quantile (0 < q <= 1) by nearest rank: the ``ceil(q n)``-th smallest; nan if empty."""
    if len(values) == 0:
        return math.nan
    ordered = np.sort(values)
    return float(ordered[max(math.ceil(q * len(ordered)), 1) - 1])


def jain_index(values: Sequence[float]) -> float:
    """Jain's fairness index ``(sum x)^2 / (n sum x^2)``; nan for no value, 1 for all zeros."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) == 0:
        return math.nan
    squares = float(np.sum(x * x))
    return 1.0 if squares == 0 else float(np.sum(x)) ** 2 / (len(x) * squares)


def job_metrics(submit_s: np.ndarray, finish_s: np.ndarray, completed: np.ndarray,
                deadline_s: np.ndarray, alone_s: np.ndarray) -> SlaMetrics:
    """:class:`SlaMetrics` of jobs given as arrays (``finish_s`` nan for a job that never ran)."""
    ran = ~np.isnan(finish_s)
    has_deadline = np.isfinite(deadline_s)
    met = completed & ran & has_deadline & (np.nan_to_num(finish_s, nan=np.inf) <= deadline_s)
    n_deadline = int(has_deadline.sum())
    satisfaction = float(met.sum()) / n_deadline if n_deadline else math.nan
    late = ran & has_deadline
    tardiness = np.maximum(finish_s[late] - deadline_s[late], 0.0)
    timed = ran & (alone_s > 0)
    ntt = (finish_s[timed] - submit_s[timed]) / alone_s[timed]
    progress = 1.0 / np.maximum(ntt, 1e-12)
    return SlaMetrics(
        jobs=len(submit_s),
        with_deadline=n_deadline,
        sla_satisfaction=satisfaction,
        deadline_miss_rate=1.0 - satisfaction if n_deadline else math.nan,
        tardiness_mean_s=float(tardiness.mean()) if len(tardiness) else math.nan,
        tardiness_p99_s=nearest_rank(tardiness, 0.99),
        antt=float(ntt.mean()) if len(ntt) else math.nan,
        stp=float(progress.sum()),
        normalised_progress=float(progress.mean()) if len(progress) else math.nan,
    )


def sla_report(table: TenantTable, jobs: Sequence[Job], results: Sequence[JobResult]) -> SlaReport:
    """The :class:`SlaReport` of a run: ``results`` are the out_jobs.csv rows of ``jobs``
    (matched by job id; jobs without a row never ran)."""
    n = len(jobs)
    finish = np.full(n, np.nan)
    completed = np.zeros(n, dtype=bool)
    index = {str(job.id): job.idx for job in jobs}
    for row in results:
        i = index.get(str(row.job_id))
        if i is None or row.starting_time is None:
            continue
        finish[i] = float(row.finish_time)
        completed[i] = row.final_state == COMPLETED
    submit = np.fromiter((j.submit_s for j in jobs), np.float64, n)
    alone = np.fromiter((j.run_time_s for j in jobs), np.float64, n)
    return report_from_arrays(table, submit, finish, completed, alone)


def report_from_outcomes(table: TenantTable, jobs: Sequence[Job],
                         outcomes: Iterable[Any]) -> SlaReport:
    """The :class:`SlaReport` of a run's outcomes (objects with ``job``, ``state``,
    ``start_s`` and ``finish_s``, as the engines give them; a negative start: never ran)."""
    n = len(jobs)
    finish = np.full(n, np.nan)
    completed = np.zeros(n, dtype=bool)
    for outcome in outcomes:
        if outcome.start_s >= 0:
            finish[outcome.job.idx] = outcome.finish_s
            completed[outcome.job.idx] = outcome.state == COMPLETED
    submit = np.fromiter((j.submit_s for j in jobs), np.float64, n)
    alone = np.fromiter((j.run_time_s for j in jobs), np.float64, n)
    return report_from_arrays(table, submit, finish, completed, alone)


def report_from_arrays(table: TenantTable, submit_s: np.ndarray, finish_s: np.ndarray,
                       completed: np.ndarray, alone_s: np.ndarray) -> SlaReport:
    """The :class:`SlaReport` of jobs given as arrays indexed by ``Job.idx``."""
    deadline = table.deadline_s[:len(submit_s)]
    tenant_of = table.tenant_of[:len(submit_s)]
    overall = job_metrics(submit_s, finish_s, completed, deadline, alone_s)
    per: dict[str, SlaMetrics] = {}
    shares: dict[str, float] = {}
    slas: dict[str, str] = {}
    fair: list[float] = []
    for t, tenant in enumerate(table.tenants):
        mine = tenant_of == t
        if not mine.any():
            continue
        metrics = job_metrics(submit_s[mine], finish_s[mine], completed[mine], deadline[mine],
                              alone_s[mine])
        per[tenant.name] = metrics
        shares[tenant.name] = tenant.share
        slas[tenant.name] = tenant.sla.describe() if tenant.sla is not None else "none"
        if not math.isnan(metrics.normalised_progress):
            fair.append(metrics.normalised_progress / tenant.share)
    ratio = max(fair) / min(fair) if fair and min(fair) > 0 else math.nan
    return SlaReport(overall, per, shares, slas, jain_index(fair), ratio)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.10g}"
    return str(value)


def sla_rows(report: SlaReport) -> list[dict[str, Any]]:
    """out_sla.csv rows: one per tenant, then ``overall`` with the fairness columns."""
    rows = []
    for name, metrics in report.tenants.items():
        rows.append({"tenant": name, "share": report.shares[name], "sla": report.slas[name],
                     **asdict(metrics), "jain_fairness": math.nan, "max_min_ratio": math.nan})
    rows.append({"tenant": "overall", "share": math.nan, "sla": "", **asdict(report.overall),
                 "jain_fairness": report.jain_fairness, "max_min_ratio": report.max_min_ratio})
    return rows


def write_sla_csv(report: SlaReport, path: str | Path) -> Path:
    """Write out_sla.csv (:data:`SLA_COLUMNS`; empty cells for undefined values)."""
    path = Path(path)
    lines = [",".join(SLA_COLUMNS)]
    for row in sla_rows(report):
        lines.append(",".join(_quoted(_cell(row[c])) for c in SLA_COLUMNS))
    write_text_atomically(path, "\n".join(lines) + "\n")  # whole or not at all
    logger.debug("wrote %s", path)
    return path


def _quoted(text: str) -> str:
    return f'"{text}"' if "," in text or '"' in text else text


#: The SLA file of a run folder.
SLA_FILE = "out_sla.csv"
#: The overall columns that ``hdrm compare`` shows, in table order.
COMPARE_COLUMNS = ("sla_satisfaction", "deadline_miss_rate", "tardiness_mean_s", "tardiness_p99_s",
                   "antt", "stp", "jain_fairness", "max_min_ratio")


def sla_columns(run_dir: str | Path) -> dict[str, float]:
    """The overall row of a run folder's out_sla.csv as :data:`COMPARE_COLUMNS` (empty cells
    nan); an empty dict when the run has no such file.

    Raises:
        ConfigError: the file has no ``overall`` row or a cell is not a number (one line).
    """
    path = Path(run_dir) / SLA_FILE
    if not path.is_file():
        return {}
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    overall = next((r for r in rows if r.get("tenant") == "overall"), None)
    if overall is None:
        raise ConfigError(f"{path}: no 'overall' row; write it again with hdrm replay --tenants")
    values = {}
    for column in COMPARE_COLUMNS:
        text = (overall.get(column) or "").strip()
        try:
            values[column] = float(text) if text else math.nan
        except ValueError:
            raise ConfigError(f"{path}, row 'overall', column {column}: not a number: "
                              f"{text!r}") from None
    return values


def summary_lines(report: SlaReport) -> list[tuple[str, str]]:
    """``(label, value)`` lines of the overall SLA metrics for a printed summary."""
    o = report.overall
    return [
        ("tenants", f"{len(report.tenants)}"),
        ("SLA satisfaction / deadline misses",
         f"{_pct(o.sla_satisfaction)} / {_pct(o.deadline_miss_rate)} of {o.with_deadline} jobs"),
        ("tardiness mean / p99", f"{_num(o.tardiness_mean_s)} s / {_num(o.tardiness_p99_s)} s"),
        ("ANTT / STP", f"{_num(o.antt, 3)} / {_num(o.stp, 3)}"),
        ("fairness (Jain / max-min)", f"{_num(report.jain_fairness, 3)} / "
                                      f"{_num(report.max_min_ratio, 3)}"),
    ]


def print_summary(report: SlaReport, width: int = 34) -> None:
    """Print :func:`summary_lines` as ``hdrm replay``'s summary rows."""
    for key, value in summary_lines(report):
        print(f"  {key:<{width}}  {value}")


def _pct(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{100 * value:.1f}%"


def _num(value: float, decimals: int = 1) -> str:
    return "n/a" if math.isnan(value) else f"{value:,.{decimals}f}"
