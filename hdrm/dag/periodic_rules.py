"""The priority rules of periodic pipelines as policies of the engine.

:func:`resolve_periodic_policy` turns a policy name of ``hdrm dag periodic`` into what the engine
runs on the given platform:

* a rule of :data:`~hdrm.dag.periodic_devices.RULES` (``heft_edf``, ``cpop_edf``, ``peft_edf``,
  ``llf``; ``dag_edf`` and ``dag_llf`` are the names of ``heft_edf`` and ``llf`` among the job
  selections), alone or as ``RULE-SELECTION``: on a CPU platform a job-core pair whose job
  selection orders by the rule's position (core selection ``high_gflops`` unless named); on a
  platform with accelerators a GPU policy whose queue order does (placement :data:`GPU_PLACEMENT`
  unless named);
* a *deferring* rule ``RULE_defer`` (:data:`DEFER_RULES`): the rule's order, except that the
  tasks of instances that can no longer meet their deadline go after all others. A ready task's
  instance is lost when ``now + rank_u > deadline``: ``rank_u`` is the task's cost plus the longest
  path of costs and transfers after it, which no schedule can shorten, so running it earlier
  cannot save that deadline and only delays instances that can still make theirs (the domino
  effect of EDF under overload). Lost instances still run, in the rule's order;
* any other name: a job-core pair (:func:`hdrm.policies.pairs.resolve_policy`) or, on a GPU
  platform, a GPU policy (:func:`hdrm.core.gpu_scheduler.resolve_gpu_policy`).

:func:`backfilling_for` gives the engine's backfilling of periodic runs. The rules' positions are
made by :func:`hdrm.dag.periodic_devices.expand_on`; the orders are built here and not
registered, so the lists of job selections and GPU queue orders (and the environments' default
action lists made from them) are unchanged.
"""

from __future__ import annotations

import difflib
import functools
import math

from hdrm.core.gpu_scheduler import GpuPolicy, resolve_gpu_policy
from hdrm.dag.periodic_devices import RULE_KEYS, RULES
from hdrm.errors import ConfigError
from hdrm.platform.model import Platform
from hdrm.policies.core_selection import CORE_POLICIES
from hdrm.policies.gpu_orders import OrderContext, QueueOrder
from hdrm.policies.job_selection import JOB_POLICIES, JobPolicy
from hdrm.policies.pairs import DEFAULT_CORE_SELECTION, PolicyPair, resolve_policy
from hdrm.policies.placement import PLACEMENTS
from hdrm.workload.job import Job

#: Placement of a rule on a GPU platform when none is named (deterministic, packs GPU tasks).
GPU_PLACEMENT = "best_fit"
#: Other names of rules (the job selections of :mod:`hdrm.policies.job_selection`).
ALIASES = {"dag_edf": "heft_edf", "dag_llf": "llf"}

#: The deferring variants of the rules, in the rules' order.
DEFER_RULES = tuple(f"{rule}_defer" for rule in RULES)
#: Added to a lost instance's position (larger than any workload's number of tasks).
LOST_OFFSET = 1e12

_DOCS = {"heft_edf": "earliest deadline first, then the larger HEFT upward rank",
         "cpop_edf": "earliest deadline first, then the larger CPOP priority rank_u + rank_d",
         "peft_edf": "earliest deadline first, then the larger PEFT optimistic-cost rank",
         "llf": "least laxity first: smallest deadline - upward rank"}


def backfilling_for(platform: Platform) -> str:
    """The engine's backfilling for periodic runs: ``none`` on CPU platforms (every task asks one
    core, so when the first waiting task does not fit no other does) and ``greedy`` with
    accelerators, so that a task waiting for a busy GPU never keeps a CPU task off a free core
    (list scheduling is work-conserving)."""
    return "greedy" if platform.accelerators else "none"


def _position(key: str, job: Job, now: float) -> float:
    """A job's position in a rule's order (jobs without one last)."""
    return job.extra.get(key, math.inf)


