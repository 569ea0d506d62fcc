"""The DAG gantt chart's data for a replay of a workload with job dependencies.

A replay's files hold no dependencies, so the workload it replayed (SWF with fields 17-18, or
Batsim JSON with ``"dependencies"``) gives them. A job is drawn on every core it ran on (one bar
per core); its arrows go from the lowest core of the preceding job to the lowest core of the job.
Jobs are grouped (coloured) by **chain**: the jobs linked by dependencies, named after the
chain's first job.
"""

from __future__ import annotations

import logging
from pathlib import Path

from hdrm.errors import ConfigError
from hdrm.results.records import parse_interval_ranges
from hdrm.results.run import Run
from hdrm.viz.dag_data import Arrow, Bar, DagChart

logger = logging.getLogger(__name__)


def read_dependencies(path: str | Path) -> list[tuple[str, str]]:
    """(preceding job id, job id) pairs of an SWF or Batsim JSON workload.

    Raises:
        ConfigError: the workload has no dependency.
    """
    from hdrm.workload.batsim_json import read_batsim_json
    from hdrm.workload.swf import read_swf

    path = Path(path)
    workload = read_swf(path) if path.suffix.lower() == ".swf" else read_batsim_json(path)
    deps = workload.dependencies
    if deps is None or not len(deps):
        raise ConfigError(f"{path}: no job has a preceding job (SWF field 17, or "
                          "\"dependencies\" in Batsim JSON); nothing to draw as a DAG")
    ids = [str(job.id) for job in workload.jobs]
    return [(ids[p], ids[j]) for j, p in zip(deps.job.tolist(), deps.pred.tolist())]


def chains(edges: list[tuple[str, str]]) -> dict[str, str]:
    """Per job id in ``edges``, the id of its chain's root (union of linked jobs; the smallest
    id by (length, text) represents a chain)."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = root(a), root(b)
        if ra != rb:
            first, second = sorted((ra, rb), key=lambda s: (len(s), s))
            parent[second] = first
    return {x: root(x) for x in list(parent)}


def from_dependent_jobs(run_dir: str | Path | Run, workload_path: str | Path) -> DagChart:
    """The chart of a replay folder, with the dependencies of the workload it replayed.

    Raises:
        ConfigError: no dependency, or no finished job of the run is a job of the workload.
    """
    run = run_dir if isinstance(run_dir, Run) else Run(run_dir)
    edges = read_dependencies(workload_path)
    chain = chains(edges)
    placed = []
    for job in run.jobs():
        name = job.job_id.split("!", 1)[-1]
        if not job.finished or not job.allocated_resources.strip():
            continue
        cores = [c for lo, hi in parse_interval_ranges(job.allocated_resources)
                 for c in range(lo, hi + 1)]
        group = f"chain of job {chain[name]}" if name in chain else "no dependency"
        placed.append((name, cores, float(job.starting_time), float(job.finish_time), group))
    if not any(name in chain for name, *_ in placed):
        raise ConfigError(f"{run.path}: no finished job has a dependency of {workload_path}; "
                          "give the workload this run replayed with --graph")
    rows = sorted({c for _, cores, *_ in placed for c in cores})
    bars, first = [], {}
    for name, cores, start, finish, group in placed:
        for core in cores:
            bars.append(Bar(name, rows.index(core), start, finish, group))
        first[name] = bars[-len(cores)]
    arrows = tuple(Arrow(first[a].finish_s, first[a].row, first[b].start_s, first[b].row)
                   for a, b in edges if a in first and b in first)
    return DagChart(f"{Path(workload_path).name} on {run.label}",
                    tuple(f"core {c}" for c in rows), tuple(bars), arrows, "chain")
