"""Fixtures of the plot tests: the example run folder and an image checker."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image
import pytest
from matplotlib.figure import Figure

from hdrm.results.example import write_example_run
from hdrm.viz import save
from hdrm.viz.common import PNG_DPI

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def example_run(tmp_path: Path) -> Path:
    """A fresh copy of the example run folder (every result file)."""
    return write_example_run(tmp_path / "example")


@pytest.fixture
def saved_png(tmp_path: Path):
    """Save a figure as png and check it is a real image of the figure's size; returns the path."""

    def check(fig: Figure, name: str = "plot.png") -> Path:
        path = save(fig, tmp_path / name)
        data = path.read_bytes()
        assert data[:8] == PNG_SIGNATURE and len(data) > 1000
        pixels = matplotlib.image.imread(path)
        width_in, height_in = fig.get_size_inches()
        assert pixels.shape == (round(height_in * PNG_DPI), round(width_in * PNG_DPI), 4)
        assert pixels[..., :3].std() > 0.05  # not a blank canvas
        return path

    return check
