"""The DAG gantt chart (``hdrm plot dag``): the data drawn, checked by hand on 4-task examples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from matplotlib.patches import Rectangle

from hdrm.cli.main import main
from hdrm.errors import ConfigError
from hdrm.viz.common import category_colors
from hdrm.viz.dag import group_colors, load_chart, plot_dag
from hdrm.viz.dag_data import Arrow, from_periodic, from_schedule
from hdrm.viz.dag_devices import device_rows

from dag.periodic_gpu_case import GPU_SCHEDULE, write_case

ROOT = Path(__file__).resolve().parents[2]
TINY4 = ROOT / "platforms" / "tiny4.json"

#: One graph a -> (b, c) -> d, released at 0 and 10 (two instances), transfer 0.5 s on a -> b.
TASKSET = {"name": "diamonds", "horizon_s": 20, "graphs": [
    {"name": "g", "period_s": 10, "deadline_s": 10,
     "tasks": [{"name": "a", "cpu_s": 1}, {"name": "b", "cpu_s": 4},
               {"name": "c", "cpu_s": 2}, {"name": "d", "cpu_s": 1}],
     "edges": [["a", "b", 0.5], ["a", "c"], ["b", "d"], ["c", "d"]]}]}

#: A schedule of the same diamond (by hand, two processors) and its WfCommons workflow.
SCHEDULE_CSV = ("task,processor,start_s,finish_s,cost_s\n"
                "a,p0,0.0,1.0,1.0\nb,p1,1.5,5.5,4.0\nc,p0,1.0,3.0,2.0\nd,p1,5.5,6.5,1.0\n")
WORKFLOW = {"name": "diamond", "schemaVersion": "1.5", "workflow": {
    "specification": {"tasks": [
        {"id": i, "parents": p, "children": c, "inputFiles": [], "outputFiles": []}
        for i, p, c in (("a", [], ["b", "c"]), ("b", ["a"], ["d"]), ("c", ["a"], ["d"]),
                        ("d", ["b", "c"], []))], "files": []},
    "execution": {"tasks": [{"id": i, "runtimeInSeconds": r}
                            for i, r in (("a", 1), ("b", 4), ("c", 2), ("d", 1))]}}}


@pytest.fixture
def periodic_run(tmp_path: Path) -> tuple[Path, Path]:
    """A ``hdrm dag periodic`` run of :data:`TASKSET` on 4 cores, and the task set file."""
    taskset = tmp_path / "set.json"
    taskset.write_text(json.dumps(TASKSET))
    assert main(["dag", "periodic", str(taskset), "--platform", str(TINY4), "--policy",
                 "dag_edf", "-o", str(tmp_path / "run")]) == 0
    return tmp_path / "run", taskset


@pytest.fixture
def schedule(tmp_path: Path) -> tuple[Path, Path]:
    """The hand-made schedule CSV and its workflow file."""
    (tmp_path / "s.csv").write_text(SCHEDULE_CSV)
    (tmp_path / "wf.json").write_text(json.dumps(WORKFLOW))
    return tmp_path / "s.csv", tmp_path / "wf.json"


def test_periodic_bars_and_arrows_by_hand(periodic_run):
    # Instance k released at 10k: a runs 0-1 on a core; b waits the 0.5 s transfer (1.5-5.5),
    # c runs 1-3, d after b (5.5-6.5). Four cores: each task starts as soon as it may.
    chart = from_periodic(*periodic_run)
    bars = {b.task: b for b in chart.bars}
    assert len(bars) == 8 and chart.group_kind == "instance"
    for k in (0, 1):
        t0 = 10.0 * k
        got = {n: (bars[f"g#{k}/{n}"].start_s, bars[f"g#{k}/{n}"].finish_s) for n in "abcd"}
        assert got == {"a": (t0, t0 + 1), "b": (t0 + 1.5, t0 + 5.5), "c": (t0 + 1, t0 + 3),
                       "d": (t0 + 5.5, t0 + 6.5)}
        assert {bars[f"g#{k}/{n}"].group for n in "abcd"} == {f"g#{k}"}
    assert chart.groups == ["g#0", "g#1"]
    # Each arrow: from the predecessor's finish on its row to the successor's start on its row.
    row = {name: bar.row for name, bar in bars.items()}
    expected = {Arrow(t + f, row[f"g#{k}/{p}"], t + s, row[f"g#{k}/{q}"])
                for k, t in ((0, 0.0), (1, 10.0))
                for p, q, f, s in (("a", "b", 1, 1.5), ("a", "c", 1, 1), ("b", "d", 5.5, 5.5),
                                   ("c", "d", 3, 5.5))}
    assert set(chart.arrows) == expected and len(chart.arrows) == 8
    # Rows are the cores used: a task and one overlapping it never share a row.
    assert row["g#0/b"] != row["g#0/c"]
    assert all(label.startswith("core ") for label in chart.rows)


def test_periodic_figure_colours_each_instance(periodic_run):
    chart = from_periodic(*periodic_run)
    colors = group_colors(chart)
    assert colors == dict(zip(["g#0", "g#1"], category_colors(2)))
    fig = plot_dag(chart)
    ax = fig.axes[0]
    drawn = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert len(drawn) == 8
    by_x = {(round(r.get_x(), 6), round(r.get_width(), 6)): r.get_facecolor() for r in drawn}
    assert by_x[(0.0, 1.0)] == pytest.approx(category_colors(2)[0])   # g#0/a
    assert by_x[(10.0, 1.0)] == pytest.approx(category_colors(2)[1])  # g#1/a
    ends = {(a.xy, a.xyann) for a in ax.texts if hasattr(a, "xyann")}  # (head, tail)
    assert len(ends) == 8
    assert ((1.5, row_of(chart, "g#0/b")), (1.0, row_of(chart, "g#0/a"))) in ends


def row_of(chart, task: str) -> int:
    """The row of ``task`` in ``chart``."""
    return next(b.row for b in chart.bars if b.task == task)


def test_schedule_bars_levels_and_arrows(schedule):
    chart = from_schedule(*schedule)
    assert chart.rows == ("p0", "p1")
    assert [(b.task, b.row, b.start_s, b.finish_s, b.group) for b in chart.bars] == [
        ("a", 0, 0.0, 1.0, "level 0"), ("b", 1, 1.5, 5.5, "level 1"),
        ("c", 0, 1.0, 3.0, "level 1"), ("d", 1, 5.5, 6.5, "level 2")]
    assert set(chart.arrows) == {Arrow(1.0, 0, 1.5, 1), Arrow(1.0, 0, 1.0, 0),
                                 Arrow(5.5, 1, 5.5, 1), Arrow(3.0, 0, 5.5, 1)}


def test_arrows_capped_to_the_earliest_and_said_in_title(schedule):
    fig = plot_dag(schedule[0], graph=schedule[1], max_arrows=3)
    ax = fig.axes[0]
    drawn = {(t.xyann, t.xy) for t in ax.texts if hasattr(t, "xyann")}  # (tail, head)
    assert drawn == {((1.0, 0), (1.0, 0)), ((1.0, 0), (1.5, 1)), ((3.0, 0), (5.5, 1))}
    assert "arrows for the first 3 of 4 dependencies" in ax.get_title()


def test_cli_writes_the_picture(periodic_run, schedule, capsys):
    run, taskset = periodic_run
    assert main(["plot", "dag", str(run), "--graph", str(taskset)]) == 0
    assert (run / "dag.png").stat().st_size > 1000
    assert main(["plot", "dag", str(schedule[0]), "--graph", str(schedule[1])]) == 0
    assert schedule[0].with_suffix(".png").is_file()


def test_periodic_run_on_a_gpu_platform_by_hand(tmp_path):
    # dag/periodic_gpu_case.py: a 0-2 on a core, c 2-4 then b 4-5 on the T4, d 5-6 on a core.
    # The GPU engine names no core: CPU tasks go on lanes of their node, GPU tasks on their GPU.
    taskset, platform = write_case(tmp_path, gpus=1)
    run = tmp_path / "run"
    assert main(["dag", "periodic", str(taskset), "--platform", str(platform), "-o",
                 str(run)]) == 0
    chart = from_periodic(run, taskset)
    assert chart.rows == ("c0-n0 cpu 0", "c0-n0 gpu 0")
    bars = {b.task.split("/")[1]: b for b in chart.bars}
    assert {n: (b.start_s, b.finish_s) for n, b in bars.items()} == GPU_SCHEDULE
    assert {n: b.row for n, b in bars.items()} == {"a": 0, "b": 1, "c": 1, "d": 0}
    assert set(chart.arrows) == {Arrow(2.0, 0, 4.0, 1), Arrow(2.0, 0, 2.0, 1),
                                 Arrow(5.0, 1, 5.0, 0), Arrow(4.0, 1, 5.0, 0)}
    assert main(["plot", "dag", str(run), "--graph", str(taskset)]) == 0


def test_cpu_lanes_keep_overlapping_tasks_apart(tmp_path):
    header = ("job_id,final_state,starting_time,finish_time,allocated_resources,node,"
              "gpu_indices\n")
    rows = ["x,COMPLETED_SUCCESSFULLY,0,4,,n0,", "y,COMPLETED_SUCCESSFULLY,1,2,,n0,",
            "z,COMPLETED_SUCCESSFULLY,2,3,,n0,", "w,COMPLETED_SUCCESSFULLY,0,9,,n1,",
            "g,COMPLETED_SUCCESSFULLY,1,2,3,n1,1", "r,REJECTED,,,,n0,"]
    path = tmp_path / "out_jobs.csv"
    path.write_text(header + "\n".join(rows) + "\n")
    got = {p.job_id: (p.row, p.start_s, p.finish_s) for p in device_rows(path)}
    # y overlaps x: lane 1; z starts when y ends: lane 1 again; n1 has its own lane 0.
    assert got == {"x": ("n0 cpu 0", 0, 4), "y": ("n0 cpu 1", 1, 2), "z": ("n0 cpu 1", 2, 3),
                   "w": ("n1 cpu 0", 0, 9), "g": ("n1 gpu 1", 1, 2)}


def test_folder_without_dependency_information_is_refused(periodic_run, tmp_path, capsys):
    run, _ = periodic_run
    with pytest.raises(ConfigError, match=r"/run: a run folder holds no dependency information; "
                       r"give the task set JSON or the replayed workload it was made from with "
                       r"--graph FILE"):
        plot_dag(run)
    assert main(["plot", "dag", str(run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--graph FILE" in err[0]
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**TASKSET, "graphs": [{**TASKSET["graphs"][0], "name": "h"}]}))
    with pytest.raises(ConfigError, match="no completed job is a task of"):
        plot_dag(run, graph=other)


#: The four-job chain of docs/dags.rst: 1 -> 2 (think 10 s) -> 3 (0 s) -> 4 (5 s).
CHAIN_SWF = """; MaxProcs: 4
1 0 -1 100 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1
2 5 -1 50 4 -1 -1 4 100 -1 1 1 1 -1 1 -1 1 10
3 10 -1 30 1 -1 -1 1 100 -1 1 1 1 -1 1 -1 2 0
4 12 -1 20 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 3 5
"""


def test_replay_of_a_dependency_chain(tmp_path):
    # By hand (docs/dags.rst): job 1 runs 0-100 on cores 0-1, 2 at 110-160 on 0-3, 3 at 160-190
    # on core 0, 4 at 195-215 on 0-1; one bar per core used, one chain, arrows between the
    # lowest cores.
    swf = tmp_path / "chain.swf"
    swf.write_text(CHAIN_SWF)
    assert main(["replay", "--homogeneous-procs", "4", "--workload", str(swf), "--contention",
                 "none", "--outdir", str(tmp_path / "out")]) == 0
    chart = load_chart(tmp_path / "out", swf)
    assert chart.rows == ("core 0", "core 1", "core 2", "core 3")
    spans = sorted((b.task, b.row, b.start_s, b.finish_s) for b in chart.bars)
    assert spans == [("1", 0, 0.0, 100.0), ("1", 1, 0.0, 100.0),
                     ("2", 0, 110.0, 160.0), ("2", 1, 110.0, 160.0), ("2", 2, 110.0, 160.0),
                     ("2", 3, 110.0, 160.0), ("3", 0, 160.0, 190.0), ("4", 0, 195.0, 215.0),
                     ("4", 1, 195.0, 215.0)]
    assert {b.group for b in chart.bars} == {"chain of job 1"}
    assert set(chart.arrows) == {Arrow(100.0, 0, 110.0, 0), Arrow(160.0, 0, 160.0, 0),
                                 Arrow(190.0, 0, 195.0, 0)}
    plain = tmp_path / "plain.swf"
    plain.write_text("".join(line.rsplit(" ", 2)[0] + " -1 -1\n"
                             for line in CHAIN_SWF.splitlines()[1:]))
    with pytest.raises(ConfigError, match=r"plain.swf: no job has a preceding job"):
        load_chart(tmp_path / "out", plain)


def test_bad_schedule_csv_named_on_one_line(schedule, tmp_path):
    csv_path, workflow = schedule
    bad = tmp_path / "bad.csv"
    bad.write_text(SCHEDULE_CSV.replace("processor,", "proc,"))
    with pytest.raises(ConfigError, match=r"bad.csv: not a DAG schedule CSV, no column "
                       r"'processor'; write one with 'hdrm dag schedule"):
        from_schedule(bad, workflow)
    bad.write_text(SCHEDULE_CSV.replace("d,p1", "e,p1"))
    with pytest.raises(ConfigError, match=r"bad.csv, line 5: task 'e' is not in .*wf.json"):
        from_schedule(bad, workflow)
    bad.write_text(SCHEDULE_CSV.replace("5.5,6.5", "soon,6.5"))
    with pytest.raises(ConfigError, match=r"bad.csv, line 5: start_s/finish_s 'soon'/'6.5' is "
                       r"not a number"):
        from_schedule(bad, workflow)
