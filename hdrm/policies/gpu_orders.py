"""Queue orders of the GPU decision core: in which order waiting tasks are tried.

An order sorts the queue by a key (smallest first; the sort is stable, so ties keep submission
order). Keys may read an :class:`OrderContext`: the time, the cluster's free resources and a
:class:`TenantLedger` of what each tenant holds and has received.

* ``fifo`` (aliases ``fcfs``, ``first``): submission order.
* ``sjf``: shortest run time first: the trace's run time (openb: deletion - scheduled; Gavel: the
  run time on its fastest allowed model). These traces give no requested time, so SJF orders by
  the actual run time, as an oracle.
* ``drf``: dominant resource fairness (Ghodsi et al., NSDI'11) across tenants: the task of the
  tenant whose dominant share (its largest share of the cluster's CPU, memory or GPU now
  allocated to its running tasks) is the lowest goes first; ties by the task's own dominant
  share of demand, smaller first.
* ``tetris``: alignment of demand and free resources (Grandl et al., SIGCOMM'14): the largest dot
  product of the task's demand vector and the cluster's free vector, both (CPU, memory, GPU)
  divided by the cluster's capacities, goes first (the cluster-wide free vector, not per node).
* ``las``: least attained service: the tenant that has received the fewest GPU-seconds so far
  (ended tasks plus running ones up to now; a task with ``n`` GPUs of share ``m`` milli-GPU earns
  ``n * m / 1000`` GPU-seconds per second) goes first. Attained service is counted per tenant: per
  task it would be 0 for every waiting task, since tasks are not pre-empted.

A task's tenant (:func:`tenant_of`) is its ``extra["tenant"]``, else its user id (SWF, Batsim
JSON), else openb's QoS class (``qos:LS``...), else the task itself (Gavel traces name no owner).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from hdrm.policies.gpu_state import MILLI, GpuCluster, TaskShape
from hdrm.registry import Registry
from hdrm.workload.job import Job


def tenant_of(job: Job) -> str:
    """The tenant a task belongs to (see the module docstring)."""
    extra = job.extra
    tenant = extra.get("tenant")
    if tenant:
        return str(tenant)
    if job.user_id >= 0:
        return f"user:{job.user_id}"
    qos = extra.get("qos")
    if qos:
        return f"qos:{qos}"
    return f"job:{job.id}"


class TenantLedger:
    """Per tenant: the resources its running tasks hold and the GPU-seconds it has received.

    Attained GPU-seconds are kept as ``done + rate * now - offset`` (``rate``: GPU share of the
    running tasks, ``offset``: the sum of rate x start over them), so reading them costs O(1).
    """

    def __init__(self) -> None:
        self.held: dict[str, np.ndarray] = {}
        self._done: dict[str, float] = {}
        self._rate: dict[str, float] = {}
        self._offset: dict[str, float] = {}

    def start(self, tenant: str, shape: TaskShape, now: float) -> None:
        """A task of ``tenant`` started now."""
        held = self.held.setdefault(tenant, np.zeros(3))
        held += (shape.cpu_milli, shape.memory_mib, shape.total_milli)
        rate = shape.total_milli / MILLI
        self._rate[tenant] = self._rate.get(tenant, 0.0) + rate
        self._offset[tenant] = self._offset.get(tenant, 0.0) + rate * now

    def end(self, tenant: str, shape: TaskShape, start_s: float, now: float) -> None:
        """A task of ``tenant`` that started at ``start_s`` ended now."""
        self.held[tenant] -= (shape.cpu_milli, shape.memory_mib, shape.total_milli)
        rate = shape.total_milli / MILLI
        self._done[tenant] = self._done.get(tenant, 0.0) + rate * (now - start_s)
        self._rate[tenant] -= rate
        self._offset[tenant] -= rate * start_s

    def attained_gpu_s(self, tenant: str, now: float) -> float:
        """GPU-seconds received by the tenant's tasks up to ``now``."""
        return (self._done.get(tenant, 0.0) + self._rate.get(tenant, 0.0) * now
                - self._offset.get(tenant, 0.0))


@dataclass
class OrderContext:
    """What a queue order may look at when it sorts.

    Attributes:
        now: the decision time (s).
        cluster: the cluster's state (free resources).
        ledger: the tenants' holdings and attained service.
        capacity: the cluster's (CPU milli, memory MiB, GPU milli) in all.
    """

    now: float
    cluster: GpuCluster
    ledger: TenantLedger
    capacity: np.ndarray
    shape_of: Callable[[Job], TaskShape] = TaskShape.of_job
    _cache: dict = field(default_factory=dict)

    def demand(self, job: Job) -> np.ndarray:
        """The task's (CPU, memory, GPU) demand as fractions of the cluster's capacity."""
        shape = self.shape_of(job)
        return np.array((shape.cpu_milli, shape.memory_mib, shape.total_milli)) / self.capacity

    def free(self) -> np.ndarray:
        """The cluster's free (CPU, memory, GPU) as fractions of its capacity."""
        if "free" not in self._cache:
            c = self.cluster
            self._cache["free"] = np.array((c.cpu_left.sum(), c.mem_left.sum(),
                                            c.gpu_left.sum())) / self.capacity
        return self._cache["free"]

    def dominant_share(self, tenant: str) -> float:
        """The tenant's largest share of a resource held by its running tasks now."""
        shares = self._cache.setdefault("dominant", {})
        if tenant not in shares:
            held = self.ledger.held.get(tenant)
            shares[tenant] = 0.0 if held is None else float((held / self.capacity).max())
        return shares[tenant]


@dataclass(frozen=True)
class QueueOrder:
    """A named queue order; ``key`` None keeps submission order."""

    name: str
    key: Callable[[Job, OrderContext], float | tuple] | None
    doc: str

    def order(self, queue: list[Job], ctx: OrderContext) -> list[Job]:
        """The queue in this order (``queue`` itself for submission order)."""
        if self.key is None or len(queue) <= 1:
            return queue
        key = self.key
        return sorted(queue, key=lambda job: key(job, ctx))


QUEUE_ORDERS: Registry[QueueOrder] = Registry("queue order")


def _add(name: str, key, doc: str, *aliases: str) -> None:
    QUEUE_ORDERS.add(name, QueueOrder(name, key, doc), *aliases)


def _drf(job: Job, ctx: OrderContext) -> tuple[float, float]:
    return ctx.dominant_share(tenant_of(job)), float(ctx.demand(job).max())


def _tetris(job: Job, ctx: OrderContext) -> float:
    return -float(ctx.demand(job) @ ctx.free())


_add("fifo", None, "Submission order.", "fcfs", "first")
_add("sjf", lambda job, ctx: job.run_time_s, "Shortest run time first (the trace's run time).")
_add("drf", _drf, "Dominant resource fairness across tenants: lowest dominant share first.")
_add("tetris", _tetris, "Largest alignment (dot product) of the demand and free vectors first.")
_add("las", lambda job, ctx: ctx.ledger.attained_gpu_s(tenant_of(job), ctx.now),
     "Least attained service: the tenant with the fewest GPU-seconds received first.")
