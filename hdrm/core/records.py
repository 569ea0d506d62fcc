"""Recording over-utilisation events as the decision core meets them, as HDeepRM kept them.

* core shortage: a job chosen to start could not get enough cores (recorded once per job);
* memory shortage: an allocation ran out of node memory part way (and was rolled back);
* bandwidth: spans of time during which a processor's memory bandwidth was oversubscribed.

The records are the typed entries of :mod:`hdrm.results.overutil`, which writes and reads
``overutilizations.json``.
"""

from __future__ import annotations

import math

from hdrm.results.overutil import BandwidthSpan, CoreShortage, MemoryShortage, Overutilizations
from hdrm.results.core_sets import format_interval_set


class OverutilizationRecorder:
    """Collects the three kinds of records; :attr:`data` is what gets written."""

    def __init__(self) -> None:
        self.data = Overutilizations()
        self._open: dict[int, BandwidthSpan] = {}
        self._cores_text: dict[tuple[int, ...], str] = {}  # a processor's cores, written once

    def core(self, now: float, job_id: object, requested: int, available: int) -> None:
        """A job could not get ``requested`` cores (``available`` could be given)."""
        self.data.core_shortage.append(CoreShortage(now, str(job_id), requested, available))

    def memory(
        self, now: float, job_id: object, node: int, requested_mb: float, available_mb: float
    ) -> None:
        """A node had ``available_mb`` of memory where ``requested_mb`` was needed."""
        self.data.memory_shortage.append(
            MemoryShortage(now, str(job_id), node, requested_mb, available_mb)
        )

    def bandwidth_start(
        self, proc: int, node: int, now: float, demand_gbps: float, capacity_gbps: float,
        cores: tuple[int, ...] = (),
    ) -> None:
        """Processor ``proc`` (with ``cores``) became oversubscribed; the span stays open until
        it ends."""
        text = self._cores_text.get(cores)
        if text is None:
            text = self._cores_text[cores] = format_interval_set(cores)
        span = BandwidthSpan(proc, node, now, math.inf, demand_gbps, capacity_gbps, text)
        self._open[proc] = span
        self.data.bandwidth.append(span)

    def bandwidth_update(self, proc: int, demand_gbps: float) -> None:
        """The demand on an oversubscribed processor changed."""
        span = self._open.get(proc)
        if span is not None and demand_gbps > span.max_demand_gbps:
            span.max_demand_gbps = demand_gbps

    def bandwidth_end(self, proc: int, now: float) -> None:
        """Processor ``proc`` is no longer oversubscribed."""
        span = self._open.pop(proc, None)
        if span is not None:
            span.end_s = now
