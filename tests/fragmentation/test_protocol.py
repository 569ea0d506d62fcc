"""The placement-only protocol: arrival order and tuning, the value at 100%, the command."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from hdrm.cli.main import main
from hdrm.fragmentation.protocol import allocation_at, arrival_order, percent_of
from hdrm.policies.gpu_state import TaskShape


def test_tuning_down_and_up_stays_at_or_below_the_target():
    big = [TaskShape(1000, 0, 1, 500), TaskShape(1000, 0, 2, 1000), TaskShape(1000)]
    order = arrival_order(big, ["a", "b", "c"], 1000, 1.3, np.random.default_rng(1))
    assert sum(big[i].total_milli for i in order) <= 1300  # 2500 requested: tasks removed
    small = [TaskShape(1000, 0, 1, 100), TaskShape(1000, 0, 1, 200)]
    order = arrival_order(small, ["a", "b"], 1000, 1.3, np.random.default_rng(1))
    total = sum(small[i].total_milli for i in order)
    assert 1300 - 200 < total <= 1300 and sorted(order[:2]) == [0, 1]  # originals first
    assert len(arrival_order(small, ["a", "b"], 1000, 0, np.random.default_rng(1))) == 2


def test_allocation_at_100_is_the_mean_of_the_rows_rounding_to_100():
    arrived = np.array([98.0, 99.6, 100.2, 100.49, 101.0])
    alloc = np.array([90.0, 91.0, 92.0, 93.004, 94.0])
    assert allocation_at(arrived, alloc, 100) == pytest.approx((91 + 92 + 93) / 3, abs=0.01)
    assert allocation_at(np.array([98.0, 101.0]), np.array([1.0, 3.0]), 100) == 3.0  # within 1
    with pytest.raises(ValueError, match="never reaches 100%"):
        allocation_at(np.array([10.0]), np.array([1.0]), 100)


def test_allocation_rows_round_as_the_papers_analysis():
    # 1,553 of 6,212,000 milli-GPU is 0.025% (as a float, a hair above): the analysis rounds
    # each row with Python's round (0.03), not numpy's (0.02); the mean then with numpy's
    pct = percent_of(np.array([6_212_000, 1553, 4659]), 6_212_000)
    assert pct[0] == 100.0 and round(float(pct[1]), 2) == 0.03 and np.round(pct[1], 2) == 0.02
    assert allocation_at(np.array([100.0]), pct[1:2], 100) == 0.03
    assert allocation_at(np.array([100.0, 100.0]), pct[1:], 100) == 0.05  # (0.03 + 0.07) / 2


def test_command_writes_curves_and_the_summary(tmp_path, capsys):
    """Two 4-core nodes with one GPU each; a 4-core CPU task and two 1-GPU tasks. With
    first_fit the CPU task strands node a's GPU unless it arrives last: 50% or 0% unallocated."""
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\na,4000,1024,1,T4\nb,4000,1024,1,T4\n")
    pods = tmp_path / "pods.csv"
    pods.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\nc,4000,10,0,0\n"
                    "g1,1000,10,1,1000\ng2,1000,10,1,1000\n")
    out = tmp_path / "out"
    assert main(["fragmentation", "--nodes", str(nodes), "--pods", str(pods), "--policy",
                 "first_fit", "--seeds", "1-6", "--outdir", str(out),
                 "--workload-tuning-ratio", "0"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    shapes = [TaskShape(4000, 10), TaskShape(1000, 10, 1, 1000), TaskShape(1000, 10, 1, 1000)]
    for seed in range(1, 7):
        order = arrival_order(shapes, ["c", "g1", "g2"], 2000, 0, np.random.default_rng(seed))
        expected = 0.0 if order[-1] == 0 else 50.0
        assert summary["unallocated_gpus_pct"]["per_seed"][str(seed)] == expected
        rows = list(csv.DictReader((out / f"curve_{seed}.csv").open()))
        assert [r["arrived_pct"] for r in rows][-1] == "100.0" and len(rows) == 3
    values = sorted(summary["unallocated_gpus_pct"]["per_seed"].values())
    assert summary["unallocated_gpus_pct"]["median"] == float(np.median(values))
    assert summary["policy"] == "first_fit"
    assert "first_fit: unallocated GPUs at 100% arrived workload" in capsys.readouterr().out


def test_command_errors_are_one_line(tmp_path, capsys):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\na,4000,1024,1,T4\n")
    assert main(["fragmentation", "--nodes", str(nodes), "--pods", str(nodes), "--policy", "fgd",
                 "--outdir", str(tmp_path)]) == 2
    assert "missing column(s) name, num_gpu, gpu_milli" in capsys.readouterr().err
    assert main(["fragmentation", "--nodes", str(nodes), "--pods", str(nodes), "--policy",
                 "best_fitt", "--seeds", "x", "--outdir", str(tmp_path)]) == 2
    assert "--seeds: expected '42-51'" in capsys.readouterr().err


@pytest.mark.parametrize("ties, nodes_used", [("first", {1}), ("shuffled", {0, 1})])
def test_ties_go_to_the_first_name_or_a_random_node_order_per_seed(tmp_path, ties, nodes_used):
    """Two equal one-GPU nodes listed as b-node, a-node and two 1-GPU tasks: the first task's
    scores tie. ``first`` always takes a-node (index 1: first by name, not by list order);
    ``shuffled`` draws a node order per seed, so over six seeds the first task uses both."""
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nb-node,4000,1024,1,T4\n"
                     "a-node,4000,1024,1,T4\n")
    pods = tmp_path / "pods.csv"
    pods.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\ng,1000,10,1,1000\n"
                    "h,1000,10,1,1000\n")
    out = tmp_path / ties
    assert main(["fragmentation", "--nodes", str(nodes), "--pods", str(pods), "--policy",
                 "best_fit", "--seeds", "1-6", "--workload-tuning-ratio", "0", "--ties", ties,
                 "--outdir", str(out)]) == 0
    used = {int(next(csv.DictReader((out / f"curve_{s}.csv").open()))["node"])
            for s in range(1, 7)}
    assert used == nodes_used
    assert json.loads((out / "summary.json").read_text())["ties"] == ties


