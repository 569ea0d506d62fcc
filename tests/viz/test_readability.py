"""The plots read as a reader reads them: numbers shown as they are (no axis offset), labels that
do not overlap (text extents measured after drawing), and users coloured on trace replays."""

from __future__ import annotations

from pathlib import Path

import pytest

from hdrm.cli.main import main
from hdrm.policies.pairs import ALL_PAIRS
from hdrm.results.csvio import write_jobs_csv
from hdrm.results.records import JobResult
from hdrm.viz import plot_actions, plot_compare, plot_gantt, plot_learning, plot_queue
from hdrm.viz.common import overlapping_texts


def _episodes(path: Path, bsld: list[float], makespan: list[float]) -> None:
    rows = ["episode,return,loss,makespan,mean_waiting,mean_bounded_slowdown,energy_j,wall_s"]
    rows += [f"{i},{-b},0.5,{m},1,{b},1000,0.1" for i, (b, m) in enumerate(zip(bsld, makespan))]
    (path / "episodes.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")


def test_learning_panels_show_values_without_an_offset(example_run: Path):
    # bounded slowdowns just above 1 (most jobs never wait) and large makespans: matplotlib's
    # default shows "0.0002 ... +1" and "+1.5e6"; a reader must see 1.0002 and 1500020
    _episodes(example_run, [1.0001, 1.0002, 1.0004, 1.0003], [1.5e6 + 10, 1.5e6 + 20, 1.5e6, 1.5e6])
    fig = plot_learning(example_run, window=2)
    overlapping_texts(fig, [])  # draws the figure: tick labels are final
    bsld_ax = next(ax for ax in fig.axes if ax.get_title() == "Mean bounded slowdown")
    makespan_ax = next(ax for ax in fig.axes if ax.get_title() == "Makespan")
    for ax in (bsld_ax, makespan_ax):
        assert ax.yaxis.get_offset_text().get_text() == ""
    ticks = [t.get_text() for t in bsld_ax.get_yticklabels() if t.get_text()]
    assert ticks and all(t.startswith("1.000") for t in ticks), ticks
    ticks = [t.get_text().replace("\u2212", "-") for t in makespan_ax.get_yticklabels()]
    assert ticks and all(abs(float(t) - 1.5e6) < 100 for t in ticks if t), ticks


def test_queue_counts_whole_jobs(example_run: Path):
    fig = plot_queue(example_run)  # at most 2 waiting and 2 running: matplotlib ticks 0.25 apart
    overlapping_texts(fig, [])
    values = fig.axes[0].get_yticks()
    assert len(values) >= 2 and all(float(v).is_integer() for v in values)


def _actions(path: Path, names: list[str], per_action: int = 3) -> None:
    rows = ["episode,step,time,action,action_name"]
    step = 0
    for episode in range(2):
        for index, name in enumerate(names):
            for _ in range(per_action + index % 4):
                rows.append(f"{episode},{step},{step * 10},{index},{name}")
                step += 1
    (path / "actions.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")


@pytest.mark.parametrize("nb_actions", [3, 8, 36])
def test_action_names_and_counts_never_overlap(example_run: Path, saved_png, nb_actions):
    _actions(example_run, list(ALL_PAIRS[:nb_actions]))
    fig = plot_actions(example_run)
    bar_ax = fig.axes[0]
    overlapping_texts(fig, [])  # draws the figure: tick labels are final
    names = bar_ax.get_xticklabels()
    if [t.get_text() for t in names] != list(ALL_PAIRS[:nb_actions]):
        names = bar_ax.get_yticklabels()  # one row per action
    assert [t.get_text() for t in names] == list(ALL_PAIRS[:nb_actions])
    assert overlapping_texts(fig, list(names)) == []
    assert overlapping_texts(fig, list(bar_ax.texts)) == []  # the counts at the bar ends
    saved_png(fig)


def _run(path: Path, waits: list[float]) -> Path:
    path.mkdir(parents=True)
    rows = [JobResult(job_id=str(i + 1), profile="delay", submission_time=0.0,
                      requested_number_of_resources=1, requested_time=10000.0, success=1,
                      final_state="COMPLETED_SUCCESSFULLY", starting_time=w,
                      execution_time=100.0 + i, finish_time=w + 100.0 + i,
                      allocated_resources=str(i), consumed_energy=1000.0)
            for i, w in enumerate(waits)]
    write_jobs_csv(rows, path / "out_jobs.csv")
    return path


def test_compare_value_labels_never_overlap_with_many_runs(tmp_path: Path, saved_png):
    # eight runs of the same jobs, max waiting times of four digits (were "1.58e+03" labels
    # running into each other)
    runs = [_run(tmp_path / f"policy-{k}", [0.0, 10.0 * k, 1578.58 + 37.1 * k])
            for k in range(8)]
    fig = plot_compare(runs)
    for ax in fig.axes:
        if ax.get_visible():
            assert overlapping_texts(fig, list(ax.texts)) == [], ax.get_title()
    max_wait = next(ax for ax in fig.axes if ax.get_title() == "Max waiting time")
    assert [t.get_text() for t in max_wait.texts][:2] == ["1,579", "1,616"]
    saved_png(fig)


def test_gantt_colours_an_swf_replay_by_user(tmp_path: Path, capsys):
    # users 7 (2 jobs of 2 cores x 100 s) and 3 (1 job of 1 core x 50 s), as SWF field 12
    lines = ["; MaxProcs: 4"]
    for number, (submit, run, procs, user) in enumerate([(0, 100, 2, 7), (0, 50, 1, 3),
                                                          (10, 100, 2, 7)], start=1):
        fields = [number, submit, -1, run, procs, -1, -1, procs, 200, -1, 1, user] + [-1] * 6
        lines.append(" ".join(map(str, fields)))
    swf = tmp_path / "users.swf"
    swf.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "replay"
    assert main(["replay", "--workload", str(swf), "--homogeneous-procs", "4", "--outdir",
                 str(out), "--quiet"]) == 0
    assert main(["plot", "gantt", str(out), "--color", "user", "-o",
                 str(tmp_path / "users.png")]) == 0
    assert "wrote" in capsys.readouterr().out
    legend = plot_gantt(out, color_by="user").axes[0].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["user 7", "user 3"]  # by core time

