"""benchmarks/bench_multiagent.py on the shipped openb slice (41 nodes, 400 tasks), named as the
full trace's files: the episode reports its rate and ratio, and ``--check`` finds the engine's
schedule (with and without the ``fgd_score`` column, for two pairs)."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import bench_multiagent  # noqa: E402


@pytest.mark.parametrize("extra", [[], ["--order", "sjf", "--placement", "best_fit",
                                        "--fgd-features"]])
def test_the_episode_reports_its_rate_and_the_engines_schedule(tmp_path, capsys, extra):
    shutil.copy(ROOT / "workloads" / "openb_nodes_41.csv", tmp_path / "openb_node_list_gpu_node.csv")
    shutil.copy(ROOT / "workloads" / "openb_pods_400.csv", tmp_path / "openb_pod_list_default.csv")
    status = bench_multiagent.main(["--traces", str(tmp_path), "--repeat", "1", "--check"] + extra)
    first, second = capsys.readouterr().out.splitlines()
    steps, placed = re.search(r": (\d+) steps \((\d+) tasks placed\)", first).groups()
    assert int(placed) == 376 and int(steps) >= 2 * 376
    assert re.search(r"[\d,]+ steps/s, .* bare engine [\d.]+ CPU s, ratio [\d.]+$", first)
    assert second == "same schedule as the engine: yes" and status == 0
