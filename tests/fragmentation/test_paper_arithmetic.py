"""The fragmentation arithmetic of the FGD paper's simulator, to the last bit.

FGD scores a node 50 exactly when a placement leaves its fragmentation unchanged, and 49 when the
float of the "after" state comes out one ulp above the "before" one: a different summation order
changes choices. These tests pin the simulator's order (per class, type by type, then the classes
in a fixed order), its frequencies (share of all tasks, then divided by the covered share) and its
task types (keyed by the model constraint as written).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hdrm.fragmentation.experiment import load_inputs, written_spec
from hdrm.policies.gpu_frag import FragMeter, TaskTypes, typical_task_types
from hdrm.policies.gpu_state import GpuCluster, TaskShape

MODELS = ("T4", "V100M16")


def reference_frag(cpu_left: int, left: list[int], model: str, types: TaskTypes) -> float:
    """The simulator's sum, written out: per class, frequency x milli-GPU type by type; then
    the classes lack-both, lack-GPU, lack-CPU, CPU-only, CPU-only-lacking, no-access."""
    sums = dict.fromkeys(("both", "gpu", "cpu", "xl", "xr", "na"), 0.0)
    free = sum(left)
    for k in range(len(types)):
        freq, cpu_ok = float(types.freq[k]), cpu_left >= int(types.cpu_milli[k])
        if types.milli[k] == 0:
            sums["xl" if cpu_ok else "xr"] += freq * free
            continue
        if types.models[k] and model not in types.models[k]:
            sums["na"] += freq * free
            continue
        host = sum(g >= types.milli[k] for g in left) >= types.gpus[k]
        if host and cpu_ok:
            sums["gpu"] += freq * sum(g for g in left if g < types.milli[k])
        else:
            sums["cpu" if host else ("gpu" if cpu_ok else "both")] += freq * free
    total = 0.0
    for name in ("both", "gpu", "cpu", "xl", "xr", "na"):
        total += sums[name]
    return total


type_rows = st.lists(st.tuples(st.integers(0, 8000), st.sampled_from([0, 100, 250, 500, 1000]),
                               st.integers(1, 2), st.sampled_from([(), ("T4",), ("V100M16",)]),
                               st.integers(1, 9)), min_size=1, max_size=9)


@settings(max_examples=150, deadline=None)
@given(type_rows, st.integers(0, 8000), st.lists(st.integers(0, 1000), min_size=2, max_size=2),
       st.sampled_from(MODELS))
def test_the_sum_is_the_simulators_to_the_bit(rows, cpu_left, left, model):
    weights = np.array([w for *_, w in rows], dtype=float)
    types = TaskTypes(np.array([r[0] for r in rows]), np.array([r[1] for r in rows]),
                      np.array([r[2] if r[1] else 0 for r in rows]),
                      tuple(r[3] if r[1] else () for r in rows), weights / 7 / weights.sum() * 7)
    cluster = GpuCluster([8000], [1000], [2], [model])
    meter = FragMeter(cluster, types)
    got = meter.frag(np.array([cpu_left]), np.array([left]), np.array([0]))[0]
    assert got == reference_frag(cpu_left, left, model, types)  # bitwise, not approximately


node_states = st.lists(st.tuples(st.integers(0, 8000), st.lists(st.integers(0, 1000), min_size=3,
                                                                 max_size=3),
                                 st.sampled_from([0, 1, 2])), min_size=1, max_size=7)


@settings(max_examples=150, deadline=None)
@given(type_rows, node_states)
def test_batches_of_any_size_give_the_simulators_bits(rows, states):
    """One or two states are added up in Python floats, more with numpy: both to the bit."""
    weights = np.array([w for *_, w in rows], dtype=float)
    types = TaskTypes(np.array([r[0] for r in rows]), np.array([r[1] for r in rows]),
                      np.array([r[2] if r[1] else 0 for r in rows]),
                      tuple(r[3] if r[1] else () for r in rows), weights / 3 / weights.sum() * 3)
    # nodes of model T4, of model V100M16, and without GPU (model -1: every share is 0)
    cluster = GpuCluster([8000] * 3, [1000] * 3, [3, 3, 0], ["T4", "V100M16", ""])
    meter = FragMeter(cluster, types)
    cpu = np.array([c for c, _, _ in states])
    left = np.array([g if n < 2 else [0, 0, 0] for _, g, n in states])
    model = cluster.model[[n for *_, n in states]]
    names = [MODELS[n] if n < 2 else "" for *_, n in states]
    expected = [reference_frag(int(c), g.tolist(), m, types)
                for c, g, m in zip(cpu, left, names)]
    assert meter.frag(cpu, left, model).tolist() == expected  # bitwise
    for size in (1, 2):  # the Python floats' path, whatever the batch's size
        got = [meter.frag(cpu[i:i + size], left[i:i + size], model[i:i + size]).tolist()
               for i in range(0, len(states), size)]
        assert sum(got, []) == expected

def test_the_worked_example_still_gives_500():
    types = TaskTypes(np.array([4000, 2000, 1000]), np.array([1000, 500, 0]), np.array([1, 1, 0]),
                      ((), (), ()), np.array([0.5, 0.3, 0.2]))
    meter = FragMeter(GpuCluster([8000], [1000], [2], ["T4"]), types)
    assert meter.frag(np.array([8000]), np.array([[1000, 300]]), np.array([0]))[0] == 500.0


def test_frequencies_are_shares_of_all_tasks_divided_by_the_covered_share():
    # five types of one task each; 60% coverage keeps three: each (1/5) / (3/5), as the
    # simulator computes it, which is not the float 1/3
    shapes = [TaskShape(1000 * (i + 1)) for i in range(5)]
    types = typical_task_types(shapes, coverage=0.6)
    assert len(types) == 3
    assert list(types.freq) == [(1 / 5) / (3 / 5)] * 3
    assert (1 / 5) / (3 / 5) != 1 / 3


def test_all_types_kept_are_shares_of_all_tasks():
    types = typical_task_types([TaskShape(1000), TaskShape(1000), TaskShape(2000)], coverage=1.0)
    assert list(types.freq) == [2 / 3, 1 / 3]


def test_types_are_told_apart_by_the_constraint_as_written():
    shapes = [TaskShape(1000, 0, 1, 1000, ("V100M16", "V100M32"))] * 3
    specs = ["V100M16|V100M32", "V100M16|V100M32", "V100M16|V100M32|V100M32"]
    types = typical_task_types(shapes, coverage=1.0, specs=specs)
    assert types.models == (("V100M16", "V100M32"), ("V100M16", "V100M32", "V100M32"))
    assert list(types.freq) == [2 / 3, 1 / 3]
    merged = typical_task_types(shapes, coverage=1.0)  # without the written form: one type
    assert merged.models == (("V100M16", "V100M32"),) and list(merged.freq) == [1.0]


def test_the_protocol_reads_the_constraint_as_written(tmp_path):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\n"
                     "n0,8000,1000,2,V100M32\n", encoding="utf-8")
    pods = tmp_path / "pods.csv"
    pods.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                    "creation_time,deletion_time,scheduled_time\n"
                    "p0,1000,10,1,1000,V100M16|V100M32|V100M32|,LS,Running,0,10,1\n"
                    "p1,1000,10,0,0,,LS,Running,0,10,1\n", encoding="utf-8")
    inputs = load_inputs(nodes, pods)
    assert inputs.specs == ["V100M16|V100M32|V100M32", ""]
    assert inputs.shapes[0].models == ("V100M16", "V100M32")  # feasibility: the set of models
    assert written_spec(type("J", (), {"accel": None, "extra": {}})()) == ""
