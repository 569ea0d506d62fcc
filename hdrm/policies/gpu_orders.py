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
        self.held: dict[str, list[float]] = {}
        self._done: dict[str, float] = {}
        self._rate: dict[str, float] = {}
        self._offset: dict[str, float] = {}

    def start(self, tenant: str, shape: TaskShape, now: float) -> None:
        """A task of ``tenant`` started now."""
        held = self.held.setdefault(tenant, [0, 0, 0])
        held[0] += shape.cpu_milli
        held[1] += shape.memory_mib
        held[2] += shape.total_milli
        rate = shape.total_milli / MILLI
        self._rate[tenant] = self._rate.get(tenant, 0.0) + rate
        self._offset[tenant] = self._offset.get(tenant, 0.0) + rate * now

    def end(self, tenant: str, shape: TaskShape, start_s: float, now: float) -> None:
        """A task of ``tenant`` that started at ``start_s`` ended now."""
        held = self.held[tenant]
        held[0] -= shape.cpu_milli
        held[1] -= shape.memory_mib
        held[2] -= shape.total_milli
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
        shape_of: a task's demand vector (the decision core caches them).
        demands: tasks' normalised demands by index, kept across decisions by the core.
        tenants: tasks' tenants by index, kept across decisions by the core.
    """

    now: float
    cluster: GpuCluster
    ledger: TenantLedger
    capacity: tuple[float, float, float]
    shape_of: Callable[[Job], TaskShape] = TaskShape.of_job
    demands: dict[int, tuple[float, float, float]] = field(default_factory=dict)
    tenants: dict[int, str] = field(default_factory=dict)
    _cache: dict = field(default_factory=dict)

    def tenant(self, job: Job) -> str:
        """The task's tenant (:func:`tenant_of`, cached)."""
        tenant = self.tenants.get(job.idx)
        if tenant is None:
            tenant = self.tenants[job.idx] = tenant_of(job)
        return tenant

    def demand(self, job: Job) -> tuple[float, float, float]:
        """The task's (CPU, memory, GPU) demand as fractions of the cluster's capacity."""
        value = self.demands.get(job.idx)
        if value is None:
            shape, (cpu, mem, gpu) = self.shape_of(job), self.capacity
            value = self.demands[job.idx] = (shape.cpu_milli / cpu, shape.memory_mib / mem,
                                        shape.total_milli / gpu)
        return value

    def free(self) -> tuple[float, float, float]:
        """The cluster's free (CPU, memory, GPU) as fractions of its capacity."""
        if "free" not in self._cache:
            c, (cpu, mem, gpu) = self.cluster, self.capacity
            self._cache["free"] = (int(c.cpu_left.sum()) / cpu, int(c.mem_left.sum()) / mem,
                                   int(c.gpu_left.sum()) / gpu)
        return self._cache["free"]

    def dominant_share(self, tenant: str) -> float:
        """The tenant's largest share of a resource held by its running tasks now."""
        shares = self._cache.setdefault("dominant", {})
        if tenant not in shares:
            held = self.ledger.held.get(tenant)
            shares[tenant] = 0.0 if held is None else max(
                h / c for h, c in zip(held, self.capacity))
        return shares[tenant]


@dataclass(frozen=True)
class QueueOrder:
    """A named queue order: ``keys`` gives every queued task's sort key at once (smallest
    first); None keeps submission order."""

    name: str
    keys: Callable[[list[Job], OrderContext], list] | None
    doc: str

    def order(self, queue: list[Job], ctx: OrderContext) -> list[Job]:
        """The queue in this order (``queue`` itself for submission order)."""
        if self.keys is None or len(queue) <= 1:
            return queue
        keys = self.keys(queue, ctx)
        return [queue[i] for i in sorted(range(len(queue)), key=keys.__getitem__)]


QUEUE_ORDERS: Registry[QueueOrder] = Registry("queue order")


def _add(name: str, keys, doc: str, *aliases: str) -> None:
    QUEUE_ORDERS.add(name, QueueOrder(name, keys, doc), *aliases)


def _sjf(queue: list[Job], ctx: OrderContext) -> list[float]:
    return [job.run_time_s for job in queue]


def _drf(queue: list[Job], ctx: OrderContext) -> list[tuple[float, float]]:
    held, tenants, demands = ctx.ledger.held, ctx.tenants, ctx.demands
    keys = []
    for job in queue:
        tenant = tenants.get(job.idx) or ctx.tenant(job)
        share = ctx.dominant_share(tenant) if tenant in held else 0.0
        demand = demands.get(job.idx) or ctx.demand(job)
        keys.append((share, max(demand)))
    return keys


def _tetris(queue: list[Job], ctx: OrderContext) -> list[float]:
    fc, fm, fg = ctx.free()
    keys = []
    for job in queue:
        c, m, g = ctx.demand(job)
        keys.append(-(c * fc + m * fm + g * fg))
    return keys


def _las(queue: list[Job], ctx: OrderContext) -> list[float]:
    attained: dict[str, float] = {}
    keys = []
    for job in queue:
        tenant = ctx.tenant(job)
        value = attained.get(tenant)
        if value is None:
            value = attained[tenant] = ctx.ledger.attained_gpu_s(tenant, ctx.now)
        keys.append(value)
    return keys


_add("fifo", None, "Submission order.", "fcfs", "first")
_add("sjf", _sjf, "Shortest run time first (the trace's run time).")
_add("drf", _drf, "Dominant resource fairness across tenants: lowest dominant share first.")
_add("tetris", _tetris, "Largest alignment (dot product) of the demand and free vectors first.")
_add("las", _las, "Least attained service: the tenant with the fewest GPU-seconds received first.")
