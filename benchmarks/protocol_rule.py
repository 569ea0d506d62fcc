"""The no-leakage rule: a model never trains or validates on a job it is tested on.

Each trainable trace of :data:`benchmarks.protocol.TRACES` has a training range and a validation
range of job indices (``[first, end)``, disjoint from each other and from every test window,
i.e. every sequence of :data:`~benchmarks.protocol.SEQUENCE_JOBS` jobs at RLScheduler's test start
indices). ``benchmarks/train.py`` draws its episodes only inside the training range and validates
only inside the validation range (:func:`check_inside` asserts it), and it records the rule in the
model file (:func:`make_rule`: trace, checksum of its content, both ranges, the test windows).
``benchmarks/compare.py`` refuses to evaluate a model on a window that shares a job with what it
saw, or a model that records no rule (:func:`check_evaluation`), unless told to accept it for a
legacy study; then the cell is marked. A model trained on several traces at once records each
trace's rule (:func:`make_mix_rule`, version 2) and is refused on what any of them saw.
"""

from __future__ import annotations

import gzip
import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from hdrm.errors import ConfigError

#: A range of job indices ``(first, end)``, end excluded.
Range = tuple[int, int]
#: Version of the recorded rule (``meta["rule"]["version"]``).
RULE_VERSION = 1
#: Version of the rule of a model trained on several traces (:func:`make_mix_rule`): one
#: version-1 rule per trace under ``"traces"``. A reader that knows only version 1 takes such a
#: model for one trained before the rule and refuses it.
MIX_RULE_VERSION = 2
#: How a cell whose model records no rule is marked (accepted with ``--allow-leaky``).
PRE_RULE = "pre-rule"
#: How a cell whose model saw jobs of the evaluated windows is marked (``--allow-leaky``).
LEAKY = "leaky"


def window(start: int, nb_jobs: int) -> Range:
    """The jobs of the sequence of ``nb_jobs`` jobs from ``start``."""
    return int(start), int(start) + int(nb_jobs)


def overlap(a: Range, b: Range) -> Range | None:
    """The jobs ``a`` and ``b`` share, or None."""
    first, end = max(a[0], b[0]), min(a[1], b[1])
    return (first, end) if first < end else None


def resolve(bounds: tuple[int, int | None], nb_trace_jobs: int) -> Range:
    """``bounds`` with an open end (None) or an end past the trace cut to the trace's length."""
    end = nb_trace_jobs if bounds[1] is None else min(int(bounds[1]), nb_trace_jobs)
    return int(bounds[0]), end


def range_starts(bounds: Range, nb_jobs: int, what: str) -> np.ndarray:
    """Every start index whose sequence of ``nb_jobs`` jobs lies inside ``bounds``.

    Raises:
        ConfigError: the range holds fewer than ``nb_jobs`` jobs.
    """
    starts = np.arange(bounds[0], bounds[1] - nb_jobs + 1)
    if len(starts) == 0:
        raise ConfigError(f"--train-jobs {nb_jobs}: the {what} [{bounds[0]}, {bounds[1]}) holds "
                          f"only {max(0, bounds[1] - bounds[0])} jobs; use shorter episodes")
    return starts


def test_windows(starts: Iterable[int], nb_jobs: int) -> list[Range]:
    """The windows of the test sequences at ``starts``."""
    return [window(s, nb_jobs) for s in starts]


def check_disjoint(name: str, ranges: dict[str, Range], windows: Sequence[Range]) -> None:
    """Refuse ranges that share a job with a test window or with each other.

    Args:
        name: what the ranges belong to (a trace file), for the message.
        ranges: ``{"training": (first, end), "validation": ...}``.
        windows: the test windows.

    Raises:
        ConfigError: one line naming ``name``, the range and the jobs it shares.
    """
    for what, bounds in ranges.items():
        for test in windows:
            shared = overlap(bounds, test)
            if shared:
                raise ConfigError(
                    f"{name}: {what} jobs [{bounds[0]}, {bounds[1]}) overlap the test window "
                    f"[{test[0]}, {test[1]}) on jobs [{shared[0]}, {shared[1]}); keep training "
                    "and validation outside every test window")
    items = list(ranges.items())
    for i, (what, bounds) in enumerate(items):
        for other, obounds in items[i + 1:]:
            shared = overlap(bounds, obounds)
            if shared:
                raise ConfigError(f"{name}: {what} jobs [{bounds[0]}, {bounds[1]}) overlap the "
                                  f"{other} jobs [{obounds[0]}, {obounds[1]}) on jobs "
                                  f"[{shared[0]}, {shared[1]}); make them disjoint")


