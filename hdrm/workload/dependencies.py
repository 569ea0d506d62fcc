"""Job dependencies: a job submitted when its preceding jobs have ended, plus a think time.

SWF fields 17 (preceding job number) and 18 (think time from the preceding job, in seconds)
describe user feedback: the job was submitted ``think time`` seconds after its preceding job
ended. A replay keeps that rule, not the trace's submit time: a dependent job is *released* (enters
the queue) when its preceding job ends, in the replay, plus the think time. A Batsim JSON job can
give the same with ``"dependencies"`` (a list of job ids, the field Batsim's documentation
suggests) and ``"think_time"``; with several preceding jobs it is released ``think_time`` seconds
after the last one ends.

Rules (see ``docs/dags.rst``, section Dependencies):

* a preceding job "ends" when its outcome is known, whatever it is: completed, killed at its
  walltime, or rejected (then at the time of the rejection), as a Batsim user would expect from a
  job that ran; field 17 ``-1`` or ``0`` means none (SWF job numbers start at 1); a negative
  think time (``-1``, unknown) counts as 0;
* a preceding job that is in the file but not replayed (the conventions or the reader skipped it,
  or a selection left it out) cannot end: the dependency is dropped and the job is submitted at its
  own trace time, counted under :data:`SKIP_NOT_REPLAYED`;
* a preceding job number that no job of the file has, or a cycle of dependencies, is refused by a
  strict read (one line naming the file line); a lenient read drops those dependencies (the jobs
  are submitted at their trace times), counted under :data:`SKIP_MISSING` and :data:`SKIP_CYCLE`.

Memory: the dependencies are three numpy arrays with one entry per dependency (16 + 8 bytes),
not fields of every job.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hdrm.lazy import numpy as np

logger = logging.getLogger(__name__)

#: Dependencies dropped: the preceding job number names no job of the file.
SKIP_MISSING = "missing preceding job"
#: Dependencies dropped: the jobs depend on each other in a cycle.
SKIP_CYCLE = "cyclic preceding job"
#: Dependencies dropped: the preceding job is in the file but not replayed (skipped, not selected).
SKIP_NOT_REPLAYED = "preceding job not replayed"


@dataclass(frozen=True, eq=False)
class Dependencies:
    """The dependencies of a workload, one entry per (job, preceding job) pair, by job index.

    Attributes:
        job: index of the dependent job in the workload (int64).
        pred: index of its preceding job (int64).
        think_s: seconds between the preceding job's end and the job's release (float64).
        skipped: dependencies dropped, per reason (:data:`SKIP_MISSING` ...).
    """

    job: np.ndarray
    pred: np.ndarray
    think_s: np.ndarray
    skipped: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.job)

    @property
    def nb_jobs(self) -> int:
        """Number of jobs that wait for at least one preceding job."""
        return len(np.unique(self.job))

    def subset(self, kept: Sequence[int]) -> Dependencies | None:
        """The dependencies among the jobs ``kept`` (old indices, in their new order).

        A dependency whose preceding job is not kept is dropped and counted under
        :data:`SKIP_NOT_REPLAYED`; one whose job is not kept just goes. None when none is left.
        """
        new_of = np.full(int(max(self.job.max(initial=-1), self.pred.max(initial=-1))) + 1, -1,
                         dtype=np.int64)
        kept_arr = np.asarray(kept, dtype=np.int64)
        inside = kept_arr[kept_arr < len(new_of)]
        new_of[inside] = np.flatnonzero(kept_arr < len(new_of))
        job, pred = new_of[self.job], new_of[self.pred]
        keep = (job >= 0) & (pred >= 0)
        dropped = int(np.count_nonzero((job >= 0) & (pred < 0)))
        skipped = dict(self.skipped)
        if dropped:
            skipped[SKIP_NOT_REPLAYED] = skipped.get(SKIP_NOT_REPLAYED, 0) + dropped
        if not keep.any() and not skipped:
            return None
        return Dependencies(job[keep], pred[keep], self.think_s[keep], skipped)

    def describe(self) -> str:
        """``"3 jobs wait for a preceding job (think time 0-30 s)"`` plus what was dropped.

        When every think time is the same, one value: ``"(think time 10 s)"``.
        """
        text = "none"
        if len(self):
            low, high = self.think_s.min(), self.think_s.max()
            think = f"{low:g} s" if low == high else f"{low:g}-{high:g} s"
            text = f"{self.nb_jobs} jobs wait for a preceding job (think time {think})"
        if self.skipped:
            reasons = ", ".join(f"{k}: {v}" for k, v in self.skipped.items())
            text += f"; dropped {sum(self.skipped.values())} ({reasons})"
        return text


def resolve(
    job_ids: np.ndarray,
    pred_ids: np.ndarray,
    think_s: np.ndarray,
    in_file: np.ndarray,
    refuse: Callable[[int, str], None] | None,
) -> Dependencies | None:
    """Turn preceding job *numbers* into a :class:`Dependencies` of job indices.

    Args:
        job_ids: the number of every replayed job (index = job index), int64.
        pred_ids: per replayed job, its preceding job number (<= 0: none), int64.
        think_s: per replayed job, its think time (negative counts as 0).
        in_file: the numbers of every job line of the file (replayed or not).
        refuse: called as ``refuse(job index, problem)`` on a missing or cyclic preceding job
            (a strict read raises there); None drops and counts them.

    Returns:
        The dependencies, or None when no job has a preceding job.
    """
    rows = np.flatnonzero(pred_ids > 0)
    if not len(rows):
        return None
    order = np.argsort(job_ids, kind="stable")
    pos = np.searchsorted(job_ids[order], pred_ids[rows])
    pos = np.minimum(pos, len(order) - 1)
    found = job_ids[order][pos] == pred_ids[rows]
    skipped: dict[str, int] = {}
    lost = rows[~found]
    if len(lost):
        known = np.isin(pred_ids[lost], in_file)
        for row in lost[~known]:
            if refuse is not None:
                refuse(int(row), f"field 17 (preceding job number) is {int(pred_ids[row])}, "
                                 f"which no job line of the file has")
        _count(skipped, SKIP_NOT_REPLAYED, int(np.count_nonzero(known)))
        _count(skipped, SKIP_MISSING, int(np.count_nonzero(~known)))
    job = rows[found].astype(np.int64)
    pred = order[pos[found]].astype(np.int64)
    think = np.maximum(np.asarray(think_s, dtype=np.float64)[job], 0.0)
    on_cycle = cyclic_edges(job, pred, job_ids, refuse)
    _count(skipped, SKIP_CYCLE, int(np.count_nonzero(on_cycle)))
    keep = ~on_cycle
    return Dependencies(job[keep], pred[keep], think[keep], skipped)


def _count(skipped: dict[str, int], reason: str, n: int) -> None:
    if n:
        skipped[reason] = skipped.get(reason, 0) + n


def kahn_order(nb_preds: Sequence[int], succ: Sequence[Sequence[int]]
               ) -> tuple[list[int], list[int]]:
    """Kahn's topological order of nodes ``0..n-1``, the smallest ready node first.

    Args:
        nb_preds: per node, its number of predecessors.
        succ: per node, its successors (one entry per edge).

    Returns:
        The nodes in order, and per node the predecessors left unordered: nodes with a count > 0
        are on a cycle or after one (they are missing from the order).
    """
    missing = list(nb_preds)
    ready = [node for node, count in enumerate(missing) if not count]
    heapq.heapify(ready)
    order = []
    while ready:
        node = heapq.heappop(ready)
        order.append(node)
        for nxt in succ[node]:
            missing[nxt] -= 1
            if not missing[nxt]:
                heapq.heappush(ready, nxt)
    return order, missing


def _local_graph(job: np.ndarray, pred: np.ndarray
                 ) -> tuple[np.ndarray, list[int], list[list[int]], np.ndarray, np.ndarray]:
    """The jobs of the edges numbered 0..k-1: (their indices, predecessor counts, successors,
    each edge's local job and local predecessor)."""
    nodes = np.unique(np.concatenate([job, pred]))
    local_job, local_pred = np.searchsorted(nodes, job), np.searchsorted(nodes, pred)
    counts = np.bincount(local_job, minlength=len(nodes)).tolist()
    succ: list[list[int]] = [[] for _ in range(len(nodes))]
    for j, p in zip(local_job.tolist(), local_pred.tolist()):
        succ[p].append(j)
    return nodes, counts, succ, local_job, local_pred


def cyclic_edges(job: np.ndarray, pred: np.ndarray, ids: Sequence | np.ndarray,
                 refuse: Callable[[int, str], None] | None = None) -> np.ndarray:
    """Which dependencies (edges ``pred -> job``) lie on a cycle.

    Kahn's algorithm orders the jobs; the jobs it cannot order are on a cycle or after one. A
    cycle among them is found by walking back through unordered preceding jobs, reported to
    ``refuse`` (strict reads raise there) or dropped, and the order resumes; jobs after a cycle
    keep their dependencies.

    Returns:
        A boolean mask over the edges: True for the edges of the cycles dropped.
    """
    dropped = np.zeros(len(job), dtype=bool)
    if not len(job):
        return dropped
    nodes, counts, succ, _, _ = _local_graph(job, pred)
    _, left = kahn_order(counts, succ)
    if not any(left):
        return dropped
    preds: dict[int, list[int]] = {}
    succs: dict[int, list[int]] = {}
    for e, (j, p) in enumerate(zip(job.tolist(), pred.tolist())):
        preds.setdefault(j, []).append(e)
        succs.setdefault(p, []).append(e)
    missing = {int(nodes[i]): count for i, count in enumerate(left) if count}
    job_l, pred_l = job.tolist(), pred.tolist()

    def drain(queue: list[int]) -> None:
        while queue:
            node = queue.pop()
            for e in succs.get(node, ()):
                if dropped[e]:
                    continue
                nxt = job_l[e]
                missing[nxt] -= 1
                if not missing[nxt]:
                    queue.append(nxt)

    while any(missing.values()):
        cycle = _a_cycle(missing, preds, pred_l, dropped)
        path = " -> ".join(f"job {ids[pred_l[e]]}" for e in cycle)
        path += f" -> job {ids[job_l[cycle[-1]]]}"
        if refuse is not None:
            first = min(job_l[e] for e in cycle)
            refuse(first, f"field 17 (preceding job number) makes a cycle: {path}")
        logger.warning("dropped the dependencies of a cycle: %s", path)
        released = []
        for e in cycle:
            dropped[e] = True
            missing[job_l[e]] -= 1
            if not missing[job_l[e]]:
                released.append(job_l[e])
        drain(released)
    return dropped


def _a_cycle(missing: dict[int, int], preds: dict[int, list[int]], pred_l: list[int],
             dropped: np.ndarray) -> list[int]:
    """The edges of one cycle among the jobs not ordered yet, in edge direction."""
    node = min(j for j, m in missing.items() if m)
    seen: dict[int, int] = {}
    walk: list[int] = []  # edges followed backwards
    while node not in seen:
        seen[node] = len(walk)
        e = min(e for e in preds[node] if not dropped[e] and missing.get(pred_l[e], 0))
        walk.append(e)
        node = pred_l[e]
    cycle = walk[seen[node]:]
    cycle.reverse()
    return cycle


def release_order(deps: Dependencies, submit_s: Sequence[float]) -> np.ndarray:
    """Each job's earliest possible release: its own submit time, or for a dependent job the
    latest earliest release of its preceding jobs (a lower bound of when it is released, which
    ``hdrm replay --engine batsim`` writes as Batsim's ``subtime``)."""
    earliest = np.asarray(submit_s, dtype=np.float64).copy()
    if not len(deps):
        return earliest
    nodes, counts, succ, local_job, _ = _local_graph(deps.job, deps.pred)
    order, _ = kahn_order(counts, succ)
    low = earliest[nodes]
    low[np.bincount(local_job, minlength=len(nodes)) > 0] = -np.inf
    for node in order:  # topological: a job's predecessors are final before it
        for nxt in succ[node]:
            if low[node] > low[nxt]:
                low[nxt] = low[node]
    earliest[nodes] = low
    return earliest


#: Batsim JSON job fields of dependencies: the preceding jobs' ids (the name Batsim's
#: documentation suggests), and hdrm's think time in seconds after the last one ends.
JSON_DEPENDENCIES, JSON_THINK = "dependencies", "think_time"


def add_json_fields(entries: list[dict], workload: Any) -> None:
    """Write ``workload``'s dependencies into its Batsim JSON job entries (same order as its jobs).

    A dependent job gets ``"dependencies"`` (preceding job ids) and ``"think_time"``, and its
    ``subtime`` is lowered to its predecessors' (:func:`release_order`), so that Batsim submits it
    no later than its release; its trace submit time stays in ``trace_submit_s``.
    """
    deps = workload.dependencies
    if deps is None or not len(deps):
        return
    jobs = workload.jobs
    earliest = release_order(deps, [j.submit_s for j in jobs])
    for j, p, think in zip(deps.job.tolist(), deps.pred.tolist(), deps.think_s.tolist()):
        entry = entries[j]
        entry.setdefault(JSON_DEPENDENCIES, []).append(jobs[p].id)
        entry[JSON_THINK] = max(entry.get(JSON_THINK, 0.0), think)
        if "trace_submit_s" not in entry:
            entry["trace_submit_s"] = jobs[j].trace_submit_s
        entry["subtime"] = float(earliest[j])


def from_json_fields(jobs: list, source: str) -> Dependencies | None:
    """The dependencies the jobs' ``"dependencies"`` and ``"think_time"`` fields give (taken out
    of ``job.extra``); ids that no job has, and cycles, raise naming the job.

    Raises:
        WorkloadError: an unknown preceding id, a bad think time or a cycle.
    """
    from hdrm.errors import WorkloadError

    index = {job.id: job.idx for job in jobs}
    job_l, pred_l, think_l = [], [], []
    for job in jobs:
        if JSON_DEPENDENCIES not in job.extra:
            continue
        preds = job.extra.pop(JSON_DEPENDENCIES)
        think = job.extra.pop(JSON_THINK, 0.0)
        if not isinstance(preds, list):
            raise WorkloadError(f"{source}: job {job.id!r}: {JSON_DEPENDENCIES} must be a list of "
                                f"job ids, got {preds!r}")
        if isinstance(think, bool) or not isinstance(think, (int, float)) or not think >= 0:
            raise WorkloadError(f"{source}: job {job.id!r}: {JSON_THINK} must be a number >= 0 "
                                f"(seconds), got {think!r}")
        for pred in preds:
            if pred not in index:
                raise WorkloadError(f"{source}: job {job.id!r} depends on job {pred!r}, which the "
                                    f"workload does not have; remove it from {JSON_DEPENDENCIES}")
            job_l.append(job.idx)
            pred_l.append(index[pred])
            think_l.append(float(think))
    if not job_l:
        return None
    job_a, pred_a = np.array(job_l, dtype=np.int64), np.array(pred_l, dtype=np.int64)

    def refuse(idx: int, problem: str) -> None:
        cycle = problem.split(": ", 1)[-1]
        raise WorkloadError(f"{source}: job {jobs[idx].id!r}: its {JSON_DEPENDENCIES} make a "
                            f"cycle: {cycle}; remove one of these dependencies")

    cyclic_edges(job_a, pred_a, [j.id for j in jobs], refuse)
    return Dependencies(job_a, pred_a, np.array(think_l, dtype=np.float64))
