"""What the DAG gantt chart draws, without matplotlib: bars per processor row and arrows.

Two sources:

* a periodic run folder (``hdrm dag periodic``) and its task set JSON: one bar per completed task
  on the core it ran on, grouped (coloured) by instance ``graph#k``; the job ids ``graph#k/task``
  name the task, and the task set's edges give the arrows of every instance;
* a DAG schedule CSV (``hdrm dag schedule -o OUT.csv``) and its workflow JSON: one bar per task
  on its processor, grouped by workflow level (longest edge count from an entry task);
* a workflow replay folder (``hdrm dag replay``) and its workflow JSON: one bar per task on its
  core, grouped by level likewise.

An arrow goes from a predecessor's bar end (its finish, on its row) to the successor's bar start.
The files of a run hold no dependencies, so the graph file is required; a run whose jobs are not
the task set's instances is refused with a one-line error.
"""

from __future__ import annotations

import csv
import logging
from dataclasses import dataclass
from pathlib import Path

from hdrm.dag.periodic import TaskSet
from hdrm.dag.periodic_io import read_taskset
from hdrm.dag.schedule import CSV_COLUMNS
from hdrm.dag.wfformat import Workflow, read_workflow
from hdrm.errors import ConfigError
from hdrm.results.records import parse_interval_ranges
from hdrm.results.run import JOBS_FILE, Run
from hdrm.viz.dag_devices import device_rows, has_device_columns, row_order

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Bar:
    """One task drawn: its name, row index, start, finish and group (colour key)."""

    task: str
    row: int
    start_s: float
    finish_s: float
    group: str


@dataclass(frozen=True)
class Arrow:
    """A dependency drawn from ``(x0_s, row0)`` (the predecessor's end) to ``(x1_s, row1)``."""

    x0_s: float
    row0: int
    x1_s: float
    row1: int


@dataclass(frozen=True)
class DagChart:
    """Rows (processor labels), bars, arrows and what the groups are (``instance``/``level``)."""

    title: str
    rows: tuple[str, ...]
    bars: tuple[Bar, ...]
    arrows: tuple[Arrow, ...]
    group_kind: str

    @property
    def groups(self) -> list[str]:
        """The distinct groups, in order of first start."""
        seen: dict[str, None] = {}
        for bar in sorted(self.bars, key=lambda b: (b.start_s, b.row)):
            seen.setdefault(bar.group, None)
        return list(seen)


def _arrows(bars: dict[str, Bar], edges: list[tuple[str, str]]) -> tuple[Arrow, ...]:
    """One arrow per edge whose two tasks were drawn."""
    return tuple(Arrow(bars[a].finish_s, bars[a].row, bars[b].start_s, bars[b].row)
                 for a, b in edges if a in bars and b in bars)


def from_periodic(run_dir: str | Path | Run, taskset_path: str | Path) -> DagChart:
    """The chart of a periodic run folder, with the edges of its task set JSON.

    On a CPU platform a row is a core; on a GPU platform a row is a GPU or a CPU lane of a node
    (:mod:`hdrm.viz.dag_devices`).

    Raises:
        ConfigError: no completed job of the run is an instance task of the task set.
    """
    run = run_dir if isinstance(run_dir, Run) else Run(run_dir)
    taskset = read_taskset(taskset_path)
    tasks = {(g.name, t.name) for g in taskset.graphs for t in g.tasks}
    placed = []
    for job_id, row, start, finish in _placements(run):
        name = job_id.split("!", 1)[-1]
        graph, _, rest = name.partition("#")
        instance, _, task = rest.partition("/")
        if (graph, task) in tasks and instance.isdigit():
            placed.append((name, row, start, finish, f"{graph}#{instance}"))
    if not placed:
        raise ConfigError(f"{run.path}: no completed job is a task of {taskset_path} (job ids "
                          "graph#k/task); give the task set this run was made from with --graph")
    rows = sorted({p[1] for p in placed}, key=_row_key)
    bars = {name: Bar(name, rows.index(row), start, finish, group)
            for name, row, start, finish, group in placed}
    return DagChart(f"{taskset.name} on {run.label}", tuple(rows), tuple(bars.values()),
                    _arrows(bars, _instance_edges(taskset, bars)), "instance")


def _placements(run: Run) -> list[tuple[str, str, float, float]]:
    """``(job id, row label, start, finish)`` of each completed job of the run."""
    jobs_csv = run.require(JOBS_FILE, "the DAG gantt")
    if has_device_columns(jobs_csv):
        return [(p.job_id, p.row, p.start_s, p.finish_s) for p in device_rows(jobs_csv)]
    return [(job.job_id, f"core {parse_interval_ranges(job.allocated_resources)[0][0]}",
             float(job.starting_time), float(job.finish_time))
            for job in run.jobs() if job.finished]


