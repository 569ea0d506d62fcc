"""Jobs on processors of several cores, taken and freed run by run (platform files).

The cluster mirror's core-by-core rules (:mod:`hdrm.core.power_states`) cost a few Python steps
per core of a job; a job of 500,000 cores on 40-core nodes cost seconds and a mapping of one
change per core. For a job that charges no memory those rules reduce to facts about
processors: a taken core runs (at the speed its processor's new demand gives), the first taken
core of a sleeping processor wakes its free cores (idle), a freed core idles, and the last
freed core of a processor puts all its cores to sleep. :class:`ProcRuns` applies them to runs
of consecutive cores: spans of whole processors by list slices (their counters, states and
speed factors), a processor covered in part by its own cores
(:class:`~hdrm.core.proc_contention.ContendedRuns` when speeds may change), and queues the
changes as runs whose order, cores and values are exactly those of the core-by-core mapping
(so the machine adds the same powers in the same order: the same bits). Bandwidth records are
made processor by processor, as the rules make them.

Runs queued by several jobs may overlap (a core freed and taken again before the engine reads
the changes): :func:`~hdrm.core.intervals.as_disjoint_runs` turns them into the disjoint runs of
the mapping that applying them one by one would give.
"""

from __future__ import annotations

from bisect import bisect_right
from functools import partial
from typing import Any, Iterator, NamedTuple, Sequence

from hdrm.core.contention import ContentionModel
from hdrm.core.proc_contention import ContendedRuns
from hdrm.core.runs import WIDE, CoreRuns, core_runs
from hdrm.platform.power import IDLE, RUNNING, SLEEPING

__all__ = ["Layout", "ProcRuns", "layout"]

FREE = -1
_RUN, _IDLE, _SLEEP = (RUNNING, 1.0), (IDLE, 1.0), (SLEEPING, 1.0)
#: A change run ``(first, end, change)`` and the state its cores had before it.
_Piece = list  # [first, end, change, old_state]


class Layout(NamedTuple):
    """Where processors and nodes lie among the cores (cores numbered node by node, processor
    by processor, as platform files number them)."""

    #: first core of each processor, the number of cores last
    proc_first: list[int]
    #: cores of each processor
    proc_size: list[int]
    #: first core of each node, the number of cores last
    node_first: list[int]
    #: cores of each node
    node_size: list[int]


def layout(proc_cores: Sequence[Sequence[int]], proc_node: Sequence[int],
           node_cores: Sequence[Sequence[int]], nb_cores: int, contention: ContentionModel,
           capacities: Sequence[float]) -> Layout | None:
    """The :class:`Layout` of a platform whose processors and nodes hold consecutive cores in
    order (each processor inside its node) and whose idle processors run at full speed under
    ``contention``; else None (the run-by-run path is then never taken)."""
    proc_first, node_first = _firsts(proc_cores, nb_cores), _firsts(node_cores, nb_cores)
    if proc_first is None or node_first is None:
        return None
    for p, node in enumerate(proc_node):
        if not node_first[node] <= proc_first[p] < proc_first[p + 1] <= node_first[node + 1]:
            return None
    if any(contention.speed_fraction(0.0, cap) != 1.0 for cap in set(capacities)):
        return None
    return Layout(proc_first, list(map(len, proc_cores)), node_first, list(map(len, node_cores)))


def _firsts(groups: Sequence[Sequence[int]], nb_cores: int) -> list[int] | None:
    """The first core of each group and ``nb_cores`` last, when group ``g`` holds the cores
    ``firsts[g] .. firsts[g + 1] - 1`` (none empty); else None."""
    firsts = [0]
    for cores in groups:
        at = firsts[-1]
        if not (isinstance(cores, range) and cores.step == 1 and cores.start == at):
            if list(cores) != list(range(at, at + len(cores))):
                return None
        if not cores:
            return None
        firsts.append(at + len(cores))
    return firsts if firsts[-1] == nb_cores else None


