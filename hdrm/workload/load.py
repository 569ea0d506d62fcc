"""Changing a workload's offered load by scaling its submission times.

Dividing every submission time by ``factor`` keeps the jobs (sizes, run times, requests, order)
and multiplies the arrival rate, hence the offered load, by ``factor``: the usual way of deriving
heavier or lighter workloads from a real trace (Feitelson, *Workload Modeling for Computer Systems
Performance Evaluation*, 2015, ch. 9). ``factor > 1`` packs the jobs closer together; ``factor < 1``
spreads them out. ``trace_submit_s`` keeps the source's clock.
"""

from __future__ import annotations

import dataclasses
import math
from numbers import Real

from hdrm.errors import WorkloadError
from hdrm.workload.job import Workload


def scale_arrivals(workload: Workload, factor: float) -> Workload:
    """A copy of ``workload`` with every ``submit_s`` divided by ``factor``.

    Args:
        workload: the workload (left unchanged).
        factor: the load multiplier, a finite number > 0 (1 returns an equal copy).

    Raises:
        WorkloadError: ``factor`` is not a finite positive number.
    """
    if isinstance(factor, bool) or not isinstance(factor, Real) or not math.isfinite(factor) \
            or factor <= 0:
        raise WorkloadError(f"{workload.name or workload.source or 'workload'}: load factor must "
                            f"be a finite number > 0 (2 doubles the arrival rate), got {factor!r}")
    jobs = [dataclasses.replace(j, submit_s=j.submit_s / factor, extra=dict(j.extra))
            for j in workload.jobs]
    name = workload.name if factor == 1 else f"{workload.name}x{factor:g}"
    return Workload(jobs, name, workload.source, workload.header, dict(workload.skipped),
                    workload.nb_res)
