"""One run of a sweep: replay, write the usual outputs atomically, mark it done last.

A run writes ``out_jobs.csv``, ``out_schedule.csv``, ``out_timeline.csv`` and
``overutilizations.json`` (as ``hdrm replay`` does) into a hidden scratch folder next to its final
folder, then ``done.json`` (its settings, their digest and its row of the ``hdrm compare`` table),
then renames the scratch folder to the final name in one step. A folder under ``runs/`` therefore
always holds a finished run; a sweep stopped midway (Ctrl-C, SIGTERM) removes the scratch folders
of the runs it stopped, a killed process (``kill -9``; a worker process that a SIGTERM sent to the
whole process group kills) leaves its own and the next start removes them.

On a GPU platform (:func:`~hdrm.distributed.spec.is_gpu_platform`) the run is ``hdrm replay``'s
GPU replay: the openb or Gavel inputs, the GPU policy and GPU outputs (``out_gpu_timeline.csv`` and
``out_gpu_summary.json`` besides the usual files); SWF conventions, contention and walltime kills
do not apply there.

Runs other than replays (a :class:`Producer`: ``benchmarks/compare.py``'s evaluations) go
through the same steps, writing their own files and row.

The same function runs in-process, in a worker process and in a Ray task, so every backend
writes the same bytes (bar the two wall-clock columns of out_schedule.csv, ``scheduling_time``
and ``simulation_time``).
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Protocol

import hdrm.errors
from hdrm.distributed.spec import RunSpec, is_gpu_platform, policy_error
from hdrm.durable import fsync_folder
from hdrm.errors import ConfigError, HdrmError
from hdrm.implied import implied_simulation
from hdrm.results.compare import compare_rows
from hdrm.results.run import Run
from hdrm.sim.engine import Simulation, SimulationConfig, SimulationResult
from hdrm.sim.gpu_inputs import is_gavel_trace, is_gpu_input, load_gpu_inputs
from hdrm.sim.gpu_outputs import write_gpu_outputs
from hdrm.sim.inputs import InputSpec, load_inputs
from hdrm.sim.outputs import write_outputs
from hdrm.workload.load import scale_arrivals
from hdrm.workload.swf import SkippableLineError

logger = logging.getLogger(__name__)

#: The marker a finished run's folder holds; written last.
DONE_FILE = "done.json"
#: Prefix of the scratch folders of runs in progress.
SCRATCH_PREFIX = ".partial-"


class Producer(Protocol):
    """A run other than a replay that the sweep machinery runs like one (picklable).

    It has a folder :attr:`name`, a :meth:`digest` of its settings, :meth:`to_json` (kept in
    done.json) and :meth:`produce`, which writes its files into a folder and returns its row.
    """

    @property
    def name(self) -> str:
        """The run's folder name."""

    def digest(self) -> str:
        """SHA-256 of the run's settings."""

    def to_json(self) -> dict:
        """The settings as a JSON object."""

    def produce(self, folder: Path) -> dict:
        """Write the outputs into ``folder``; returns the run's row."""


def is_done(run: RunSpec | Producer, runs_dir: str | Path) -> bool:
    """Whether ``run`` has finished in ``runs_dir`` (its folder holds a done marker).

    Raises:
        ConfigError: the folder's marker records other settings (the same name, another run).
    """
    marker = Path(runs_dir) / run.name / DONE_FILE
    if not marker.is_file():
        return False
    try:
        recorded = json.loads(marker.read_text(encoding="utf-8")).get("digest")
    except (OSError, ValueError, AttributeError):
        recorded = None
    if recorded != run.digest():
        raise ConfigError(f"{marker}: records other settings than run {run.name}; remove that "
                          "folder (or give another --outdir) to run it again")
    return True


def done_info(run: RunSpec | Producer, runs_dir: str | Path) -> dict | None:
    """``{"name", "wall_s", "cpu_s"}`` of ``run`` as its done.json records them when it has
    finished in ``runs_dir`` (as :func:`execute` returned them), else None.

    Raises:
        ConfigError: see :func:`is_done`.
    """
    if not is_done(run, runs_dir):
        return None
    marker = json.loads((Path(runs_dir) / run.name / DONE_FILE).read_text(encoding="utf-8"))
    return {"name": run.name, "wall_s": float(marker.get("wall_s", 0.0)),
            "cpu_s": float(marker.get("cpu_s", 0.0))}


def execute(run: RunSpec | Producer, runs_dir: str | Path) -> dict:
    """Replay ``run`` and publish its outputs as ``runs_dir/run.name``.

    The run's row of the ``hdrm compare`` table is computed here too (in the worker) and kept in
    done.json, so gathering the table reads one small file per run.

    Returns:
        ``{"name", "wall_s", "cpu_s"}`` of this run.

    Raises:
        HdrmError: bad inputs (policy, files, conventions ...).
    """
    final = Path(runs_dir) / run.name
    scratch = Path(runs_dir) / f"{SCRATCH_PREFIX}{run.name}-{os.getpid()}"
    if scratch.exists():
        shutil.rmtree(scratch)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    try:
        row = produce(run, scratch)
        wall_s, cpu_s = time.perf_counter() - wall0, time.process_time() - cpu0
        marker = {"digest": run.digest(), "run": run.to_json(), "row": row, "wall_s": wall_s,
                  "cpu_s": cpu_s}
        _write_text(scratch / DONE_FILE, json.dumps(marker, indent=1, sort_keys=True) + "\n")
        fsync_folder(scratch)
    except BaseException:  # an error, Ctrl-C, SIGTERM: the unfinished run leaves nothing
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    if final.exists():  # a run finished meanwhile by another worker: keep the first one
        shutil.rmtree(scratch)
    else:
        os.replace(scratch, final)
        fsync_folder(final.parent)
    logger.debug("run %s done in %.2f s", run.name, wall_s)
    return {"name": run.name, "wall_s": wall_s, "cpu_s": cpu_s}


