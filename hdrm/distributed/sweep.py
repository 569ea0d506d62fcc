"""``hdrm sweep``: run a sweep file's grid and gather its results into one table.

The output folder holds::

    D/sweep.json     the sweep file as read (a copy)
    D/index.csv      one line per run: its folder name and settings
    D/runs/NAME/     each run's usual outputs (out_jobs.csv ...) and done.json
    D/results.csv    the ``hdrm compare`` table of every run (CSV)
    D/results.md     the same table in Markdown

Runs whose folder is already there (finished by an earlier, interrupted start) are skipped, so
running the same command again resumes a sweep. Backends: ``ray`` (Ray tasks, the default when
Ray is installed), ``processes`` (local worker processes), ``serial`` (this process). Without Ray
the default is ``serial``, or ``processes`` with ``max_parallel`` above 1; the outputs are the same
whichever backend ran them.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TextIO

from hdrm.distributed import RAY_MISSING, ray_installed
from hdrm.distributed.local import run_processes, run_serial
from hdrm.distributed.runner import Producer, is_done, remove_scratch, table_row
from hdrm.distributed.spec import RunSpec, expand, load_sweep
from hdrm.durable import staged
from hdrm.errors import ConfigError
from hdrm.results.compare import format_csv, format_markdown
from hdrm.sim.outputs import check_outdir

logger = logging.getLogger(__name__)

Backend = Literal["auto", "ray", "processes", "serial"]
BACKENDS = ("auto", "ray", "processes", "serial")
#: The results table's files, written together (:func:`write_table`).
TABLE_FILES = ("results.csv", "results.md")
#: Settings columns of index.csv, after ``run``.
INDEX_COLUMNS = ("policy", "backfill", "decision", "platform", "trace", "load_factor", "seed",
                 "nb_jobs", "start_index", "conventions", "strict", "contention", "walltime_kill")


@dataclass(frozen=True)
class SweepReport:
    """What a sweep start did.

    Attributes:
        nb_runs: runs in the sweep.
        nb_skipped: runs found finished and skipped.
        nb_run: runs run by this start.
        backend: the backend that ran them (``"none"`` when nothing was left to run).
        parallel: runs at a time.
        wall_s: wall time of the start, table included.
        outdir: the output folder.
    """

    nb_runs: int
    nb_skipped: int
    nb_run: int
    backend: str
    parallel: int
    wall_s: float
    outdir: Path


def choose_backend(backend: str, address: str | None, max_parallel: int | None) -> str:
    """The backend that will run a sweep.

    Raises:
        ConfigError: an unknown backend, or Ray asked for (``ray``, ``--address``) without Ray.
    """
    if backend not in BACKENDS:
        raise ConfigError(f"--backend: unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if address and backend not in ("auto", "ray"):
        raise ConfigError(f"--address: joins a Ray cluster, but --backend is {backend}; "
                          "drop one of them")
    wants_ray = backend == "ray" or bool(address)
    if wants_ray and not ray_installed():
        raise ConfigError(RAY_MISSING)
    if backend != "auto":
        return backend
    if ray_installed():
        return "ray"
    return "processes" if (max_parallel or 1) > 1 else "serial"


def run_sweep(sweep_file: str | os.PathLike[str], outdir: str | os.PathLike[str],
              backend: str = "auto", address: str | None = None, max_parallel: int | None = None,
              progress: bool = True, stream: TextIO | None = None) -> SweepReport:
    """Run (or resume) a sweep and write its table.

    Args:
        sweep_file: the sweep JSON file (:mod:`hdrm.distributed.spec`).
        outdir: the output folder (created; reused to resume).
        backend: ``auto``, ``ray``, ``processes`` or ``serial``.
        address: a Ray cluster to join (``auto`` or ``HOST:PORT``); None starts a local Ray.
        max_parallel: runs at a time (None: every CPU of the machine, or of the Ray cluster).
        progress: show a progress bar (a TTY) or one line per finished run.
        stream: where progress goes (stderr by default).

    Raises:
        ConfigError: a bad sweep file, folder, backend or address; HdrmError: a run failed.
    """
    start = time.perf_counter()
    if max_parallel is not None and max_parallel < 1:
        raise ConfigError(f"--max-parallel: expected a number >= 1, got {max_parallel}")
    chosen = choose_backend(backend, address, max_parallel)
    if chosen == "serial" and backend == "auto" and not ray_installed():
        logger.warning("Ray is not installed: running the sweep in this process, one run at a "
                       "time (--max-parallel K runs K local processes; %s)", RAY_MISSING)
    runs = expand(load_sweep(sweep_file))
    out = Path(outdir)
    check_outdir(out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    start_folder(out, Path(sweep_file).read_text(encoding="utf-8"), runs)
    skipped, parallel = run_pending(runs, out / "runs", chosen, address, max_parallel, progress,
                                    stream)
    write_table(runs, out)
    return SweepReport(len(runs), skipped, len(runs) - skipped,
                       chosen if skipped < len(runs) else "none", parallel,
                       time.perf_counter() - start, out)


def run_pending(runs: Sequence[RunSpec | Producer], runs_dir: Path, backend: str,
                address: str | None = None, max_parallel: int | None = None,
                progress: bool = True, stream: TextIO | None = None) -> tuple[int, int]:
    """Run the runs not finished yet in ``runs_dir`` (an existing folder) on a chosen backend.

    The scratch folders an interrupted start left are removed first; finished runs are skipped
    (resume). Replays (:class:`RunSpec`) and other runs (:class:`Producer`, such as
    ``benchmarks/compare.py``'s evaluations) go the same way.

    Returns:
        the number of runs skipped as finished, and the number of runs at a time.
    """
    if remove_scratch(runs_dir):
        logger.info("removed the scratch folders of runs an interrupted start left")
    todo = [run for run in runs if not is_done(run, runs_dir)]
    parallel = 1
    if todo:
        bar = Progress(len(runs), len(runs) - len(todo), progress, stream or sys.stderr)
        try:
            parallel = _dispatch(backend, todo, runs_dir, bar.done, address, max_parallel)
        finally:
            bar.close()
    return len(runs) - len(todo), parallel


def _dispatch(backend: str, todo: Sequence[RunSpec | Producer], runs_dir: Path,
              on_done: Callable[[dict], None], address: str | None,
              max_parallel: int | None) -> int:
    """Run ``todo`` on ``backend``; returns the number of runs at a time."""
    if backend == "serial":
        run_serial(todo, runs_dir, on_done)
        return 1
    if backend == "processes":
        parallel = min(max_parallel or os.cpu_count() or 1, len(todo))
        run_processes(todo, runs_dir, on_done, parallel)
        return parallel
    from hdrm.distributed.ray_backend import cluster_cpus, connect, run_ray

    with connect(address, max_parallel) as ray:
        parallel = max_parallel or cluster_cpus(ray)
        run_ray(ray, todo, runs_dir, on_done, parallel)
    return parallel


def index_csv(runs: Sequence[RunSpec]) -> str:
    """index.csv's text: a header, then one line per run (its folder name and settings)."""
    import csv
    import io

    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(("run",) + INDEX_COLUMNS)
    for run in runs:
        values = run.to_json()
        writer.writerow([run.name] + ["" if values[c] is None else values[c] for c in INDEX_COLUMNS])
    return text.getvalue()


def start_folder(outdir: Path, sweep_text: str, runs: Sequence[RunSpec]) -> None:
    """Publish sweep.json and index.csv together; when a run is still to do, first remove the
    results table a previous sweep of the folder left (it is not the table of these runs, and a
    stop before the new one is written would leave it looking like it)."""
    if any(not is_done(run, outdir / "runs") for run in runs):
        for name in TABLE_FILES:
            (outdir / name).unlink(missing_ok=True)
    with staged() as stage:
        for name, text in (("sweep.json", sweep_text), ("index.csv", index_csv(runs))):
            stage.path(outdir / name).write_text(text, encoding="utf-8", newline="")


def write_table(runs: Sequence[RunSpec], outdir: Path) -> None:
    """Write results.csv and results.md together: the ``hdrm compare`` table of every run, in
    grid order."""
    rows = [table_row(run, outdir / "runs") for run in runs]
    texts = format_csv(rows), format_markdown(rows)
    with staged() as stage:
        for name, text in zip(TABLE_FILES, texts):
            stage.path(outdir / name).write_text(text, encoding="utf-8", newline="")


class Progress:
    """A progress bar on a terminal; one line per finished run otherwise."""

    def __init__(self, total: int, already: int, enabled: bool, stream: TextIO) -> None:
        self.total, self.count, self.enabled, self.stream = total, already, enabled, stream
        self.bar = None
        if enabled and stream.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=already, unit="run", file=stream)

    def done(self, info: dict) -> None:
        """Count one finished run (``{"name", "wall_s", ...}``)."""
        self.count += 1
        if self.bar is not None:
            self.bar.update(1)
        elif self.enabled:
            print(f"hdrm sweep: [{self.count}/{self.total}] {info['name']} "
                  f"({info['wall_s']:.2f} s)", file=self.stream, flush=True)

    def close(self) -> None:
        """Close the bar (if any)."""
        if self.bar is not None:
            self.bar.close()
