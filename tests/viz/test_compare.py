"""The comparison grid: one bar per run in each metric's chart, heights equal to the table."""

from __future__ import annotations

from pathlib import Path

import pytest

from hdrm.errors import ConfigError
from hdrm.results.compare import METRICS
from hdrm.viz.compare import bar_text, plot_compare

GOLDEN = Path(__file__).resolve().parents[3] / "shared" / "batsim" / "golden"
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


def test_gpu_runs_add_a_row_of_gpu_charts(tmp_path, example_run, saved_png, capsys):
    """A GPU replay (a half T4 for 100 s and a whole one for 50 s, fifo-first_fit: JCT 75 s,
    allocation 50%, cost 100 GPU-s x 0.35 USD/h) beside a CPU run: 12 charts, the CPU run's
    GPU bars empty and labelled n/a."""
    from hdrm.cli.main import main

    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn-a,4000,16384,2,T4\n")
    (tmp_path / "p.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\nhalf,1000,1024,1,500,,LS,Running,0,100,0\n"
        "whole,1000,1024,1,1000,,LS,Running,0,50,0\n")
    gpu = tmp_path / "gpu"
    assert main(["replay", "--platform", str(tmp_path / "n.csv"), "--workload",
                 str(tmp_path / "p.csv"), "--policy", "fifo-first_fit", "--outdir",
                 str(gpu)]) == 0
    capsys.readouterr()
    fig = plot_compare([gpu, example_run])
    saved_png(fig)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 12 and fig.get_size_inches()[1] == pytest.approx(3 * 3.25)
    assert [ax.get_title() for ax in axes[8:]] == ["Mean JCT", "GPU allocation rate",
                                                   "Mean fragmentation", "GPU cost"]
    assert [ax.get_ylabel() for ax in axes[8:]] == ["s", "fraction of GPU time", "GPUs", "USD"]
    heights = [[p.get_height() for p in ax.containers[0].patches] for ax in axes[8:]]
    assert heights[0] == pytest.approx([75, 0]) and heights[1] == pytest.approx([0.5, 0])
    assert heights[3] == pytest.approx([100 / 3600 * 0.35, 0])
    assert [t.get_text() for t in axes[8].texts] == ["75", "n/a"]
    assert len([ax for ax in plot_compare([example_run]).axes if ax.get_visible()]) == 8
