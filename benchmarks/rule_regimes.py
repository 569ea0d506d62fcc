"""How the heuristics rank in each range of a trace's no-leakage rule (issue 26).

Usage::

    python benchmarks/rule_regimes.py [--trace sdsc] [--backfill none,easy] [--step 512]
        [--heuristics f1,sjf,...] [--traces DIR] [--json OUT]

A learner trained and validated under the rule (:mod:`benchmarks.protocol_rule`) only ever sees
the training range and the validation sequences; it is judged on the test windows. This scores
the event-driven queue heuristics of the protocol (and the predicted-time ones) on every window
of each: the test windows (RLScheduler's start indices), the rule's validation sequences, and
the training range's 1,024-job windows every ``--step`` jobs. For each range it prints the mean
average bounded slowdown of every heuristic, the heuristic with the best mean, and on how many
windows each heuristic is the best. When the ranges disagree on which heuristic is best, a model
chosen on the validation range and trained on the training range is chosen for another regime
than the one it is tested in: that is measured here, before any learning.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import cli_lists, protocol  # noqa: E402
from benchmarks.choices import named  # noqa: E402
from hdrm.errors import ConfigError, HdrmError  # noqa: E402
from hdrm.platform.model import Platform  # noqa: E402
from hdrm.policies.job_selection import JOB_POLICIES  # noqa: E402
from hdrm.workload.job import Workload  # noqa: E402
from hdrm.workload.select import sequence  # noqa: E402

#: The heuristics scored by default: the protocol's event-driven candidates.
DEFAULT_HEURISTICS = protocol.HEURISTICS + protocol.PREDICTED_HEURISTICS


def range_windows(spec: protocol.TraceSpec, nb_trace_jobs: int, step: int,
                  nb_jobs: int = protocol.SEQUENCE_JOBS,
                  test_starts: Sequence[int] = protocol.TEST_STARTS
                  ) -> dict[str, tuple[list[int], int]]:
    """The windows of each range as (start indices, jobs per window): ``test``, ``validation``
    (the rule's sequences, of the rule's length) and ``training`` (every ``step`` jobs, each
    window of ``nb_jobs`` inside the training range).

    Raises:
        ConfigError: the trace has no training range (evaluation only), or ``step`` < 1.
    """
    if spec.train_range is None:
        raise ConfigError(f"--trace: {spec.key!r} is for evaluation only (no rule); choose one "
                          f"of: {', '.join(protocol.TRAINABLE)}")
    if step < 1:
        raise ConfigError(f"--step {step}: expected a positive number of jobs (e.g. 512)")
    first, end = spec.train_range[0], min(spec.train_range[1] or nb_trace_jobs, nb_trace_jobs)
    return {"test": ([int(s) for s in test_starts], nb_jobs),
            "validation": ([int(s) for s in spec.validation_starts],
                           min(nb_jobs, spec.validation_jobs)),
            "training": (list(range(first, end - nb_jobs + 1, step)), nb_jobs)}


def window_scores(trace: Workload, platform: Platform, starts: Sequence[int],
                  heuristics: Sequence[str], backfill: str,
                  nb_jobs: int = protocol.SEQUENCE_JOBS) -> np.ndarray:
    """Average bounded slowdown of each heuristic (columns) on each window (rows)."""
    config = protocol.sim_config(backfill, "event")
    return np.array([[protocol.run_policy(platform, sequence(trace, int(s), nb_jobs), h,
                                          config).bsld for h in heuristics]
                     for s in starts], dtype=float).reshape(len(starts), len(heuristics))


def summarise(scores: np.ndarray, heuristics: Sequence[str]) -> dict[str, Any]:
    """The mean of each heuristic, the best mean, and the windows each heuristic wins (a tie
    goes to the first of ``heuristics``)."""
    means = scores.mean(axis=0)
    wins = np.bincount(scores.argmin(axis=1), minlength=len(heuristics))
    return {"windows": int(scores.shape[0]),
            "mean": {h: round(float(m), 2) for h, m in zip(heuristics, means)},
            "best": heuristics[int(means.argmin())],
            "wins": {h: int(w) for h, w in zip(heuristics, wins) if w}}


def regimes(trace: Workload, spec: protocol.TraceSpec, heuristics: Sequence[str],
            backfills: Sequence[str], step: int, nb_jobs: int = protocol.SEQUENCE_JOBS,
            test_starts: Sequence[int] = protocol.TEST_STARTS) -> dict[str, Any]:
    """:func:`summarise` of every range under every backfilling, as ``{backfill: {range: ...}}``,
    with each window's start and scores (one row per window, one column per heuristic)."""
    platform = Platform.homogeneous(trace.nb_res)
    windows = range_windows(spec, len(trace.jobs), step, nb_jobs, test_starts)
    figures: dict[str, Any] = {}
    for bf in backfills:
        figures[bf] = {}
        for name, (starts, jobs) in windows.items():
            scores = window_scores(trace, platform, starts, heuristics, bf, jobs)
            figures[bf][name] = dict(summarise(scores, heuristics), jobs=jobs, starts=starts,
                                     scores=scores.round(2).tolist())
    return figures


def report(figures: dict[str, Any], heuristics: Sequence[str]) -> list[str]:
    """A Markdown table per backfilling: one line per range."""
    lines = []
    for bf, ranges in figures.items():
        lines += [f"backfilling {bf}: mean average bounded slowdown per window (best in bold)", "",
                  "| range | windows (jobs) | " + " | ".join(heuristics) + " | best | wins |",
                  "|---" * (len(heuristics) + 4) + "|"]
        for name, s in ranges.items():
            cells = [f"**{s['mean'][h]:.2f}**" if h == s["best"] else f"{s['mean'][h]:.2f}"
                     for h in heuristics]
            wins = ", ".join(f"{h} {w}" for h, w in sorted(s["wins"].items(), key=lambda x: -x[1]))
            lines.append(f"| {name} | {s['windows']} ({s['jobs']}) | " + " | ".join(cells)
                         + f" | {s['best']} | {wins} |")
        lines.append("")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trace", default="sdsc", help="a trace with a rule: lublin or sdsc")
    p.add_argument("--backfill", default="none,easy", help="backfillings, comma-separated")
    p.add_argument("--step", type=int, default=512, help="jobs between training-range windows")
    p.add_argument("--heuristics", default=",".join(DEFAULT_HEURISTICS))
    p.add_argument("--traces", default=str(protocol.DEFAULT_TRACES))
    p.add_argument("--json", help="also write the figures to this file")
    a = p.parse_args(argv)
    try:
        spec = protocol.trace_spec(a.trace)
        backfills = cli_lists.items(a.backfill)
        for b in backfills:
            named(dict.fromkeys(protocol.BACKFILLS), b, "--backfill", "backfilling")
        heuristics = cli_lists.items(a.heuristics)
        for h in heuristics:
            JOB_POLICIES.get(h, "--heuristics")
        if not backfills or not heuristics:
            raise ConfigError("--backfill / --heuristics: give at least one name each")
        trace = protocol.load_trace(a.trace, a.traces)
        figures = regimes(trace, spec, heuristics, backfills, a.step)
    except HdrmError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(report(figures, heuristics)))
    if a.json:
        Path(a.json).write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    from hdrm.cli.script import guarded

    sys.exit(guarded(main))
