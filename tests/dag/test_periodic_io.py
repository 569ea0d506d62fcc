"""Periodic task sets as JSON (one-line errors naming file, key and value) and the CLI commands."""

import csv
import json
from pathlib import Path

import pytest

from hdrm.cli.main import main
from hdrm.dag.periodic_gen import PeriodicSpec, generate
from hdrm.dag.periodic_io import parse_taskset, read_taskset, write_taskset
from hdrm.errors import WorkloadError

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"name": "perception", "horizon_s": 20, "graphs": [
    {"name": "camera", "period_s": 10, "deadline_s": 8,
     "tasks": [{"name": "grab", "cpu_s": 1}, {"name": "detect", "cpu_s": 6, "gpu_s": 1.5}],
     "edges": [["grab", "detect", 0.5]]}]}


def bad(**change):
    data = json.loads(json.dumps(GOOD))
    graph = data["graphs"][0]
    for key, value in change.items():
        target, _, name = key.partition("__")
        if target == "task":
            graph["tasks"][1][name] = value
        else:
            graph[name] = value
    return data


def test_reads_a_task_set():
    ts = parse_taskset(GOOD)
    graph = ts.graphs[0]
    assert (ts.name, ts.horizon_s, graph.period_s, graph.deadline_s, graph.offset_s) == \
        ("perception", 20.0, 10.0, 8.0, 0.0)
    assert [(t.name, t.cpu_s, t.gpu_s) for t in graph.tasks] == \
        [("grab", 1.0, None), ("detect", 6.0, 1.5)]
    assert graph.edges == ((0, 1, 0.5),) and graph.ranks_s == (7.5, 6.0)


@pytest.mark.parametrize("change, message", [
    ({"task__cpu_s": -1}, r"f\.json: graphs\[0\]\.tasks\[1\]\.cpu_s: expected a finite number "
                          r"> 0, got -1$"),
    ({"task__gpu": 1}, r"graphs\[0\]\.tasks\[1\]: unknown key 'gpu'; the keys are cpu_s, "
                       r"gpu_s, name"),
    ({"graph__period_s": "10"}, r"graphs\[0\]\.period_s: expected a finite number > 0, got "
                                r"\"10\""),
    ({"graph__edges": [["grab", "track"]]}, r"graphs\[0\]\.edges\[0\]: names task \"track\", "
                                            r"which the graph does not have"),
    ({"graph__edges": [["grab", "detect"], ["detect", "grab"]]},
     r"graphs\[0\]: camera: the graph has a cycle through task 'grab'"),
])
def test_bad_values_are_one_line_errors(change, message):
    with pytest.raises(WorkloadError, match=message) as info:
        parse_taskset(bad(**change), "f.json")
    assert "\n" not in str(info.value) and str(info.value).count("f.json") == 1


@pytest.mark.parametrize("text, message", [
    ('{"name": "x", "graphs": [ }',
     r"^.*s\.json:1:27: invalid JSON: Expecting value; fix the syntax there$"),
    ('{"name": "x", "name": "y"}',
     r"^.*s\.json: key 'name' is given twice in one object; keep one$")])
def test_unreadable_task_set_file_is_one_line_naming_the_place(tmp_path, text, message):
    (tmp_path / "s.json").write_text(text)
    with pytest.raises(WorkloadError, match=message):
        read_taskset(tmp_path / "s.json")
    with pytest.raises(WorkloadError, match=r"no such task set; check the path"):
        read_taskset(tmp_path / "missing.json")


def test_round_trip(tmp_path):
    taskset = generate(PeriodicSpec(graphs=3), 5)
    write_taskset(taskset, tmp_path / "s.json")
    back = read_taskset(tmp_path / "s.json")
    assert [(g.name, g.period_s, g.tasks, g.edges) for g in back.graphs] == \
        [(g.name, g.period_s, g.tasks, g.edges) for g in taskset.graphs]


def test_cli_taskset_and_periodic(tmp_path, capsys):
    path = tmp_path / "set.json"
    path.write_text(json.dumps(GOOD), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["dag", "periodic", str(path), "--platform", str(ROOT / "platforms" / "tiny4.json"),
                 "-o", str(out)]) == 0
    text = capsys.readouterr().out
    # grab [0, 1], transfer 0.5, detect [1.5, 7.5]: response 7.5 <= 8 at 0 and 10
    assert "instances: 2, missed deadlines: 0 (miss ratio 0.0000)" in text
    assert "response time (s): mean 7.500, p99 7.500, max 7.500" in text
    with (out / "out_instances.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["instance"], float(r["finish_s"]), r["deadline_met"]) for r in rows] == \
        [("0", 7.5, "1"), ("1", 17.5, "1")]
    assert (out / "out_jobs.csv").exists()
    assert main(["dag", "taskset", "--graphs", "2", "--seed", "7", "-o",
                 str(tmp_path / "g.json")]) == 0
    assert len(read_taskset(tmp_path / "g.json").graphs) == 2


def test_periodic_outputs_are_published_together(tmp_path, capsys, monkeypatch):
    """Stopped while writing out_instances.csv, ``hdrm dag periodic`` keeps the folder's
    previous outputs, all of them: out_jobs.csv & co were renamed into place first, so the new
    run's jobs stood beside the previous run's instances. The rerun writes both."""
    import hdrm.cli.periodic_cmd as periodic_cmd

    path = tmp_path / "set.json"
    path.write_text(json.dumps(GOOD), encoding="utf-8")
    out = tmp_path / "out"
    argv = ["dag", "periodic", str(path), "--platform", str(ROOT / "platforms" / "tiny4.json"),
            "-o", str(out)]
    assert main(argv) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    path.write_text(json.dumps({**GOOD, "horizon_s": 30.0}), encoding="utf-8")  # one more

    def stop(*_args, **_kwargs):
        raise KeyboardInterrupt

    real = periodic_cmd.write_instances_csv
    monkeypatch.setattr(periodic_cmd, "write_instances_csv", stop)
    assert main(argv) == 130
    assert capsys.readouterr().err.endswith("hdrm dag: interrupted\n")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    monkeypatch.setattr(periodic_cmd, "write_instances_csv", real)
    assert main(argv) == 0
    with (out / "out_instances.csv").open(newline="") as f:
        assert len(list(csv.DictReader(f))) == 3
    with (out / "out_jobs.csv").open(newline="") as f:
        assert len(list(csv.DictReader(f))) == 3 * len(GOOD["graphs"][0]["tasks"])
