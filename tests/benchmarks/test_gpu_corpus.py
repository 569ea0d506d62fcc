"""benchmarks/gpu_corpus.py: a small corpus runs clean, and each check finds what it is for
(an over-booked GPU, a task written twice, time going back, a traceback, a wrong mask)."""

from __future__ import annotations

import csv
import json

import numpy as np

from benchmarks import gpu_corpus
from benchmarks import gpu_corpus_checks as checks
from hdrm.policies.gpu_state import GpuCluster, TaskShape

NODES = "sn,cpu_milli,memory_mib,gpu,model\na,4000,16384,2,T4\nb,8000,16384,1,V100M16\n"
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "s1,1000,1024,1,500,T4,LS,Running,0,100,0\n"
        "s2,1000,1024,1,500,,BE,Running,10,40,10\n"
        "w1,1000,2048,1,1000,,LS,Running,20,80,20\n"
        "w2,2000,2048,2,1000,T4,LS,Running,30,90,30\n"
        "never,1000,1024,1,1000,,BE,Pending,30,,\n")
COLUMNS = ("job_id", "final_state", "submission_time", "starting_time", "execution_time",
           "finish_time", "node", "gpu_indices", "gpu_milli")


def _cluster() -> GpuCluster:
    return GpuCluster([4000, 8000], [16384, 16384], [2, 1], ["T4", "V100M16"], ["a", "b"])


def _replay_dir(tmp_path, rows, times=(0.0, 10.0)):
    with open(tmp_path / "out_jobs.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(rows)
    (tmp_path / "out_gpu_summary.json").write_text(json.dumps({"nb_rejected": 0}))
    (tmp_path / "out_gpu_timeline.csv").write_text("time\n" + "".join(f"{t}\n" for t in times))
    return tmp_path


def test_a_small_corpus_runs_clean_on_every_entry_point(tmp_path, capsys):
    (tmp_path / "nodes_node_list.csv").write_text(NODES)
    (tmp_path / "pods.csv").write_text(PODS)
    status = gpu_corpus.main(["--traces", str(tmp_path / "pods.csv"), "--nodes",
                              str(tmp_path / "nodes_node_list.csv"), "--outdir",
                              str(tmp_path / "out"), "--policies", "fgd", "--pairs",
                              "fifo-first_fit,sjf-fgd", "--steps", "30", "--reader-speed"])
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()[1:-1]]
    assert status == 0
    assert [(r[2], r[3], r[4]) for r in rows] == [
        ("reader", "speed", "ok"), ("fragmentation", "fgd", "ok"),
        ("replay", "fifo-first_fit", "ok"), ("replay", "sjf-fgd", "ok"),
        ("sweep", "2 pairs x load 1, 8", "ok"),
        ("gpu_env", "30 steps", "ok"), ("multiagent", "30 steps", "ok")]
    # 4 of the 5 tasks ran (one never ran in the trace); the environments played to the end
    assert rows[2][5].startswith("4 ran, 1 rejected")
    assert rows[4][5].startswith("4 runs, mean wait ")
    assert "episode ended" in rows[5][5] and "episode ended" in rows[6][5]


def test_a_replay_that_double_books_a_gpu_is_caught(tmp_path):
    shapes = {"s1": TaskShape(1000, 1024, 1, 600), "s2": TaskShape(1000, 1024, 1, 600)}
    ok = _replay_dir(tmp_path, [
        ("s1", "COMPLETED_SUCCESSFULLY", 0, 0, 10, 10, "a", "0", 600),
        ("s2", "COMPLETED_SUCCESSFULLY", 0, 10, 5, 15, "a", "0", 600)])  # after s1: fine
    assert checks.check_replay(ok, [1, 2], _cluster(), shapes) == []
    bad = _replay_dir(tmp_path, [
        ("s1", "COMPLETED_SUCCESSFULLY", 0, 0, 10, 10, "a", "0", 600),
        ("s2", "COMPLETED_SUCCESSFULLY", 0, 5, 5, 10, "a", "0", 600)])  # 1200 on T4 0 at 5 s
    assert checks.check_replay(bad, [1, 2], _cluster(), shapes) == [
        "node a: gpu 1200 > 1000 at 5 s"]


def test_a_task_twice_wrong_times_and_time_going_back_are_caught(tmp_path):
    shapes = {"s1": TaskShape(1000, 1024, 1, 500)}
    out = _replay_dir(tmp_path, [
        ("s1", "COMPLETED_SUCCESSFULLY", 5, 0, 10, 12, "b", "0", 500),
        ("s1", "COMPLETED_SUCCESSFULLY", 0, 20, 10, 30, "b", "0", 500)], times=(0.0, 20.0, 10.0))
    assert checks.check_replay(out, [1], _cluster(), shapes) == [
        "1 tasks written more than once",
        "2 ran + 0 rejected != 1 tasks in the slice",
        "task s1: starts at 0.0 before its submission 5.0",
        "task s1: finish 12.0 != start 0.0 + run 10.0",
        "out_gpu_timeline.csv row 3: time 10.0 < 20.0 before it"]


def test_failed_runs_must_be_one_line_naming_an_input():
    assert checks.check_error(2, "hdrm replay: error: pods.csv:3: bad row\n", ["pods.csv"]) == []
    assert checks.check_error(1, "Traceback (most recent call last):\n  ...\nKeyError: 'x'\n",
                              ["pods.csv"]) == ["traceback", "3 lines on stderr",
                                                "the error names no input file"]


def test_fits_by_hand_follows_cpu_memory_model_and_free_shares():
    cluster = _cluster()
    cluster.gpu_left[0] = [300, 1000]  # T4 0 has 300 left
    assert checks.fits_by_hand(cluster, TaskShape(1000, 1024, 1, 500)).tolist() == [True, True]
    assert checks.fits_by_hand(cluster, TaskShape(1000, 1024, 2, 1000)).tolist() == [False,
                                                                                     False]
    assert checks.fits_by_hand(cluster, TaskShape(1000, 1024, 1, 500, ("V100M16",))).tolist() \
        == [False, True]
    assert checks.fits_by_hand(cluster, TaskShape(6000, 0)).tolist() == [False, True]
    for shape in (TaskShape(1000, 1024, 1, 500), TaskShape(1000, 1024, 1, 400, ("T4",))):
        assert np.array_equal(checks.fits_by_hand(cluster, shape), cluster.feasible(shape))
    assert checks.state_problems(cluster) == []
    cluster.cpu_left[1] = -1
    assert checks.state_problems(cluster) == ["free cpu outside [0, capacity]"]


def test_tasks_ending_twice_or_never_are_caught():
    from types import SimpleNamespace

    sim = SimpleNamespace(workload=SimpleNamespace(jobs=[0, 1, 2]))
    assert gpu_corpus._ended_once({0: 1, 1: 1}, sim, done=False) == []
    assert gpu_corpus._ended_once({0: 2, 1: 1}, sim, done=True) == [
        "1 tasks ended more than once", "episode over with 2 of 3 tasks ended"]
