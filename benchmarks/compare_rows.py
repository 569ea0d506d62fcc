"""The rows of the comparison table: where policies are evaluated.

* **protocol** rows: Lublin-1 and SDSC-SP2 at RLScheduler's test start indices, without and with
  EASY backfilling;
* **generalisation** rows: every shipped trace (:data:`GENERALISATION_TRACES`) and every trace
  given with ``--extra-trace NAME=PATH[:PROCS]`` (:func:`parse_extra_trace`), at evenly spaced
  windows over the whole trace (:func:`spread_starts`), with the models trained on the *other*
  traces;
* **hetero** rows: ``policy_pair`` on ``platforms/hetero.json``, one per objective.

A row knows the trace file it reads (so the no-leakage rule can compare checksums), its
processors (0: the trace's MaxProcs) and, for generalisation rows, its own windows.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from benchmarks import protocol
from hdrm.errors import ConfigError, SkippableLineError

logger = logging.getLogger(__name__)

GROUPS = ("protocol", "generalisation", "hetero")
BF_LABEL = {"none": "no backfilling", "easy": "EASY backfilling"}
#: The shipped traces of the generalisation rows (each row holds the models of the other traces).
GENERALISATION_TRACES = ("lublin", "sdsc", "ctc", "kth", "sdsc-par", "nasa", "llnl")


@dataclass(frozen=True)
class ExtraTrace:
    """A trace given on the command line: ``NAME=PATH[:PROCS]``."""

    name: str
    path: str
    procs: int = 0


@dataclass(frozen=True)
class Row:
    """One row: where policies are evaluated and which models apply.

    Attributes:
        name: the row's name in the table.
        group: ``protocol``, ``generalisation`` or ``hetero``.
        trace: trace key (or an extra trace's name).
        model_trace: the trace whose models fill a protocol row.
        backfill: backfilling of the heuristics.
        objective: the row's objective.
        trace_file: the SWF file read ("" for protocol and hetero rows: the key's file).
        procs: processors of the homogeneous platform (0: the trace's MaxProcs).
        starts: the row's own start indices (empty: the context's).
    """

    name: str
    group: str
    trace: str
    model_trace: str
    backfill: str = "none"
    objective: str = "avg_bounded_slowdown"
    trace_file: str = ""
    procs: int = 0
    starts: tuple[int, ...] = ()


def parse_extra_trace(text: str) -> ExtraTrace:
    """``NAME=PATH[:PROCS]`` as an :class:`ExtraTrace`.

    Raises:
        ConfigError: one line naming the bad value (no ``=``, an empty name or path, a name of a
            shipped trace, PROCS not a positive integer, no such file).
    """
    name, sep, rest = text.partition("=")
    name = name.strip()
    if not sep or not name or not rest:
        raise ConfigError(f"--extra-trace: expected NAME=PATH[:PROCS] (e.g. "
                          f"anl=/data/ANL.swf.gz:40960), got {text!r}")
    if name in protocol.TRACES:
        raise ConfigError(f"--extra-trace: name {name!r} is a shipped trace's; choose another")
    path, procs = rest, 0
    head, colon, tail = rest.rpartition(":")
    if colon and head:
        path = head
        try:
            procs = int(tail)
        except ValueError:
            raise ConfigError(f"--extra-trace {name}: PROCS must be a positive integer, got "
                              f"{tail!r}") from None
        if procs < 1:
            raise ConfigError(f"--extra-trace {name}: PROCS must be a positive integer, got "
                              f"{tail!r}")
    if not Path(path).is_file():
        raise ConfigError(f"--extra-trace {name}: no such file {path!r}; give an SWF trace "
                          "(.swf or .swf.gz)")
    return ExtraTrace(name, str(Path(path).resolve()), procs)


def spread_starts(nb_trace_jobs: int, count: int, nb_jobs: int) -> tuple[int, ...]:
    """``count`` start indices evenly spaced so that every window of ``nb_jobs`` jobs lies in
    the trace: the first at 0, the last at ``nb_trace_jobs - nb_jobs``.

    Raises:
        ConfigError: the trace is shorter than one window.
    """
    if nb_trace_jobs < nb_jobs or count < 1:
        raise ConfigError(f"--nb-jobs {nb_jobs}: the trace has {nb_trace_jobs} jobs, fewer "
                          "than one window; use shorter windows")
    if count == 1:
        return (0,)
    return tuple(int(round(x)) for x in np.linspace(0, nb_trace_jobs - nb_jobs, count))


def generalisation_rows(traces_dir: str, extra: Sequence[ExtraTrace], count: int,
                        nb_jobs: int) -> list[Row]:
    """The generalisation rows of the shipped traces found in ``traces_dir`` and of ``extra``."""
    sources = []
    for key in GENERALISATION_TRACES:
        path = Path(traces_dir) / protocol.TRACES[key].file
        if path.is_file():
            sources.append((key, protocol.TRACES[key].label, str(path.resolve()), 0))
    sources += [(e.name, e.name, e.path, e.procs) for e in extra]
    out = []
    for key, label, path, procs in sources:
        starts = spread_starts(_row_trace_length(key, path, procs), count, nb_jobs)
        for b in protocol.BACKFILLS:
            out.append(Row(f"{label} (other traces' models), {BF_LABEL[b]}", "generalisation",
                           key, "", b, trace_file=path, procs=procs, starts=starts))
    return out


def _row_trace_length(key: str, path: str, procs: int) -> int:
    """The number of jobs of a generalisation row's trace, read as its evaluations read it.

    Raises:
        WorkloadError: a line the reader refuses, in one line without a way to skip it (the
            comparison has none).
        ConfigError: no PROCS and the trace states no MaxProcs or MaxNodes.
    """
    try:
        trace = protocol.load_trace_file(path)
    except SkippableLineError as exc:
        raise exc.unskippable() from None
    if procs == 0 and trace.nb_res is None:
        raise ConfigError(f"--extra-trace {key}: {path} states no MaxProcs (nor MaxNodes) in its "
                          f"header; give the processors, {key}=PATH:PROCS")
    size = procs or trace.nb_res
    wider = [job.res for job in trace.jobs if job.res > size]
    if wider:  # the simulator rejects them, and the metrics count the jobs that ran
        logger.warning("--extra-trace %s: %d jobs of %s ask for more than its %d processors (up "
                       "to %d); they are rejected and left out of the row's figures (give "
                       "%s=PATH:%d to keep them)", key, len(wider), path, size, max(wider), key,
                       max(wider))
    return len(trace)


def rows(groups: tuple[str, ...] = GROUPS, traces_dir: str = "", extra: Sequence[ExtraTrace] = (),
         count: int = len(protocol.TEST_STARTS), nb_jobs: int = protocol.SEQUENCE_JOBS
         ) -> list[Row]:
    """The rows of the requested groups, in table order."""
    out = []
    if "protocol" in groups:
        out += [Row(f"{protocol.TRACES[t].label}, {BF_LABEL[b]}", "protocol", t, t, b)
                for b in protocol.BACKFILLS for t in protocol.TRAINABLE]
    if "generalisation" in groups:
        out += generalisation_rows(traces_dir or str(protocol.DEFAULT_TRACES), extra, count,
                                   nb_jobs)
    if "hetero" in groups:
        unit = {"energy_consumption": " (MJ)"}
        out += [Row(f"hetero, SDSC-SP2 x{protocol.HETERO_LOAD_FACTOR:g} load, {o}{unit.get(o, '')}",
                    "hetero", "sdsc", "sdsc", "none", o) for o in protocol.HETERO_OBJECTIVES]
    return out


def row_trace_file(row: Row, traces_dir: str) -> str:
    """The SWF file a row's sequences come from (the hetero workload's source for hetero rows)."""
    return row.trace_file or str(protocol.trace_path(row.trace, traces_dir))
