"""The comparison grid: one bar per run in each metric's chart, heights equal to the table."""

from __future__ import annotations

from pathlib import Path

import pytest

from hdrm.errors import ConfigError
from hdrm.results.compare import METRICS
from hdrm.viz.compare import bar_text, plot_compare

GOLDEN = Path("/work/shared/batsim/golden")
needs_golden = pytest.mark.skipif(not GOLDEN.is_dir(), reason=f"no Batsim outputs under {GOLDEN}")


@needs_golden
def test_grid_of_bars(example_run: Path, saved_png):
    fig = plot_compare([example_run, GOLDEN / "pstate_slowdown/pstateDemo",
                        GOLDEN / "small_delays/fillerSched"])
    saved_png(fig)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == len(METRICS) == 8
    assert [ax.get_title() for ax in axes][:2] == ["Makespan", "Energy"]
    for ax in axes:
        assert len(ax.containers[0].patches) == 3
        assert [t.get_text() for t in ax.get_xticklabels()] == ["example", "pstateDemo",
                                                                "fillerSched"]
    makespans = [p.get_height() for p in axes[0].containers[0].patches]
    assert makespans == pytest.approx([27.0, 26.0, 37.005045])
    energy = axes[1]
    assert energy.get_ylabel() == "kJ"
    assert [p.get_height() for p in energy.containers[0].patches] == pytest.approx([10.24, 10.4, 0])
    assert [t.get_text() for t in energy.texts] == ["10.2", "10.4", "n/a"]
    waits = [p.get_height() for p in axes[2].containers[0].patches]
    assert waits == pytest.approx([4.2, 6.25, 0.005048], rel=1e-5)


def test_bar_text():
    assert bar_text(float("nan")) == "n/a"
    assert bar_text(47327.3088) == "47,327"
    assert bar_text(1578.583) == "1,579"  # not 1.58e+03
    assert bar_text(1.23456) == "1.23"


def test_no_run_is_an_error():
    with pytest.raises(ConfigError, match=r"give at least one run folder"):
        plot_compare([])
