"""benchmarks/bench_periodic.py: a short run prints its figures and meets the target."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import bench_periodic  # noqa: E402


def test_short_run_prints_instances_and_meets_the_target(capsys):
    assert bench_periodic.main(["--repeat", "1", "--instances", "20"]) == 0
    line = capsys.readouterr().out
    assert line.startswith("20 instances x 50 tasks (157 edges) on 8 cores, dag_edf: best ")
    assert line.rstrip().endswith("miss ratio 0.0000")


def test_the_graph_has_fifty_tasks_and_the_utilisation_asked():
    graph = bench_periodic.fifty_task_graph(2.0)
    assert len(graph.tasks) == 50 and abs(graph.utilisation - 2.0) < 1e-12
    assert all(s < 50 and d < 50 for s, d, _ in graph.edges)
