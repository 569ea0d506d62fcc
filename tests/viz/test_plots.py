"""Every plot rendered headless from real Batsim outputs and from the example run: valid images
with the expected content (axes, bars, polygons, lines and their data)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.collections import PatchCollection
import pytest
from matplotlib.collections import PathCollection, PolyCollection

from hdrm.errors import ConfigError
from hdrm.viz import (
    KINDS,
    PLOTS,
    plot_actions,
    plot_contention,
    plot_energy,
    plot_gantt,
    plot_learning,
    plot_queue,
    plot_utilisation,
    save,
)

GOLDEN = Path(__file__).resolve().parents[3] / "shared" / "batsim" / "golden"
needs_golden = pytest.mark.skipif(not GOLDEN.is_dir(), reason=f"no Batsim outputs under {GOLDEN}")


def _polygons(ax) -> int:
    return sum(len(c.get_paths()) for c in ax.collections if isinstance(c, PolyCollection))


@needs_golden
@pytest.mark.parametrize("kind", ["gantt", "utilisation", "queue"])
@pytest.mark.parametrize("run", ["small_various/easyBackfill", "cluster256_1k/easyBackfill"])
def test_batsim_outputs_render(kind: str, run: str, saved_png):
    fig = PLOTS.get(kind)(GOLDEN / run)
    saved_png(fig)
    assert len(fig.axes) == 1


@needs_golden
def test_gantt_draws_one_rectangle_per_job_range(saved_png):
    fig = plot_gantt(GOLDEN / "small_various/easyBackfill")
    saved_png(fig)
    (ax,) = fig.axes
    assert _polygons(ax) == 9  # 9 jobs, each on one contiguous range of cores
    assert len(ax.texts) == 9  # small enough to label every job
    assert ax.get_ylim() == (0.0, 4.0)
    assert "9 jobs, coloured by job" in ax.get_title()


@needs_golden
def test_gantt_keeps_the_largest_jobs_beyond_the_limit(saved_png):
    fig = plot_gantt(GOLDEN / "cluster256_1k/easyBackfill", max_jobs=100)
    saved_png(fig)
    (ax,) = fig.axes
    assert "largest 100 of 1000 jobs" in ax.get_title()
    assert 100 <= _polygons(ax) < 200  # a backfilled job may span a few ranges
    assert len(ax.texts) == 0
    assert ax.get_ylim() == (0.0, 256.0)


def test_gantt_by_user_with_contention(example_run: Path, saved_png):
    fig = plot_gantt(example_run, color_by="user")
    saved_png(fig)
    (ax,) = fig.axes
    assert _polygons(ax) == 4  # the rejected job is not drawn
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["user alice", "user bob", "user carol", "bandwidth contention"]
    spans = [p for p in ax.patches if p.get_hatch() == "///"]
    assert len(spans) == 2  # [0, 10] (two processors merged) and [22, 27]
    colors = ax.collections[0].get_facecolors()
    assert np.allclose(colors[0], colors[2]) and not np.allclose(colors[0], colors[1])


@needs_golden
def test_gantt_errors():
    with pytest.raises(ConfigError, match=r"cannot colour by user: no job's metadata names a user"):
        plot_gantt(GOLDEN / "small_delays/fillerSched", color_by="user")
    with pytest.raises(ConfigError, match=r"unknown colouring 'users'; choose one of: job, user"):
        plot_gantt(GOLDEN / "small_delays/fillerSched", color_by="users")
    with pytest.raises(ConfigError, match=r"max_jobs must be at least 1, got 0"):
        plot_gantt(GOLDEN / "small_delays/fillerSched", max_jobs=0)


def test_utilisation_of_the_example(example_run: Path, saved_png):
    fig = plot_utilisation(example_run)
    saved_png(fig)
    (ax,) = fig.axes
    busy, contended, mean = ax.get_lines()
    assert list(busy.get_ydata()) == [100, 100, 100, 100, 100, 0, 100, 0]
    assert list(contended.get_ydata()) == [50, 50, 50, 50, 0, 0, 100, 0]
    assert mean.get_ydata()[0] == pytest.approx(100 * 25 / 27)
    assert "from out_timeline.csv" in ax.get_title()


@needs_golden
def test_utilisation_derived_from_batsim(saved_png):
    fig = plot_utilisation(GOLDEN / "small_delays/fillerSched")
    saved_png(fig)
    (ax,) = fig.axes
    assert len(ax.get_lines()) == 2  # busy and mean: no contention known
    assert ax.get_lines()[1].get_label() == "mean 67.6 %"  # 100 core-s / (4 x 37.005 s)
    assert "derived from out_jobs.csv" in ax.get_title()
    assert ax.get_ylabel() == "utilisation (% of 4 cores)"


def test_queue_of_the_example(example_run: Path, saved_png):
    fig = plot_queue(example_run)
    saved_png(fig)
    (ax,) = fig.axes
    waiting, running = ax.get_lines()
    assert list(waiting.get_ydata()) == [0, 1, 2, 2, 1, 1, 0, 0]
    assert list(running.get_ydata()) == [2, 2, 2, 2, 2, 0, 1, 0]
    assert ax.get_ylabel() == "jobs"


def test_energy_of_the_example(example_run: Path, saved_png):
    fig = plot_energy(example_run)
    saved_png(fig)
    power_ax, energy_ax = fig.axes
    (power,) = power_ax.get_lines()
    (energy,) = energy_ax.get_lines()
    assert list(power.get_ydata()) == [400, 400, 400, 400, 400, 120, 400, 120]
    assert energy.get_ydata()[-1] == pytest.approx(10.24)
    assert energy_ax.get_ylabel() == "cumulative energy (kJ)"
    assert power_ax.get_ylabel() == "power (W)"
    assert "engine timeline" in power_ax.get_title()


@needs_golden
def test_energy_from_batsim_job_energy(saved_png):
    fig = plot_energy(GOLDEN / "pstate_slowdown/pstateDemo")
    saved_png(fig)
    power_ax, energy_ax = fig.axes
    assert "estimated from per-job energy" in power_ax.get_title()
    assert energy_ax.get_lines()[0].get_ydata()[-1] == pytest.approx(8.7)
    with pytest.raises(ConfigError, match=r"no power data: no out_timeline.csv and out_jobs.csv "
                                          r"has no job energy"):
        plot_energy(GOLDEN / "small_delays/fillerSched")


def test_contention_of_the_example(example_run: Path, saved_png):
    fig = plot_contention(example_run)
    saved_png(fig)
    ax = fig.axes[0]
    assert len(fig.axes) == 2  # the plot and its colour bar
    assert len(ax.containers) == 1 and len(ax.containers[0].patches) == 3
    widths = sorted(p.get_width() for p in ax.containers[0].patches)
    assert widths == [5.0, 10.0, 10.0]
    markers = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert [len(c.get_offsets()) for c in markers] == [1, 2]  # memory, then core shortages
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["node 0 / proc 0", "node 0 / proc 1", "memory shortage", "core shortage"]
    assert "3 oversubscribed spans, 1 memory and 2 core shortages" in ax.get_title()


def test_contention_with_nothing_recorded(example_run: Path, saved_png):
    (example_run / "overutilizations.json").write_text("{}")
    fig = plot_contention(example_run)
    saved_png(fig)
    assert len(fig.axes) == 1
    assert [t.get_text() for t in fig.axes[0].texts] == ["no contention or shortage recorded"]


@needs_golden
def test_contention_needs_the_engine_file():
    with pytest.raises(ConfigError, match=r"has no overutilizations.json \(needed for the "
                                          r"contention plot\)"):
        plot_contention(GOLDEN / "small_delays/fillerSched")


def test_learning_of_the_example(example_run: Path, saved_png):
    fig = plot_learning(example_run, window=2)
    saved_png(fig)
    assert len(fig.axes) == 4
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["Return", "Loss", "Mean bounded slowdown", "Makespan"]
    for ax in fig.axes:
        assert len(ax.get_lines()) == 2
    raw, average = fig.axes[0].get_lines()
    assert list(raw.get_ydata()) == [-10, -8, -9, -6, -5, -4]
    assert list(average.get_ydata()) == [-10, -9, -8.5, -7.5, -5.5, -4.5]
    loss_average = fig.axes[1].get_lines()[1].get_ydata()
    assert list(loss_average) == pytest.approx([1.0, 0.9, 0.8, 0.5, 0.45, 0.35])


def test_learning_errors(example_run: Path):
    with pytest.raises(ConfigError, match=r"window must be at least 1 episode, got 0"):
        plot_learning(example_run, window=0)
    (example_run / "episodes.csv").write_text((example_run / "episodes.csv").read_text()
                                              .splitlines()[0] + "\n")
    with pytest.raises(ConfigError, match=r"episodes.csv: no episode recorded yet"):
        plot_learning(example_run)


def test_actions_of_the_example(example_run: Path, saved_png):
    fig = plot_actions(example_run)
    saved_png(fig)
    bar_ax, share_ax = fig.axes
    heights = [p.get_height() for p in bar_ax.containers[0].patches]
    assert heights == pytest.approx([100 * 5 / 11, 100 * 2 / 11, 100 * 4 / 11])
    names = [t.get_text() for t in bar_ax.get_xticklabels()]
    assert names == ["FCFS-high_gflops", "SJF-high_mem_bw", "LJF-low_power"]
    assert bar_ax.get_title() == "11 decisions"
    assert len(share_ax.collections) == 3  # one stacked area per action
    legend = [t.get_text() for t in share_ax.get_legend().get_texts()]
    assert legend == ["FCFS-high_gflops", "LJF-low_power", "SJF-high_mem_bw"]  # most chosen first


def test_actions_of_one_episode_has_one_axes(example_run: Path, saved_png):
    path = example_run / "actions.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:4]) + "\n")  # episode 1 only: action 0 three times
    fig = plot_actions(example_run)
    saved_png(fig)
    (ax,) = fig.axes
    assert [p.get_height() for p in ax.containers[0].patches] == [100.0]


@pytest.mark.parametrize(("suffix", "magic"), [(".svg", b"<?xml"), (".pdf", b"%PDF")])
def test_vector_formats(example_run: Path, tmp_path: Path, suffix: str, magic: bytes):
    path = save(plot_queue(example_run), tmp_path / f"queue{suffix}")
    assert path.read_bytes().startswith(magic)


def test_save_errors(example_run: Path, tmp_path: Path):
    fig = plot_queue(example_run)
    with pytest.raises(ConfigError, match=r"unknown file type '.jpg'; end the name in one of: "
                                          r".png, .svg, .pdf"):
        save(fig, tmp_path / "q.jpg")
    with pytest.raises(ConfigError, match=r"folder .*missing does not exist"):
        save(fig, tmp_path / "missing" / "q.png")


def test_every_kind_is_registered_and_leaves_no_pyplot_state(example_run: Path):
    from matplotlib._pylab_helpers import Gcf

    for kind in KINDS:
        assert PLOTS.get(kind)(example_run).axes
    assert PLOTS.get("utilization") is plot_utilisation
    assert Gcf.get_num_fig_managers() == 0
    with pytest.raises(ConfigError, match=r"unknown plot kind 'gant'; did you mean 'gantt'\?"):
        PLOTS.get("gant")


def test_open_spans_end_at_the_last_known_time(example_run: Path, saved_png):
    from hdrm.results.overutil import BandwidthSpan, Overutilizations, write_overutilizations

    spans = [BandwidthSpan(0, 0, 2.0, 8.0, 30.0, 20.0), BandwidthSpan(1, 0, 4.0, float("inf"),
                                                                       30.0, 20.0)]
    write_overutilizations(Overutilizations(bandwidth=spans), example_run / "overutilizations.json")
    fig = plot_contention(example_run)
    saved_png(fig)
    assert [p.get_width() for p in fig.axes[0].containers[0].patches] == [6.0, 4.0]
    gantt = plot_gantt(example_run)
    saved_png(gantt, "gantt.png")
    (hatched,) = [p for p in gantt.axes[0].patches if p.get_hatch() == "///"]
    assert hatched.get_x() == 2.0 and hatched.get_width() == pytest.approx(25.0)  # to 27 s


def test_gantt_hatches_only_the_contended_processors_cores(tmp_path: Path, saved_png):
    from dataclasses import replace

    from hdrm.results.example import example_overutilizations, write_example_run
    from hdrm.results.overutil import write_overutilizations

    run_dir = write_example_run(tmp_path / "run")
    over = example_overutilizations()
    over.bandwidth = [replace(s, cores="0-1" if s.processor_id == 0 else "2-3") for s in over.bandwidth]
    write_overutilizations(over, run_dir / "overutilizations.json")
    fig = plot_gantt(run_dir)
    saved_png(fig)
    (ax,) = fig.axes
    (hatched,) = [c for c in ax.collections if isinstance(c, PatchCollection)]
    boxes = [p.get_extents() for p in hatched.get_paths()]
    assert len(boxes) == 3  # one box per span, each over its processor's two cores
    heights = sorted(round(p.get_extents().height) for p in hatched.get_paths())
    assert heights == [2, 2, 2]
    assert not [p for p in ax.patches if p.get_hatch() == "///"]  # no full-height shading


def test_a_save_stopped_midway_keeps_the_previous_image(tmp_path, monkeypatch):
    # Ctrl-C in the middle of savefig left a cut PNG under the final name
    from matplotlib.figure import Figure

    from hdrm.viz import save

    fig = Figure(figsize=(2, 2))
    fig.add_subplot().plot([0, 1], [1, 0])
    path = save(fig, tmp_path / "plot.png")
    before = path.read_bytes()

    def cut(target, **_):
        with open(target, "wb") as out:
            out.write(before[:100])
        raise KeyboardInterrupt

    monkeypatch.setattr(fig, "savefig", cut)
    with pytest.raises(KeyboardInterrupt):
        save(fig, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["plot.png"]