def _positions(key: str, queue: list[Job], ctx: OrderContext) -> list[float]:
    """Every queued task's position in a rule's order."""
    return [job.extra.get(key, math.inf) for job in queue]


def lost(job: Job, now: float) -> bool:
    """Whether the job's instance can no longer meet its deadline (see the module)."""
    e = job.extra
    return now + e.get("rank_u_s", 0.0) > e.get("deadline_s", math.inf)


def _deferred_position(key: str, job: Job, now: float) -> float:
    """A job's position in a deferring rule's order at ``now``."""
    return job.extra.get(key, math.inf) + (LOST_OFFSET if lost(job, now) else 0.0)


def _deferred_positions(key: str, queue: list[Job], ctx: OrderContext) -> list[float]:
    """Every queued task's position in a deferring rule's order."""
    return [_deferred_position(key, job, ctx.now) for job in queue]


def rule_job_policy(rule: str) -> JobPolicy:
    """The job selection of a rule (``heft_edf`` and ``llf``: the registered ``dag_edf`` and
    ``dag_llf`` themselves)."""
    if rule in DEFER_RULES:
        key = RULE_KEYS[rule[:-len("_defer")]]
        return JobPolicy(f"{key}_defer", functools.partial(_deferred_position, key), True,
                         _DOCS[rule[:-len("_defer")]] + "; lost instances last")
    key = RULE_KEYS[rule]
    if key in JOB_POLICIES:
        return JOB_POLICIES.get(key)
    return JobPolicy(key, functools.partial(_position, key), False, _DOCS[rule])


def rule_queue_order(rule: str) -> QueueOrder:
    """The GPU queue order of a rule."""
    if rule in DEFER_RULES:
        base = rule[:-len("_defer")]
        return QueueOrder(f"{RULE_KEYS[base]}_defer",
                          functools.partial(_deferred_positions, RULE_KEYS[base]),
                          _DOCS[base] + "; lost instances last")
    return QueueOrder(RULE_KEYS[rule], functools.partial(_positions, RULE_KEYS[rule]),
                      _DOCS[rule])


def rule_of(name: str) -> str | None:
    """The rule a policy's first part names, or None."""
    first = str(name).strip().lower().partition("-")[0]
    first = ALIASES.get(first, first)
    return first if first in RULES or first in DEFER_RULES else None


def resolve_periodic_policy(name: str, platform: Platform, where: str = "--policy"
                            ) -> PolicyPair | GpuPolicy:
    """The policy of ``name`` on ``platform`` (see the module).

    Raises:
        ConfigError: an unknown name, with the rules and the engine's own suggestions.
    """
    rule = rule_of(name)
    gpus = bool(platform.accelerators)
    if rule is None:
        try:
            return resolve_gpu_policy(name, where) if gpus else resolve_policy(name, where)
        except ConfigError as exc:
            close = difflib.get_close_matches(str(name).strip().lower().partition("-")[0],
                                              RULES + DEFER_RULES, n=2)
            hint = f"; the closest periodic rule: {' or '.join(close)}" if close else ""
            raise ConfigError(f"{exc} (or a periodic rule: {', '.join(RULES + DEFER_RULES)})"
                              f"{hint}") from None
    second = str(name).strip().lower().partition("-")[2]
    if gpus:
        placement = second or GPU_PLACEMENT
        if placement not in PLACEMENTS:
            raise ConfigError(f"{where}: unknown placement {second!r} in {name!r}; choose one "
                              f"of {', '.join(PLACEMENTS.names())}")
        return GpuPolicy(rule_queue_order(rule), placement)
    core = second or DEFAULT_CORE_SELECTION
    if core not in CORE_POLICIES:
        raise ConfigError(f"{where}: unknown core selection {second!r} in {name!r}; choose one "
                          f"of {', '.join(CORE_POLICIES.names())}")
    return PolicyPair(rule_job_policy(rule), CORE_POLICIES.get(core))