class ProcRuns(ContendedRuns):
    """The run-by-run path of :class:`~hdrm.core.state.ClusterState` (its attributes, set
    there): jobs that charge no memory, on cores given processor by processor, each
    processor's cores in increasing order."""

    nb_cores: int
    free_cores: int
    contended: int
    alloc: dict[int, Sequence[int]]
    proc_node: Sequence[int]
    _nominal: bool
    _core_job: list[int]
    _core_state: list[int]
    _proc_free: list[int]
    _proc_running: list[int]
    _proc_demand: list[float]
    _node_free_cores: list[int]
    _pending_runs: list[tuple[int, int, tuple[int, float]]]
    #: Where processors and nodes lie (:func:`layout`); None: the path is off.
    _layout: Layout | None = None
    #: The runs of cores of each job taken on this path (given back at its end).
    _proc_held: dict[int, list[tuple[int, int]]]

    def _runs_allocate(self, key: int, cores: Sequence[int], mem_mb: float, bw_gbps: float,
                       now: float) -> bool:
        """Give ``cores`` to job ``key`` run by run when it charges no memory and every core
        is a free, known core, the cores of each processor coming together in increasing order
        (processors in any order: a placement's ranking); else change nothing and return False
        (the core-by-core rules then decide, and name any culprit)."""
        where = self._layout
        if where is None or mem_mb != 0:
            return False
        runs = getattr(cores, "runs", None)
        runs = core_runs(cores) if runs is None else runs
        if not runs or not _in_blocks(runs, where.proc_first, self.nb_cores):
            return False
        core_job = self._core_job
        for lo, hi in runs:
            if core_job[lo:hi].count(FREE) != hi - lo:
                return False
        for lo, hi in runs:
            core_job[lo:hi] = [key] * (hi - lo)
        pieces: list[_Piece] = []
        add = partial(_add, pieces)
        first = where.proc_first
        for p, part in _parts(runs, first):
            if type(part) is int:  # processors p .. part - 1, whole and idle
                self._take_whole(p, part, bw_gbps, now, add)
            elif self._nominal:
                self._take_processor(p, part, first[p], first[p + 1], bw_gbps, add)
            else:
                self._refresh_processor(p, first[p], first[p + 1], part, +1, bw_gbps, now, add)
        self._queue(pieces)
        n = sum(hi - lo for lo, hi in runs)
        self.free_cores -= n
        self.alloc[key] = CoreRuns(runs) if n > WIDE else tuple(cores)
        self._proc_held[key] = runs
        return True

    def _runs_release(self, key: int, bw_gbps: float, now: float) -> Sequence[int] | None:
        """Free the cores of job ``key`` run by run when it was given them on this path;
        returns them, or None with nothing changed."""
        runs = self._proc_held.pop(key, None)
        where = self._layout
        if runs is None or where is None:
            return None
        core_job = self._core_job
        for lo, hi in runs:
            core_job[lo:hi] = [FREE] * (hi - lo)
        pieces: list[_Piece] = []
        add = partial(_add, pieces)
        first = where.proc_first
        for p, part in _parts(runs, first):
            if type(part) is int:  # processors p .. part - 1, whole and held by this job
                self._free_whole(p, part, now, add)
            elif self._nominal:
                self._free_processor(p, part, first[p], first[p + 1], bw_gbps, add)
            else:
                self._refresh_processor(p, first[p], first[p + 1], part, -1, bw_gbps, now, add)
        self._queue(pieces)
        cores = self.alloc.pop(key)
        self.free_cores += len(cores)
        return cores

    # ------------------------------------------------------------------ processors
    def _take_whole(self, pa: int, pb: int, bw: float, now: float, add: Any) -> None:
        """Processors ``pa .. pb - 1``, idle, taken whole by a job of ``bw`` GB/s a core: they
        run (each processor's first core waking it has no free sibling to idle), at the speed
        their new demand gives."""
        where = self._layout
        assert where is not None
        sizes = where.proc_size[pa:pb]
        nominal = self._nominal
        made = {s: _added(0.0, bw, s, nominal) for s in set(sizes)}
        self._proc_running[pa:pb] = sizes
        self._proc_demand[pa:pb] = list(map(made.__getitem__, sizes))
        self._proc_free[pa:pb] = [0] * (pb - pa)
        lo, hi = where.proc_first[pa], where.proc_first[pb]
        self._count_nodes(lo, hi, -1)
        if not nominal:
            speed = self.contention.speed_fraction
            fractions = {(s, cap): speed(made[s], cap)
                         for s, cap in set(zip(sizes, self.proc_capacity[pa:pb]))}
            if any(f != 1.0 for f in fractions.values()):
                self._contend_whole(pa, pb, where.proc_first, fractions, now, add)
                return
        add(lo, hi, _RUN, SLEEPING)

    def _free_whole(self, pa: int, pb: int, now: float, add: Any) -> None:
        """Processors ``pa .. pb - 1``, held whole by the job that ends: they sleep."""
        where = self._layout
        assert where is not None
        self._proc_running[pa:pb] = [0] * (pb - pa)
        self._proc_free[pa:pb] = where.proc_size[pa:pb]
        self._proc_demand[pa:pb] = [0.0] * (pb - pa)  # the last running core left
        lo, hi = where.proc_first[pa], where.proc_first[pb]
        self._count_nodes(lo, hi, +1)
        if not self._nominal and self.proc_fraction[pa:pb].count(1.0) != pb - pa:
            self._relax_whole(pa, pb, where.proc_first, now, add)
            return
        add(lo, hi, _SLEEP, RUNNING)

    def _count_nodes(self, lo: int, hi: int, sign: int) -> None:
        """Count the cores ``lo..hi - 1`` (of whole processors) as freed (+1) or taken (-1) in
        their nodes' free cores: a node inside the span is set whole, its edges counted."""
        where = self._layout
        assert where is not None
        first, node_free = where.node_first, self._node_free_cores
        n0, n1 = bisect_right(first, lo) - 1, bisect_right(first, hi - 1) - 1
        if n0 == n1:
            node_free[n0] += sign * (hi - lo)
            return
        node_free[n0] += sign * (first[n0 + 1] - lo)
        node_free[n1] += sign * (hi - first[n1])
        inner = n1 - n0 - 1  # nodes wholly in the span: all free, or all held by the job
        node_free[n0 + 1:n1] = where.node_size[n0 + 1:n1] if sign > 0 else [0] * inner

    def _take_processor(self, p: int, segs: list[tuple[int, int]], lo: int, hi: int,
                        bw: float, add: Any) -> None:
        """Nominal speeds: count ``segs`` (cores of processor ``p`` = ``lo..hi - 1``) as
        taken by a job of ``bw`` GB/s a core, and add their changes in the order of the
        core-by-core rules: the first core runs, wakes its free siblings, then the others run."""
        k = sum(b - a for a, b in segs)
        was = self._proc_running[p]
        self._proc_demand[p] = _added(self._proc_demand[p], bw, k, True)
        self._proc_running[p] = was + k
        self._proc_free[p] -= k
        self._node_free_cores[self.proc_node[p]] -= k
        if was:
            for a, b in segs:
                add(a, b, _RUN, IDLE)
            return
        a0, b0 = segs[0]
        add(a0, a0 + 1, _RUN, SLEEPING)
        _add_gaps(add, lo, hi, segs, _IDLE, SLEEPING)
        add(a0 + 1, b0, _RUN, SLEEPING)
        for a, b in segs[1:]:
            add(a, b, _RUN, SLEEPING)

    def _free_processor(self, p: int, segs: list[tuple[int, int]], lo: int, hi: int,
                        bw: float, add: Any) -> None:
        """Nominal speeds: count ``segs`` (cores of processor ``p`` = ``lo..hi - 1``) as freed
        by a job of ``bw`` GB/s a core, and add their changes in the order of the core-by-core
        rules: each freed core idles; the last one puts the processor to sleep."""
        k = sum(b - a for a, b in segs)
        left = self._proc_running[p] - k
        self._proc_demand[p] = _added(self._proc_demand[p], -bw, k, True) if left else 0.0
        self._proc_running[p] = left
        self._proc_free[p] += k
        self._node_free_cores[self.proc_node[p]] += k
        if left:
            for a, b in segs:
                add(a, b, _IDLE, RUNNING)
            return
        last = segs[-1][1] - 1
        early = segs[:-1] + [(segs[-1][0], last)]
        for a, b in early:
            add(a, b, _SLEEP, RUNNING)
        _add_gaps(add, lo, last, early, _SLEEP, IDLE)
        add(last, last + 1, _SLEEP, RUNNING)
        _add_gaps(add, last + 1, hi, [], _SLEEP, IDLE)

    def _queue(self, pieces: list[_Piece]) -> None:
        """Write the new states (and speed factors) of ``pieces`` and queue them as change
        runs."""
        core_state, queue = self._core_state, self._pending_runs
        factors = None if self._nominal else self.core_factor
        for lo, hi, change, _ in pieces:
            core_state[lo:hi] = [change[0]] * (hi - lo)
            if factors is not None:
                factors[lo:hi] = [change[1]] * (hi - lo)
            queue.append((lo, hi, change))


