"""What a launch writes: episodes.csv, actions.csv, the engine outputs and TensorBoard scalars.

* ``episodes.csv`` is rewritten after every episode, so a long run can be watched (and plotted
  with ``hdrm plot``) while it trains;
* ``actions.csv`` is written at the end. It holds every episode's decisions while they number at
  most :data:`ACTIONS_LIMIT` rows in all; past that, only the last episode's decisions;
* ``out_jobs.csv``, ``out_schedule.csv``, ``out_timeline.csv`` and ``overutilizations.json`` are
  the engine outputs of the **last** episode (:func:`hdrm.sim.outputs.write_outputs`), and
  ``out_sla.csv`` when the environment has tenants (:mod:`hdrm.results.sla`), and
  ``out_preemptions.csv`` under block preemption (:func:`hdrm.sim.preemptive.write_preemptions`);
* TensorBoard event files go to ``<outdir>/tensorboard`` when ``tensorboard`` is installed and the
  agent brought torch along (:func:`tensorboard_writer`); otherwise nothing is written, unless the
  launcher's ``--tensorboard`` asked for them: then a missing extra is a one-line error before the
  run (:func:`check_tensorboard`).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import math
import shutil
import sys
from pathlib import Path
from typing import Any, Callable

from hdrm.durable import staged
from hdrm.errors import ConfigError
from hdrm.launch.loop import EpisodeActions, EpisodeRecord, Hooks
from hdrm.results.learning import write_actions_csv, write_episodes_csv
from hdrm.results.run import ACTIONS_FILE, EPISODES_FILE
from hdrm.results.sla import SLA_FILE, write_sla_csv
from hdrm.sim.gpu_outputs import write_gpu_outputs
from hdrm.sim.outputs import write_outputs
from hdrm.sim.preemptive import write_preemptions

logger = logging.getLogger(__name__)

#: Most decisions actions.csv keeps from several episodes (one episode is always kept whole).
ACTIONS_LIMIT = 100_000


class RunLog(Hooks):
    """Writes the per-episode and per-decision logs of a launch into ``outdir``.

    Args:
        outdir: the output folder (created when missing).
        action_names: the environment's action names, for actions.csv.
        actions_limit: see :data:`ACTIONS_LIMIT`.
    """

    def __init__(self, outdir: str | Path, action_names: list[str],
                 actions_limit: int = ACTIONS_LIMIT) -> None:
        self.outdir = Path(outdir)
        self.outdir.mkdir(parents=True, exist_ok=True)
        self.action_names = list(action_names)
        self.actions_limit = actions_limit
        self.records: list[EpisodeRecord] = []
        self.kept: list[EpisodeActions] = []
        self.last_only = False

    @property
    def episodes_path(self) -> Path:
        """The episodes.csv file."""
        return self.outdir / EPISODES_FILE

    @property
    def actions_path(self) -> Path:
        """The actions.csv file."""
        return self.outdir / ACTIONS_FILE

    def episode_ended(self, record: EpisodeRecord, actions: EpisodeActions) -> None:
        """Append the episode to episodes.csv and keep its decisions (within the limit)."""
        self.records.append(record)
        write_episodes_csv([r.csv_row() for r in self.records], self.episodes_path)
        kept = sum(len(a.actions) for a in self.kept)
        if self.last_only or kept + len(actions.actions) > self.actions_limit:
            if not self.last_only and self.kept:
                logger.info("actions.csv: over %d decisions, keeping the last episode only",
                            self.actions_limit)
            self.last_only = True
            self.kept = []
        self.kept.append(actions)

    def keep_partial(self, actions: EpisodeActions) -> None:
        """Keep the decisions of an episode that did not end (the launch was stopped)."""
        if actions.actions:
            self.kept.append(actions)

    def action_rows(self) -> list[dict[str, Any]]:
        """The rows of actions.csv for the decisions kept."""
        names = self.action_names
        return [
            {"episode": played.episode, "step": step, "time": time_s, "action": action,
             "action_name": names[action] if 0 <= action < len(names) else str(action)}
            for played in self.kept
            for step, (time_s, action) in enumerate(zip(played.times_s, played.actions))
        ]

    def finish(self, env: Any, copies: dict[str, Path] | None = None) -> dict[str, Path]:
        """Write actions.csv and the engine outputs of the environment's current (last) episode,
        renamed into place together (:func:`hdrm.durable.staged`).

        Args:
            env: the environment.
            copies: files copied into the folder with them, by kind (engine batsim: Batsim's own
                out_jobs.csv, out_schedule.csv and log, which replace those written from the
                environment's records).

        Returns:
            Every file written, by kind (``episodes``, ``actions``, ``jobs``, ``schedule`` ...).
        """
        paths: dict[str, Path] = {}
        if not (self.records or self.kept):
            return paths
        with staged() as stage:  # published together: never one launch's files beside another's
            if not self.records:  # stopped in the first episode: the header, no row
                write_episodes_csv([], stage.path(self.episodes_path))
            paths["episodes"] = self.episodes_path
            paths["actions"] = self.actions_path
            write_actions_csv(self.action_rows(), stage.path(self.actions_path))
            result = env.unwrapped.result()
            gpu = getattr(result, "gpu", None) is not None  # a GPU platform: its own outputs
            write = write_gpu_outputs if gpu else write_outputs
            paths.update(write(result, self.outdir, stage=stage))
            report = getattr(env.unwrapped, "sla_report", lambda: None)()
            if report is not None:  # with tenants: out_sla.csv (docs/tenants.rst)
                paths["sla"] = self.outdir / SLA_FILE
                write_sla_csv(report, stage.path(paths["sla"]))
            preemption = getattr(env.unwrapped, "preemption", None)
            if preemption is not None and preemption.suspends:  # as hdrm replay --preemption
                paths["preemptions"] = self.outdir / "out_preemptions.csv"
                write_preemptions(result, stage.path(paths["preemptions"]))
            for kind, source in (copies or {}).items():  # staged after: they win
                paths[kind] = self.outdir / source.name
                shutil.copyfile(source, stage.path(paths[kind]))
        return paths


#: Per-episode scalars written to TensorBoard: tag -> value of a record.
SCALARS: dict[str, Callable[[EpisodeRecord], float]] = {
    "episode/return": lambda r: r.return_,
    "episode/objective": lambda r: r.objective,
    "episode/loss": lambda r: r.loss,
    "episode/steps": lambda r: float(r.steps),
    "episode/makespan_h": lambda r: r.makespan_s / 3600.0,
    "episode/mean_waiting_s": lambda r: r.mean_waiting_s,
    "episode/mean_bounded_slowdown": lambda r: r.mean_bounded_slowdown,
    "episode/energy_mj": lambda r: r.energy_j / 1e6,
    "episode/wall_s": lambda r: r.wall_s,
}


class TensorBoardHook(Hooks):
    """Writes :data:`SCALARS` and the agent's statistics (``train/<name>``) after each episode.

    Args:
        writer: an object with ``add_scalar(tag, value, step)``, ``flush()`` and ``close()``
            (``torch.utils.tensorboard.SummaryWriter``).
    """

    def __init__(self, writer: Any) -> None:
        self.writer = writer

    def episode_ended(self, record: EpisodeRecord, actions: EpisodeActions) -> None:
        for tag, value_of in SCALARS.items():
            _add(self.writer, tag, value_of(record), record.episode)
        for name, value in sorted(record.stats.items()):
            if name not in ("loss", "return", "steps"):
                _add(self.writer, f"train/{name}", value, record.episode)
        self.writer.flush()

    def close(self) -> None:
        """Close the event file."""
        self.writer.close()


def _add(writer: Any, tag: str, value: float, step: int) -> None:
    if not math.isnan(value):
        writer.add_scalar(tag, float(value), step)


#: The setup.py extra that installs TensorBoard.
TENSORBOARD_EXTRA = "hdrm[tensorboard]"


def check_tensorboard(option: str = "--tensorboard") -> None:
    """Check that TensorBoard logging can work (the ``tensorboard`` package and torch).

    Raises:
        ConfigError: one of them is missing, naming ``option`` and the extra to install.
    """
    for module in ("tensorboard", "torch"):
        if importlib.util.find_spec(module) is None:
            extra = TENSORBOARD_EXTRA if module == "tensorboard" else "hdrm[learn]"
            raise ConfigError(
                f"{option}: TensorBoard logging needs the {module} package, which is not "
                f"installed; pip install '{extra}' (or pip install -e '.[{extra[5:-1]}]' in a "
                f"checkout), or drop {option}"
            )


def tensorboard_writer(logdir: str | Path, required: bool = False) -> Any | None:
    """A TensorBoard ``SummaryWriter`` for ``logdir``, or None when TensorBoard is unavailable.

    Available means: the ``tensorboard`` package is installed and torch is already imported (by
    the agent): the launcher never loads torch for a classic agent unless ``required``.

    Raises:
        ConfigError: ``required`` and the writer cannot be made (see :func:`check_tensorboard`).
    """
    if required:
        check_tensorboard()
    elif "torch" not in sys.modules or importlib.util.find_spec("tensorboard") is None:
        return None
    try:
        module = importlib.import_module("torch.utils.tensorboard")
        return module.SummaryWriter(log_dir=str(logdir))
    except Exception as exc:  # a broken optional extra must not stop the run, unless asked for
        if required:
            raise ConfigError(f"--tensorboard: TensorBoard cannot be used: {type(exc).__name__}: "
                              f"{exc}; reinstall it with pip install '{TENSORBOARD_EXTRA}'") from None
        logger.warning("TensorBoard disabled: %s", exc)
        return None
