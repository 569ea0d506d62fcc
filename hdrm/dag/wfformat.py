"""WfCommons workflow instances (the wfformat JSON) read into the DAG model.

A workflow is read into a :class:`Workflow`: task ids, each task's run time (the seconds it took
on the machine it was recorded or generated for) and its edges with the data they carry. The data
of an edge ``a -> b`` is the total size of the files ``a`` writes and ``b`` reads (bytes, given
here in MB: 10^6 bytes); an edge given by ``parents``/``children`` with no such file carries 0 MB.

Both layouts of the format are read, without the ``wfcommons`` package:

* schema 1.5 and later: ``workflow.specification.tasks`` (``id``, ``parents``, ``children``,
  ``inputFiles``, ``outputFiles``), ``workflow.specification.files`` (``id``, ``sizeInBytes``) and
  ``workflow.execution.tasks`` (``id``, ``runtimeInSeconds``);
* schema 1.4 and earlier: ``workflow.tasks`` (``workflow.jobs`` before 1.3), each with a
  ``name`` (how tasks refer to each other), ``parents`` and/or ``children``,
  ``runtimeInSeconds`` (``runtime`` before 1.4) and ``files`` (``link`` input or output,
  ``name``, ``sizeInBytes``, or ``size`` before 1.4, in bytes).

:func:`to_dag` turns a workflow into a :class:`~hdrm.dag.model.Dag` on machines: a task's cost
on a processor is its run time over the processor's relative speed.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hdrm.dag.model import Dag, Network
from hdrm.errors import WorkloadError
from hdrm.jsonfile import read_json

logger = logging.getLogger(__name__)

BYTES_PER_MB = 1e6


@dataclass(frozen=True)
class Workflow:
    """A workflow's tasks, run times and edges.

    Attributes:
        name: the workflow's name.
        tasks: task ids, in file order.
        runtime_s: per task, its recorded run time in seconds.
        edges: (parent index, child index, data in MB).
    """

    name: str
    tasks: tuple[str, ...]
    runtime_s: tuple[float, ...]
    edges: tuple[tuple[int, int, float], ...]


def read_workflow(path: str | Path) -> Workflow:
    """Read a wfformat JSON file (any schema version; see the module's description).

    Raises:
        WorkloadError: the file is not JSON or lacks a key or value the DAG needs; the message
            names the file, the key and the task.
    """
    doc = read_json(path, "WfCommons workflow", WorkloadError)
    source = Path(path).name
    workflow = _get(doc, "workflow", source, dict)
    if "specification" in workflow:
        return _read_new(doc, workflow, source)
    return _read_old(doc, workflow, source)


def _get(obj: Any, key: str, where: str, kind: type, default: Any = None) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        if default is not None:
            return default
        raise WorkloadError(f"{where}: no {key!r}; a wfformat workflow needs it")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise WorkloadError(f"{where}.{key}: expected {kind.__name__}, got {value!r}")
    return value


def _runtime(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0 <= value < math.inf:
        raise WorkloadError(f"{where}: run time {value!r} s; give a finite number >= 0")
    return float(value)


def _size(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0 <= value < math.inf:
        raise WorkloadError(f"{where}: size {value!r} bytes; give a finite number >= 0")
    return float(value)


def _read_new(doc: dict, workflow: dict, source: str) -> Workflow:
    spec = _get(workflow, "specification", source + ": workflow", dict)
    where = source + ": workflow.specification"
    tasks = _get(spec, "tasks", where, list)
    _check_tasks(tasks, where + ".tasks")
    sizes = {}
    for i, entry in enumerate(_get(spec, "files", where, list, [])):
        file_id = _get(entry, "id", f"{where}.files[{i}]", str)
        if "sizeInBytes" not in entry:  # else its transfers would silently cost nothing
            raise WorkloadError(f"{where}.files[{i}] ({file_id!r}): no 'sizeInBytes'; give the "
                                "file's size in bytes")
        sizes[file_id] = _size(entry["sizeInBytes"], f"{where}.files[{i}] ({file_id!r})")
    ids = [_get(t, "id", f"{where}.tasks[{i}]", str) for i, t in enumerate(tasks)]
    execution = _get(workflow, "execution", source + ": workflow", dict)
    runs = {}
    for i, run in enumerate(_get(execution, "tasks", source + ": workflow.execution", list)):
        run_where = f"{source}: workflow.execution.tasks[{i}]"
        task_id = _get(run, "id", run_where, str)
        runs[task_id] = _runtime(run.get("runtimeInSeconds"), f"{run_where} ({task_id!r})")
    missing = [t for t in ids if t not in runs]
    if missing:
        raise WorkloadError(f"{source}: task {missing[0]!r} has no run time in "
                            f"workflow.execution.tasks; add its runtimeInSeconds")
    outputs = {t: set(task.get("outputFiles", [])) for t, task in zip(ids, tasks)}
    inputs = {t: set(task.get("inputFiles", [])) for t, task in zip(ids, tasks)}
    _warn_unlisted_files(source, ids, inputs, outputs, sizes)

    def data(a: str, b: str) -> float:
        return math.fsum(sizes.get(f, 0.0) for f in outputs[a] & inputs[b])

    relations = [(t.get("parents", []), t.get("children", [])) for t in tasks]
    edges = _edges(ids, _links(ids, relations, source), data)
    return Workflow(str(doc.get("name", source)), tuple(ids), tuple(runs[t] for t in ids), edges)


def _warn_unlisted_files(source: str, ids: list[str], inputs: dict, outputs: dict,
                         sizes: dict) -> None:
    """Warn once about the files tasks read or write that the files list lacks (0 MB each)."""
    unlisted = [(t, link, f) for t in ids for link, files in (("input", inputs), ("output",
                outputs)) for f in sorted(files[t]) if f not in sizes]
    if unlisted:
        task, link, name = unlisted[0]
        logger.warning("%s: %d file references of tasks name no entry of "
                       "workflow.specification.files (first: task %r, %s %r); their data is "
                       "taken as 0 MB", source, len(unlisted), task, link, name)


def _check_tasks(tasks: list, where: str) -> None:
    if not tasks:
        raise WorkloadError(f"{where}: no task; a workflow needs at least one")


def _read_old(doc: dict, workflow: dict, source: str) -> Workflow:
    key = "tasks" if "tasks" in workflow else "jobs"
    tasks = _get(workflow, key, source + ": workflow", list)
    where = f"{source}: workflow.{key}"
    _check_tasks(tasks, where)
    ids, runtimes, files = [], [], []
    for i, task in enumerate(tasks):
        if not isinstance(task, dict) or not isinstance(task.get("name", task.get("id")), str):
            raise WorkloadError(f"{where}[{i}]: a task needs a 'name' (or an 'id')")
        ids.append(task.get("name", task.get("id")))
        here = f"{where}[{i}] ({ids[-1]!r})"
        runtimes.append(_runtime(task.get("runtimeInSeconds", task.get("runtime")), here))
        files.append(_old_files(task, here))
    # up to schema 1.4 tasks name each other by name; an old 'id' is accepted too
    alias = {t["id"]: name for t, name in zip(tasks, ids) if isinstance(t.get("id"), str)}
    alias.update({name: name for name in ids})
    relations = [([alias.get(p, p) for p in t.get("parents", [])],
                  [alias.get(c, c) for c in t.get("children", [])]) for t in tasks]
    position = {name: i for i, name in enumerate(ids)}

    def data(a: str, b: str) -> float:
        written, read = files[position[a]]["output"], files[position[b]]["input"]
        return math.fsum(size for name, size in read.items() if name in written)

    edges = _edges(ids, _links(ids, relations, source), data)
    return Workflow(str(doc.get("name", source)), tuple(ids), tuple(runtimes), edges)


def _old_files(task: dict, where: str) -> dict[str, dict[str, float]]:
    """A schema 1.4 task's files by link: {"input": {name: bytes}, "output": {...}}."""
    found: dict[str, dict[str, float]] = {"input": {}, "output": {}}
    for entry in task.get("files", []):
        if not isinstance(entry, dict):
            continue
        name = str(entry.get("path", "")) + str(entry.get("name", entry.get("id")))
        link = "input" if str(entry.get("link", "")).lower() == "input" else "output"
        found[link][name] = _size(entry.get("sizeInBytes", entry.get("size", 0)),
                                  f"{where} file {name!r}")
    return found


def _links(ids: list[str], relations: list[tuple[list, list]],
           source: str) -> list[tuple[str, str]]:
    """Every (parent, child) pair named by a parents or children list, once, in file order."""
    known: set[str] = set()
    for task in ids:
        if task in known:
            raise WorkloadError(f"{source}: task {task!r} given twice; task ids must differ")
        known.add(task)
    pairs: dict[tuple[str, str], None] = {}
    for task, (parents, children) in zip(ids, relations):
        for other, pair in [(p, (p, task)) for p in parents] + [(c, (task, c)) for c in children]:
            if other not in known:
                raise WorkloadError(f"{source}: task {task!r} names {other!r} as a parent or "
                                    f"child, but no task has that id; fix the reference")
            pairs.setdefault(pair, None)
    return list(pairs)


def _edges(ids: list[str], links: list[tuple[str, str]],
           data: Callable[[str, str], float]) -> tuple[tuple[int, int, float], ...]:
    """The links by task index, with their data in MB (``data`` gives bytes)."""
    index = {t: i for i, t in enumerate(ids)}
    return tuple((index[a], index[b], data(a, b) / BYTES_PER_MB) for a, b in links)


def to_dag(workflow: Workflow, network: Network, speeds: Sequence[float]) -> Dag:
    """The workflow as a DAG: cost of task ``t`` on processor ``p`` = run time / ``speeds[p]``.

    Args:
        workflow: the workflow read by :func:`read_workflow`.
        network: the processors and links.
        speeds: per processor, its speed relative to the machine the run times were taken on.
    """
    if len(speeds) != network.size:
        raise WorkloadError(f"{workflow.name}: {len(speeds)} speeds for {network.size} processors")
    costs = tuple(tuple(r / s for s in speeds) for r in workflow.runtime_s)
    return Dag(workflow.tasks, costs, workflow.edges, network, workflow.name)
