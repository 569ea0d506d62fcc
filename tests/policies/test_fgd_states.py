"""FGD scores once per distinct node state: the same floats as node by node, far fewer rows."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.policies.gpu_frag import TaskTypes
from hdrm.policies.gpu_state import MILLI, GpuCluster, TaskShape
from hdrm.policies.placement import make_placement

TYPES = TaskTypes(np.array([4000, 2000, 1000, 8000]), np.array([1000, 500, 0, 1000]),
                  np.array([1, 1, 0, 2]), ((), (), (), ("V100M32",)),
                  np.array([0.41, 0.29, 0.17, 0.13]))
SHAPES = [TaskShape(1000, 0, 1, 300), TaskShape(2000, 0, 1, 500), TaskShape(4000, 0, 2, MILLI),
          TaskShape(1000, 0, 0, 0), TaskShape(8000, 0, 1, MILLI)]


def _alone(fgd, node: int, cpu: int, left: np.ndarray) -> float:
    """The score of one node state computed on its own (one row through the meter)."""
    c = fgd.cluster
    row = slice(node, node + 1)
    before = fgd.meter.frag(c.cpu_left[row], c.gpu_left[row], c.model[row])
    after = fgd.meter.frag(np.array([cpu]), left[None, :], c.model[row])
    return float(np.floor(1 / (1 + np.exp(-((before - after) / 1000))) * 100)[0])


def _reference(fgd, shape: TaskShape, nodes: np.ndarray) -> list[float]:
    """Node by node: a shared task's best GPU, a whole-GPU task's lowest free GPUs."""
    c, out = fgd.cluster, []
    for n in nodes.tolist():
        cpu, left = int(c.cpu_left[n]) - shape.cpu_milli, c.gpu_left[n].copy()
        if shape.is_shared:
            best = -np.inf
            for g in np.flatnonzero(left >= shape.milli).tolist():
                moved = left.copy()
                moved[g] -= shape.milli
                best = max(best, _alone(fgd, n, cpu, moved))
            out.append(best)
            continue
        left[np.flatnonzero(left == MILLI)[:shape.gpus]] = 0
        out.append(_alone(fgd, n, cpu, left))
    return out


@st.composite
def _cluster(draw):
    n = draw(st.integers(1, 90))
    models = [draw(st.sampled_from(["T4", "V100M32", ""])) for _ in range(n)]
    gpus = [0 if not m else draw(st.integers(1, 4)) for m in models]
    cluster = GpuCluster([16000] * n, [1 << 20] * n, gpus, models)
    for _ in range(draw(st.integers(0, 3 * n))):  # a few placements: states repeat and differ
        node, shape = draw(st.integers(0, n - 1)), draw(st.sampled_from(SHAPES))
        if cluster.feasible(shape, np.array([node]))[0]:
            left = cluster.gpu_left[node]
            fits = np.flatnonzero(left >= shape.milli)[:shape.gpus] if shape.gpus else []
            cluster.allocate(node, shape, tuple(int(g) for g in fits))
    return cluster


@settings(max_examples=60, deadline=None)
@given(_cluster(), st.lists(st.sampled_from(SHAPES), min_size=1, max_size=6))
def test_grouped_scores_equal_node_by_node_bit_for_bit(cluster, shapes):
    fgd = make_placement("fgd", cluster, TYPES)
    for shape in shapes:  # asked again: the kept scores must still be the node-by-node ones
        nodes = np.flatnonzero(cluster.feasible(shape))
        if len(nodes):
            assert fgd.node_scores(shape, nodes).tolist() == _reference(fgd, shape, nodes)


def test_a_state_shared_by_many_nodes_is_measured_once():
    # 300 idle 4-GPU nodes and 100 with one shared task: 2 states, hence 2 'before' rows and
    # 2 'after' rows per demand, whatever the node count (it was one row per node past 64)
    cluster = GpuCluster([16000] * 400, [1 << 20] * 400, [4] * 400, ["T4"] * 400)
    for node in range(300, 400):
        cluster.allocate(node, SHAPES[0], (1,))
    fgd = make_placement("fgd", cluster, TYPES)
    rows = []
    measure = fgd.meter.frag
    fgd.meter.frag = lambda cpu, left, model: rows.append(len(cpu)) or measure(cpu, left, model)
    whole = fgd.node_scores(SHAPES[2], np.arange(400))
    assert sum(rows) == 2 + 2
    # shared: per state, one row per distinct free share (1000 on idle nodes; 1000, 700 else)
    rows.clear()
    shared = fgd.node_scores(SHAPES[1], np.arange(400))
    assert sum(rows) == 1 + 2
    assert len(set(whole[:300])) == len(set(whole[300:])) == 1
    assert len(set(shared[:300])) == len(set(shared[300:])) == 1
    rows.clear()
    fgd.node_scores(SHAPES[2], np.arange(400))  # nothing changed: every score kept
    assert rows == []
