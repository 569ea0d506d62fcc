"""Where a ``benchmarks/train.py`` run may draw its sequences: the no-leakage rule applied.

:func:`split_for` turns a run's settings into its :class:`Split`: the training range and the
pool of training start indices in it, the validation range, sequences and their length, and the
rule recorded in the model file (:func:`benchmarks.protocol_rule.make_rule`). Every range is
checked disjoint from the protocol's test windows and from each other, every validation sequence
inside the validation range, every training sequence inside the training range;
:func:`assert_training_window` checks each episode again as it is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from benchmarks import protocol
from benchmarks.protocol_rule import (
    Range,
    check_disjoint,
    check_inside,
    make_rule,
    range_starts,
    resolve,
    test_windows,
)
from hdrm.errors import ConfigError

if TYPE_CHECKING:
    from benchmarks.train_settings import TrainSettings


@dataclass(frozen=True)
class Split:
    """The jobs a training run may see.

    Attributes:
        train: the training range ``[first, end)``.
        validation: the validation range.
        validation_starts: start indices of the validation sequences.
        validation_jobs: jobs per validation sequence.
        pool: the start indices training draws from (each sequence inside ``train``).
        rule: what the model file records (``meta["rule"]``).
    """

    train: Range
    validation: Range
    validation_starts: tuple[int, ...]
    validation_jobs: int
    pool: np.ndarray
    rule: dict[str, Any]


def protocol_windows() -> list[Range]:
    """The test windows of the protocol: RLScheduler's start indices, 1,024 jobs each."""
    return test_windows(protocol.TEST_STARTS, protocol.SEQUENCE_JOBS)


def _bounds(given: tuple[int, int] | None, default: tuple[int, int | None] | None,
            nb_trace_jobs: int, flag: str) -> Range:
    """A range given on the command line, else the trace's; it must hold jobs of the trace."""
    bounds = resolve(given or default, nb_trace_jobs)  # type: ignore[arg-type]
    if not 0 <= bounds[0] < bounds[1]:
        raise ConfigError(f"{flag}: jobs [{bounds[0]}, {bounds[1]}) are not a range of the "
                          f"trace's {nb_trace_jobs} jobs; give FIRST,END with "
                          f"0 <= FIRST < END <= {nb_trace_jobs}")
    return bounds


def split_for(s: TrainSettings, nb_trace_jobs: int) -> Split:
    """The :class:`Split` of a run on a trace of ``nb_trace_jobs`` jobs.

    Raises:
        ConfigError: the trace is for evaluation only, a range overlaps a test window or the
            other range, a validation sequence leaves the validation range, or the training
            range is shorter than an episode (one line each).
    """
    spec = protocol.training_spec(s.trace, s.mode)
    if spec.train_range is None or spec.validation_range is None:
        raise ConfigError(f"--trace: {s.trace!r} is for evaluation only; train on one of: "
                          f"{', '.join(protocol.TRAINABLE)}")
    train = _bounds(s.train_range, spec.train_range, nb_trace_jobs, "--train-range")
    validation = _bounds(s.validation_range, spec.validation_range, nb_trace_jobs,
                         "--validation-range")
    path = protocol.trace_path(s.trace, s.traces)
    windows = protocol_windows()
    check_disjoint(str(path), {"training": train, "validation": validation}, windows)
    val_jobs = min(spec.validation_jobs, s.train_jobs)
    starts = tuple(s.validation_starts if s.validation_starts is not None
                   else spec.validation_starts)
    check_inside(starts, val_jobs, validation, "--validation-starts")
    pool = range_starts(train, s.train_jobs, "training range")
    check_inside(pool, s.train_jobs, train, "training")
    rule = make_rule(s.trace, path, train, validation, starts, val_jobs, windows)
    return Split(train, validation, starts, val_jobs, pool, rule)


def assert_training_window(start: int, nb_jobs: int, split: Split) -> None:
    """Fail loudly if an episode's sequence leaves the training range (it never should)."""
    if start < split.train[0] or start + nb_jobs > split.train[1]:
        raise RuntimeError(f"training episode [{start}, {start + nb_jobs}) leaves the training "
                           f"range [{split.train[0]}, {split.train[1]}): the no-leakage rule is "
                           "broken")