def check_inside(starts: Iterable[int], nb_jobs: int, bounds: Range, what: str) -> None:
    """Assert that every sequence of ``nb_jobs`` jobs at ``starts`` lies inside ``bounds``.

    Raises:
        ConfigError: one line naming the first sequence outside (a setting error, e.g. a
            ``--validation-starts`` value outside the validation range).
    """
    for start in starts:
        seq = window(start, nb_jobs)
        if seq[0] < bounds[0] or seq[1] > bounds[1]:
            raise ConfigError(f"{what}: the sequence [{seq[0]}, {seq[1]}) leaves the allowed "
                              f"jobs [{bounds[0]}, {bounds[1]}); choose starts inside it")


@lru_cache(maxsize=16)
def trace_sha256(path: str) -> str:
    """SHA-256 of the trace's content (decompressed when gzipped), so a plain and a gzipped copy
    of one trace are recognised as the same."""
    opener = gzip.open if path.endswith(".gz") else open
    digest = hashlib.sha256()
    with opener(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def make_rule(trace: str, path: str | Path, train: Range, validation: Range,
              validation_starts: Sequence[int], validation_jobs: int,
              windows: Sequence[Range]) -> dict[str, Any]:
    """The rule a model records: what it trained and validated on and what it is tested on."""
    return {"version": RULE_VERSION, "trace": trace, "trace_file": Path(path).name,
            "trace_sha256": trace_sha256(str(path)), "train_jobs": list(train),
            "validation_jobs": list(validation),
            "validation_starts": [int(s) for s in validation_starts],
            "validation_sequence_jobs": int(validation_jobs),
            "test_windows": [list(w) for w in windows]}


def trace_keys(text: str) -> tuple[str, ...]:
    """The trace keys of a ``--trace`` value or a model's ``setting["trace"]``:
    ``"sdsc,lublin"`` -> ``("sdsc", "lublin")``; one key for a model trained on one trace."""
    return tuple(key.strip() for key in str(text).split(","))


def traces_label(text: str) -> str:
    """The table name of the traces a model trained on: ``"SDSC-SP2+Lublin-1"`` for
    ``"sdsc,lublin"``, ``"SDSC-SP2"`` for ``"sdsc"``."""
    from benchmarks import protocol

    return "+".join(protocol.TRACES[key].label for key in trace_keys(text))


def make_mix_rule(rules: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The rule of a model trained on several traces: each trace's own rule (:func:`make_rule`),
    in the order of ``--trace``."""
    return {"version": MIX_RULE_VERSION, "trace": ",".join(r["trace"] for r in rules),
            "traces": [dict(r) for r in rules]}


def rule_parts(rule: dict[str, Any]) -> list[dict[str, Any]]:
    """The one-trace rules a recorded rule holds: its own, or each trace's of a mix."""
    return list(rule["traces"]) if rule.get("version") == MIX_RULE_VERSION else [rule]


def seen_ranges(rule: dict[str, Any]) -> dict[str, Range]:
    """The jobs a model saw: ``{"training": ..., "validation": ...}``."""
    return {"training": tuple(rule["train_jobs"]), "validation": tuple(rule["validation_jobs"])}


def check_evaluation(model_file: str, meta: dict[str, Any], trace_file: str | Path,
                     windows: Sequence[Range], allow_leaky: bool = False) -> str:
    """Whether a model may be evaluated on ``windows`` of ``trace_file``.

    Returns:
        ``""`` (clean), or with ``allow_leaky`` the mark of the cell: :data:`PRE_RULE` (the model
        records no rule) or :data:`LEAKY` (it saw jobs of these windows).

    Raises:
        ConfigError: without ``allow_leaky``, one line naming the model file and the overlap.
    """
    rule = meta.get("rule")
    if not isinstance(rule, dict) or rule.get("version") not in (RULE_VERSION, MIX_RULE_VERSION):
        if allow_leaky:
            return PRE_RULE
        raise ConfigError(f"{model_file}: trained before the no-leakage rule (its metadata has no "
                          "'rule'), so it may have trained on test jobs; retrain it with "
                          "benchmarks/train.py, or pass --allow-leaky to mark its cells leaky")
    digest = trace_sha256(str(trace_file))
    for part in rule_parts(rule):
        if part["trace_sha256"] == digest:  # another trace's jobs: nothing seen
            mark = _check_part(model_file, part, windows, allow_leaky)
            if mark:
                return mark
    return ""


def _check_part(model_file: str, rule: dict[str, Any], windows: Sequence[Range],
                allow_leaky: bool) -> str:
    """:func:`check_evaluation` against one trace's rule of the evaluated trace file."""
    for what, bounds in seen_ranges(rule).items():
        for test in windows:
            shared = overlap(bounds, test)
            if shared:
                if allow_leaky:
                    return LEAKY
                raise ConfigError(
                    f"{model_file}: its {what} jobs [{bounds[0]}, {bounds[1]}) of "
                    f"{rule['trace_file']} overlap the evaluated window [{test[0]}, {test[1]}) "
                    f"on jobs [{shared[0]}, {shared[1]}); evaluate it elsewhere, or pass "
                    "--allow-leaky to mark the cell leaky")
    return ""
