"""WfCommons instances with what a hand edit or a converter can leave out: no task, a file
without its size, a task naming a file the files list lacks."""

from __future__ import annotations

import json
import logging

import pytest

from hdrm.dag.wfformat import read_workflow
from hdrm.errors import WorkloadError

#: a -> b in schema 1.5: a writes f1 (2 MB), which b reads; c, alone, writes f2 (1 MB).
CHAIN = {
    "name": "chain", "schemaVersion": "1.5",
    "workflow": {
        "specification": {
            "tasks": [
                {"id": "a", "parents": [], "children": ["b"], "inputFiles": [],
                 "outputFiles": ["f1"]},
                {"id": "b", "parents": ["a"], "children": [], "inputFiles": ["f1"],
                 "outputFiles": []},
                {"id": "c", "parents": [], "children": [], "inputFiles": [],
                 "outputFiles": ["f2"]},
            ],
            "files": [{"id": "f1", "sizeInBytes": 2_000_000}, {"id": "f2", "sizeInBytes": 10**6}],
        },
        "execution": {"tasks": [{"id": t, "runtimeInSeconds": 10} for t in "abc"]},
    },
}


def _write(tmp_path, change):
    doc = json.loads(json.dumps(CHAIN))
    change(doc)
    path = tmp_path / "wf.json"
    path.write_text(json.dumps(doc))
    return path


def _spec(doc):
    return doc["workflow"]["specification"]


def test_a_workflow_without_tasks_is_refused(tmp_path):
    def empty(doc):
        _spec(doc)["tasks"].clear()
        doc["workflow"]["execution"]["tasks"].clear()

    with pytest.raises(WorkloadError, match=r"^wf\.json: workflow\.specification\.tasks: no "
                                            r"task; a workflow needs at least one$"):
        read_workflow(_write(tmp_path, empty))


def test_an_old_layout_workflow_without_tasks_is_refused(tmp_path):
    path = tmp_path / "wf.json"
    path.write_text(json.dumps({"name": "w", "workflow": {"jobs": []}}))
    with pytest.raises(WorkloadError, match=r"^wf\.json: workflow\.jobs: no task"):
        read_workflow(path)


def test_a_file_without_its_size_is_refused_naming_it(tmp_path):
    path = _write(tmp_path, lambda doc: _spec(doc)["files"][0].pop("sizeInBytes"))
    with pytest.raises(WorkloadError, match=r"^wf\.json: workflow\.specification\.files\[0\] "
                                            r"\('f1'\): no 'sizeInBytes'; give the file's size "
                                            r"in bytes$"):
        read_workflow(path)


def test_a_file_the_files_list_lacks_is_warned_about_once(tmp_path, caplog):
    def unlisted(doc):
        _spec(doc)["tasks"][1]["inputFiles"].append("nofile")
        _spec(doc)["tasks"][2]["outputFiles"].append("other")
        _spec(doc)["tasks"][0]["outputFiles"].append("nofile")  # not a transfer: still 0 MB

    with caplog.at_level(logging.WARNING, logger="hdrm.dag.wfformat"):
        workflow = read_workflow(_write(tmp_path, unlisted))
    assert [r.getMessage() for r in caplog.records] == [
        "wf.json: 3 file references of tasks name no entry of workflow.specification.files "
        "(first: task 'a', output 'nofile'); their data is taken as 0 MB"]
    assert workflow.edges == ((0, 1, 2.0),)
