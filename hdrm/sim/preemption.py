"""Preemption of running requests at block boundaries (PREMA-style): the option and its rules.

The option (``SimulationConfig.preemption``) is one of:

``none`` (default)
    Jobs run to their end once started.
``request``
    Preemption at request boundaries only: a running request is never suspended; the queue is
    re-ordered at every decision, so a more urgent request overtakes queued ones when a request
    ends. This is the non-preemptive baseline and runs exactly as ``none``.
``block:SECONDS``
    A request's work is cut into blocks of ``SECONDS`` of its run time alone on the core it
    first started on (the scenario's layer blocks: a DNN request is a chain of layers, and a
    block groups the layers that run in ``SECONDS`` at full speed). When a request of a higher
    priority is queued and cannot start, a running request of a lower priority is suspended at
    its next block boundary: the blocks it completed are kept, and the rest of its work is
    queued again with its original submit time and tenant. Resuming costs
    ``preemption_overhead_s`` (checkpoint and restore time, default 0), added to the resumed
    part as work that lasts that long at the core's nominal speed.

Priority is the configured job selection's order: a smaller key first (EDF's earlier deadline,
least laxity's smaller laxity, ``sla_class``'s more urgent class, ``sjf``'s shorter job...). A
queued request preempts a running one only when its key is strictly smaller; selections without
a key (``fcfs``, ``random``) or ordering by predictions cannot preempt and are refused with
``block``. Only ``parallel_homogeneous`` jobs (every inference request) are cut into blocks;
``delay`` jobs run to their end.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from hdrm.errors import ConfigError
from hdrm.policies.job_selection import JobPolicy
from hdrm.workload.job import Job

logger = logging.getLogger(__name__)

#: The values of the option, ``block`` taking a block size (``block:SECONDS``).
PREEMPTION_MODES = ("none", "request", "block")


@dataclass(frozen=True)
class Preemption:
    """A parsed preemption option.

    Attributes:
        mode: ``"none"``, ``"request"`` or ``"block"``.
        block_s: block size, seconds of run time alone at the core's nominal speed (``block``).
        overhead_s: checkpoint and restore time added when a suspended request resumes.
    """

    mode: str = "none"
    block_s: float = 0.0
    overhead_s: float = 0.0

    @property
    def suspends(self) -> bool:
        """True when running requests may be suspended (``block``)."""
        return self.mode == "block"


def parse_preemption(text: str, overhead_s: float = 0.0, where: str = "preemption") -> Preemption:
    """The option ``text`` (``none``, ``request`` or ``block:SECONDS``) with its overhead.

    Raises:
        ConfigError: an unknown mode, a missing or non-positive block size, or a negative or
            non-finite overhead; one line naming ``where`` and the value.
    """
    mode, _, size = str(text).partition(":")
    if mode not in PREEMPTION_MODES:
        raise ConfigError(f"{where}: unknown value {text!r}; choose none, request or "
                          "block:SECONDS (e.g. block:0.002)")
    if not (isinstance(overhead_s, (int, float)) and math.isfinite(overhead_s)
            and overhead_s >= 0):
        raise ConfigError(f"{where}: overhead {overhead_s!r} must be a finite number of seconds "
                          ">= 0 (e.g. 0.0005)")
    if mode != "block":
        if size:
            raise ConfigError(f"{where}: {mode!r} takes no size (got {text!r}); only "
                              "block:SECONDS has one")
        return Preemption(mode, 0.0, float(overhead_s))
    try:
        block_s = float(size)
    except ValueError:
        block_s = math.nan
    if not (math.isfinite(block_s) and block_s > 0):
        raise ConfigError(f"{where}: {text!r} needs a block size in seconds > 0, e.g. "
                          "block:0.002")
    return Preemption("block", block_s, float(overhead_s))


def refuse_accelerators(accelerators: bool) -> None:
    """Refuse block preemption on a platform with accelerators (``accelerators`` True).

    Raises:
        ConfigError: the GPU engine cannot suspend a job's remaining work.
    """
    if accelerators:
        raise ConfigError("preemption: block preemption runs on the built-in CPU engine; the "
                          "GPU engine cannot suspend a job's remaining work; use preemption "
                          "none or request on a platform with accelerators")


def check_policy(policy: JobPolicy, where: str = "preemption") -> None:
    """Refuse a job selection that ranks no job above another (no key, or a predicted one).

    Raises:
        ConfigError: naming the policy and the selections that can preempt.
    """
    if policy.key is None or policy.predicted:
        raise ConfigError(f"{where}: block preemption suspends a request for one of a higher "
                          f"priority, and policy {policy.name!r} ranks none above another; use a "
                          "policy with an order (edf, least_laxity, sla_class, fair_share, sjf...)"
                          " or preemption none")


def priority(policy: JobPolicy, job: Job, now: float) -> float:
    """``job``'s rank under ``policy`` at ``now`` (smaller: more urgent)."""
    return float(policy.key(job, now))  # type: ignore[misc, call-arg]


def next_boundary(done_gflop: float, block_gflop: float, total_gflop: float) -> float | None:
    """The first block boundary at or after ``done_gflop`` of work, or None when the request
    ends first (no boundary is left strictly before ``total_gflop``)."""
    k = math.ceil(done_gflop / block_gflop - 1e-9)
    boundary = k * block_gflop
    if boundary >= total_gflop * (1.0 - 1e-12):
        return None
    return boundary


def pick_victims(blocked: list[tuple[float, Job]], running: list[tuple[float, Job]]) -> list[Job]:
    """Running requests to suspend for the blocked queued ones.

    Args:
        blocked: ``(rank, job)`` of the queued jobs that did not start, most urgent first.
        running: ``(rank, job)`` of the running jobs that can be suspended.

    Returns:
        The victims: each blocked job, most urgent first, takes the least urgent running job
        that ranks strictly below it and holds as many cores (at most one victim each).
    """
    candidates = sorted(running, key=lambda e: -e[0])
    chosen: list[Job] = []
    for rank, job in blocked:
        if not candidates or candidates[0][0] <= rank:
            break  # nothing ranks below this job, nor below the ones after it
        taken = _take(candidates, rank, job.res)
        if taken is not None:
            chosen.append(taken)
    return chosen


def _take(entries: list[tuple[float, Job]], rank: float, res: int) -> Job | None:
    """Remove and return the least urgent job of ``entries`` (sorted least urgent first) that
    ranks strictly below ``rank`` and holds at least ``res`` cores."""
    for i, (other, job) in enumerate(entries):
        if other <= rank:
            return None
        if job.res >= res:
            del entries[i]
            return job
    return None
