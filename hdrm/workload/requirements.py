"""Job requirements for the heterogeneity layer: work, memory and memory bandwidth per core.

A trace gives run times measured on its own machine. hdrm takes them as run times at the platform's
reference speed (mean core GFLOP/s), so a job's work per core is
``ops_gflop = run_time_s * reference_gflops`` and its requested work is
``req_ops_gflop = walltime_s * reference_gflops``. The job then runs as a Batsim
``parallel_homogeneous`` profile: each allocated core computes ``ops_gflop``, so faster cores finish
sooner. Memory per core comes from the trace (0 when unknown); memory bandwidth per core, which no
trace records, is drawn from a seeded distribution given as a short spec string:

==========================  ===============================================================
``hdeeprm`` (default)       uniform over {4, 8, 12, 16, 20, 24} GB/s, as HDeepRM drew it
``constant:X``              X GB/s for every job
``uniform:A:B``             continuous uniform in [A, B) GB/s
``choice:[X,Y,...]``        uniform over the listed values (brackets optional)
``none``                    0 GB/s: no bandwidth contention
==========================  ===============================================================
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from numbers import Real

from hdrm.lazy import numpy as np

from hdrm.errors import ConfigError, WorkloadError
from hdrm.registry import suggest
from hdrm.workload.batsim_json import unsupported_profiles
from hdrm.workload.job import PROFILE_PARALLEL_HOMOGENEOUS, Job, Workload

logger = logging.getLogger(__name__)

#: HDeepRM's memory bandwidth values per core, GB/s.
HDEEPRM_BW_GBPS = (4.0, 8.0, 12.0, 16.0, 20.0, 24.0)

#: The default bandwidth distribution spec.
DEFAULT_BW = "hdeeprm"

_KINDS = ("hdeeprm", "none", "constant", "uniform", "choice")
_FORMS = "hdeeprm, none, constant:X, uniform:A:B, choice:[X,Y,...]"


@dataclass(frozen=True)
class BandwidthDistribution:
    """A distribution of memory bandwidth demand per core, in GB/s.

    Attributes:
        kind: ``"constant"``, ``"uniform"`` (values = (low, high)), ``"choice"`` or ``"none"``.
        values_gbps: the parameters, in GB/s.
    """

    kind: str
    values_gbps: tuple[float, ...] = ()

    def sample_gbps(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """Draw ``size`` values in GB/s (``rng`` is used only by random kinds)."""
        if self.kind == "none":
            return np.zeros(size)
        if self.kind == "constant":
            return np.full(size, self.values_gbps[0])
        if self.kind == "uniform":
            low, high = self.values_gbps
            return rng.uniform(low, high, size)
        return rng.choice(np.asarray(self.values_gbps), size)

    def __str__(self) -> str:
        if self.kind == "none":
            return "none"
        if self.kind == "choice":
            return "choice:[" + ",".join(f"{v:g}" for v in self.values_gbps) + "]"
        return ":".join([self.kind, *(f"{v:g}" for v in self.values_gbps)])


def parse_bandwidth(spec: str | BandwidthDistribution) -> BandwidthDistribution:
    """Parse a bandwidth spec such as ``"uniform:4:24"`` (see the module docstring).

    Raises:
        ConfigError: unknown kind (with close names), wrong number of values, a non-number or a
            negative value; the message lists the valid forms.
    """
    if isinstance(spec, BandwidthDistribution):
        return spec
    text = str(spec).strip()
    kind, _, rest = text.partition(":")
    kind = kind.strip().lower()
    if kind not in _KINDS:
        raise ConfigError(
            f"bandwidth distribution {text!r}: unknown kind {kind!r}; "
            f"{suggest(kind, _KINDS)}valid forms: {_FORMS}"
        )
    if kind == "hdeeprm":
        return BandwidthDistribution("choice", HDEEPRM_BW_GBPS)
    values = _numbers(text, rest.strip().removeprefix("[").removesuffix("]"))
    expected = {"none": (0,), "constant": (1,), "uniform": (2,)}.get(kind)
    if (expected and len(values) not in expected) or (kind == "choice" and not values):
        raise ConfigError(
            f"bandwidth distribution {text!r}: {kind} takes "
            f"{'at least 1' if kind == 'choice' else expected[0]} value(s), got {len(values)}; "
            f"valid forms: {_FORMS}"
        )
    if kind == "uniform" and values[0] > values[1]:
        raise ConfigError(
            f"bandwidth distribution {text!r}: uniform:A:B needs A <= B; write uniform:"
            f"{values[1]:g}:{values[0]:g}"
        )
    return BandwidthDistribution(kind, values)


def _numbers(text: str, rest: str) -> tuple[float, ...]:
    items = [item.strip() for item in rest.replace(":", ",").split(",") if item.strip()]
    values = []
    for item in items:
        try:
            value = float(item)
        except ValueError:
            raise ConfigError(
                f"bandwidth distribution {text!r}: {item!r} is not a number; valid forms: {_FORMS}"
            ) from None
        if not (math.isfinite(value) and value >= 0):
            raise ConfigError(
                f"bandwidth distribution {text!r}: {item!r} must be a finite number >= 0 GB/s"
            )
        values.append(value)
    return tuple(values)


def attach_requirements(
    workload: Workload,
    reference_gflops: float,
    rng: np.random.Generator,
    bw: str | BandwidthDistribution = DEFAULT_BW,
) -> Workload:
    """Return a copy of ``workload`` whose jobs carry work, memory and bandwidth requirements.

    Args:
        workload: jobs with run times (and walltimes) at the reference speed.
        reference_gflops: the platform's reference speed, GFLOP/s per core.
        rng: the seeded generator for the bandwidth draw (one draw per job, in job order).
        bw: the bandwidth distribution, a spec string or a :class:`BandwidthDistribution`.

    Returns:
        A new workload; each job has ``ops_gflop``, ``req_ops_gflop`` (``inf`` without a walltime),
        profile type ``"parallel_homogeneous"``, its trace ``mem_mb`` and a drawn ``mem_bw_gbps``.

    Raises:
        ConfigError: a bad ``reference_gflops`` or ``bw``.
        WorkloadError: a job with a profile type hdrm cannot simulate, or without a run time.
    """
    if (isinstance(reference_gflops, bool) or not isinstance(reference_gflops, Real)
            or not (math.isfinite(reference_gflops) and reference_gflops > 0)):
        raise ConfigError(
            f"reference_gflops must be a finite number > 0 GFLOP/s, got {reference_gflops!r}"
        )
    distribution = parse_bandwidth(bw)
    _check_simulable(workload)
    bandwidth = distribution.sample_gbps(rng, len(workload)).tolist()
    jobs = [_with_requirements(job, reference_gflops, bw_gbps)
            for job, bw_gbps in zip(workload.jobs, bandwidth)]
    logger.debug("%s: requirements at %g GFLOP/s, bandwidth %s",
                 workload.name, reference_gflops, distribution)
    return Workload(jobs, workload.name, workload.source, workload.header,
                    dict(workload.skipped), workload.nb_res)


def _check_simulable(workload: Workload) -> None:
    unsupported = unsupported_profiles(workload)
    if unsupported:
        kinds = ", ".join(f"{kind!r} ({count} jobs)" for kind, count in unsupported.items())
        raise WorkloadError(
            f"{workload.source or workload.name}: profile types {kinds} cannot be given "
            "requirements; hdrm simulates 'delay' and 'parallel_homogeneous' profiles only"
        )


def _with_requirements(job: Job, reference_gflops: float, bw_gbps: float) -> Job:
    run_time_s = job.run_time_s
    if not math.isfinite(run_time_s) and job.ops_gflop > 0:
        run_time_s = job.ops_gflop / reference_gflops
    if not (math.isfinite(run_time_s) and run_time_s >= 0):
        raise WorkloadError(
            f"job {job.id!r} (index {job.idx}) has no usable run time ({job.run_time_s!r} s); "
            "give it a run_time_s or a profile with work"
        )
    extra = dict(job.extra)
    extra.pop("profile_data", None)
    return Job(
        job.idx, job.id, job.submit_s, job.res, job.walltime_s, run_time_s, job.mem_mb,
        bw_gbps, run_time_s * reference_gflops, job.walltime_s * reference_gflops,
        job.trace_submit_s, job.profile, PROFILE_PARALLEL_HOMOGENEOUS, job.user_id, extra,
    )
