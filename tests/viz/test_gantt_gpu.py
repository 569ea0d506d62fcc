"""The gantt chart by GPU: shares stacked in their GPU's row, read from a GPU replay's outputs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gpu_builders import gpu_platform, replay, task  # noqa: E402

from hdrm.errors import ConfigError  # noqa: E402
from hdrm.sim.gpu_outputs import write_gpu_outputs  # noqa: E402
from hdrm.viz import PLOTS  # noqa: E402
from hdrm.viz.gantt_gpu import GpuSpan, _stack, plot_gantt_gpu, read_gpu_spans  # noqa: E402


def _span(job, share, start, end):
    return GpuSpan(job, ("n", 0), "T4", share, start, end)


def test_shares_stack_from_the_bottom_and_reuse_freed_bands():
    # a (0.5, 0..10) and b (0.5, 0..20) share the GPU; c (0.5, 10..15) takes a's freed band;
    # d (0.3, 15..20) the bottom again
    spans = [_span("a", 0.5, 0, 10), _span("b", 0.5, 0, 20), _span("c", 0.5, 10, 15),
             _span("d", 0.3, 15, 20)]
    pieces = [(s.job, bottom, pytest.approx(height)) for s, bottom, height in _stack(spans)]
    assert pieces == [("a", 0.0, 0.5), ("b", 0.5, 0.5), ("c", 0.0, 0.5), ("d", 0.0, 0.3)]


def test_a_share_is_split_over_two_free_bands_when_no_single_one_holds_it():
    # x (0.25, 0..10) and y (0.25, 0..20) and z (0.25, 0..20) fill 0..0.75; x ends: bands 0..0.25
    # and 0.75..1 are free; w (0.5) takes both
    spans = [_span("x", 0.25, 0, 10), _span("y", 0.25, 0, 20), _span("z", 0.25, 0, 20),
             _span("w", 0.5, 10, 20)]
    pieces = [(s.job, pytest.approx(b), pytest.approx(h)) for s, b, h in _stack(spans)]
    assert pieces[3:] == [("w", 0.0, 0.25), ("w", 0.75, 0.25)]


def test_the_chart_of_a_replay_has_one_row_per_gpu_and_a_band_per_share(tmp_path):
    platform = gpu_platform([(4, 16384, 2, "T4")])
    jobs = [task(0, 0, 10, gpus=1, milli=500), task(1, 0, 20, gpus=1, milli=500),
            task(2, 0, 5, gpus=2), task(3, 0, 1)]  # 3 holds no GPU: not drawn
    write_gpu_outputs(replay(platform, jobs), tmp_path)
    spans = read_gpu_spans(tmp_path / "out_jobs.csv")
    assert sorted((s.job, s.gpu[1], s.share) for s in spans) == [
        ("0", 0, 0.5), ("1", 0, 0.5), ("2", 0, 1.0), ("2", 1, 1.0)]
    fig = PLOTS.get("gpus")(tmp_path)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["openb-n0:0 T4", "openb-n0:1 T4"]
    assert len(ax.collections[0].get_paths()) == 4
    assert "2 GPUs" in ax.get_title()
    assert "busiest 1 of 2 GPUs" in plot_gantt_gpu(tmp_path, max_gpus=1).axes[0].get_title()


def test_a_cpu_run_is_refused_in_one_line(tmp_path):
    (tmp_path / "out_jobs.csv").write_text("job_id,starting_time,finish_time\n1,0,1\n")
    with pytest.raises(ConfigError, match="no column node, gpu_indices, gpu_milli, gpu_model; "
                                          "the GPU gantt needs"):
        plot_gantt_gpu(tmp_path)
