"""Placements on a tiny GPU cluster, every choice computed by hand; sharing; invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.errors import ConfigError
from hdrm.policies.gpu_frag import TaskTypes
from hdrm.policies.gpu_placer import Placer
from hdrm.policies.gpu_state import GpuCluster, TaskShape
from hdrm.policies.placement import PLACEMENTS, make_placement

#: A: 1 whole GPU + 4 cores (half the tasks), B: half a GPU + 2 cores, C: 1 core, no GPU.
TYPES = TaskTypes(np.array([4000, 2000, 1000]), np.array([1000, 500, 0]), np.array([1, 1, 0]),
                  ((), (), ()), np.array([0.5, 0.3, 0.2]))
HALF = TaskShape(4000, 1000, 1, 500)


def tiny() -> GpuCluster:
    """n0: 16 cores, 2 T4 (GPU 0 already 400 milli used); n1: 32 cores, 4 V100M32; n2: 8 cores."""
    cluster = GpuCluster([16000, 32000, 8000], [65536, 131072, 32768], [2, 4, 0],
                         ["T4", "V100M32", ""], ["n0", "n1", "n2"])
    cluster.allocate(0, TaskShape(2000, 1000, 1, 400), (0,))
    return cluster


def _scores(name):
    cluster = tiny()
    return make_placement(name, cluster, TYPES).score(HALF, np.arange(3)), cluster


@pytest.mark.parametrize("name, expected, gpus", [
    # (14000-4000)/32000/2 + (1600-500)/4000/2 = 0.29375 -> 70; n1: 0.4375 + 0.4375 -> 12
    ("best_fit", [70, 12], (0,)),
    # 1 - (14000/32000 * 4000/32000 + 1600/4000 * 500/4000) / 2 = 0.9477 -> 94; n1: 0.875 -> 87
    ("dot_product", [94, 87], (0,)),
    # n0 runs one shared task only: 75 + 25*(4000-1600)//4000 = 90; n1 idle: 25 + 0
    ("gpu_clustering", [90, 25], (0,)),
    # n0: the shared GPU with 600 free: 100 - 60//10 = 94; n1 idle with 4 GPUs: 33 - 4 = 29
    ("gpu_packing", [94, 29], (0,)),
    # n0: 10000/16000 + 1100/2000 = 1.175; n1: 28000/32000 + 3500/4000 = 1.75 (most left)
    ("load_balance", [1.175, 1.75], (0,)),
    ("first_fit", [0, -1], (0,)),
    # frag n0 before 0.5*600 + 0 + 0.2*1600 = 620; on GPU 0 after 50 + 30 + 220 = 300:
    # 100*sigmoid(0.32) = 57.9 -> 57 (GPU 1 would give 770: 46); n1: 800 -> 950: 46
    ("fgd", [57, 46], (0,)),
])
def test_each_policy_scores_the_tiny_cluster_as_computed_by_hand(name, expected, gpus):
    scores, cluster = _scores(name)
    assert scores[2] == -np.inf  # n2 has no GPU
    assert scores[:2] == pytest.approx(expected)
    placer = Placer(make_placement(name, cluster, TYPES), np.random.default_rng(0))
    node = int(np.argmax(expected))
    assert placer.place(HALF) == (node, gpus if node == 0 else (0,))


def test_fgd_fills_the_fragment_the_docs_example():
    """docs/gpu.rst: GPUs with 1000 and 300 free, 8 cores; a 0.2-GPU, 1-core task."""
    cluster = GpuCluster([8000], [1024], [2], ["T4"])
    cluster.gpu_left[0] = [1000, 300]
    fgd = make_placement("fgd", cluster, TYPES)
    assert fgd.meter.of_cluster(cluster)[0] == pytest.approx(500)
    # on the 300 GPU: frag 50 + 30 + 220 = 300, 100*sigmoid(0.2) = 54.98 -> 54;
    # on the whole GPU: 550 + 90 + 220 = 860, 100*sigmoid(-0.36) = 41.1 -> 41
    per_gpu = fgd.per_gpu(TaskShape(1000, 0, 1, 200), np.array([0]))
    assert per_gpu[0].tolist() == [41, 54]
    assert fgd.choose_gpus(0, TaskShape(1000, 0, 1, 200), np.random.default_rng(0)) == (1,)


def test_random_draws_among_feasible_nodes_only():
    seen = set()
    for seed in range(30):
        cluster = tiny()
        seen.add(Placer(make_placement("random", cluster), np.random.default_rng(seed))
                 .place(HALF)[0])
    assert seen == {0, 1}


def test_shared_gpu_holds_tasks_while_their_shares_fit_and_frees_on_release():
    cluster = GpuCluster([64000], [65536], [1], ["A10"])
    placer = Placer(make_placement("best_fit", cluster), np.random.default_rng(0))
    a, b, c = TaskShape(1000, 0, 1, 400), TaskShape(1000, 0, 1, 500), TaskShape(1000, 0, 1, 200)
    assert placer.place(a) == (0, (0,)) and placer.place(b) == (0, (0,))
    assert cluster.gpu_left[0, 0] == 100
    assert placer.place(c) is None  # 400 + 500 + 200 > 1000
    assert placer.place(TaskShape(1000, 0, 1, 1000)) is None  # no whole GPU while shared
    cluster.release(0, a, (0,))
    assert placer.place(c) == (0, (0,)) and cluster.gpu_left[0, 0] == 300
    cluster.release(0, b, (0,))
    cluster.release(0, c, (0,))
    assert cluster.gpu_left[0, 0] == 1000 and cluster.cpu_left[0] == 64000
    assert placer.place(TaskShape(1000, 0, 1, 1000)) == (0, (0,))
    cluster.release(0, TaskShape(1000, 0, 1, 1000), (0,))
    with pytest.raises(ValueError, match="released more than was allocated"):
        cluster.release(0, a, (0,))
    assert cluster.gpu_left[0, 0] == 1000  # unchanged by the refused release


@pytest.mark.parametrize("policy", ["gpu_packing", "gpu_clustering"])
def test_shuffled_ties_follow_one_random_node_order_per_run(policy):
    """The FGD simulator's tie rule: first name, after renaming nodes by a random permutation.

    Both policies score every node 0 for a task without GPUs, so the tie rule alone places it.
    Nodes (ids 0-3) are named n2, n0, n3, n1; default_rng(5).permutation(4) = [3, 1, 2, 0] gives
    the k-th name (n0, n1, n2, n3) the rank 3, 1, 2, 0: the order is n3, n1, n2, n0, i.e. ids
    2, 3, 0, 1, each holding two 1-core tasks. Name order would give ids 1, 3, 0, 2.
    """
    def fill(ties):
        cluster = GpuCluster([2000] * 4, [1024] * 4, [1] * 4, ["T4"] * 4, ["n2", "n0", "n3", "n1"])
        placer = Placer(make_placement(policy, cluster), np.random.default_rng(5), ties)
        return [placer.place(TaskShape(1000)) for _ in range(9)]

    assert fill("shuffled") == [(2, ()), (2, ()), (3, ()), (3, ()), (0, ()), (0, ()),
                                (1, ()), (1, ()), None]
    assert fill("name") == [(1, ()), (1, ()), (3, ()), (3, ()), (0, ()), (0, ()),
                            (2, ()), (2, ()), None]


def test_the_protocol_breaks_ties_in_a_shuffled_order_each_seed():
    """run_seed defaults to the simulator's rule: where CPU-only tasks pile depends on the seed."""
    from hdrm.fragmentation.protocol import run_seed
    cluster = GpuCluster([4000] * 6, [1024] * 6, [1] * 6, ["T4"] * 6)
    shapes, names = [TaskShape(1000), TaskShape(1000, 0, 1, 1000)], ["a", "b"]
    first = {int(run_seed(cluster, shapes, names, TYPES, "gpu_packing", seed).nodes[0])
             for seed in range(12)}
    assert len(first) > 2  # name order would always start on n0


