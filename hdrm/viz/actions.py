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
#: Upright bars with the names below them while the names fit side by side, at about this many
#: characters per inch of the panel; else one row per action (names read horizontally, never
#: overlapping), the figure growing by :data:`ROW_IN` per row.
CHARS_PER_IN = 10
ROW_IN = 0.2
#: Width of the figure, in inches.
WIDTH_IN = 11.0


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
    ncols = 2 if episodes.size > 1 else 1
    longest = max(len(name) for _, name, _ in counts)
    across = len(counts) * (longest + 2) <= CHARS_PER_IN * WIDTH_IN / ncols
    height_in = 4.8 if across else max(4.8, 1.6 + ROW_IN * len(counts))
    fig, axes = new_figure(1, ncols, size_in=(WIDTH_IN, height_in))
    bar_ax = axes[0, 0] if episodes.size > 1 else axes
    _bars(bar_ax, counts, colors, across)
    if episodes.size > 1:
        _per_episode(axes[0, 1], actions, counts, colors, episodes, top)
    fig.suptitle(run_title(run, "Action preferences"))
    return fig


def _bars(ax, counts: list[tuple[int, str, int]], colors: list, across: bool) -> None:
    """The share of decisions (%) of each action, its count at the end of the bar."""
    total = sum(c for _, _, c in counts)
    shares = [100.0 * c / total for _, _, c in counts]
    names = [name for _, name, _ in counts]
    where = range(len(counts))
    if across:
        bars = ax.bar(where, shares, color=colors)
        ax.set_xticks(where, names, fontsize="small")
        ax.set_ylabel("share of decisions (%)")
        ax.set_xlabel("action")
    else:
        bars = ax.barh(where, shares, color=colors)
        ax.set_yticks(where, names, fontsize="small")
        ax.set_ylim(len(counts) - 0.5, -0.5)  # the first action on top
        ax.set_xlabel("share of decisions (%)")
        ax.margins(x=0.12)  # room for the counts
    ax.bar_label(bars, labels=[str(c) for _, _, c in counts], fontsize="x-small", padding=2)
    ax.set_title(f"{total} decisions")


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