def _in_blocks(runs: list[tuple[int, int]], first: list[int], nb_cores: int) -> bool:
    """True when ``runs`` (non-empty) are runs of known cores in which each processor's cores
    come as one block in increasing order: runs ascend while they share a processor, and the
    spans of processors of these blocks do not overlap (so no core comes twice). Ascending
    disjoint runs always do; processors taken in a ranking's order do too."""
    spans: list[tuple[int, int]] = []
    end, last = -1, -1  # the previous run's end and its last processor
    for lo, hi in runs:
        if lo < 0 or hi > nb_cores or lo >= hi:
            return False
        p = bisect_right(first, lo) - 1
        q = bisect_right(first, hi - 1) - 1
        if p == last:  # the block of processor p goes on
            if lo < end:
                return False
            spans[-1] = (spans[-1][0], q)
        else:
            spans.append((p, q))
        end, last = hi, q
    if len(spans) > 1:
        spans.sort()
        return all(a[1] < b[0] for a, b in zip(spans, spans[1:]))
    return True


def _parts(runs: list[tuple[int, int]], first: list[int]) -> Iterator[tuple[int, Any]]:
    """The parts of disjoint ``runs`` (each processor's cores in one ascending block,
    :func:`_in_blocks`) in order: ``(p, segments)`` for processor ``p``
    partly covered (its segments ``(lo, hi)``, from one run or more), ``(pa, pb)`` for the
    processors ``pa .. pb - 1`` covered whole by one run."""
    p, segs = -1, []
    for lo, hi in runs:
        q = bisect_right(first, lo) - 1
        if lo > first[q] or hi < first[q + 1]:  # a head in part of processor q
            end = min(hi, first[q + 1])
            if q != p:
                if segs:
                    yield p, segs
                p, segs = q, []
            segs.append((lo, end))
            lo, q = end, q + 1
            if lo == hi:
                continue
        r = bisect_right(first, hi) - 1  # first[r] <= hi < first[r + 1]
        if r > q:
            if segs:
                yield p, segs
            p, segs = -1, []
            yield q, r
        if hi > first[r]:  # a tail in part of processor r
            if segs:
                yield p, segs
            p, segs = r, [(first[r], hi)]
    if segs:
        yield p, segs


def _added(demand: float, bw: float, k: int, nominal: bool) -> float:
    """``demand`` after ``k`` cores of ``bw`` each came (or left: ``bw`` negative), added as the
    core-by-core rules add it: once ``k * bw`` with contention, core by core without."""
    if not nominal:
        return demand + k * bw
    for _ in range(k):
        demand = demand + bw
    return demand


def _add(pieces: list[_Piece], lo: int, hi: int, change: tuple[int, float], old: int) -> None:
    """Append the change of cores ``lo..hi - 1`` (in state ``old``), merged into the last piece
    when it continues it with the same change from the same state."""
    if lo >= hi:
        return
    if pieces:
        last = pieces[-1]
        if last[1] == lo and last[3] == old and last[2] == change:
            last[1] = hi
            return
    pieces.append([lo, hi, change, old])


def _add_gaps(add: Any, lo: int, hi: int, segs: list[tuple[int, int]],
              change: tuple[int, float], old: int) -> None:
    """``add`` the change of the cores of ``lo..hi - 1`` outside ``segs`` (ascending), in
    order."""
    at = lo
    for a, b in segs:
        add(at, min(a, hi), change, old)
        at = max(at, b)
    add(at, hi, change, old)
