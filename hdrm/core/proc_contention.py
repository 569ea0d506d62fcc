"""Contention on the run-by-run path of processors of several cores (:mod:`hdrm.core.proc_runs`).

With a contention model and finite bandwidth, a job's cores change its processors' demand and
may slow them. :class:`ContendedRuns` applies the core-by-core rules of
:meth:`~hdrm.core.power_states.PowerStates._refresh` to the processors a job touches, adding
their changes as pieces of runs in the very order of those rules: a processor a job covers in
part is refreshed core by core (at most its own cores), spans of whole processors are set by
list slices, one bandwidth record per processor slowed or freed, as the rules record them.
"""

from __future__ import annotations

from itertools import chain, starmap
from typing import Any, Iterable, Sequence

from hdrm.core.contention import ContentionModel
from hdrm.platform.power import CONTENDED, CONTENDED_SPEED_FRACTION, IDLE, RUNNING, SLEEPING

FREE = -1
_RUN, _IDLE, _SLEEP = (RUNNING, 1.0), (IDLE, 1.0), (SLEEPING, 1.0)


class ContendedRuns:
    """Refreshes of processors under contention, mixed into
    :class:`~hdrm.core.proc_runs.ProcRuns` (attributes of
    :class:`~hdrm.core.state.ClusterState`)."""

    contention: ContentionModel
    contended: int
    proc_node: Sequence[int]
    proc_capacity: Sequence[float]
    proc_fraction: list[float]
    proc_cores: Sequence[Sequence[int]]
    _core_job: list[int]
    _core_state: list[int]
    core_factor: list[float]
    _proc_free: list[int]
    _proc_running: list[int]
    _proc_demand: list[float]
    _node_free_cores: list[int]
    #: ``_record_bandwidth(p, old_fraction, fraction, now)``: the bandwidth records of
    #: :class:`~hdrm.core.power_states.PowerStates`

    def _refresh_processor(self, p: int, lo: int, hi: int, segs: list[tuple[int, int]],
                           sign: int, bw: float, now: float, add: Any) -> None:
        """Processor ``p`` (cores ``lo..hi - 1``) whose cores ``segs`` are taken (sign +1) or
        freed (-1) by a job of ``bw`` GB/s a core: its counters, speed fraction and records,
        and ``add(first, end, change, old_state)`` for the cores that change, in order (runs of
        consecutive cores of one change and one former state)."""
        k = sign * sum(b - a for a, b in segs)
        running = self._proc_running
        was = running[p]
        self._proc_free[p] -= k
        running[p] = now_running = was + k
        self._proc_demand[p] += k * bw
        self._node_free_cores[self.proc_node[p]] -= k
        old_fraction = self.proc_fraction[p]
        if now_running == 0:
            self._proc_demand[p] = 0.0  # clear rounding residue
            fraction = 1.0
        else:
            fraction = self.contention.speed_fraction(self._proc_demand[p], self.proc_capacity[p])
        if fraction != 1.0 or old_fraction != 1.0:
            self.proc_fraction[p] = fraction
            self.contended += (now_running if fraction < 1.0 else 0) - (
                was if old_fraction < 1.0 else 0)
            self._record_bandwidth(p, old_fraction, fraction, now)
        core_state, core_factor, core_job = self._core_state, self.core_factor, self._core_job
        mine = chain.from_iterable(starmap(range, segs))
        if now_running == 0:  # the last running core left: the processor sleeps
            _emit(add, range(lo, hi), _SLEEP, core_state, None)
            return
        if fraction >= 1.0:
            change = _RUN
        else:
            change = (CONTENDED, fraction / CONTENDED_SPEED_FRACTION)
        if fraction != old_fraction:
            _emit(add, (c for c in range(lo, hi) if core_job[c] != FREE), change, core_state,
                  core_factor)
        elif sign > 0:
            _emit(add, mine, change, core_state, core_factor)
        if sign < 0:
            _emit(add, mine, _IDLE, core_state, core_factor)
        elif was == 0 and hi - lo > 1:  # the first running cores wake the processor
            _emit(add, (c for c in range(lo, hi) if core_job[c] == FREE), _IDLE, core_state,
                  core_factor)

    def _contend_whole(self, pa: int, pb: int, first: list[int], fractions: dict,
                       now: float, add: Any) -> None:
        """Processors ``pa .. pb - 1``, idle, taken whole (their counters set), some slowed:
        each runs at its fraction (``fractions`` by (cores, capacity)), recorded in order."""
        capacity, proc_fraction = self.proc_capacity, self.proc_fraction
        for p in range(pa, pb):
            lo, hi = first[p], first[p + 1]
            fraction = fractions[hi - lo, capacity[p]]
            if fraction == 1.0:
                add(lo, hi, _RUN, SLEEPING)
                continue
            proc_fraction[p] = fraction
            self.contended += hi - lo
            self._record_bandwidth(p, 1.0, fraction, now)
            add(lo, hi, (CONTENDED, fraction / CONTENDED_SPEED_FRACTION), SLEEPING)

    def _relax_whole(self, pa: int, pb: int, first: list[int], now: float, add: Any) -> None:
        """Processors ``pa .. pb - 1``, held whole by the job that ends (their counters set),
        some slowed: each sleeps, and the slowed ones recover full speed, recorded in order."""
        proc_fraction = self.proc_fraction
        for p in range(pa, pb):
            lo, hi = first[p], first[p + 1]
            old_fraction = proc_fraction[p]
            if old_fraction == 1.0:
                add(lo, hi, _SLEEP, RUNNING)
                continue
            proc_fraction[p] = 1.0
            self.contended -= hi - lo
            self._record_bandwidth(p, old_fraction, 1.0, now)
            add(lo, hi, _SLEEP, CONTENDED)


def _emit(add: Any, cores: Iterable[int], change: tuple[int, float], core_state: Sequence[int],
          core_factor: Sequence[float] | None) -> None:
    """``add`` ``change`` for each of ``cores`` (in order) whose state differs from it (or whose
    speed factor does, unless ``core_factor`` is None), consecutive cores of one former state
    as one run: the pieces that adding them core by core would merge into."""
    state, factor = change
    start = end = old = -1
    for c in cores:
        s = core_state[c]
        if s == state and (core_factor is None or core_factor[c] == factor):
            continue
        if c == end and s == old:
            end += 1
            continue
        if end > start:
            add(start, end, change, old)
        start, end, old = c, c + 1, s
    if end > start:
        add(start, end, change, old)
