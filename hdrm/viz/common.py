"""What every plot shares: figures without pyplot, saving, colours and run folders.

Figures are plain :class:`matplotlib.figure.Figure` objects: no pyplot state survives a call and
nothing needs a display. Saving goes through Agg (png) or matplotlib's vector backends (svg, pdf).
"""

from __future__ import annotations

import logging
from pathlib import Path

from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from hdrm.durable import replacing
from hdrm.errors import ConfigError
from hdrm.results.run import Run

logger = logging.getLogger(__name__)

#: File formats :func:`save` writes.
FORMATS = ("png", "svg", "pdf")
#: Resolution of png files, in dots per inch.
PNG_DPI = 120

#: One colour per quantity, the same in every plot.
COLORS = {
    "busy": "#1f77b4",
    "queue": "#ff7f0e",
    "running": "#2ca02c",
    "contended": "#d62728",
    "power": "#d62728",
    "energy": "#2ca02c",
    "raw": "#7f7f7f",
    "average": "#1f77b4",
    "memory": "#9467bd",
    "cores": "#8c564b",
}
#: Colour map for categories (jobs, users, actions, runs).
CATEGORY_CMAP = "tab20"
#: Colour map for intensities (oversubscription ratio).
INTENSITY_CMAP = "OrRd"


def new_figure(nrows: int = 1, ncols: int = 1, size_in: tuple[float, float] = (9.0, 4.8)):
    """A figure with a constrained (tight) layout and its axes (a single Axes for 1 x 1).

    Returns:
        ``(figure, axes)``; ``axes`` is an Axes or a 2-D array of them.
    """
    fig = Figure(figsize=size_in, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=(nrows == 1 and ncols == 1))
    return fig, axes


def overlapping_texts(fig: Figure, texts: list, gap_px: float = 0.0) -> list[tuple[int, int]]:
    """Pairs ``(i, j)`` of visible, non-empty ``texts`` whose drawn extents overlap, or come
    closer than ``gap_px`` pixels (the figure is drawn first, so the layout is final)."""
    canvas = FigureCanvasAgg(fig)  # a figure made without pyplot has no renderer of its own
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = [(i, t.get_window_extent(renderer).padded(gap_px / 2)) for i, t in enumerate(texts)
             if t.get_visible() and t.get_text()]
    return [(i, j) for a, (i, box) in enumerate(boxes) for j, other in boxes[a + 1:]
            if box.overlaps(other)]


def plain_numbers(ax) -> None:
    """Tick labels show the values themselves: no offset (``+1`` above the axis) and no
    scientific multiplier, so 1.0002 reads 1.0002, not 0.0002 with ``+1`` in a corner."""
    ax.ticklabel_format(axis="y", style="plain", useOffset=False)


def category_colors(n: int) -> list[tuple[float, float, float, float]]:
    """``n`` colours from :data:`CATEGORY_CMAP`, cycling beyond 20.

    The dark shades come first, then the light ones, so neighbours differ in hue and shade.
    """
    cmap = colormaps[CATEGORY_CMAP]
    order = list(range(0, cmap.N, 2)) + list(range(1, cmap.N, 2))
    return [cmap(order[i % cmap.N]) for i in range(n)]


def as_run(run_dir: str | Path | Run) -> Run:
    """A :class:`Run` for a folder path (or the Run itself)."""
    return run_dir if isinstance(run_dir, Run) else Run(run_dir)


def check_output_path(path: str | Path) -> Path:
    """Check that a plot can be saved at ``path`` (known suffix, existing folder).

    Raises:
        ConfigError: the suffix is not one of :data:`FORMATS` or the folder does not exist.
    """
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise ConfigError(
            f"cannot save a plot as {path.name!r}: unknown file type {path.suffix or '(none)'!r}; "
            f"end the name in one of: {', '.join('.' + f for f in FORMATS)}"
        )
    if not path.parent.is_dir():
        raise ConfigError(f"cannot save {path}: folder {path.parent} does not exist")
    return path


def save(fig: Figure, path: str | Path) -> Path:
    """Save a figure as png, svg or pdf, chosen by the file's suffix.

    Raises:
        ConfigError: the suffix is not one of :data:`FORMATS`, or the folder does not exist or
            cannot be written.

    Returns:
        The path written.
    """
    path = check_output_path(path)
    fmt = path.suffix.lower().lstrip(".")
    try:  # whole or not at all (hdrm.durable.replacing): Ctrl-C never leaves a cut image
        with replacing(path) as scratch:
            fig.savefig(scratch, format=fmt, dpi=PNG_DPI)
    except OSError as exc:
        raise ConfigError(f"cannot save {path}: {exc.strerror or exc}") from None
    logger.info("saved %s", path)
    return path


def run_title(run: Run, what: str) -> str:
    """A figure title: what is shown, then the run's label."""
    return f"{what} - {run.label}"
