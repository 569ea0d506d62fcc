"""Over-utilisation records, as HDeepRM kept them.

* core shortage: a job chosen to start could not get enough cores;
* memory shortage: an allocation ran out of node memory part way (and was rolled back);
* bandwidth: spans of time during which a processor's memory bandwidth was oversubscribed.

Written by the engines as ``overutilizations.json``.
"""

from __future__ import annotations

from typing import Any


class Overutilizations:
    """Collects the three kinds of records."""

    def __init__(self) -> None:
        self.core_shortage: list[dict[str, Any]] = []
        self.memory_shortage: list[dict[str, Any]] = []
        self.bandwidth: list[dict[str, Any]] = []
        self._open: dict[int, dict[str, Any]] = {}

    def core(self, now: float, job_id: object, requested: int, available: int) -> None:
        """A job could not get ``requested`` cores (``available`` could be given)."""
        self.core_shortage.append(
            {"time": now, "job_id": str(job_id), "requested": requested, "available": available}
        )

    def memory(
        self, now: float, job_id: object, node: int, requested_mb: float, available_mb: float
    ) -> None:
        """A node had ``available_mb`` of memory where ``requested_mb`` was needed."""
        self.memory_shortage.append(
            {
                "time": now, "job_id": str(job_id), "node_id": node,
                "requested_mb": requested_mb, "available_mb": available_mb,
            }
        )

    def bandwidth_start(
        self, proc: int, node: int, now: float, demand_gbps: float, capacity_gbps: float
    ) -> None:
        """Processor ``proc`` became oversubscribed."""
        span = {
            "processor_id": proc, "node_id": node, "start": now, "end": None,
            "max_demand_gbps": demand_gbps, "capacity_gbps": capacity_gbps,
        }
        self._open[proc] = span
        self.bandwidth.append(span)

    def bandwidth_update(self, proc: int, demand_gbps: float) -> None:
        """The demand on an oversubscribed processor changed."""
        span = self._open.get(proc)
        if span is not None and demand_gbps > span["max_demand_gbps"]:
            span["max_demand_gbps"] = demand_gbps

    def bandwidth_end(self, proc: int, now: float) -> None:
        """Processor ``proc`` is no longer oversubscribed."""
        span = self._open.pop(proc, None)
        if span is not None:
            span["end"] = now

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        """The records as the ``overutilizations.json`` document."""
        return {
            "core_shortage": self.core_shortage,
            "memory_shortage": self.memory_shortage,
            "bandwidth": self.bandwidth,
        }
