"""Utilisation over time: the share of cores running a job (and, from the built-in engine's
timeline, the share slowed by memory-bandwidth contention); on a GPU run, the share of each GPU
model's GPUs allocated (:mod:`hdrm.viz.gpu_utilisation`)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from hdrm.errors import ConfigError
from hdrm.results.run import Run
from hdrm.viz.common import COLORS, as_run, new_figure, run_title
from hdrm.viz.gpu_utilisation import is_gpu_run, plot_gpu_utilisation

logger = logging.getLogger(__name__)


def source_note(derived: bool) -> str:
    """Where a timeline came from, for plot titles."""
    return "derived from out_jobs.csv" if derived else "from out_timeline.csv"


def plot_utilisation(run_dir: str | Path | Run) -> Figure:
    """Busy cores as a percentage of all cores over time, with the time-weighted mean.

    A replay on a GPU platform is drawn by
    :func:`~hdrm.viz.gpu_utilisation.plot_gpu_utilisation` instead (its out_jobs.csv names
    GPUs, not cores).

    Raises:
        ConfigError: the folder lacks out_jobs.csv, or the number of cores is unknown.
    """
    run = as_run(run_dir)
    if is_gpu_run(run):
        return plot_gpu_utilisation(run)
    timeline = run.timeline()
    nb_cores = run.nb_resources()
    if nb_cores <= 0:
        raise ConfigError(
            f"{run.path}: unknown number of cores (no job allocation and no out_schedule.csv)"
        )
    fig, ax = new_figure()
    busy_pct = 100.0 * timeline.busy_cores / nb_cores
    ax.step(timeline.time_s, busy_pct, where="post", color=COLORS["busy"], label="busy cores")
    contended = timeline.contended_cores
    if np.all(np.isfinite(contended)) and np.any(contended > 0):
        ax.step(timeline.time_s, 100.0 * contended / nb_cores, where="post",
                color=COLORS["contended"], label="contended cores")
    mean_pct = 100.0 * timeline.mean_busy_cores() / nb_cores
    ax.axhline(mean_pct, color=COLORS["busy"], ls="--", lw=1, label=f"mean {mean_pct:.1f} %")
    ax.set_ylim(0, 105)
    ax.set_xlim(left=0)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(f"utilisation (% of {nb_cores} cores)")
    ax.set_title(run_title(run, f"Utilisation ({source_note(timeline.derived)})"))
    ax.legend(loc="upper right", fontsize="small")
    return fig
