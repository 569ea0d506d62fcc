"""The decision core on a GPU platform: queue, GPU cluster state and decisions.

On a platform with accelerators the decision core keeps its resource state in the
:class:`~hdrm.policies.gpu_state.GpuCluster` model (free CPU milli-cores, memory and milli-GPU
shares per node) and places tasks with the GPU placements (:mod:`hdrm.policies.placement`). The
engine drives it exactly as it drives :class:`~hdrm.core.scheduler.DecisionCore`:
:meth:`GpuDecisionCore.submit` and :meth:`~GpuDecisionCore.complete` as tasks arrive and end,
then :meth:`~GpuDecisionCore.schedule` once per decision instant.

A policy is a :class:`GpuPolicy`, named ``"ORDER-PLACEMENT"`` (``"drf-best_fit"``): a queue order
(:mod:`hdrm.policies.gpu_orders`) and a placement; a bare order name places with
:data:`DEFAULT_PLACEMENT` (``fgd``: the least growth of fragmentation, which strands the fewest
GPUs in the FGD paper's protocol). FGD measures fragmentation against the typical task types of
the whole workload (the paper's assumption: the task-type distribution is known).

Decisions: the queue is ordered, then tasks start in that order while they fit somewhere
(decision semantics ``event`` or ``commit`` as on CPU platforms). With
backfilling ``none`` (the default) the first task that fits nowhere stops the decision, so no
later task overtakes it; with ``greedy`` every later task that fits starts too (Kubernetes'
behaviour: no reservation, so wide tasks may starve). EASY and conservative backfilling need
reservations over GPU shares per node and are refused on GPU platforms.

A task's run time on a GPU model (:func:`run_time_on`) is its Gavel run time on that model
(total steps / measured throughput at its worker count) when the workload gives one per model,
else its trace run time.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from hdrm.errors import ConfigError
from hdrm.core.scheduler import DECISIONS
from hdrm.platform.model import Platform
from hdrm.policies.gpu_frag import TaskTypes, typical_task_types
from hdrm.policies.gpu_orders import QUEUE_ORDERS, OrderContext, QueueOrder, TenantLedger, tenant_of
from hdrm.policies.gpu_placer import Placer
from hdrm.policies.gpu_price import platform_prices
from hdrm.policies.gpu_state import GpuCluster, TaskShape
from hdrm.policies.placement import PLACEMENTS, make_placement
from hdrm.registry import suggest
from hdrm.workload.job import Job

logger = logging.getLogger(__name__)

#: Placement of a bare queue-order name.
DEFAULT_PLACEMENT = "fgd"
#: Backfilling modes on GPU platforms.
GPU_BACKFILLING = ("none", "greedy")


@dataclass(frozen=True)
class GpuPolicy:
    """A queue order and a placement applied together (``"ORDER-PLACEMENT"``)."""

    order: QueueOrder
    placement: str

    @property
    def name(self) -> str:
        """``"order-placement"``."""
        return f"{self.order.name}-{self.placement}"


def gpu_policy_names() -> list[str]:
    """Every valid GPU policy name: the orders alone and every order-placement pair."""
    orders = QUEUE_ORDERS.names()
    return orders + [f"{o}-{p}" for o in orders for p in PLACEMENTS.names()]


def gpu_pairs() -> list[str]:
    """Every order-placement pair, order-major, each order under its own name only (``fifo``,
    not its alias ``fcfs``): 5 orders x 9 placements."""
    orders = sorted({QUEUE_ORDERS.get(name).name for name in QUEUE_ORDERS.names()})
    return [f"{o}-{p}" for o in orders for p in PLACEMENTS.names()]


def resolve_gpu_policy(name: str, where: str = "policy") -> GpuPolicy:
    """Turn ``"drf-best_fit"`` or ``"fifo"`` into a :class:`GpuPolicy`.

    Raises:
        ConfigError: an unknown order or placement, with the closest names and the choices.
    """
    text = str(name).strip().lower()
    order, _, placement = text.partition("-")
    if order not in QUEUE_ORDERS or (placement and placement not in PLACEMENTS):
        raise ConfigError(
            f"{where}: unknown GPU policy {name!r}; {suggest(text, gpu_policy_names())}"
            f"use a queue order ({', '.join(QUEUE_ORDERS.names())}) or a pair 'order-placement' "
            f"with placement one of {', '.join(PLACEMENTS.names())}")
    return GpuPolicy(QUEUE_ORDERS.get(order), placement or DEFAULT_PLACEMENT)


def run_time_on(job: Job, model: str) -> float:
    """The task's run time (s) on a GPU of ``model`` (see the module docstring)."""
    per_model = job.extra.get("gavel", {}).get("run_time_s") if job.extra else None
    if per_model and model in per_model:
        return float(per_model[model])
    return job.run_time_s


