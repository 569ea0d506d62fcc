"""``hdrm dag replay``: a WfCommons workflow's tasks as dependent jobs of the engine, served by a
queue policy; transfers over the platform's slowest link. Checked by hand."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from hdrm.cli.main import main
from hdrm.dag.wfformat import read_workflow
from hdrm.dag.workflow_jobs import slowest_link, workflow_workload
from hdrm.platform.loader import load_platform
from hdrm.viz.dag import load_chart

from dag.periodic_gpu_case import write_case

ROOT = Path(__file__).resolve().parents[2]
TINY4 = str(ROOT / "platforms" / "tiny4.json")
TINY_HETERO = str(ROOT / "platforms" / "tiny_hetero.json")

#: a -> (b, c) -> d; a sends b a file of 1,000 MB, the other edges carry no data.
DIAMOND = {"name": "diamond", "schemaVersion": "1.5", "workflow": {
    "specification": {"tasks": [
        {"id": "a", "parents": [], "children": ["b", "c"], "inputFiles": [],
         "outputFiles": ["ab"]},
        {"id": "b", "parents": ["a"], "children": ["d"], "inputFiles": ["ab"], "outputFiles": []},
        {"id": "c", "parents": ["a"], "children": ["d"], "inputFiles": [], "outputFiles": []},
        {"id": "d", "parents": ["b", "c"], "children": [], "inputFiles": [], "outputFiles": []}],
        "files": [{"id": "ab", "sizeInBytes": 1_000_000_000}]},
    "execution": {"tasks": [{"id": t, "runtimeInSeconds": r}
                            for t, r in (("a", 1), ("b", 4), ("c", 2), ("d", 1))]}}}


def _write(tmp_path: Path, doc: dict) -> Path:
    path = tmp_path / "wf.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _rows(outdir: Path) -> dict[str, tuple[float, float, float]]:
    with (outdir / "out_jobs.csv").open(newline="") as f:
        return {r["job_id"]: (float(r["submission_time"]), float(r["starting_time"]),
                              float(r["finish_time"])) for r in csv.DictReader(f)}


def test_diamond_on_one_node_by_hand(tmp_path, capsys):
    # tiny4: one node, 10 GB/s of memory: the 1,000 MB take 0.1 s. a 0-1; c 1-3; b released at
    # 1.1, 1.1-5.1; d released at max(5.1, 3) = 5.1, 5.1-6.1. Critical path a b d = 6 s:
    # SLR 6.1 / 6; speedup (1 + 4 + 2 + 1) / 6.1.
    out = tmp_path / "out"
    assert main(["dag", "replay", str(_write(tmp_path, DIAMOND)), "--platform", TINY4,
                 "-o", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("diamond: 4 tasks, 4 edges as jobs on 4 cores, policy first-high_gflops "
                        "(transfers over 10000 MB/s)")
    assert lines[1] == "makespan 6.100 s, SLR 1.017, speedup 1.311"
    assert _rows(out) == pytest.approx({"a": (0, 0, 1), "b": (1.1, 1.1, 5.1), "c": (1, 1, 3),
                                        "d": (5.1, 5.1, 6.1)})


def test_queue_policy_orders_the_ready_tasks_on_one_core(tmp_path):
    # One core and no data: b (4 s) and c (2 s) are both released when a ends at 1.
    # SJF runs c 1-3 then b 3-7, LJF b 1-5 then c 5-7; d runs 7-8 either way.
    platform = {"name": "one", "processor_types": {"cpu": {
        "vendor": "hdrm", "model": "test", "year": 2024, "cores": 1, "clock_ghz": 2.0,
        "flops_per_cycle": 4, "mem_bw_gbps": 10, "tdp_w": 40}},
        "node_types": {"node": {"processors": [{"type": "cpu", "count": 1}], "memory_gb": 4}},
        "clusters": [{"name": "c0", "network": "ethernet_10g",
                      "nodes": [{"type": "node", "count": 1}]}]}
    path = tmp_path / "one.json"
    path.write_text(json.dumps(platform))
    doc = json.loads(json.dumps(DIAMOND))
    doc["workflow"]["specification"]["files"] = []
    wf = _write(tmp_path, doc)
    for policy, expected in (("sjf", {"c": (1, 3), "b": (3, 7)}),
                             ("ljf", {"b": (1, 5), "c": (5, 7)})):
        out = tmp_path / policy
        assert main(["dag", "replay", str(wf), "--platform", str(path), "--policy", policy,
                     "-o", str(out)]) == 0
        rows = _rows(out)
        assert {t: rows[t][1:] for t in expected} == expected
        assert rows["d"][1:] == (7.0, 8.0)


def test_slowest_link_between_nodes_and_dependencies(tmp_path):
    # tiny_hetero: two nodes on ethernet_25g (3,125 MB/s, 5 us): the 1,000 MB take 0.32 s + 5 us.
    platform = load_platform(TINY_HETERO)
    link = slowest_link(platform)
    assert (link.bandwidth_mb_s, link.latency_s) == pytest.approx((3125.0, 5e-6))
    load = workflow_workload(read_workflow(_write(tmp_path, DIAMOND)), platform)
    deps = sorted(zip(load.dependencies.job.tolist(), load.dependencies.pred.tolist(),
                      load.dependencies.think_s.tolist()))
    assert deps == pytest.approx([(1, 0, 0.32 + 5e-6), (2, 0, 0.0), (3, 1, 0.0), (3, 2, 0.0)])
    # work at the reference speed (32 GFLOP/s): a fast core (48 GFLOP/s) runs a's 1 s in 2/3 s
    assert [j.ops_gflop for j in load.jobs] == [32.0, 128.0, 64.0, 32.0]
    out = tmp_path / "out"
    assert main(["dag", "replay", str(_write(tmp_path, DIAMOND)), "--platform", TINY_HETERO,
                 "-o", str(out)]) == 0
    assert _rows(out)["a"] == pytest.approx((0.0, 0.0, 2 / 3))
    assert [(j.id, j.res, j.run_time_s, j.submit_s) for j in load.jobs] == [
        ("a", 1, 1.0, 0.0), ("b", 1, 4.0, 0.0), ("c", 1, 2.0, 0.0), ("d", 1, 1.0, 0.0)]


def test_cycle_and_gpu_platform_refused_in_one_line(tmp_path, capsys):
    doc = json.loads(json.dumps(DIAMOND))
    doc["workflow"]["specification"]["tasks"][0]["parents"] = ["d"]
    assert main(["dag", "replay", str(_write(tmp_path, doc)), "--platform", TINY4,
                 "-o", str(tmp_path / "o1")]) == 2
    err = capsys.readouterr().err.strip()
    assert "the graph has a cycle through task 'a'" in err and "\n" not in err
    _, gpu = write_case(tmp_path, gpus=1)
    assert main(["dag", "replay", str(_write(tmp_path, DIAMOND)), "--platform", str(gpu),
                 "-o", str(tmp_path / "o2")]) == 2
    err = capsys.readouterr().err.strip()
    assert "has accelerators; hdrm dag replay runs workflows on CPU cores" in err
    assert "\n" not in err


def test_dag_gantt_of_a_workflow_replay(tmp_path):
    # The one-node diamond above: a on core 0 (0-1), c after it (1-3), b on core 1 (1.1-5.1),
    # d after b; bars coloured by level, an arrow per edge from the parent's end.
    out = tmp_path / "out"
    wf = _write(tmp_path, DIAMOND)
    assert main(["dag", "replay", str(wf), "--platform", TINY4, "-o", str(out)]) == 0
    chart = load_chart(out, wf)
    bars = {b.task: b for b in chart.bars}
    assert {t: (b.start_s, b.finish_s, b.group) for t, b in bars.items()} == pytest.approx({
        "a": (0, 1, "level 0"), "b": (1.1, 5.1, "level 1"), "c": (1, 3, "level 1"),
        "d": (5.1, 6.1, "level 2")})
    row = {t: b.row for t, b in bars.items()}
    assert row["a"] == row["c"] != row["b"] and chart.rows[row["a"]] == "core 0"
    assert sorted((round(a.x0_s, 9), round(a.x1_s, 9)) for a in chart.arrows) == [
        (1, 1), (1, 1.1), (3, 5.1), (5.1, 5.1)]
    assert main(["plot", "dag", str(out), "--graph", str(wf)]) == 0