def test_a_workload_short_of_100_percent_is_one_line(tmp_path, capsys):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\na,4000,1024,2,T4\n")
    pods = tmp_path / "pods.csv"
    pods.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\ng,1000,10,1,1000\n")
    assert main(["fragmentation", "--nodes", str(nodes), "--pods", str(pods), "--policy", "fgd",
                 "--seeds", "1", "--workload-tuning-ratio", "0", "--outdir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"{pods}: the arrived workload never reaches 100% (last 50.0%) of the "
                        "cluster's GPUs, so there is no value at 100%; give "
                        "--workload-tuning-ratio >= 1 (got 0) or more tasks")
    assert len(err.splitlines()) == 1


def test_an_unknown_tie_rule_is_refused():
    from hdrm.errors import ConfigError
    from hdrm.fragmentation.experiment import run_seeds

    with pytest.raises(ConfigError, match=r"^--ties: unknown rule 'name'; choose one of: "
                                          r"shuffled, first$"):
        run_seeds("n.csv", "p.csv", "fgd", [1], ties="name")


def test_command_takes_the_papers_draws_for_its_seeds_only(tmp_path, capsys):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\na,4000,1024,1,T4\nb,4000,1024,1,T4\n")
    pods = tmp_path / "pods.csv"
    pods.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\nc,4000,10,0,0\n"
                    "g1,1000,10,1,1000\ng2,1000,10,1,1000\n")
    args = ["fragmentation", "--nodes", str(nodes), "--pods", str(pods), "--policy", "first_fit",
            "--workload-tuning-ratio", "0", "--draws", "paper"]
    assert main(args + ["--seeds", "42-43", "--outdir", str(tmp_path / "o")]) == 0
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["draws"] == "paper"
    assert main(args + ["--seeds", "7", "--outdir", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "shipped for seeds 42-51, not 7" in err[0]


@pytest.mark.parametrize("bad", ["missing", "row"])
def test_bad_lists_are_one_line_before_the_workers_start(tmp_path, capsys, bad):
    """With --processes 2 the lists are read in the parent: its one-line error, exit 2 (it was
    a BrokenProcessPool traceback from the workers' initializer)."""
    nodes = tmp_path / "nodes.csv"
    if bad == "row":
        nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\na,4000,1024,1,T4\nb,lots,1024,1,T4\n")
    pods = tmp_path / "pods.csv"
    pods.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\ng1,1000,10,1,1000\n")
    assert main(["fragmentation", "--nodes", str(nodes), "--pods", str(pods), "--policy", "fgd",
                 "--seeds", "1-2", "--processes", "2", "--outdir", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and str(nodes) in err
    assert "Traceback" not in err and "BrokenProcessPool" not in err
    assert (f"{nodes}:3:" in err and "'lots'" in err) if bad == "row" else \
        "no such file; give the path of the openb file" in err


def test_seeds_over_two_processes_give_the_values_of_one(tmp_path):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\na,4000,1024,1,T4\nb,4000,1024,1,T4\n")
    pods = tmp_path / "pods.csv"
    pods.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\nc,4000,10,0,0\n"
                    "g1,1000,10,1,1000\ng2,1000,10,1,1000\n")
    per_seed = []
    for processes in ("1", "2"):
        out = tmp_path / processes
        assert main(["fragmentation", "--nodes", str(nodes), "--pods", str(pods), "--policy",
                     "fgd", "--seeds", "1-4", "--processes", processes, "--outdir", str(out),
                     "--workload-tuning-ratio", "0"]) == 0
        per_seed.append(json.loads((out / "summary.json").read_text())["unallocated_gpus_pct"])
    assert per_seed[0]["per_seed"] == per_seed[1]["per_seed"]
