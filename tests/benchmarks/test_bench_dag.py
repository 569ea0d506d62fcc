"""bench_dag: a WfCommons instance timed on the default platform from any working folder; bad
options are one-line errors before any work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import bench_dag

#: Two tasks in schema 1.5: a (10 s) writes f (1 MB) for b (20 s).
CHAIN = {
    "name": "chain", "schemaVersion": "1.5",
    "workflow": {
        "specification": {
            "tasks": [{"id": "a", "name": "a", "parents": [], "children": ["b"],
                       "inputFiles": [], "outputFiles": ["f"]},
                      {"id": "b", "name": "b", "parents": ["a"], "children": [],
                       "inputFiles": ["f"], "outputFiles": []}],
            "files": [{"id": "f", "sizeInBytes": 1_000_000}],
        },
        "execution": {"tasks": [{"id": "a", "runtimeInSeconds": 10},
                                {"id": "b", "runtimeInSeconds": 20}]},
    },
}


@pytest.fixture
def chain(tmp_path) -> Path:
    path = tmp_path / "chain.json"
    path.write_text(json.dumps(CHAIN), encoding="utf-8")
    return path


def test_a_workflow_runs_on_the_default_platform_from_another_folder(chain, tmp_path,
                                                                      monkeypatch, capsys):
    # the default platform was the relative path platforms/hetero.json: a PlatformError
    # traceback anywhere but the repository's root
    monkeypatch.chdir(tmp_path)
    assert bench_dag.main(["--workflow", str(chain), "--repeat", "1",
                           "--policies", "heft,cpop"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "chain: 2 tasks, 1 edges, 384 processors"
    assert [line.split()[0] for line in out[1:]] == ["heft", "cpop"]
    assert out[1].endswith("target <= 2 s: met")


@pytest.mark.parametrize("argv, says", [
    # --repeat 0 was an UnboundLocalError
    (["--repeat", "0"], "argument --repeat: expected an integer >= 1, got '0'"),
    (["--policies", "heft,zz"], "--policies: unknown DAG scheduling policy 'zz'"),
    (["--policies", ","], "--policies: unknown DAG scheduling policy ''"),
    (["--workflow", "/nonexistent/wf.json"], "/nonexistent/wf.json: no such WfCommons workflow"),
    (["--workflow", "/nonexistent/wf.json", "--platform", "/nonexistent/p.json"],
     "/nonexistent/p.json: no such platform file"),
])
def test_bad_options_are_refused_in_one_line(capsys, argv, says):
    with pytest.raises(SystemExit) as stop:
        bench_dag.main(argv)
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(f"bench_dag.py: error: {says}")