def _row_key(label: str) -> tuple:
    """Cores by number; GPU-run rows by node, CPU lanes, then GPUs."""
    if label.startswith("core "):
        return ("", 0, int(label[5:]))
    return row_order(label)


def _instance_edges(taskset: TaskSet, bars: dict[str, Bar]) -> list[tuple[str, str]]:
    """The task set's edges in every instance drawn, as (predecessor id, successor id)."""
    edges = []
    for group in sorted({b.group for b in bars.values()}):
        graph_name = group.split("#", 1)[0]
        graph = next(g for g in taskset.graphs if g.name == graph_name)
        edges += [(f"{group}/{graph.tasks[a].name}", f"{group}/{graph.tasks[b].name}")
                  for a, b, _ in graph.edges]
    return edges


def levels(workflow: Workflow) -> list[int]:
    """Per task, its level: the most edges on a path from an entry task (entry tasks: 0)."""
    preds: list[list[int]] = [[] for _ in workflow.tasks]
    for a, b, _ in workflow.edges:
        preds[b].append(a)
    level: list[int | None] = [None] * len(workflow.tasks)

    def of(t: int) -> int:
        stack = [t]
        while stack:
            top = stack[-1]
            todo = [p for p in preds[top] if level[p] is None]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            level[top] = max((level[p] + 1 for p in preds[top]), default=0)
        return level[t]

    return [of(t) for t in range(len(workflow.tasks))]


def from_schedule(csv_path: str | Path, workflow_path: str | Path) -> DagChart:
    """The chart of a DAG schedule CSV, with the edges and levels of its workflow JSON.

    Raises:
        ConfigError: the CSV lacks a column of :data:`~hdrm.dag.schedule.CSV_COLUMNS`, a value
            is not a number, or a task is not in the workflow.
    """
    workflow = read_workflow(workflow_path)
    level = dict(zip(workflow.tasks, levels(workflow)))
    path = Path(csv_path)
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in CSV_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ConfigError(f"{path}: not a DAG schedule CSV, no column {missing[0]!r}; write "
                              "one with 'hdrm dag schedule WF.json --platform P.json -o OUT.csv'")
        records = [(n, r) for n, r in enumerate(reader, start=2)]
    rows: list[str] = []
    bars: dict[str, Bar] = {}
    for line, rec in records:
        if rec["task"] not in level:
            raise ConfigError(f"{path}, line {line}: task {rec['task']!r} is not in "
                              f"{workflow_path}; give the workflow this schedule was made from")
        if rec["processor"] not in rows:
            rows.append(rec["processor"])
        try:
            start, finish = float(rec["start_s"]), float(rec["finish_s"])
        except ValueError:
            raise ConfigError(f"{path}, line {line}: start_s/finish_s {rec['start_s']!r}/"
                              f"{rec['finish_s']!r} is not a number") from None
        bars[rec["task"]] = Bar(rec["task"], rows.index(rec["processor"]), start, finish,
                                f"level {level[rec['task']]}")
    edges = [(workflow.tasks[a], workflow.tasks[b]) for a, b, _ in workflow.edges]
    return DagChart(f"{workflow.name}, {path.name}", tuple(rows), tuple(bars.values()),
                    _arrows(bars, edges), "level")


def from_workflow_run(run_dir: str | Path | Run, workflow_path: str | Path) -> DagChart:
    """The chart of an ``hdrm dag replay`` folder (job ids are task ids), with the edges and
    levels of its workflow JSON.

    Raises:
        ConfigError: no completed job of the run is a task of the workflow.
    """
    run = run_dir if isinstance(run_dir, Run) else Run(run_dir)
    workflow = read_workflow(workflow_path)
    level = dict(zip(workflow.tasks, levels(workflow)))
    placed = [(job_id.split("!", 1)[-1], row, start, finish)
              for job_id, row, start, finish in _placements(run)
              if job_id.split("!", 1)[-1] in level]
    if not placed:
        raise ConfigError(f"{run.path}: no completed job is a task of {workflow_path}; give the "
                          "workflow this run replayed with --graph")
    rows = sorted({p[1] for p in placed}, key=_row_key)
    bars = {name: Bar(name, rows.index(row), start, finish, f"level {level[name]}")
            for name, row, start, finish in placed}
    edges = [(workflow.tasks[a], workflow.tasks[b]) for a, b, _ in workflow.edges]
    return DagChart(f"{workflow.name} on {run.label}", tuple(rows), tuple(bars.values()),
                    _arrows(bars, edges), "level")
