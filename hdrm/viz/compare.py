"""Comparison of runs: a grid of bar charts, one per headline metric, one bar per run.

When some run is a GPU replay, the GPU columns of ``hdrm compare`` (mean JCT, GPU allocation
rate, mean fragmentation, GPU cost) get a row of charts too; the other runs' bars there are
empty and labelled n/a.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Sequence

from matplotlib.figure import Figure

from hdrm.errors import ConfigError
from hdrm.results.compare import GPU_METRICS, METRICS, Metric, as_runs, gpu_columns
from hdrm.results.run import Run
from hdrm.viz.common import category_colors, new_figure, overlapping_texts
from hdrm.viz.energy import energy_scale

logger = logging.getLogger(__name__)

#: Least room between two value labels read side by side, in pixels.
LABEL_GAP_PX = 4.0
#: Grid shape of the comparison figure (rows, columns): one cell per metric; GPU runs add a row.
GRID = (2, 4)
#: Height of one row of charts, inches.
ROW_HEIGHT_IN = 3.25


def bar_text(value: float) -> str:
    """A bar's value label: ``n/a`` for nan, whole and thousands separated from 1 000 up (never
    ``1.58e+03``), else 3 significant digits."""
    if math.isnan(value):
        return "n/a"
    if abs(value) >= 1e3:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def chart_values(runs: Sequence[Run]) -> list[tuple[Metric, list[float]]]:
    """Each chart's metric and its value per run: :data:`~hdrm.results.compare.METRICS`, then,
    when some run is a GPU replay, :data:`~hdrm.results.compare.GPU_METRICS` (nan for the
    others)."""
    summaries = [run.summary() for run in runs]
    charts = [(m, [float(s[m.key]) for s in summaries]) for m in METRICS]
    gpu = [gpu_columns(run) for run in runs]
    if any(gpu):
        charts += [(m, [g.get(m.column, math.nan) for g in gpu]) for m in GPU_METRICS]
    return charts


def plot_compare(run_dirs: Sequence[str | Path | Run]) -> Figure:
    """One bar chart per metric of :func:`chart_values`, one bar per run (the same colour for a
    run in every chart; an unknown value shows as an empty bar labelled n/a).

    Raises:
        ConfigError: no run given, or a folder or its out_jobs.csv is missing.
    """
    if not run_dirs:
        raise ConfigError("give at least one run folder to compare")
    runs = as_runs(run_dirs)
    charts = chart_values(runs)
    colors = category_colors(len(runs))
    rows = math.ceil(len(charts) / GRID[1])
    width_in = max(11.0, 1.0 + 0.45 * len(runs) * GRID[1])
    fig, axes = new_figure(rows, GRID[1], size_in=(width_in, ROW_HEIGHT_IN * rows))
    value_labels = []
    for ax, (metric, values) in zip(axes.flat, charts):
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
    for ax in list(axes.flat)[len(charts):]:
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
