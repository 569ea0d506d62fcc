"""WfCommons instances (wfformat JSON) read into the DAG model; a platform's cores as processors."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from hdrm.dag.listsched import heft
from hdrm.dag.machines import load_machines
from hdrm.dag.model import Network
from hdrm.dag.wfformat import read_workflow, to_dag
from hdrm.errors import WorkloadError

ROOT = Path(__file__).resolve().parents[2]

#: A diamond a -> (b, c) -> d in schema 1.5: a writes f1 (2 MB, read by b) and f2 (0.5 MB, read
#: by c and by d); b and c write f3 and f4 (1 MB each) for d.
DIAMOND = {
    "name": "diamond", "schemaVersion": "1.5",
    "workflow": {
        "specification": {
            "tasks": [
                {"id": "a", "name": "a", "parents": [], "children": ["b", "c"],
                 "inputFiles": [], "outputFiles": ["f1", "f2"]},
                {"id": "b", "name": "b", "parents": ["a"], "children": ["d"],
                 "inputFiles": ["f1"], "outputFiles": ["f3"]},
                {"id": "c", "name": "c", "parents": ["a"], "children": ["d"],
                 "inputFiles": ["f2"], "outputFiles": ["f4"]},
                {"id": "d", "name": "d", "parents": ["b", "c"], "children": [],
                 "inputFiles": ["f3", "f4", "f2"], "outputFiles": []},
            ],
            "files": [{"id": "f1", "sizeInBytes": 2_000_000}, {"id": "f2", "sizeInBytes": 500_000},
                      {"id": "f3", "sizeInBytes": 1_000_000},
                      {"id": "f4", "sizeInBytes": 1_000_000}],
        },
        "execution": {"tasks": [{"id": t, "runtimeInSeconds": r}
                                for t, r in (("a", 10), ("b", 20), ("c", 30), ("d", 5))]},
    },
}


def _write(tmp_path: Path, doc: dict, name: str = "wf.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_schema_1_5_tasks_runtimes_and_data(tmp_path):
    wf = read_workflow(_write(tmp_path, DIAMOND))
    assert wf.name == "diamond"
    assert wf.tasks == ("a", "b", "c", "d")
    assert wf.runtime_s == (10, 20, 30, 5)
    # a -> d is not an edge (d reads a's f2, but a is not among d's parents)
    assert sorted(wf.edges) == [(0, 1, 2.0), (0, 2, 0.5), (1, 3, 1.0), (2, 3, 1.0)]


def test_schema_1_4_layout(tmp_path):
    old = {"name": "old", "workflow": {"tasks": [
        {"name": "x", "runtime": 4, "parents": [],
         "files": [{"link": "output", "name": "o", "size": 3_000_000}]},
        {"name": "y", "runtimeInSeconds": 6, "parents": ["x"],
         "files": [{"link": "input", "name": "o", "size": 3_000_000}]},
    ]}}
    wf = read_workflow(_write(tmp_path, old))
    assert (wf.tasks, wf.runtime_s, wf.edges) == (("x", "y"), (4, 6), ((0, 1, 3.0),))


def test_schema_1_4_references_by_id_and_children(tmp_path):
    old = {"name": "old", "workflow": {"tasks": [
        {"name": "first", "id": "ID1", "runtime": 1, "children": ["second"],
         "files": [{"link": "output", "name": "o", "path": "/d/", "sizeInBytes": 1_500_000}]},
        {"name": "second", "id": "ID2", "runtime": 2,
         "files": [{"link": "input", "name": "o", "path": "/d/", "sizeInBytes": 1_500_000}]},
        {"name": "third", "id": "ID3", "runtime": 3, "parents": ["ID1", "second"]},
    ]}}
    wf = read_workflow(_write(tmp_path, old))
    assert wf.edges == ((0, 1, 1.5), (0, 2, 0.0), (1, 2, 0.0))
    old["workflow"]["tasks"][1]["files"][0]["sizeInBytes"] = "big"
    message = (r"^wf.json: workflow.tasks\[1\] \('second'\) file '/d/o': size 'big' bytes; "
               r"give a finite number >= 0$")
    with pytest.raises(WorkloadError, match=message):
        read_workflow(_write(tmp_path, old))


def test_to_dag_costs_are_runtime_over_speed(tmp_path):
    wf = read_workflow(_write(tmp_path, DIAMOND))
    dag = to_dag(wf, Network.uniform(2, bandwidth_mb_s=0.5), [1.0, 2.0])
    assert dag.costs_s == ((10, 5), (20, 10), (30, 15), (5, 2.5))
    schedule = heft(dag)
    schedule.validate()
    # by hand: upward ranks a 36.75, c 28.25, b 20.75, d 3.75 (mean transfer 2 s per MB).
    # a on p1 (0-5); c on p1 (5-20; p0 6-36); b on p0 from 5 + 2 MB / 0.5 MB/s = 9 (9-29) beats
    # p1 (20-30); d on p1 from max(29 + 1 MB / 0.5, 20) = 31 to 33.5 (p0: 29 to 34)
    assert schedule.makespan_s == 33.5


@pytest.mark.parametrize("change, message", [
    (lambda d: d["workflow"]["execution"]["tasks"].pop(), "task 'd' has no run time"),
    (lambda d: d["workflow"]["execution"]["tasks"][1].update(runtimeInSeconds=-2),
     r"workflow.execution.tasks\[1\] \('b'\): run time -2 s; give a finite number >= 0"),
    (lambda d: d["workflow"]["specification"]["tasks"][3]["parents"].append("zz"),
     "task 'd' names 'zz' as a parent or child, but no task has that id"),
    (lambda d: d["workflow"]["specification"]["tasks"][0].pop("id"),
     r"workflow.specification.tasks\[0\]: no 'id'"),
])
def test_errors_name_the_file_and_task(tmp_path, change, message):
    doc = json.loads(json.dumps(DIAMOND))
    change(doc)
    with pytest.raises(WorkloadError, match="^wf.json: .*" + message):
        read_workflow(_write(tmp_path, doc))


def test_a_cyclic_workflow_is_refused_naming_a_task(tmp_path):
    doc = json.loads(json.dumps(DIAMOND))
    doc["workflow"]["specification"]["tasks"][0]["parents"] = ["d"]
    wf = read_workflow(_write(tmp_path, doc))
    with pytest.raises(WorkloadError, match="diamond: the graph has a cycle through task 'a'"):
        to_dag(wf, Network.uniform(1), [1.0])


def test_platform_cores_become_processors():
    machines = load_machines(ROOT / "platforms" / "tiny_hetero.json")
    net = machines.network
    assert net.processors == ("c0-n0/c0", "c0-n0/c1", "c0-n0/c2", "c0-n0/c3",
                              "c0-n1/c0", "c0-n1/c1", "c0-n1/c2", "c0-n1/c3")
    # 48 and 16 GFLOP/s cores against the 32 GFLOP/s reference speed
    assert machines.speeds == (1.5,) * 4 + (0.5,) * 4
    assert net.bandwidth_mb_s[0][1] == 20_000  # one fast_cpu: 20 GB/s of memory
    assert net.bandwidth_mb_s[4][6] == 8_000  # two slow_cpus of one node: 8 GB/s each
    assert net.bandwidth_mb_s[0][4] == 25_000 / 8  # ethernet_25g between nodes
    assert net.latency_s[0][4] == pytest.approx(5e-6) and net.latency_s[0][1] == 0


@pytest.mark.parametrize("recipe_name, size", [("MontageRecipe", 60), ("EpigenomicsRecipe", 50)])
def test_wfcommons_recipes_read_and_schedule(tmp_path, recipe_name, size):
    wfcommons = pytest.importorskip("wfcommons", reason="wfcommons is not installed")
    from wfcommons.wfchef import recipes

    random.seed(size)  # the recipes draw from the global generator; the test pins it
    recipe = getattr(recipes, recipe_name).from_num_tasks(size)
    generated = wfcommons.WorkflowGenerator(recipe).build_workflow()
    path = tmp_path / "generated.json"
    generated.write_json(path)
    wf = read_workflow(path)
    assert len(wf.tasks) == generated.number_of_nodes()
    index = {t: i for i, t in enumerate(wf.tasks)}
    assert {(wf.tasks[s], wf.tasks[d]) for s, d, _ in wf.edges} == set(generated.edges)
    for name, task in generated.tasks.items():
        assert wf.runtime_s[index[name]] == pytest.approx(task.runtime)
    assert any(x > 0 for _, _, x in wf.edges)  # files link the tasks
    machines = load_machines(ROOT / "platforms" / "tiny_hetero.json")
    dag = to_dag(wf, machines.network, machines.speeds)
    for policy in ("heft", "cpop", "peft"):
        from hdrm.dag.listsched import schedule_dag

        schedule = schedule_dag(dag, policy)
        assert schedule.violations() == []
        assert schedule.slr >= 1


def test_a_platform_too_large_is_refused():
    from hdrm.errors import ConfigError

    with pytest.raises(ConfigError, match=r"^platform 'large': 2512 cores; DAG scheduling takes at "
                                          r"most 1024 \(one processor per core\): use a smaller "
                                          r"platform$"):
        load_machines(ROOT / "platforms" / "large.json")
