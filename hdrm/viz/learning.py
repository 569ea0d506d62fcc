"""Learning curves: return, loss, bounded slowdown and makespan per episode, each with a trailing
moving average (four axes)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from hdrm.errors import ConfigError
from hdrm.results.learning import moving_average
from hdrm.results.run import Run
from hdrm.viz.common import COLORS, as_run, new_figure, plain_numbers

logger = logging.getLogger(__name__)

#: Default moving-average window, in episodes.
WINDOW = 10


def plot_learning(run_dir: str | Path | Run, *, window: int = WINDOW) -> Figure:
    """Four panels over episodes, raw values and their ``window``-episode moving average.

    Raises:
        ConfigError: no episodes.csv, no episode in it, or ``window`` below 1.
    """
    if window < 1:
        raise ConfigError(f"moving-average window must be at least 1 episode, got {window}")
    run = as_run(run_dir)
    episodes = run.episodes()
    if not len(episodes):
        raise ConfigError(f"{run.path / 'episodes.csv'}: no episode recorded yet")
    panels = (
        ("Return", "return", episodes.returns),
        ("Loss", "loss", episodes.loss),
        ("Mean bounded slowdown", "bounded slowdown", episodes.mean_bounded_slowdown),
        ("Makespan", "makespan (s)", episodes.makespan_s),
    )
    fig, axes = new_figure(2, 2, size_in=(10.0, 6.5))
    for ax, (title, ylabel, values) in zip(axes.flat, panels):
        _panel(ax, episodes.episode, values, window)
        ax.set_title(title)
        ax.set_xlabel("episode")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(ylabel)
        plain_numbers(ax)
    fig.suptitle(f"Learning curves - {run.label} ({len(episodes)} episodes, "
                 f"moving average over {window})")
    return fig


def _panel(ax, episode: np.ndarray, values: np.ndarray, window: int) -> None:
    """Raw values (thin, grey) and their moving average (thick) on one axes."""
    marker = "o" if episode.size <= 50 else None
    ax.plot(episode, values, color=COLORS["raw"], lw=0.8, alpha=0.6, marker=marker, ms=3,
            label="per episode")
    ax.plot(episode, moving_average(values, window), color=COLORS["average"], lw=2,
            label=f"moving average ({window})")
    if np.all(np.isnan(values)):
        ax.text(0.5, 0.5, "not recorded", transform=ax.transAxes, ha="center", va="center")
    else:
        ax.legend(fontsize="x-small")
