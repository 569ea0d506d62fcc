"""Model selection that refuses to keep a starving model (``train.py --validation-guard F``).

``benchmarks/train.py`` keeps the model that validates best. By the mean bounded slowdown alone
the best is often a policy that holds long or wide jobs back for a long time (the mean barely
counts them; issue 26). With a guard, a validated model is a candidate only if its longest wait
and its makespan on the validation sequences stay within ``F`` times those of the best heuristic
there: the event-driven queue heuristics of the protocol and the predicted-run-time ones, with
the run's backfilling (EASY for a learner limited to EASY's picks), the best by the run's
objective (the comparison table's flag, on jobs of the validation range, with its factor 1.5).
The reference is computed once, from the validation sequences only, at each of the run's
validation load factors (``--validation-load-factors``: the sequences' submission times divided
by the factor, as the validation runs them), all combined as the validation combines the
model's scores. In ``policy_pair`` mode (the heterogeneous rows) the reference is the best fixed
job-core pair of the heterogeneous table (HDeepRM's 36 and the predicted-run-time ones) on the
heterogeneous workload's validation sequences, with the rows' contention and no backfilling.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Sequence

from benchmarks import protocol
from benchmarks.protocol import Score
from hdrm.errors import ConfigError
from hdrm.platform.model import Platform
from hdrm.workload.load import scale_arrivals

if TYPE_CHECKING:
    from benchmarks.train_settings import TrainSettings

logger = logging.getLogger(__name__)

#: The heuristics whose best is the reference (event-driven, as in the comparison table).
REFERENCE_HEURISTICS = protocol.HEURISTICS + protocol.PREDICTED_HEURISTICS
#: ``policy_pair`` mode: the pairs whose best is the reference (the heterogeneous table's lines).
REFERENCE_PAIRS = protocol.hetero_pairs(None) + protocol.PREDICTED_PAIRS


@dataclass(frozen=True)
class Guard:
    """The bound a validated model must keep to be a candidate.

    Attributes:
        factor: at most this many times the reference's longest wait and makespan.
        reference: the best heuristic on the validation sequences.
        max_wait_s: its longest wait there (over all sequences).
        makespan_s: its mean makespan there.
    """

    factor: float
    reference: str
    max_wait_s: float
    makespan_s: float

    def ratios(self, score: Score) -> tuple[float, float]:
        """A validation score's longest wait and makespan over the reference's."""
        return (_ratio(score.max_wait_s, self.max_wait_s),
                _ratio(score.makespan_s, self.makespan_s))

    def allows(self, score: Score) -> bool:
        """Whether ``score`` (the validation sequences combined) stays within the bound."""
        return all(r <= self.factor for r in self.ratios(score))

    def record(self) -> dict[str, Any]:
        """What the model file records of the guard."""
        return asdict(self)


def _ratio(value: float, ref: float) -> float:
    return value / ref if ref > 0 else (1.0 if value <= 0 else math.inf)


def check_guard(s: "TrainSettings") -> None:
    """The guard's settings.

    Raises:
        ConfigError: a factor below 1 or not finite (one line).
    """
    if not s.validation_guard:
        return
    if not (math.isfinite(s.validation_guard) and s.validation_guard >= 1):
        raise ConfigError(f"--validation-guard: expected a factor >= 1 (e.g. 1.25; 0: none), got "
                          f"{s.validation_guard:g}")


def guard_backfill(s: "TrainSettings") -> str:
    """The backfilling of the guard's heuristics: the run's, or EASY for a learner limited to
    EASY's picks (``--pick-limit easy``: it schedules as EASY does, in its own order)."""
    return "easy" if s.pick_limit == "easy" else s.backfill


def build_guard(s: "TrainSettings", starts: Sequence[int], nb_jobs: int) -> Guard | None:
    """The guard of a run validating on ``starts`` (``nb_jobs`` jobs each); None without one."""
    if not s.validation_guard:
        return None
    return guard_from(s, reference_scores(s, starts, nb_jobs))


def reference_scores(s: "TrainSettings", starts: Sequence[int], nb_jobs: int
                     ) -> dict[str, Score]:
    """Each reference heuristic's score on the validation sequences at ``starts`` of
    ``s.trace`` (``nb_jobs`` jobs each), at each validation load factor, combined as the
    validation combines a model's (each reference pair's, in ``policy_pair`` mode)."""
    if s.mode == "policy_pair":
        return _pair_scores(s, starts, nb_jobs)
    path = str(protocol.trace_path(s.trace, s.traces))
    sequences = [w if factor == 1 else scale_arrivals(w, factor)
                 for factor in s.validation_load_factors
                 for w in protocol.file_sequences(path, starts, nb_jobs)]
    platform = Platform.homogeneous(protocol.load_trace_file(path).nb_res)
    config = protocol.sim_config(guard_backfill(s), "event")
    return {name: Score.mean(protocol.run_policy(platform, w, name, config) for w in sequences)
            for name in REFERENCE_HEURISTICS}


def _pair_scores(s: "TrainSettings", starts: Sequence[int], nb_jobs: int) -> dict[str, Score]:
    """Each reference pair's score on the heterogeneous validation sequences at ``starts``, as
    the heterogeneous rows score a pair (their contention, no backfilling, event-driven)."""
    workload = protocol.hetero_workload_file(s.traces)
    sequences = [w if factor == 1 else scale_arrivals(w, factor)
                 for factor in s.validation_load_factors
                 for w in protocol.hetero_sequences(workload, starts, nb_jobs)]
    platform = protocol.hetero_platform()
    config = protocol.sim_config("none", "event", "hdeeprm")
    return {name: Score.mean(protocol.run_policy(platform, w, name, config) for w in sequences)
            for name in REFERENCE_PAIRS}


def best_reference(s: "TrainSettings", scores: dict[str, Score]) -> str:
    """The best heuristic of ``scores`` by the run's objective (the first of equals)."""
    return min(scores, key=lambda n: scores[n].value(s.objective))


def guard_from(s: "TrainSettings", scores: dict[str, Score]) -> Guard:
    """The guard of a run whose reference heuristics scored ``scores`` on validation."""
    best = best_reference(s, scores)
    guard = Guard(float(s.validation_guard), best, scores[best].max_wait_s,
                  scores[best].makespan_s)
    logger.info("validation guard: %s", guard)
    return guard
