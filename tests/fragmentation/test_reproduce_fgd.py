"""benchmarks/reproduce_fgd.py on the shipped openb slice: a subset of policies, the table's shape."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import reproduce_fgd  # noqa: E402


@pytest.fixture
def traces(tmp_path):
    shutil.copy(ROOT / "workloads" / "openb_nodes_41.csv", tmp_path / "openb_node_list_gpu_node.csv")
    shutil.copy(ROOT / "workloads" / "openb_pods_400.csv", tmp_path / "openb_pod_list_default.csv")
    return tmp_path


def test_a_subset_of_policies_in_the_table_order(traces, tmp_path, capsys):
    status = reproduce_fgd.main(["--traces", str(traces), "--variants", "default", "--seeds", "1-2",
                                 "--policies", "fgd,best_fit",
                                 "--no-timing", "--processes", "1", "--tolerance", "100",
                                 "--json", str(tmp_path / "out.json")])
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    assert header == ["variant", "best_fit", "fgd", "grid", "s"]  # table order, not the asked one
    assert "one FGD experiment" not in out
    assert "published: best_fit > fgd" in out
    assert status == 0 and "all checks passed" in out  # every gap is under a 100-point tolerance


def test_an_unknown_policy_is_refused(traces):
    with pytest.raises(SystemExit, match="--policies: unknown .*'fdg'.*choose among: random"):
        reproduce_fgd.main(["--traces", str(traces), "--policies", "fdg", "--no-timing"])
