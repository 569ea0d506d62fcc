"""An image of the cluster's state, for the environment's ``rgb_array`` render mode.

One cell per node, shaded by the fraction of its cores that are busy, on a near-square grid; a
title line carries the figures of the text view (:mod:`hdrm.env.render`).
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

#: Size of the image in pixels (width, height), and the resolution it is drawn at.
IMAGE_SIZE = (640, 360)
DPI = 80


def node_grid(fractions: np.ndarray) -> np.ndarray:
    """The nodes' busy fractions on a grid about as wide as the image (NaN past the last node)."""
    n = len(fractions)
    cols = max(1, math.ceil(math.sqrt(n * IMAGE_SIZE[0] / IMAGE_SIZE[1])))
    rows = max(1, math.ceil(n / cols))
    grid = np.full(rows * cols, np.nan)
    grid[:n] = fractions
    return grid.reshape(rows, cols)


def cluster_image(fractions: np.ndarray, title: str,
                  label: str = "busy fraction of the node's cores") -> np.ndarray:
    """An ``(height, width, 3)`` uint8 image of the nodes' busy fractions under ``title``
    (``label``: what the colour bar measures)."""
    fig = Figure(figsize=(IMAGE_SIZE[0] / DPI, IMAGE_SIZE[1] / DPI), dpi=DPI)
    ax = fig.add_axes((0.02, 0.02, 0.86, 0.84))
    grid = node_grid(fractions)
    image = ax.imshow(grid, cmap="viridis", vmin=0.0, vmax=1.0, interpolation="nearest",
                      aspect="auto")
    rows, cols = grid.shape
    ax.set_xticks(np.arange(-0.5, cols), minor=True)
    ax.set_yticks(np.arange(-0.5, rows), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.0)
    ax.tick_params(which="both", bottom=False, left=False, labelbottom=False, labelleft=False)
    colorbar = fig.colorbar(image, cax=fig.add_axes((0.9, 0.02, 0.03, 0.84)))
    colorbar.set_label(label)
    fig.suptitle(title, fontsize=8, wrap=True)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[:, :, :3].copy()
