"""The FGD paper's own draws: Go's bounded draws by hand, the simulator's sequence on a tiny list,
the shipped seeds, and the published per-seed values reproduced."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from hdrm.errors import ConfigError
from hdrm.fragmentation.experiment import load_inputs, run_seeds
from hdrm.fragmentation.paper_draws import GoStream, load_stream, paper_order, paper_seeds
from hdrm.fragmentation.protocol import arrival_order, run_seed
from hdrm.policies.gpu_placer import Placer
from hdrm.policies.gpu_state import GpuCluster, TaskShape
from hdrm.policies.placement import make_placement

ROOT = Path(__file__).resolve().parents[2]
GPU_TRACES = ROOT.parent / "shared" / "traces" / "gpu"


def test_intn_masks_a_power_of_two_and_rejects_above_the_last_multiple():
    assert GoStream([22]).intn(8) == 3                      # (22 >> 1) & 7
    stream = GoStream([0xFFFFFFFF, 14])                      # 2**31 - 1 > 2**31 - 1 - 2: again
    assert stream.intn(3) == 1 and stream.used == 2         # 7 % 3


def test_the_shuffle_draw_is_the_high_half_and_rejects_under_the_threshold():
    stream = GoStream([0, 0x80000000])  # 0 * 3: low half 0 < (2**32 - 3) % 3 = 1: again
    assert stream.below(3) == 1 and stream.used == 2        # 3 * 2**31 >> 32


def test_shuffle_and_perm_by_hand():
    items = ["a", "b", "c"]
    GoStream([0x80000000, 0xC0000000]).shuffle(items)       # i=2 <-> 1, then i=1 <-> 1
    assert items == ["a", "c", "b"]
    assert GoStream([5, 2, 2]).perm(3) == [0, 2, 1]          # j = 0, 1, 1 (inside-out)


def test_the_simulators_sequence_on_a_tiny_list():
    # file order t2, t0, t1; by name t0 (1 GPU), t1 (2 GPUs), t2 (CPU only); target 1.3 x 3200
    shapes = [TaskShape(1000), TaskShape(1000, 0, 1, 1000), TaskShape(1000, 0, 2, 1000)]
    names = ["t2", "t0", "t1"]
    values = [7, 0x80000000, 0xC0000000, 2, 0] + [0] * 10 + [0, 0]
    stream = GoStream(values)
    order, ranks = paper_order(shapes, names, 3200, 1.3, 2, stream)
    # one logged draw; shuffle [t0, t1, t2] -> [t0, t2, t1] (3000 milli asked, target 4160);
    # t1 is drawn: its per-GPU share (1000) fits under the target, so it is appended although
    # its 2000 pass it; t0 is drawn and stops the tuning; ten start-up draws; Perm(2) = [1, 0]
    assert [names[i] for i in order] == ["t0", "t2", "t1", "t1"]
    assert ranks.tolist() == [1, 0] and stream.used == len(values)


def test_a_list_above_the_target_loses_drawn_tasks():
    shapes = [TaskShape(1000), TaskShape(1000, 0, 1, 1000), TaskShape(1000, 0, 2, 1000)]
    stream = GoStream([7, 0x80000000, 0xC0000000, 14, 2] + [0] * 12)
    order, _ = paper_order(shapes, ["t2", "t0", "t1"], 2000, 1.3, 2, stream)
    # [t0, t2, t1] asks 3000 > 2600: Intn(3) = 1 drops t2, Intn(2) = 1 drops t1
    assert order.tolist() == [1]


def test_numpy_tuning_appends_while_the_per_gpu_share_fits():
    # one task of 2 whole GPUs, 10 GPUs, target 13,000: 6 copies reach 12,000 and a 7th is
    # appended (12,000 + its 1,000 per GPU do not pass 13,000), the paper's rule
    order = arrival_order([TaskShape(1000, 0, 2, 1000)], ["x"], 10_000, 1.3,
                          np.random.default_rng(0))
    assert len(order) == 7


def test_errors_name_the_fix():
    with pytest.raises(ConfigError, match="draws of seed 7 end after 1 values.*--draws numpy"):
        GoStream([1], seed=7).skip(2)
    assert paper_seeds() == list(range(42, 52))
    with pytest.raises(ConfigError, match="shipped for seeds 42-51, not 41; .*--draws numpy"):
        load_stream(41)
    cluster = GpuCluster([8000, 8000], [100, 100], [1, 1], ["T4", "T4"])
    with pytest.raises(ConfigError, match="tie_rank: 3 ranks for 2 nodes"):
        Placer(make_placement("best_fit", cluster), np.random.default_rng(0), "shuffled",
               np.arange(3))


def test_a_given_tie_order_decides_ties():
    cluster = GpuCluster([8000] * 3, [100] * 3, [1] * 3, ["T4"] * 3, ["a", "b", "c"])
    placer = Placer(make_placement("gpu_packing", cluster), np.random.default_rng(0), "shuffled",
                    np.array([2, 0, 1]))  # "b" ranks first
    assert placer.choose_node(TaskShape(1000)) == 1


def _traces():
    if not (GPU_TRACES / "openb_pod_list_default.csv").is_file():
        pytest.skip("../shared/traces/gpu is not here")
    return GPU_TRACES / "openb_node_list_gpu_node.csv", GPU_TRACES / "openb_pod_list_default.csv"


def test_the_shipped_draws_give_the_papers_first_arrivals():
    nodes, pods = _traces()
    inputs = load_inputs(nodes, pods)
    order, ranks = paper_order(inputs.shapes, inputs.names, inputs.cluster.total_gpu_milli, 1.3,
                               inputs.cluster.nb_nodes, load_stream(42))
    # as the simulator's seed 42 draws them (Go 1.19 math/rand)
    assert [inputs.names[i] for i in order[:3]] == ["openb-pod-0255", "openb-pod-1685",
                                                   "openb-pod-6784"]
    assert sorted(ranks.tolist()) == list(range(inputs.cluster.nb_nodes))


def test_the_papers_draws_reproduce_its_published_values_of_seed_42():
    nodes, pods = _traces()
    with open(ROOT / "benchmarks" / "fgd_published.csv", encoding="utf-8") as handle:
        published = {r["policy"]: float(r["unallocated_pct"]) for r in csv.DictReader(handle)
                     if r["variant"] == "default" and r["seed"] == "42"}
    for policy in ("best_fit", "gpu_packing", "fgd"):
        run = run_seeds(nodes, pods, policy, [42], draws="paper")[0]
        assert round(run.unallocated_pct(), 2) == published[policy], policy


def test_paper_draws_need_the_shuffled_tie_rule_and_a_shipped_seed(tmp_path):
    nodes, pods = _traces()
    with pytest.raises(ConfigError, match="--draws paper .* needs --ties shuffled"):
        run_seeds(nodes, pods, "fgd", [42], ties="first", draws="paper")
    with pytest.raises(ConfigError, match="not 7; give --seeds within them"):
        run_seeds(nodes, pods, "fgd", [7], draws="paper")
    with pytest.raises(ConfigError, match="--draws: unknown 'go'; choose one of: numpy, paper"):
        run_seeds(nodes, pods, "fgd", [42], draws="go")
    inputs = load_inputs(nodes, pods)
    with pytest.raises(ConfigError, match="--draws: unknown 'go'"):
        run_seed(inputs.cluster, inputs.shapes, inputs.names, inputs.types, "fgd", 42,
                 draws="go")
