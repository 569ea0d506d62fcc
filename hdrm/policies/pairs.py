"""Policy pairs: a job selection policy and a core selection policy, named ``"job-core"``.

HDeepRM's action space is the 6 x 6 = 36 pairs of its job selections (random, first, shortest,
smallest, low_mem, low_mem_bw) and core selections (random, high_gflops, high_cores, high_mem,
high_mem_bw, low_power), in job-major order. A bare job policy or heuristic name (``"sjf"``) uses
the ``high_gflops`` placement (on identical cores: lowest core ids first).
"""

from __future__ import annotations

from dataclasses import dataclass

from hdrm.errors import ConfigError
from hdrm.policies.core_selection import CORE_POLICIES, CorePolicy
from hdrm.policies.job_selection import JOB_POLICIES, JobPolicy
from hdrm.policies.sla_names import SLA_POLICIES  # noqa: F401  (registers edf, fair_share...)
from hdrm.registry import suggest

PAIR_JOB_SELECTIONS = ("random", "first", "shortest", "smallest", "low_mem", "low_mem_bw")
PAIR_CORE_SELECTIONS = ("random", "high_gflops", "high_cores", "high_mem", "high_mem_bw", "low_power")
DEFAULT_CORE_SELECTION = "high_gflops"
#: The 36 pairs in job-major order.
ALL_PAIRS = tuple(f"{j}-{c}" for j in PAIR_JOB_SELECTIONS for c in PAIR_CORE_SELECTIONS)


@dataclass(frozen=True)
class PolicyPair:
    """A job selection and a core selection applied together."""

    job: JobPolicy
    core: CorePolicy

    @property
    def name(self) -> str:
        """``"job-core"``."""
        return f"{self.job.name}-{self.core.name}"


def policy_names() -> list[str]:
    """Every valid policy name: heuristics and job policies alone, and every job-core pair."""
    singles = JOB_POLICIES.names()
    return singles + [f"{j}-{c}" for j in singles for c in CORE_POLICIES.names()]


def resolve_policy(name: str, where: str = "policy") -> PolicyPair:
    """Turn ``"shortest-high_gflops"`` or ``"sjf"`` into a :class:`PolicyPair`.

    Raises:
        ConfigError: an unknown job or core selection, with suggestions.
    """
    text = str(name).strip().lower()
    job_name, _, core_name = text.partition("-")
    if job_name not in JOB_POLICIES or (core_name and core_name not in CORE_POLICIES):
        raise ConfigError(
            f"{where}: unknown policy {name!r}; {suggest(text, policy_names())}"
            f"use a heuristic ({', '.join(JOB_POLICIES.names())}) or a pair 'job-core' with core "
            f"selection one of {', '.join(CORE_POLICIES.names())}"
        )
    return PolicyPair(JOB_POLICIES.get(job_name), CORE_POLICIES.get(core_name or DEFAULT_CORE_SELECTION))
