"""The checks of ``benchmarks/gpu_corpus.py`` on what each GPU entry point wrote or did.

Each check returns a list of problems (empty: the invariant holds), written from the outputs and
the inputs alone (capacities from the platform, demands from the trace), not from the engine's
own state:

* :func:`check_error`: a failed command said one line on stderr (no traceback) naming a file;
* :func:`check_curve`: a placement-only curve (``hdrm fragmentation``): arrivals add up, no node
  holds more CPU, memory or GPU share than it has (tasks never end there);
* :func:`check_replay`: ``out_jobs.csv`` of ``hdrm replay``: every task once (ran, rejected or
  skipped), times add up, and at every instant no node's CPU, memory or any GPU is over-booked;
  the GPU timeline's time never goes back;
* :func:`fits_by_hand`: whether a task fits a node now, from the cluster's free arrays (the
  environments' masks are compared with it).
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path
from typing import Sequence

import numpy as np

#: Time tolerance of the replay's written times (6 decimals).
TIME_TOL_S = 1e-5
MILLI = 1000


def check_error(rc: int, stderr: str, names: Sequence[str]) -> list[str]:
    """A failed command's stderr: one non-empty line, no traceback, naming one of ``names``
    (the input files' names)."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    if rc == 0:
        return []
    problems = []
    if "Traceback" in stderr:
        problems.append("traceback")
    if len(lines) != 1:
        problems.append(f"{len(lines)} lines on stderr")
    if lines and not any(name in lines[-1] for name in names):
        problems.append("the error names no input file")
    return problems


def _capacity_problems(node: str, use: dict[str, float], cap: dict[str, float],
                       when: str) -> list[str]:
    return [f"node {node}: {key} {use[key]:g} > {cap[key]:g} {when}"
            for key in use if use[key] > cap[key] + 1e-9]


def check_curve(curve: Path, summary: dict, seed: str, cluster, shapes) -> list[str]:
    """The placement-only curve of one seed: ``cluster`` a
    :class:`~hdrm.policies.gpu_state.GpuCluster` (capacities), ``shapes`` the pod list's task
    shapes in file order (the curve's ``task`` column indexes them)."""
    problems: list[str] = []
    arrived = allocated = failed = 0
    cpu = defaultdict(int)
    mem = defaultdict(int)
    gpu = defaultdict(int)
    with open(curve, newline="") as handle:
        for row in csv.DictReader(handle):
            shape = shapes[int(row["task"])]
            node = int(row["node"])
            arrived += shape.total_milli
            if node < 0:
                failed += 1
            else:
                allocated += shape.total_milli
                cpu[node] += shape.cpu_milli
                mem[node] += shape.memory_mib
                gpu[node] += shape.total_milli
            if int(row["arrived_gpu_milli"]) != arrived:
                problems.append(f"arrival {row['arrival']}: arrived {row['arrived_gpu_milli']} "
                                f"!= {arrived} summed")
            if int(row["allocated_gpu_milli"]) != allocated:
                problems.append(f"arrival {row['arrival']}: allocated "
                                f"{row['allocated_gpu_milli']} != {allocated} summed")
            if len(problems) > 3:
                return problems
    if summary.get("failed_tasks", {}).get(seed) != failed:
        problems.append(f"summary says {summary.get('failed_tasks', {}).get(seed)} failed, "
                        f"the curve {failed}")
    for node in cpu:
        use = {"cpu": cpu[node], "memory": mem[node], "gpu": gpu[node]}
        cap = {"cpu": cluster.cpu_cap[node], "memory": cluster.mem_cap[node],
               "gpu": cluster.nb_gpus[node] * MILLI}
        problems += _capacity_problems(cluster.names[node], use, cap, "(placement only)")
    return problems


def _float(text: str) -> float:
    return float(text) if text not in ("", None) else float("nan")


def check_replay(outdir: Path, jobs, cluster, shapes) -> list[str]:
    """``out_jobs.csv`` and ``out_gpu_timeline.csv`` of one replay: ``jobs`` the workload's
    jobs of the slice, ``shapes`` their demands by job id (str), ``cluster`` the capacities."""
    problems: list[str] = []
    summary = json.loads((outdir / "out_gpu_summary.json").read_text())
    with open(outdir / "out_jobs.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    ids = [row["job_id"] for row in rows]
    if len(set(ids)) != len(ids):
        problems.append(f"{len(ids) - len(set(ids))} tasks written more than once")
    ran = [row for row in rows if row["final_state"] == "COMPLETED_SUCCESSFULLY"]
    rejected = summary.get("nb_rejected", 0)
    if len(ran) + rejected != len(jobs):
        problems.append(f"{len(ran)} ran + {rejected} rejected != {len(jobs)} tasks in the slice")
    unknown = set(ids) - set(shapes)
    if unknown:
        problems.append(f"{len(unknown)} written tasks not in the slice, e.g. {min(unknown)}")
    problems += _times(ran)
    problems += _occupancy(ran, cluster, shapes)
    problems += _timeline(outdir / "out_gpu_timeline.csv")
    return problems


def _times(rows: list[dict]) -> list[str]:
    problems = []
    for row in rows:
        submit, start = _float(row["submission_time"]), _float(row["starting_time"])
        run, finish = _float(row["execution_time"]), _float(row["finish_time"])
        if not start >= submit - TIME_TOL_S:
            problems.append(f"task {row['job_id']}: starts at {start} before its submission "
                            f"{submit}")
        if not abs(finish - (start + run)) <= TIME_TOL_S * max(1.0, abs(finish)) or run < 0:
            problems.append(f"task {row['job_id']}: finish {finish} != start {start} + run {run}")
        if len(problems) > 3:
            break
    return problems


def _occupancy(rows: list[dict], cluster, shapes) -> list[str]:
    """Sweep the starts and ends (ends first at one instant) and check every node's CPU, memory
    and each GPU against its capacity."""
    node_of = {name: i for i, name in enumerate(cluster.names)}
    events = []
    for row in rows:
        if row["job_id"] not in shapes or row["node"] not in node_of:
            continue
        gpus = [int(g) for g in row["gpu_indices"].split()]  # space separated
        item = (node_of[row["node"]], shapes[row["job_id"]], gpus, int(row["gpu_milli"] or 0))
        events.append((_float(row["starting_time"]), 1, item))
        events.append((_float(row["finish_time"]), 0, item))
    events.sort(key=lambda e: (e[0], e[1]))
    width = cluster.gpu_cap.shape[1]
    cpu = np.zeros(cluster.nb_nodes, dtype=np.int64)
    mem = np.zeros(cluster.nb_nodes, dtype=np.int64)
    gpu = np.zeros((cluster.nb_nodes, width), dtype=np.int64)
    problems: list[str] = []
    for when, start, (node, shape, gpus, milli) in events:
        sign = 1 if start else -1
        cpu[node] += sign * shape.cpu_milli
        mem[node] += sign * shape.memory_mib
        if len(gpus) != shape.gpus or (gpus and milli != shape.milli):
            problems.append(f"node {cluster.names[node]}: a task asking {shape.gpus} x "
                            f"{shape.milli} got GPUs {gpus} x {milli}")
        for g in gpus:
            if g >= cluster.nb_gpus[node]:
                problems.append(f"node {cluster.names[node]}: GPU index {g} beyond its "
                                f"{cluster.nb_gpus[node]} GPUs")
                continue
            gpu[node, g] += sign * milli
        if start:
            use = {"cpu": cpu[node], "memory": mem[node], "gpu": int(gpu[node].max())}
            cap = {"cpu": cluster.cpu_cap[node], "memory": cluster.mem_cap[node], "gpu": MILLI}
            problems += _capacity_problems(cluster.names[node], use, cap, f"at {when:g} s")
        if len(problems) > 3:
            break
    return problems


def _timeline(path: Path) -> list[str]:
    if not path.exists():
        return [f"{path.name} missing"]
    last = -np.inf
    with open(path, newline="") as handle:
        for i, row in enumerate(csv.DictReader(handle)):
            now = _float(row["time"])
            if now < last:
                return [f"{path.name} row {i + 1}: time {now} < {last} before it"]
            last = now
    return []


def fits_by_hand(cluster, shape, nodes: np.ndarray | None = None) -> np.ndarray:
    """Per node: CPU, memory, model and enough GPUs with the share free (from the free arrays
    of a :class:`~hdrm.policies.gpu_state.GpuCluster`, not through its methods)."""
    idx = np.arange(cluster.nb_nodes) if nodes is None else np.asarray(nodes)
    ok = (cluster.cpu_left[idx] >= shape.cpu_milli) & (cluster.mem_left[idx] >= shape.memory_mib)
    if shape.gpus == 0:
        return ok
    names = np.array(cluster.model_names + [""], dtype=object)
    model = names[cluster.model[idx]]
    allowed = np.array([bool(m) and (not shape.models or m in shape.models) for m in model])
    real = np.arange(cluster.gpu_left.shape[1])[None, :] < cluster.nb_gpus[idx][:, None]
    enough = ((cluster.gpu_left[idx] >= shape.milli) & real).sum(axis=1) >= shape.gpus
    return ok & allowed & enough


def state_problems(cluster) -> list[str]:
    """Free amounts within [0, capacity] on every node (nothing double-booked, nothing freed
    twice)."""
    problems = []
    for name, left, cap in (("cpu", cluster.cpu_left, cluster.cpu_cap),
                            ("memory", cluster.mem_left, cluster.mem_cap),
                            ("gpu", cluster.gpu_left, cluster.gpu_cap)):
        if (left < 0).any() or (left > cap).any():
            problems.append(f"free {name} outside [0, capacity]")
    return problems
