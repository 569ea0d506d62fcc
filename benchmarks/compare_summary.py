"""The summary cells of a row of the comparison table: best heuristic, best learner, flags, targets.

* The **best heuristic** of a row is the lowest value over every fixed policy of the row: the
  five queue heuristics under both decision semantics *and* the predicted-run-time heuristics
  (on the heterogeneous rows: HDeepRM's 36 pairs and the 18 predicted-time pairs). The best of
  the predicted-time ones is also reported on its own.
* A learner's cell is the mean over its training seeds (:func:`seed_mean`); its spread is the
  column ``"<learner> [min-max]"``.
* A learner is **flagged** (:func:`flags`) when the longest wait or the makespan of any of its
  seeds is more than :data:`FLAG_FACTOR` times the best heuristic's: the mean can hide starvation.
* Only learners trained under the no-leakage rule, evaluated on jobs they never saw, count for a
  target (``eligible``); a target also needs :data:`MIN_SEEDS` seeds and no flag.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from benchmarks import protocol
from benchmarks.protocol import Score

TARGET_FACTOR = 0.95
#: A learner's max wait or makespan above this times the best heuristic's is flagged.
FLAG_FACTOR = 1.5
#: Training seeds a learner cell needs before a target can be met.
MIN_SEEDS = 3
#: The tail metrics shown beside each row's mean (``Score`` fields), and their labels.
TAIL_METRICS = {"utilisation": "utilisation", "p95_bsld": "p95 bsld", "max_bsld": "max bsld",
                "max_wait_s": "max wait (s)", "makespan_s": "makespan (s)",
                "long_wait_share": "share waiting > 10x run"}


def seed_mean(scores: Sequence[Score]) -> Score:
    """The field-wise mean over a learner's seeds (each score already combines the sequences)."""
    return Score(*(float(np.mean([getattr(s, f.name) for s in scores]))
                   for f in dataclasses.fields(Score)))


def spread_text(values: Sequence[float]) -> str:
    """``"10.21-14.10 (3 seeds)"``: the min-max of a learner's seeds."""
    n = len(values)
    return f"{min(values):.2f}-{max(values):.2f} ({n} seed{'s' if n != 1 else ''})"


def flags(learners: Sequence[str], best: str, tail: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The learners whose max wait or makespan exceeds :data:`FLAG_FACTOR` x the best heuristic's.

    Args:
        learners: the learner columns of the row.
        best: the best heuristic's column.
        tail: ``{metric: {column: value}}`` of the row.

    Returns:
        ``{learner: "max wait 2.10x, makespan 1.60x F1 (event)"}`` for the flagged ones.
    """
    out = {}
    for col in learners:
        parts = []
        for metric, label in (("max_wait_s", "max wait"), ("makespan_s", "makespan")):
            ref, value = tail[metric].get(best), tail[metric].get(col)
            if ref and value is not None and value > FLAG_FACTOR * ref:
                parts.append(f"{label} {value / ref:.2f}x")
        if parts:
            out[col] = f"{', '.join(parts)} {best}"
    return out


def summarise(row: Any, cells: dict[str, Any], learners: list[str], eligible: list[str],
              seeds: dict[str, int], tail: dict[str, dict[str, Any]],
              predicted_cols: Sequence[str]) -> None:
    """Add the published values, the best heuristic, the flags and the targets to ``cells``.

    Args:
        row: the row (its ``group``, ``trace``, ``backfill``).
        cells: ``{column: value}`` of the row (changed in place).
        learners: the learner columns.
        eligible: the learner columns that may meet a target (trained under the rule, on
            jobs they did not see).
        seeds: training seeds behind each learner column.
        tail: ``{metric: {column: value}}`` of the row used for the flags: a learner's worst
            seed (a seed that starves jobs is a model one could ship, whatever the mean says).
        predicted_cols: the row's predicted-run-time columns.
    """
    fixed = {c: v for c, v in cells.items() if c not in learners and isinstance(v, float)}
    predicted = {c: fixed[c] for c in predicted_cols if c in fixed}
    if row.group == "protocol":
        for name, value in protocol.PUBLISHED[(row.trace, row.backfill)].items():
            cells[f"{name} (RLScheduler, published)"] = value
    best_col = min(fixed, key=fixed.get)
    cells["best heuristic"], cells["best heuristic name"] = fixed[best_col], best_col
    if predicted:
        best_pred = min(predicted, key=predicted.get)
        cells["best predicted-time heuristic"] = predicted[best_pred]
        cells["best predicted-time heuristic name"] = best_pred
    flagged = {c: text + (f" (worst of {seeds[c]} seeds)" if seeds.get(c, 1) > 1 else "")
               for c, text in flags(learners, best_col, tail).items()}
    cells["flags"] = "; ".join(f"{c}: {t}" for c, t in flagged.items()) or "none"
    if learners:
        best_learner = min(learners, key=lambda c: cells[c])
        cells["best learner"], cells["best learner name"] = cells[best_learner], best_learner
    _targets(row, cells, fixed[best_col], eligible, seeds, flagged,
             discriminates(list(fixed.values())))


def discriminates(values: Sequence[float]) -> bool:
    """Whether the fixed policies of a row differ at all: on a trace whose windows never queue
    a job (NASA-iPSC's arrivals are its real starts; LLNL-Atlas at this load) every policy scores
    1, and the row says nothing about scheduling."""
    values = list(values)
    return bool(values) and max(values) - min(values) > 1e-9 * max(1.0, abs(max(values)))


def _targets(row: Any, cells: dict[str, Any], best: float, eligible: list[str],
             seeds: dict[str, int], flagged: dict[str, str], differ: bool = True) -> None:
    """The target cells: met only by an eligible learner's mean over enough seeds, unflagged;
    none on a generalisation row whose fixed policies all score the same (``differ`` False).

    The best rule-abiding learner is reported; when it is flagged or has too few seeds, the
    best of the others that qualifies may still meet the target (``target met by``: a flagged
    learner never meets one, so it does not hide one that does)."""
    if row.group == "protocol":
        cells[f"target ({TARGET_FACTOR} x best heuristic)"] = TARGET_FACTOR * best
    if row.group == "generalisation" and not differ:
        cells["target met"] = (f"n/a: every fixed policy scores {best:.2f} here, so these "
                               "windows do not tell policies apart")
        return
    if not eligible:
        cells["target met"] = "n/a: no model trained under the no-leakage rule"
        return
    name = min(eligible, key=lambda c: cells[c])
    cells["best rule-abiding learner"], cells["best rule-abiding learner name"] = cells[name], name
    qualified = [c for c in eligible if _beats(row, cells, cells[c], best)
                 and c not in flagged and seeds.get(c, 0) >= MIN_SEEDS]
    if qualified:
        cells["target met"] = True
        cells["target met by"] = min(qualified, key=lambda c: cells[c])
    elif not _beats(row, cells, cells[name], best):
        cells["target met"] = False
    elif name in flagged:
        cells["target met"] = f"no: flagged ({flagged[name]})"
    else:
        cells["target met"] = f"no: {seeds.get(name, 0)} seed(s), {MIN_SEEDS} needed"


def _beats(row: Any, cells: dict[str, Any], value: float, best: float) -> bool:
    """Whether a learner's ``value`` beats the row's target (before flags and seeds)."""
    if row.group == "protocol":
        ppo = protocol.PUBLISHED[(row.trace, row.backfill)]["PPO"]
        return value <= TARGET_FACTOR * best and value <= ppo
    if row.group == "generalisation":  # at least as good as the best heuristic
        return value <= best
    return value < best  # hetero: better than the best fixed pair
