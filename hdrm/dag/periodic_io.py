"""Periodic task sets as JSON: reading (one-line errors naming the file, key and value) and writing.

The format (every time in seconds)::

    {"name": "perception", "horizon_s": 100,
     "graphs": [{"name": "camera", "period_s": 10, "deadline_s": 8, "offset_s": 0,
                 "tasks": [{"name": "grab", "cpu_s": 1},
                           {"name": "detect", "cpu_s": 6, "gpu_s": 1.5}],
                 "edges": [["grab", "detect", 0.5]]}]}

``name`` and ``offset_s`` (default 0) are optional; ``gpu_s`` absent or null means CPU only; an
edge is ``[predecessor, successor]`` or ``[predecessor, successor, transfer_s]``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from hdrm.dag.periodic import PeriodicTask, TaskGraph, TaskSet
from hdrm.durable import write_text_atomically
from hdrm.errors import WorkloadError
from hdrm.jsonfile import read_json

_GRAPH_KEYS = {"name", "period_s", "deadline_s", "offset_s", "tasks", "edges"}
_TASK_KEYS = {"name", "cpu_s", "gpu_s"}


class _Reader:
    """Checks values at a JSON path and raises one-line errors naming the file."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, problem: str) -> WorkloadError:
        return WorkloadError(f"{self.source}: {where}: {problem}")

    def number(self, obj: dict, key: str, where: str, default: float | None = None,
               low: float = 0.0, strict: bool = True) -> float:
        if key not in obj:
            if default is None:
                raise self.fail(where, f"missing key {key!r}; add it (a number in seconds)")
            return default
        value = obj[key]
        rule = "> " if strict else ">= "
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and \
            math.isfinite(value) and (value > low if strict else value >= low)
        if not ok:
            raise self.fail(f"{where}.{key}", f"expected a finite number {rule}{low:g}, got "
                                              f"{json.dumps(value)}")
        return float(value)

    def keys(self, obj: Any, allowed: set[str], where: str) -> dict:
        if not isinstance(obj, dict):
            raise self.fail(where, f"expected an object, got {json.dumps(obj)[:60]}")
        unknown = sorted(set(obj) - allowed)
        if unknown:
            raise self.fail(where, f"unknown key {unknown[0]!r}; the keys are "
                                   f"{', '.join(sorted(allowed))}")
        return obj

    def name(self, obj: dict, where: str, default: str | None = None) -> str:
        value = obj.get("name", default)
        if not isinstance(value, str) or not value:
            raise self.fail(f"{where}.name", f"expected a non-empty string, got "
                                             f"{json.dumps(value)}")
        return value


def read_taskset(path: str | Path) -> TaskSet:
    """Read a task set JSON file (see the module's description).

    Raises:
        WorkloadError: unreadable JSON, or a bad key or value (one line naming file, key, value).
    """
    data = read_json(path, "task set", WorkloadError)
    return parse_taskset(data, str(path))


def parse_taskset(data: Any, source: str = "task set") -> TaskSet:
    """A :class:`TaskSet` from parsed JSON (``source`` names it in errors)."""
    r = _Reader(source)
    top = r.keys(data, {"name", "horizon_s", "graphs"}, "top level")
    graphs = top.get("graphs")
    if not isinstance(graphs, list) or not graphs:
        raise r.fail("graphs", f"expected a non-empty list of task graphs, got "
                               f"{json.dumps(graphs)[:60]}")
    parsed = tuple(_graph(r, g, f"graphs[{i}]") for i, g in enumerate(graphs))
    horizon, name = r.number(top, "horizon_s", "top level"), r.name(top, "top level",
                                                                  Path(source).stem)
    try:
        return TaskSet(parsed, horizon, name)
    except WorkloadError as exc:
        raise r.fail("top level", str(exc)) from None


def _graph(r: _Reader, obj: Any, where: str) -> TaskGraph:
    obj = r.keys(obj, _GRAPH_KEYS, where)
    name = r.name(obj, where)
    tasks_obj = obj.get("tasks")
    if not isinstance(tasks_obj, list) or not tasks_obj:
        raise r.fail(f"{where}.tasks", f"expected a non-empty list of tasks, got "
                                       f"{json.dumps(tasks_obj)[:60]}")
    tasks = []
    for i, t in enumerate(tasks_obj):
        at = f"{where}.tasks[{i}]"
        t = r.keys(t, _TASK_KEYS, at)
        gpu = None if t.get("gpu_s") is None else r.number(t, "gpu_s", at)
        tasks.append(PeriodicTask(r.name(t, at), r.number(t, "cpu_s", at), gpu))
    index = {t.name: i for i, t in enumerate(tasks)}
    if len(index) != len(tasks):
        twice = next(t.name for i, t in enumerate(tasks) if index[t.name] != i)
        raise r.fail(f"{where}.tasks", f"task name {twice!r} given twice; names must differ")
    edges = [_edge(r, e, f"{where}.edges[{i}]", index) for i, e in enumerate(obj.get("edges", []))]
    period, deadline = r.number(obj, "period_s", where), r.number(obj, "deadline_s", where)
    offset = r.number(obj, "offset_s", where, 0.0, strict=False)
    try:
        return TaskGraph(name, period, deadline, tuple(tasks), tuple(edges), offset)
    except WorkloadError as exc:
        raise r.fail(where, str(exc)) from None


def _edge(r: _Reader, edge: Any, where: str, index: dict[str, int]) -> tuple[int, int, float]:
    ok = isinstance(edge, list) and len(edge) in (2, 3)
    if not ok:
        raise r.fail(where, f"expected [predecessor, successor] or [predecessor, successor, "
                            f"transfer_s], got {json.dumps(edge)[:60]}")
    for end in edge[:2]:
        if end not in index:
            raise r.fail(where, f"names task {json.dumps(end)}, which the graph does not have; "
                                f"the tasks are {', '.join(index)}")
    transfer = r.number({"transfer_s": edge[2]}, "transfer_s", where, strict=False) \
        if len(edge) == 3 else 0.0
    return index[edge[0]], index[edge[1]], transfer


def taskset_to_json(taskset: TaskSet) -> dict:
    """The JSON form of a task set (what :func:`parse_taskset` reads back)."""
    def graph(g: TaskGraph) -> dict:
        tasks = [{"name": t.name, "cpu_s": t.cpu_s, "gpu_s": t.gpu_s} for t in g.tasks]
        edges = [[g.tasks[s].name, g.tasks[d].name, x] for s, d, x in g.edges]
        return {"name": g.name, "period_s": g.period_s, "deadline_s": g.deadline_s,
                "offset_s": g.offset_s, "tasks": tasks, "edges": edges}

    return {"name": taskset.name, "horizon_s": taskset.horizon_s,
            "graphs": [graph(g) for g in taskset.graphs]}


def write_taskset(taskset: TaskSet, path: str | Path) -> None:
    """Write a task set JSON file."""
    write_text_atomically(path, json.dumps(taskset_to_json(taskset), indent=1) + "\n")
