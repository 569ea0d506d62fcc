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
                                 "--policies", "fgd,best_fit", "--draws", "numpy",
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


def test_order_kept_compares_every_pair_the_published_medians_order():
    published = {"random": 13.0, "gpu_packing": 8.2, "best_fit": 8.2, "fgd": 4.8}
    assert reproduce_fgd.order_kept({"random": 12.0, "gpu_packing": 7.0, "best_fit": 7.5,
                                     "fgd": 5.0}, published)  # the published tie: either way
    assert not reproduce_fgd.order_kept({"random": 12.0, "gpu_packing": 7.0, "best_fit": 7.5,
                                         "fgd": 7.2}, published)  # fgd passes gpu_packing
    assert not reproduce_fgd.order_kept({"random": 12.0, "gpu_packing": 4.8, "best_fit": 7.5,
                                         "fgd": 4.8}, published)  # a tie where they differ


def test_published_medians_for_the_shared_and_the_other_variants():
    per_seed = reproduce_fgd.published_per_seed()
    assert len(per_seed) == 17 and all(len(p) == 6 for p in per_seed.values())
    assert reproduce_fgd.published_medians("default", per_seed)["gpu_packing"] == 8.19  # README
    # cpu250's FGD seeds 42-51: the median of 6.71 and 6.89 in the paper's expected results
    assert reproduce_fgd.published_medians("cpu250", per_seed)["fgd"] == 6.80
    assert reproduce_fgd.published_medians("cpu999", per_seed) is None


def test_the_papers_draws_give_the_published_value_of_each_seed(tmp_path, capsys):
    gpu = ROOT.parent / "shared" / "traces" / "gpu"
    if not (gpu / "openb_pod_list_default.csv").is_file():
        pytest.skip("../shared/traces/gpu is not here")
    status = reproduce_fgd.main(["--traces", str(gpu), "--variants", "default", "--seeds", "42",
                                 "--policies", "random,best_fit", "--no-timing",
                                 "--processes", "1", "--tolerance", "100"])
    out = capsys.readouterr().out
    assert "per seed: 1 of 1 values equal to the published ones" in out  # best_fit, 7.06
    assert status == 0 and "published: random > best_fit" in out


def test_seeds_without_the_papers_draws_are_one_line(traces, capsys):
    assert reproduce_fgd.cli(["--traces", str(traces), "--variants", "default", "--seeds", "1",
                              "--policies", "fgd", "--no-timing", "--processes", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "shipped for seeds 42-51, not 1; " in err[0]
    assert "--draws numpy" in err[0]