def test_unknown_tie_rule_is_one_line():
    with pytest.raises(ConfigError, match="ties: unknown rule 'first'; choose one of: "
                                          "shuffled, name, random"):
        Placer(make_placement("best_fit", tiny()), np.random.default_rng(0), "first")


def test_unknown_policy_suggests():
    with pytest.raises(ConfigError, match=r"--policy: unknown placement policy 'fgdd'; "
                                          r"did you mean 'fgd'"):
        make_placement("fgdd", tiny())


_models = st.sampled_from(["T4", "P100"])


@st.composite
def _scenario(draw):
    n = draw(st.integers(1, 4))
    nodes = [(draw(st.integers(1, 8)) * 1000, draw(st.integers(1, 8)) * 1024,
              draw(st.integers(0, 4)), draw(_models)) for _ in range(n)]
    tasks = []
    for _ in range(draw(st.integers(1, 25))):
        gpus = draw(st.integers(0, 2))
        milli = 0 if gpus == 0 else (1000 if gpus > 1 else draw(st.sampled_from([100, 300, 500,
                                                                                   1000])))
        models = tuple(draw(st.sets(_models, max_size=1)))
        tasks.append(TaskShape(draw(st.integers(0, 4)) * 1000, draw(st.integers(0, 4)) * 1024,
                               gpus, milli, models if gpus else ()))
    return nodes, tasks, draw(st.sampled_from(PLACEMENTS.names())), draw(st.integers(0, 9))


@settings(max_examples=150, deadline=None)
@given(_scenario())
def test_no_placement_breaks_a_model_constraint_or_a_capacity(scenario):
    nodes, tasks, name, seed = scenario
    cluster = GpuCluster(*zip(*nodes))
    placer = Placer(make_placement(name, cluster, TYPES), np.random.default_rng(seed))
    placed = []
    for task in tasks:
        fits_somewhere = cluster.feasible(task).any()
        choice = placer.place(task)
        assert (choice is not None) == fits_somewhere
        if choice is None:
            continue
        node, gpus = choice
        placed.append((node, task, gpus))
        if task.gpus:
            assert not task.models or cluster.model_names[cluster.model[node]] in task.models
            assert len(set(gpus)) == task.gpus and max(gpus) < cluster.nb_gpus[node]
    assert (cluster.gpu_left >= 0).all() and (cluster.gpu_left <= 1000).all()
    assert (cluster.cpu_left >= 0).all() and (cluster.mem_left >= 0).all()
    used = cluster.gpu_cap - cluster.gpu_left
    assert used.sum() == sum(t.total_milli for _, t, _ in placed)
    for node, task, gpus in reversed(placed):
        cluster.release(node, task, gpus)
    assert (cluster.gpu_left == cluster.gpu_cap).all() and (cluster.cpu_left == cluster.cpu_cap).all()