@dataclass(slots=True)
class GpuPlacement:
    """Where and when a task runs.

    Attributes:
        node: node index (platform order).
        gpus: the node's GPU indices (0-based within the node).
        devices: the GPUs' global accelerator ids (``Platform.accelerators``).
        shape: the task's demand.
        model: the GPU model ("" for a task without GPUs).
        start_s: start time.
        run_s: run time on this model.
    """

    node: int
    gpus: tuple[int, ...]
    devices: tuple[int, ...]
    shape: TaskShape
    model: str
    start_s: float
    run_s: float


Start = tuple[Job, list[int]]


class GpuDecisionCore:
    """Queue, GPU cluster state and the decision loop on a GPU platform.

    Args:
        platform: a platform with accelerators (one GPU model per node).
        jobs: the workload's tasks (their typical task types feed FGD).
        backfilling: ``"none"`` or ``"greedy"`` (see the module docstring).
        rng: the run's generator (random placements, the shuffled tie order).
        ties: the placer's tie rule (:data:`~hdrm.policies.gpu_placer.TIE_RULES`).
        decision: ``"event"`` or ``"commit"``, as in :mod:`hdrm.core.scheduler`: with
            ``commit`` the first task that fits nowhere is held at the head of later decisions.
    """

    def __init__(self, platform: Platform, jobs: list[Job], backfilling: str = "none",
                 rng: np.random.Generator | None = None, ties: str = "shuffled",
                 decision: str = "event") -> None:
        if decision not in DECISIONS:
            raise ConfigError(f"decision: unknown value {decision!r}; choose one of: "
                              f"{', '.join(DECISIONS)}")
        if backfilling not in GPU_BACKFILLING:
            raise ConfigError(
                f"backfilling: {backfilling!r} is not supported on GPU platforms (it needs "
                f"reservations over GPU shares); choose one of: {', '.join(GPU_BACKFILLING)}")
        self.platform = platform
        self.cluster = GpuCluster.from_platform(platform)
        self.backfilling = backfilling
        self.decision = decision
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.ties = ties
        self.queue: list[Job] = []
        self.running: dict[int, GpuPlacement] = {}
        #: every task's placement, kept after it ends (outputs read it)
        self.placements: dict[int, GpuPlacement] = {}
        self.committed: Job | None = None
        self.ledger = TenantLedger()
        self._shapes = {job.idx: TaskShape.of_job(job) for job in jobs}
        self.types: TaskTypes | None = (
            typical_task_types(self._shapes.values()) if self._shapes else None)
        c = self.cluster
        self.capacity = (float(max(c.cpu_cap.sum(), 1)), float(max(c.mem_cap.sum(), 1)),
                         float(max(c.total_gpu_milli, 1)))
        self._demands: dict[int, tuple[float, float, float]] = {}
        self._tenants: dict[int, str] = {}
        self._fits: dict[TaskShape, str | None] = {}
        self._placers: dict[str, Placer] = {}

    # ------------------------------------------------------------------ events
    def shape(self, job: Job) -> TaskShape:
        """The task's demand vector."""
        shape = self._shapes.get(job.idx)
        if shape is None:
            shape = self._shapes[job.idx] = TaskShape.of_job(job)
        return shape

    def submit(self, job: Job, now: float) -> str | None:
        """Queue the task; returns why it must be rejected (it can never run here), or None."""
        if job.extra.get("ran") is False:
            return "never ran in the trace: no run time to replay"
        shape = self.shape(job)
        if shape not in self._fits:  # traces repeat a few shapes: check each once per run
            self._fits[shape] = self._never_fits(shape)
            if self._fits[shape] is not None:
                logger.debug("task %s rejected: %s", job.id, self._fits[shape])
        reason = self._fits[shape]
        if reason is None:
            self.queue.append(job)
        return reason

    def complete(self, job: Job, now: float) -> None:
        """The task ended: give its CPU, memory and GPU shares back."""
        placed = self.running.pop(job.idx)
        self.cluster.release(placed.node, placed.shape, placed.gpus)
        self.ledger.end(tenant_of(job), placed.shape, placed.start_s, now)

    # ------------------------------------------------------------------ decisions
    def schedule(self, now: float, policy: GpuPolicy) -> list[Start]:
        """One decision: start what the order, the placement and the backfilling allow.

        Returns:
            ``(task, devices)`` per started task (global accelerator ids; empty for a task
            without GPUs).
        """
        if not self.queue:
            return []
        order = policy.order.order(self.queue, self.context(now))
        committed = self.committed
        if committed is not None:
            order = [committed] + [j for j in order if j is not committed]
        started: list[Start] = []
        head = None
        for job in order:
            devices = self._try(job, policy.placement, now)
            if devices is not None:
                started.append((job, devices))
                continue
            head = head or job
            if self.backfilling == "none":
                break
        if self.decision == "commit":
            self.committed = head
        elif committed is not None and any(job is committed for job, _ in started):
            self.committed = None  # a pick held by an environment has started
        self._dequeue(started)
        return started

    def start_now(self, job: Job, placement: str, now: float) -> list[int] | None:
        """Start one chosen task now if it fits (the ``job_pick`` action); its devices, or None."""
        devices = self._try(job, placement, now)
        if devices is not None:
            self.queue.remove(job)
            if self.committed is job:
                self.committed = None
        return devices

    def start_on(self, job: Job, node: int, placement: str, now: float) -> list[int] | None:
        """Start one queued task now on a chosen node (the multi-agent environment's placing
        agent), its GPUs on that node chosen by ``placement``'s within-node rule; its devices,
        or None (nothing changes) when it does not fit on the node now."""
        shape = self.shape(job)
        if not 0 <= node < self.cluster.nb_nodes or not self.cluster.feasible(
                shape, np.array([node]))[0]:
            return None
        placer = self.placer(placement)
        gpus = placer.placement.choose_gpus(node, shape, self.rng)
        self.cluster.allocate(node, shape, gpus)
        devices = self._started(job, shape, node, gpus, now)
        self.queue.remove(job)
        if self.committed is job:
            self.committed = None
        return devices

    def backfill(self, now: float, head: Job, placement: str) -> list[Start]:
        """With ``greedy`` backfilling, start every other queued task that fits (submission
        order); nothing with ``none``."""
        if self.backfilling == "none":
            return []
        started = []
        for job in self.queue:
            if job is not head:
                devices = self._try(job, placement, now)
                if devices is not None:
                    started.append((job, devices))
        self._dequeue(started)
        return started

    def context(self, now: float) -> OrderContext:
        """What the queue orders see at ``now``."""
        return OrderContext(now, self.cluster, self.ledger, self.capacity, self.shape,
                            self._demands, self._tenants)

    def placer(self, placement: str) -> Placer:
        """The placer of a placement name (made once per run); ``price_aware`` is given the
        platform's own prices (:func:`~hdrm.policies.gpu_price.platform_prices`: a type the
        platform file defines or redefines is priced as the file says)."""
        placer = self._placers.get(placement)
        if placer is None:
            policy = make_placement(placement, self.cluster, self.types,
                                    prices=platform_prices(self.platform))
            placer = self._placers[placement] = Placer(policy, self.rng, self.ties)
        return placer

    # ------------------------------------------------------------------ internals
    def _try(self, job: Job, placement: str, now: float) -> list[int] | None:
        shape = self.shape(job)
        choice = self.placer(placement).place(shape)
        if choice is None:
            return None
        return self._started(job, shape, choice[0], choice[1], now)

    def _started(self, job: Job, shape: TaskShape, node: int, gpus: tuple[int, ...],
                 now: float) -> list[int]:
        """Record a task just allocated on ``node``; its global device ids."""
        model = self.cluster.model_names[self.cluster.model[node]] if gpus else ""
        ids = self.platform.nodes[node].accelerator_ids
        devices = tuple(ids[g] for g in gpus)
        placed = GpuPlacement(node, tuple(gpus), devices, shape, model, now,
                              run_time_on(job, model))
        self.running[job.idx] = self.placements[job.idx] = placed
        self.ledger.start(tenant_of(job), shape, now)
        return list(devices)

    def _dequeue(self, started: list[Start]) -> None:
        if len(started) > 64:
            taken = {id(job) for job, _ in started}
            self.queue = [j for j in self.queue if id(j) not in taken]
            return
        for job, _ in started:
            self.queue.remove(job)

    def _never_fits(self, shape: TaskShape) -> str | None:
        """Why the task fits no node even when the cluster is empty, or None."""
        c = self.cluster
        if shape.cpu_milli > c.cpu_cap.max():
            return f"asks {shape.cpu_milli} milli-CPU, the largest node has {c.cpu_cap.max()}"
        if shape.memory_mib > c.mem_cap.max():
            return f"asks {shape.memory_mib} MiB of memory, the largest node has {c.mem_cap.max()}"
        if not shape.gpus:
            ok = (c.cpu_cap >= shape.cpu_milli) & (c.mem_cap >= shape.memory_mib)
            return None if ok.any() else "no node has both its CPU and its memory"
        allowed = np.append(c.allowed_models(shape), False)[c.model]
        if not allowed.any():
            return (f"asks GPU model(s) {'|'.join(shape.models)}, the platform has "
                    f"{', '.join(c.model_names) or 'no GPU'}")
        if shape.gpus > c.nb_gpus[allowed].max():
            return (f"asks {shape.gpus} GPUs on one node, a node of an allowed model has at most "
                    f"{c.nb_gpus[allowed].max()}")
        ok = (allowed & (c.nb_gpus >= shape.gpus) & (c.cpu_cap >= shape.cpu_milli)
              & (c.mem_cap >= shape.memory_mib))
        return None if ok.any() else "no node of an allowed model has its GPUs, CPU and memory"
