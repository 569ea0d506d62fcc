"""GPU fragmentation against task types: the worked example of docs/gpu.rst, types, models."""

from __future__ import annotations

import numpy as np
import pytest

from hdrm.policies.gpu_frag import FragMeter, TaskTypes, typical_task_types
from hdrm.policies.gpu_state import GpuCluster, TaskShape

TYPES = TaskTypes(np.array([4000, 2000, 1000]), np.array([1000, 500, 0]), np.array([1, 1, 0]),
                  ((), (), ()), np.array([0.5, 0.3, 0.2]))


def _frag(cpu, left, model="T4", types=TYPES):
    cluster = GpuCluster([16000], [1], [len(left)], [model])
    cluster.cpu_left[0], cluster.gpu_left[0] = cpu, left
    return FragMeter(cluster, types).of_cluster(cluster)[0]


def test_the_docs_worked_example():
    # A fits, the 300 GPU cannot serve it: 300; B fits, same GPU: 300; C: every free GPU, 1300
    assert _frag(8000, [1000, 300]) == pytest.approx(0.5 * 300 + 0.3 * 300 + 0.2 * 1300)


def test_too_little_cpu_makes_every_free_gpu_a_fragment():
    # 3 cores: A (4 cores) cannot run: 1300; B fits: 300; C: 1300
    assert _frag(3000, [1000, 300]) == pytest.approx(0.5 * 1300 + 0.3 * 300 + 0.2 * 1300)
    assert _frag(8000, [0, 0]) == 0  # nothing free, nothing fragmented


def test_a_model_the_type_may_not_use_is_all_fragment():
    types = TaskTypes(np.array([1000]), np.array([500]), np.array([1]), (("V100M32",),),
                      np.array([1.0]))
    assert _frag(8000, [1000, 300], "T4", types) == 1300
    assert _frag(8000, [1000, 300], "V100M32", types) == 300


def test_typical_types_cover_95_percent_most_frequent_first():
    shapes = ([TaskShape(1000, 5, 1, 500)] * 60 + [TaskShape(2000, 0, 0, 0)] * 30
              + [TaskShape(8000, 0, 2, 1000)] * 6 + [TaskShape(500, 0, 1, 1000, ("T4",))] * 4)
    types = typical_task_types(shapes)
    # 60 + 30 = 90% < 95%: add the 6 (96%); the last 4 are left out; renormalised over 96
    assert types.cpu_milli.tolist() == [1000, 2000, 8000]
    assert types.freq == pytest.approx([60 / 96, 30 / 96, 6 / 96])
    assert types.gpus.tolist() == [1, 0, 2] and types.milli.tolist() == [500, 0, 1000]
