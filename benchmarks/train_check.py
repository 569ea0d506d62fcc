"""Judge trained models on their trace's validation range only, with what the mean hides.

Usage::

    python benchmarks/train_check.py MODEL.pt [MODEL.pt ...] [--starts S1,S2,...]
        [--nb-jobs N] [--heuristics f1,sjf,...] [--traces DIR] [--max-parallel 1]

A change to training (an observation, a reward) is kept or dropped by how its models do on jobs
that no test window holds: this scores each model and the queue heuristics on sequences of the
training trace's validation range (:class:`benchmarks.protocol.TraceSpec`; by default the
validation sequences training used, ``--starts`` may give more, all inside the range) and prints
the mean bounded slowdown beside the tail of :class:`benchmarks.protocol.Score` (p95 and max
bounded slowdown, max wait, makespan, utilisation, share of long waits) and the ratios of max
wait and makespan to the best heuristic's, the comparison table's starvation flag
(:data:`benchmarks.compare_summary.FLAG_FACTOR`). Every model must come from the same trace. The
evaluations run as :mod:`benchmarks.evaluation` runs (a model evaluated on jobs it validated on
is accepted here: that is the point).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Sequence

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import cli_lists, evaluation, protocol  # noqa: E402
from benchmarks.compare_summary import FLAG_FACTOR  # noqa: E402
from benchmarks.evaluation import EvalRun, Execution  # noqa: E402
from benchmarks.protocol import Score  # noqa: E402
from benchmarks.protocol_rule import check_inside  # noqa: E402
from hdrm.errors import ConfigError, HdrmError  # noqa: E402
from hdrm.cli import script as cli  # noqa: E402

logger = logging.getLogger(__name__)

#: The heuristics scored beside the models by default (event-driven, the protocol's candidates).
DEFAULT_HEURISTICS = protocol.HEURISTICS + protocol.PREDICTED_HEURISTICS
COLUMNS = ("bsld", "p95_bsld", "max_bsld", "max_wait_s", "makespan_s", "utilisation",
           "long_wait_share")


def model_meta(path: str) -> dict:
    """The options recorded in the model file ``path`` (its setting, its rule).

    Raises:
        ConfigError: not a ``job_pick`` model of ``benchmarks/train.py`` (one line naming the
            file).
    """
    from hdrm.agents.checkpoint import read_checkpoint

    if not Path(path).is_file():
        raise ConfigError(f"{path}: no such model file; give checkpoints written by "
                          "benchmarks/train.py")
    options = read_checkpoint(path)["options"]
    setting = options.get("setting") if isinstance(options, dict) else None
    if not isinstance(setting, dict) or setting.get("mode") != "job_pick":
        raise ConfigError(f"{path}: options.setting: not a job_pick model of benchmarks/train.py; "
                          "this check scores job_pick models on their trace's validation range")
    return options


def validation_plan(trace: str, traces: str, rule: dict | None, starts: Sequence[int] | None,
                    nb_jobs: int | None) -> tuple[tuple[int, ...], int, str]:
    """The validation sequences to score (start indices, jobs each) and the trace file: inside
    the validation range the model's rule records (else the trace's), by default the ones
    training validated on.

    Raises:
        ConfigError: the trace has no validation range, or a sequence leaves it.
    """
    spec = protocol.training_spec(trace)
    if isinstance(rule, dict):
        bounds = tuple(rule["validation_jobs"])
        default_starts, default_jobs = rule["validation_starts"], rule["validation_sequence_jobs"]
    elif spec.validation_range is not None:
        bounds = spec.validation_range
        default_starts, default_jobs = spec.validation_starts, spec.validation_jobs
    else:
        raise ConfigError(f"--trace: {trace!r} has no validation range; models train on one of: "
                          f"{', '.join(protocol.TRAINABLE)}")
    jobs = nb_jobs or int(default_jobs)
    chosen = tuple(int(s) for s in (starts or default_starts))
    check_inside(chosen, jobs, bounds, "--starts")  # type: ignore[arg-type]
    return chosen, jobs, str(protocol.trace_path(trace, traces))


def plan_runs(models: Sequence[str], heuristics: Sequence[str], traces: str, cache: str,
              starts: Sequence[int] | None = None, nb_jobs: int | None = None
              ) -> dict[str, EvalRun]:
    """``{column: evaluation}`` of the heuristics then the models, on the validation sequences.

    Raises:
        ConfigError: a bad model file, models of different traces, backfilling or validation
            ranges, a sequence outside the validation range.
    """
    metas = {path: model_meta(path) for path in models}
    kinds = {(m["setting"]["trace"], m["setting"]["backfill"]) for m in metas.values()}
    ranges = {tuple(m["rule"]["validation_jobs"]) for m in metas.values()
              if isinstance(m.get("rule"), dict)}
    if len(kinds) != 1 or len(ranges) > 1:
        raise ConfigError(f"MODEL.pt: the models come from {len(kinds)} trace/backfilling "
                          f"settings ({sorted(kinds)}) with validation ranges {sorted(ranges)}; "
                          "check the models of one setting and one range at a time")
    trace, backfill = kinds.pop()
    rule = next((m["rule"] for m in metas.values() if isinstance(m.get("rule"), dict)), None)
    chosen, jobs, trace_file = validation_plan(trace, traces, rule, starts, nb_jobs)
    for path, meta in metas.items():
        if not isinstance(meta.get("rule"), dict):
            logger.warning("%s: trained before the no-leakage rule: it may have trained on these "
                           "validation jobs", path)
    runs = {f"{p} (event)": EvalRun("heuristic", p, traces, cache, chosen, jobs, trace, backfill,
                                    "event", trace_file=trace_file) for p in heuristics}
    for path in models:
        setting = metas[path]["setting"]
        runs[Path(path).name] = evaluation.model_run(
            path, traces, cache, chosen, jobs, trace, evaluation.model_backfill(setting, backfill),
            "protocol", "", trace_file, allow_leaky=True, decision=setting["decision"])
    return runs


def report(scores: dict[str, Score], heuristics: Sequence[str]) -> list[str]:
    """Lines of a Markdown table: each column's figures, and for the models their max wait and
    makespan over the best heuristic's (``!`` past the flag factor)."""
    fixed = [name for name in scores if name.split(" ")[0] in heuristics]
    best = min(fixed, key=lambda n: scores[n].bsld)
    lines = [f"best heuristic: {best}; a ratio past {FLAG_FACTOR:g} is the table's flag (!)",
             "| | " + " | ".join(COLUMNS) + " | max wait / best | makespan / best |",
             "|---" * (len(COLUMNS) + 3) + "|"]
    ref = scores[best]
    for name, sc in scores.items():
        values = [f"{getattr(sc, c):.4g}" for c in COLUMNS]
        ratios = ["", ""]
        if name not in fixed:
            ratios = [_ratio(sc.max_wait_s, ref.max_wait_s), _ratio(sc.makespan_s, ref.makespan_s)]
        lines.append(f"| {name} | " + " | ".join(values + ratios) + " |")
    return lines


