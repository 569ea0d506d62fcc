"""WfCommons workflow instances (the wfformat JSON) read into the DAG model.

A workflow is read into a :class:`Workflow`: task ids, each task's run time (the seconds it took
on the machine it was recorded or generated for) and its edges with the data they carry. The data
of an edge ``a -> b`` is the total size of the files ``a`` writes and ``b`` reads (bytes, given
here in MB: 10^6 bytes); an edge given by ``parents``/``children`` with no such file carries 0 MB.

Both layouts of the format are read, without the ``wfcommons`` package:

* schema 1.5 and later: ``workflow.specification.tasks`` (``id``, ``parents``, ``children``,
  ``inputFiles``, ``outputFiles``), ``workflow.specification.files`` (``id``, ``sizeInBytes``) and
  ``workflow.execution.tasks`` (``id``, ``runtimeInSeconds``);
* schema 1.4 and earlier: ``workflow.tasks`` (or ``workflow.jobs``), each with ``name``/``id``,
  ``parents``, ``runtimeInSeconds`` (or ``runtime``) and ``files`` (``link`` input/output,
  ``name``/``id``, ``sizeInBytes`` or ``size`` in bytes).

:func:`to_dag` turns a workflow into a :class:`~hdrm.dag.model.Dag` on machines: a task's cost
on a processor is its run time over the processor's relative speed.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
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


def _read_new(doc: dict, workflow: dict, source: str) -> Workflow:
    spec = _get(workflow, "specification", source + ": workflow", dict)
    where = source + ": workflow.specification"
    tasks = _get(spec, "tasks", where, list)
    sizes = {f.get("id"): f.get("sizeInBytes", 0) for f in _get(spec, "files", where, list, [])
             if isinstance(f, dict)}
    ids = [_get(t, "id", f"{where}.tasks[{i}]", str) for i, t in enumerate(tasks)]
    runs = {}
    for i, run in enumerate(_get(_get(workflow, "execution", source + ": workflow", dict),
                                 "tasks", source + ": workflow.execution", list)):
        run_where = f"{source}: workflow.execution.tasks[{i}]"
        runs[_get(run, "id", run_where, str)] = _runtime(run.get("runtimeInSeconds"),
                                                         f"{run_where} ({run.get('id')!r})")
    missing = [t for t in ids if t not in runs]
    if missing:
        raise WorkloadError(f"{source}: task {missing[0]!r} has no run time in "
                            f"workflow.execution.tasks; add its runtimeInSeconds")
    outputs = {t: set(task.get("outputFiles", [])) for t, task in zip(ids, tasks)}
    inputs = {t: set(task.get("inputFiles", [])) for t, task in zip(ids, tasks)}
    links = _links(ids, [(t.get("parents", []), t.get("children", [])) for t in tasks], source)
    edges = _edges(ids, links, lambda a, b: sum(sizes.get(f, 0) or 0 for f in outputs[a] & inputs[b]))
    return Workflow(str(doc.get("name", source)), tuple(ids), tuple(runs[t] for t in ids), edges)


def _read_old(doc: dict, workflow: dict, source: str) -> Workflow:
    key = "tasks" if "tasks" in workflow else "jobs"
    tasks = _get(workflow, key, source + ": workflow", list)
    where = f"{source}: workflow.{key}"
    ids = [str(t.get("id", t.get("name"))) if isinstance(t, dict) else "" for t in tasks]
    names = {str(t.get("name")): i for i, t in enumerate(tasks) if isinstance(t, dict)}
    runtimes, files = [], []
    for i, task in enumerate(tasks):
        here = f"{where}[{i}] ({ids[i]!r})"
        if not isinstance(task, dict) or ids[i] == "None":
            raise WorkloadError(f"{where}[{i}]: a task needs an 'id' or a 'name'")
        runtimes.append(_runtime(task.get("runtimeInSeconds", task.get("runtime")), here))
        files.append({(f.get("link"), f.get("id", f.get("name"))): f.get("sizeInBytes", f.get("size", 0))
                      for f in task.get("files", []) if isinstance(f, dict)})
    by_id = {t: i for i, t in enumerate(ids)}
    parents = [[ids[names[p]] if p not in by_id and p in names else p for p in t.get("parents", [])]
               for t in tasks]
    links = _links(ids, [(p, []) for p in parents], source)

    def data(a: str, b: str) -> float:
        out = {name: size for (link, name), size in files[by_id[a]].items() if link == "output"}
        return sum(out[name] or 0 for (link, name) in files[by_id[b]] if link == "input" and name in out)

    edges = _edges(ids, links, data)
    return Workflow(str(doc.get("name", source)), tuple(ids), tuple(runtimes), edges)


def _links(ids: list[str], relations: list[tuple[list, list]], source: str) -> list[tuple[str, str]]:
    """Every (parent, child) pair named by a parents or children list, once, in file order."""
    known = set(ids)
    if len(known) != len(ids):
        twice = next(t for i, t in enumerate(ids) if t in ids[:i])
        raise WorkloadError(f"{source}: task id {twice!r} given twice; ids must differ")
    seen: dict[tuple[str, str], None] = {}
    for task, (parents, children) in zip(ids, relations):
        for other, pair in [(p, (p, task)) for p in parents] + [(c, (task, c)) for c in children]:
            if other not in known:
                raise WorkloadError(f"{source}: task {task!r} names {other!r} as a parent or "
                                    f"child, but no task has that id; fix the reference")
            seen.setdefault(pair, None)
    return list(seen)


def _edges(ids: list[str], links: list[tuple[str, str]], data) -> tuple[tuple[int, int, float], ...]:
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
