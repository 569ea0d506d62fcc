"""Action preferences: how often each action (policy pair, job slot ...) was chosen, overall
and, for runs of several episodes, its share per episode."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from hdrm.errors import ConfigError
from hdrm.results.learning import Actions
from hdrm.results.run import Run
from hdrm.viz.common import as_run, category_colors, new_figure, run_title

logger = logging.getLogger(__name__)

#: Actions drawn separately in the per-episode panel; the others are summed as "other".
TOP_ACTIONS = 8


def plot_actions(run_dir: str | Path | Run, *, top: int = TOP_ACTIONS) -> Figure:
    """A bar per action (share of all decisions, %) and, with several episodes, a stacked area of
    each action's share per episode for the ``top`` most chosen.

    Raises:
        ConfigError: no actions.csv or no decision in it.
    """
    run = as_run(run_dir)
    actions = run.actions()
    if not len(actions):
        raise ConfigError(f"{run.path / 'actions.csv'}: no decision recorded")
    counts = actions.counts()
    colors = category_colors(len(counts))
    episodes = np.unique(actions.episode)
    fig, axes = new_figure(1, 2 if episodes.size > 1 else 1, size_in=(11.0, 4.8))
    bar_ax = axes[0, 0] if episodes.size > 1 else axes
    total = len(actions)
    shares = [100.0 * c / total for _, _, c in counts]
    bars = bar_ax.bar(range(len(counts)), shares, color=colors)
    bar_ax.bar_label(bars, labels=[str(c) for _, _, c in counts], fontsize="x-small")
    tilt = len(counts) > 4
    bar_ax.set_xticks(range(len(counts)), [name for _, name, _ in counts], fontsize="small",
                      rotation=45 if tilt else 0, ha="right" if tilt else "center")
    bar_ax.set_ylabel("share of decisions (%)")
    bar_ax.set_xlabel("action")
    bar_ax.set_title(f"{total} decisions")
    if episodes.size > 1:
        _per_episode(axes[0, 1], actions, counts, colors, episodes, top)
    fig.suptitle(run_title(run, "Action preferences"))
    return fig


def _per_episode(ax, actions: Actions, counts, colors, episodes: np.ndarray, top: int) -> None:
    """Stacked share (%) of the ``top`` most chosen actions per episode, the rest as "other"."""
    order = sorted(range(len(counts)), key=lambda i: -counts[i][2])[:top]
    per_episode = np.array(
        [[np.sum((actions.episode == e) & (actions.action == counts[i][0])) for i in order]
         for e in episodes],
        dtype=float,
    )
    totals = np.array([np.sum(actions.episode == e) for e in episodes], dtype=float)
    stacks = list((100.0 * per_episode / totals[:, None]).T)
    labels = [counts[i][1] for i in order]
    stack_colors = [colors[i] for i in order]
    other = 100.0 - np.sum(stacks, axis=0)
    if np.any(other > 1e-9):
        stacks.append(other)
        labels.append("other")
        stack_colors.append((0.6, 0.6, 0.6, 1.0))
    ax.stackplot(episodes, *stacks, labels=labels, colors=stack_colors)
    ax.set_xlim(episodes[0], episodes[-1])
    ax.set_ylim(0, 100)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("episode")
    ax.set_ylabel("share of the episode's decisions (%)")
    ax.set_title("per episode")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="x-small")