def produce(run: RunSpec | Producer, scratch: Path) -> dict:
    """Write ``run``'s outputs into ``scratch``; returns its table row.

    A :class:`RunSpec` is replayed (the usual outputs, its ``hdrm compare`` row); any other run
    (a :class:`Producer`, such as ``benchmarks/compare.py``'s evaluations) writes its own.
    """
    if not isinstance(run, RunSpec):
        return run.produce(scratch)
    result = simulate(run)
    (write_gpu_outputs if result.gpu is not None else write_outputs)(result, scratch)
    (row,) = compare_rows([Run(scratch, label=run.name)])  # the table's row, measured here
    return row


def execute_reporting(run: RunSpec | Producer, runs_dir: str | Path) -> dict:
    """:func:`execute` for another process: a run's own error comes back as data.

    Some of hdrm's errors carry extra arguments and cannot cross a process boundary as
    exceptions; :func:`raise_failure` raises them again on the caller's side.

    Returns:
        what :func:`execute` returns, or ``{"name", "error_class", "error"}`` when the run
        failed with an :class:`~hdrm.errors.HdrmError` (the class is the nearest one of
        :mod:`hdrm.errors`).
    """
    try:
        return execute(run, runs_dir)
    except HdrmError as exc:
        base = next(c for c in type(exc).__mro__ if _made_from_message(c))
        return {"name": run.name, "error_class": base.__name__, "error": str(exc)}


def _made_from_message(cls: type) -> bool:
    """Whether ``cls`` is a class of :mod:`hdrm.errors` that its message alone makes (not, say,
    :class:`~hdrm.errors.SkippableLineError`, made of its parts: its base is sent instead)."""
    if getattr(hdrm.errors, cls.__name__, None) is not cls:
        return False
    try:
        inspect.signature(cls).bind("message")
    except TypeError:
        return False
    except ValueError:  # no signature to read: Exception's own constructor, any arguments
        return True
    return True


def raise_failure(info: dict) -> dict:
    """Raise the error a :func:`execute_reporting` result carries; else return the result."""
    if "error" in info:
        raise getattr(hdrm.errors, info["error_class"], HdrmError)(info["error"])
    return info


def simulate(run: RunSpec) -> SimulationResult:
    """Replay ``run`` on the built-in engine; returns the :class:`SimulationResult`."""
    gpu = is_gpu_platform(run.platform)
    message = policy_error(run.policy, gpu)  # before reading the inputs
    if message:
        raise ConfigError(f"policy: {message}")
    if gpu and is_gpu_input(run.platform, run.trace, run.throughputs):
        return _simulate_gpu(run)
    spec = InputSpec(workload_path=run.trace, platform_path=run.platform,
                     conventions=run.conventions, strict=run.strict,
                     start_index=run.start_index, nb_jobs=run.nb_jobs, seed=run.seed)
    try:
        platform, workload = load_inputs(spec)
    except SkippableLineError as exc:  # name the sweep file's setting, not read_swf's argument
        raise exc.relaxed_by('set "strict": false in the sweep file') from None
    if run.load_factor != 1:
        workload = scale_arrivals(workload, run.load_factor)
    implied = implied_simulation(run.conventions, run.decision, run.walltime_kill, "builtin")
    config = SimulationConfig(contention=run.contention, backfilling=run.backfill,
                              decision=implied.decision, kill_on_walltime=implied.kill_on_walltime,
                              seed=run.seed)
    return Simulation(platform, workload, config).run(run.policy)  # a GPU policy on GPUs


def _simulate_gpu(run: RunSpec) -> SimulationResult:
    """Replay an openb pod list, or a Gavel trace with its throughputs, with a GPU policy."""
    if run.throughputs is None and is_gavel_trace(run.trace):  # as hdrm replay tells them
        raise ConfigError(f"{run.trace}: a Gavel trace needs its throughput file; add "
                          '"throughputs": "simulation_throughputs.json" to the sweep file (or '
                          "give an openb pod list, .csv)")
    try:
        platform, workload = load_gpu_inputs(run.platform, run.trace, run.throughputs, run.strict,
                                             run.start_index, run.nb_jobs, run.accelerator_types)
    except SkippableLineError as exc:
        raise exc.relaxed_by('set "strict": false in the sweep file') from None
    if run.load_factor != 1:
        workload = scale_arrivals(workload, run.load_factor)
    config = SimulationConfig(backfilling=run.backfill, decision=run.decision, seed=run.seed)
    return Simulation(platform, workload, config).run(run.policy)


def table_row(run: RunSpec | Producer, runs_dir: str | Path) -> dict:
    """``run``'s row of the ``hdrm compare`` table, from its done.json (or its outputs)."""
    folder = Path(runs_dir) / run.name
    row = json.loads((folder / DONE_FILE).read_text(encoding="utf-8")).get("row")
    return row if row is not None else compare_rows([Run(folder, label=run.name)])[0]


def remove_scratch(runs_dir: str | Path) -> int:
    """Remove the scratch folders an interrupted sweep left; returns how many."""
    found = [p for p in Path(runs_dir).glob(f"{SCRATCH_PREFIX}*") if p.is_dir()]
    for path in found:
        shutil.rmtree(path, ignore_errors=True)
    return len(found)


def _write_text(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