def _ratio(value: float, ref: float) -> str:
    ratio = value / ref if ref else float("nan")
    return f"{ratio:.2f}{' !' if ratio > FLAG_FACTOR else ''}"


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="+", metavar="MODEL.pt")
    p.add_argument("--starts", help="comma-separated start indices inside the validation range "
                   "(default: the validation sequences of training)")
    p.add_argument("--nb-jobs", type=cli.count(1), help="jobs per sequence (default: the rule's)")
    p.add_argument("--heuristics", default=",".join(DEFAULT_HEURISTICS))
    p.add_argument("--traces", default=str(protocol.DEFAULT_TRACES))
    p.add_argument("--cache", default=str(protocol.CACHE_DIR))
    p.add_argument("--max-parallel", type=cli.count(1), default=1)
    p.add_argument("--outdir", help="keep finished evaluations here (a rerun resumes)")
    a = p.parse_args(argv)
    heuristics = tuple(h.strip() for h in a.heuristics.split(",") if h.strip())
    try:
        starts = (tuple(cli_lists.ints(a.starts, "--starts", "6252,6352", minimum=0))
                  if a.starts else None)
        runs = plan_runs(a.models, heuristics, a.traces, a.cache, starts, a.nb_jobs)
        values = evaluation.run_evaluations(list(runs.values()),
                                            Execution("auto", a.max_parallel, a.outdir))
    except HdrmError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(report(dict(zip(runs, values)), heuristics)))
    return 0


if __name__ == "__main__":
    sys.exit(cli.guarded(main))
