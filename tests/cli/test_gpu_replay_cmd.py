"""``hdrm replay`` on a GPU platform: openb node and pod lists in, summary and GPU outputs out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hdrm.cli.main import main

NODES = "sn,cpu_milli,memory_mib,gpu,model\ngpu-node,4000,16384,2,T4\ncpu-node,8000,16384,0,\n"
# creation, scheduled and deletion times: share-a runs 0..100, share-b 10..40, whole 20..80;
# never-ran has no scheduled time
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "share-a,1000,1024,1,500,T4,LS,Running,0,100,0\n"
        "share-b,1000,1024,1,500,,BE,Running,10,40,10\n"
        "whole,1000,2048,1,1000,,LS,Running,20,80,20\n"
        "never-ran,1000,1024,1,1000,,BE,Pending,30,,\n")


@pytest.fixture
def lists(tmp_path):
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text(NODES)
    pods.write_text(PODS)
    return nodes, pods


def test_replay_of_an_openb_list_prints_the_gpu_figures_and_writes_the_outputs(lists, tmp_path,
                                                                            capsys):
    nodes, pods = lists
    out = tmp_path / "run"
    status = main(["replay", "--platform", str(nodes), "--workload", str(pods), "--policy",
                   "fifo-first_fit", "--outdir", str(out)])
    text = capsys.readouterr().out
    assert status == 0
    # share-a and share-b share T4 0 (first_fit, best-fit GPU), whole takes T4 1: nobody waits;
    # JCT = run times 100, 30, 60; cost = (0.5 x 100 + 0.5 x 30 + 60) GPU-s x 0.35 USD / 3600
    cost = (50 + 15 + 60) / 3600 * 0.35
    assert "policy fifo-first_fit, backfilling none" in text
    assert "tasks finished / rejected  3 / 1 (never ran in the trace: no run time to replay: 1)" \
        in text
    assert "mean JCT                   63.3 s" in text
    assert f"GPU cost                   {cost:.2f} USD (T4 {cost:.2f})" in text
    summary = json.loads((out / "out_gpu_summary.json").read_text())
    assert summary["cost_usd"] == pytest.approx(cost)
    assert summary["mean_jct_s"] == pytest.approx(190 / 3)
    rows = (out / "out_jobs.csv").read_text().splitlines()
    assert [r.split(",")[-7:-3] for r in rows[1:4]] == [  # the node list's own names
        ["gpu-node", "0", "500", "T4"], ["gpu-node", "0", "500", "T4"],
        ["gpu-node", "1", "1000", "T4"]]


def test_a_selection_keeps_the_gpu_demands(lists, tmp_path, capsys):
    nodes, pods = lists
    status = main(["replay", "--platform", str(nodes), "--workload", str(pods), "--nb-jobs", "2",
                   "--policy", "sjf", "--outdir", str(tmp_path / "r")])
    assert status == 0
    rows = (tmp_path / "r" / "out_jobs.csv").read_text().splitlines()
    assert [r.split(",")[-4] for r in rows[1:]] == ["T4", "T4"]  # GPU tasks, not CPU-only ones


def test_unknown_gpu_policy_and_reserving_backfilling_are_one_line_errors(lists, tmp_path, capsys):
    nodes, pods = lists
    args = ["replay", "--platform", str(nodes), "--workload", str(pods), "--outdir",
            str(tmp_path / "r")]
    assert main(args + ["--policy", "drf-fgdd"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hdrm replay: error: --policy: unknown GPU policy 'drf-fgdd'")
    assert err.count("\n") == 1
    assert main(args + ["--backfill", "easy"]) == 2
    assert "--backfill: 'easy' is not supported on GPU platforms" in capsys.readouterr().err


def test_a_bad_row_is_a_one_line_error_or_a_counted_skip(lists, tmp_path, capsys):
    nodes, pods = lists
    pods.write_text(PODS + "bad,1000,1024,two,1000,,LS,Running,40,50,40\n")
    args = ["replay", "--platform", str(nodes), "--workload", str(pods), "--outdir",
            str(tmp_path / "r")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err == (f"hdrm replay: error: {pods}:6: column 'num_gpu': expected an integer, got "
                   "'two' (value 'two'); fix the row, or rerun with --no-strict to skip bad rows "
                   "(counted)\n")
    assert main(args + ["--no-strict"]) == 0
    assert "skipped from the source    1 (num_gpu: expected an integer" in capsys.readouterr().out


def test_a_gpu_workload_without_a_gpu_platform_is_a_one_line_error(lists, tmp_path, capsys):
    _, pods = lists
    assert main(["replay", "--homogeneous-procs", "8", "--workload", str(pods), "--outdir",
                 str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err == (
        f"hdrm replay: error: {pods}: an openb or Gavel workload runs on a GPU platform; give "
        "--platform NODES.csv (an openb node list) or a platform JSON with accelerators\n")
    cpu = Path(__file__).resolve().parents[2] / "platforms" / "tiny4.json"
    assert main(["replay", "--platform", str(cpu), "--workload", str(pods), "--outdir",
                 str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err == (
        f"hdrm replay: error: {cpu}: the platform has no GPU; an openb or Gavel workload needs a "
        "GPU platform (hdrm platform from-openb NODES.csv -o P.json)\n")


def test_commit_decisions_reach_the_gpu_core(lists, tmp_path, capsys):
    # x holds both T4s 0..100; y (both, 50 s) arrives at 1, z (one, 5 s) at 2. SJF with event
    # decisions lets z overtake y at 100 (y starts at 105); with commit y keeps its place
    # (starts at 100, z at 150)
    nodes, pods = lists
    pods.write_text(PODS.splitlines()[0] + "\n" + "x,1000,1024,2,1000,,LS,Running,0,100,0\n"
                    "y,1000,1024,2,1000,,LS,Running,1,51,1\nz,1000,1024,1,1000,,LS,Running,2,7,2\n")

    def starts(*extra):
        out = tmp_path / "-".join(extra or ("event",))
        assert main(["replay", "--platform", str(nodes), "--workload", str(pods), "--policy",
                     "sjf-first_fit", "--outdir", str(out), *extra]) == 0
        rows = (out / "out_jobs.csv").read_text().splitlines()[1:]
        return [float(r.split(",")[8]) for r in rows]

    assert starts() == [0, 105, 100]
    assert starts("--decision", "commit") == [0, 100, 150]
    assert "policy sjf-first_fit, backfilling none, commit decisions" in capsys.readouterr().out


def test_a_gavel_trace_runs_for_its_steps_over_the_throughput_of_the_model_it_got(tmp_path,
                                                                                 capsys):
    # 1,000 steps at 2 steps/s on a K80 (500 s) or 8 on a V100 (125 s). price_aware prefers the
    # K80 (0.25 of the speed for 0.45 USD/h beats 1 for 2.48): the first job takes it, the second
    # the V100.
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nk,4000,16384,1,K80\n"
                     "v,4000,16384,1,V100M16\n")
    job = "ResNet-18 (batch size 64)"
    (tmp_path / "t.trace").write_text(f"{job}\tcmd\t\t-s\t1\t1000\t0\t1\n" * 2)
    (tmp_path / "tp.json").write_text(json.dumps({"k80": {f"('{job}', 1)": {"null": 2.0}},
                                                  "v100": {f"('{job}', 1)": {"null": 8.0}}}))
    out = tmp_path / "run"
    assert main(["replay", "--platform", str(nodes), "--workload", str(tmp_path / "t.trace"),
                 "--throughputs", str(tmp_path / "tp.json"), "--policy", "fifo-price_aware",
                 "--outdir", str(out)]) == 0
    rows = [r.split(",") for r in (out / "out_jobs.csv").read_text().splitlines()[1:]]
    assert [(r[10], r[-4], r[-1]) for r in rows] == [
        ("500.000000", "K80", f"{500 / 3600 * 0.45:.6f}"),
        ("125.000000", "V100M16", f"{125 / 3600 * 2.48:.6f}")]
    assert main(["replay", "--platform", str(nodes), "--workload", str(tmp_path / "t.trace"),
                 "--outdir", str(out)]) == 2
    assert "a Gavel trace needs its throughput file; add --throughputs" in capsys.readouterr().err
