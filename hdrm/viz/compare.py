"""Comparison of runs: a grid of bar charts, one per headline metric, one bar per run."""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Sequence

from matplotlib.figure import Figure

from hdrm.errors import ConfigError
from hdrm.results.compare import METRICS, as_runs
from hdrm.results.run import Run
from hdrm.viz.common import category_colors, new_figure, overlapping_texts
from hdrm.viz.energy import energy_scale

logger = logging.getLogger(__name__)

#: Least room between two value labels read side by side, in pixels.
LABEL_GAP_PX = 4.0
#: Grid shape of the comparison figure (rows, columns): one cell per metric.
GRID = (2, 4)


def bar_text(value: float) -> str:
    """A bar's value label: ``n/a`` for nan, whole and thousands separated from 1 000 up (never
    ``1.58e+03``), else 3 significant digits."""
    if math.isnan(value):
        return "n/a"
    if abs(value) >= 1e3:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def plot_compare(run_dirs: Sequence[str | Path | Run]) -> Figure:
    """One bar chart per metric of :data:`hdrm.results.compare.METRICS`, one bar per run (the
    same colour for a run in every chart; an unknown value shows as an empty bar labelled n/a).

    Raises:
        ConfigError: no run given, or a folder or its out_jobs.csv is missing.
    """
    if not run_dirs:
        raise ConfigError("give at least one run folder to compare")
    runs = as_runs(run_dirs)
    summaries = [run.summary() for run in runs]
    colors = category_colors(len(runs))
    width_in = max(11.0, 1.0 + 0.45 * len(runs) * GRID[1])
    fig, axes = new_figure(*GRID, size_in=(width_in, 6.5))
    value_labels = []
    for ax, metric in zip(axes.flat, METRICS):
        values = [float(s[metric.key]) for s in summaries]
        factor, unit = 1.0, metric.unit
        if metric.unit == "J":
            factor, unit = energy_scale(max((v for v in values if not math.isnan(v)), default=0))
        heights = [0.0 if math.isnan(v) else v / factor for v in values]
        bars = ax.bar(range(len(runs)), heights, color=colors)
        labels = [bar_text(v / factor) for v in values]
        value_labels.append((ax, ax.bar_label(bars, labels=labels, fontsize="x-small")))
        ax.set_xticks(range(len(runs)), [run.label for run in runs], rotation=30, ha="right",
                      fontsize="small")
        ax.set_title(metric.title, fontsize="medium")
        ax.set_ylabel(unit)
        ax.margins(y=0.15)
    for ax in list(axes.flat)[len(METRICS):]:
        ax.set_visible(False)
    fig.suptitle(f"Comparison of {len(runs)} runs")
    _upright_where_crowded(fig, value_labels)
    return fig


def _upright_where_crowded(fig: Figure, value_labels: list) -> None:
    """Turn a chart's value labels upright when two of them overlap or touch side by side."""
    for ax, texts in value_labels:
        if overlapping_texts(fig, list(texts), gap_px=LABEL_GAP_PX):
            for text in texts:
                text.set_rotation(90)
                text.set_verticalalignment("bottom")
            ax.margins(y=0.35)
