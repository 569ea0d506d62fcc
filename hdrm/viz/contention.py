"""Contention: per-processor memory-bandwidth oversubscription spans, and shortage events.

Each processor that was ever oversubscribed gets a row of horizontal bars, one per span, coloured
by its peak demand over capacity. Above them, one row of markers for memory shortages and one for
core shortages (a job that could not start). Data from the built-in engine's
overutilizations.json.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import ListedColormap, Normalize
from matplotlib.figure import Figure

from hdrm.results.overutil import Overutilizations
from hdrm.results.run import Run
from hdrm.viz.common import COLORS, INTENSITY_CMAP, as_run, new_figure, run_title

logger = logging.getLogger(__name__)

MEMORY_ROW = "memory shortage"
CORES_ROW = "core shortage"


def _processor_rows(over: Overutilizations) -> dict[tuple[int, int], int]:
    """Row index of each (node, processor) with a span, sorted."""
    keys = sorted({(s.node_id, s.processor_id) for s in over.bandwidth})
    return {key: i for i, key in enumerate(keys)}


def _horizon_s(over: Overutilizations) -> float:
    """The latest finite time in the file: where spans that never closed are drawn to end."""
    times = [t for s in over.bandwidth for t in (s.start_s, s.end_s)]
    times += [e.time_s for e in over.memory_shortage] + [e.time_s for e in over.core_shortage]
    return max((t for t in times if np.isfinite(t)), default=0.0)


def _draw_spans(ax, over: Overutilizations, rows: dict[tuple[int, int], int]) -> None:
    """One bar per span, coloured by oversubscription, with a colour bar."""
    if not over.bandwidth:
        return
    ratios = np.array([min(s.oversubscription, 1e6) for s in over.bandwidth])
    norm = Normalize(vmin=1.0, vmax=max(float(ratios.max()), 1.0 + 1e-9))
    cmap = ListedColormap(colormaps[INTENSITY_CMAP](np.linspace(0.3, 1.0, 256)))
    horizon_s = _horizon_s(over)
    ax.barh(
        [rows[(s.node_id, s.processor_id)] for s in over.bandwidth],
        [s.end_or(horizon_s) - s.start_s for s in over.bandwidth],
        left=[s.start_s for s in over.bandwidth],
        height=0.6,
        color=[cmap(norm(r)) for r in ratios],
        edgecolor="black",
        linewidth=0.3,
    )
    bar = ax.figure.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, pad=0.01)
    bar.set_label("peak demand / capacity")


def _draw_events(ax, over: Overutilizations, first_row: int) -> None:
    """Markers for memory shortages (row ``first_row``) and core shortages (the next row)."""
    if over.memory_shortage:
        ax.scatter([e.time_s for e in over.memory_shortage],
                   [first_row] * len(over.memory_shortage),
                   marker="v", color=COLORS["memory"], label=MEMORY_ROW, zorder=3)
    if over.core_shortage:
        ax.scatter([e.time_s for e in over.core_shortage],
                   [first_row + 1] * len(over.core_shortage),
                   marker="x", color=COLORS["cores"], label=CORES_ROW, zorder=3)


def plot_contention(run_dir: str | Path | Run) -> Figure:
    """Bandwidth oversubscription spans per processor, plus shortage events.

    Raises:
        ConfigError: the folder has no overutilizations.json (Batsim's own outputs have none).
    """
    run = as_run(run_dir)
    over = run.overutilizations("the contention plot")
    rows = _processor_rows(over)
    height_in = min(12.0, 2.5 + 0.25 * (len(rows) + 2))
    fig, ax = new_figure(size_in=(10.0, height_in))
    _draw_spans(ax, over, rows)
    _draw_events(ax, over, len(rows))
    labels = [f"node {n} / proc {p}" for n, p in rows] + [MEMORY_ROW, CORES_ROW]
    ax.set_yticks(range(len(labels)), labels, fontsize="small")
    ax.set_ylim(-0.7, len(labels) - 0.3)
    ax.set_xlim(left=0)
    ax.set_xlabel("time (s)")
    if not len(over):
        ax.text(0.5, 0.5, "no contention or shortage recorded", transform=ax.transAxes,
                ha="center", va="center")
    counts = (f"{len(over.bandwidth)} oversubscribed spans, {len(over.memory_shortage)} memory "
              f"and {len(over.core_shortage)} core shortages")
    ax.set_title(run_title(run, f"Contention ({counts})"))
    return fig
