"""Queue orders of the GPU decision core, each choice computed by hand on a tiny cluster."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gpu_builders import gpu_platform, task  # noqa: E402

from hdrm.core.gpu_scheduler import GpuDecisionCore, resolve_gpu_policy  # noqa: E402
from hdrm.errors import ConfigError  # noqa: E402
from hdrm.policies.gpu_orders import QUEUE_ORDERS, tenant_of  # noqa: E402

# one node: 8 cores, 32,768 MiB, 4 T4 GPUs -> capacity (8000 milli-CPU, 32768 MiB, 4000 milli-GPU)
NODE = [(8, 32768, 4, "T4")]


def _core(running=(), now=0.0):
    """A core with ``running`` tasks started at time 0 (first_fit, name ties)."""
    jobs = list(running)
    core = GpuDecisionCore(gpu_platform(NODE), jobs, ties="name")
    for job in jobs:
        core.queue.append(job)
        assert core.start_now(job, "first_fit", 0.0) is not None
    return core


def _order(name, queue, core, now=0.0):
    return [j.id for j in QUEUE_ORDERS.get(name).order(queue, core.context(now))]


def test_fifo_keeps_submission_order_and_sjf_takes_the_shortest_first():
    a, b, c = task(0, 0, 300), task(1, 1, 100), task(2, 2, 200)
    core = _core()
    assert _order("fifo", [a, b, c], core) == [0, 1, 2]
    assert _order("fcfs", [a, b, c], core) == [0, 1, 2]
    assert _order("sjf", [a, b, c], core) == [1, 2, 0]


def test_drf_serves_the_tenant_with_the_lowest_dominant_share_first():
    # running: X holds 2 GPUs + 1 core (GPU 2000/4000 = 0.5: its dominant share),
    #          Y holds 4 cores + 8,192 MiB (CPU 4000/8000 = 0.5, memory 0.25: 0.5),
    #          Z holds 1 core + 4,096 MiB (CPU 0.125, memory 0.125: 0.125)
    x = task(10, 0, 99, gpus=2, cpu_milli=1000, tenant="X")
    y = task(11, 0, 99, cpu_milli=4000, mem_mib=8192, tenant="Y")
    z = task(12, 0, 99, cpu_milli=1000, mem_mib=4096, tenant="Z")
    core = _core([x, y, z])
    ctx = core.context(0.0)
    assert [ctx.dominant_share(t) for t in "XYZ"] == [0.5, 0.5, 0.125]
    # waiting: X's (submitted first), Y's, Z's, and a new tenant W's (dominant share 0)
    qx, qy, qz = task(0, 0, 5, tenant="X"), task(1, 1, 5, tenant="Y"), task(2, 2, 5, tenant="Z")
    qw = task(3, 3, 5, gpus=1, tenant="W")
    # W (0) first, then Z (0.125), then X and Y tie at 0.5: by their own demand's dominant share,
    # both 1 core = 0.125, so submission order
    assert _order("drf", [qx, qy, qz, qw], core) == [3, 2, 0, 1]


def test_drf_breaks_ties_by_the_smaller_own_dominant_demand():
    core = _core()
    big = task(0, 0, 5, gpus=2, tenant="A")     # own dominant share 2000/4000 = 0.5
    small = task(1, 1, 5, cpu_milli=2000, tenant="B")  # 2000/8000 = 0.25
    assert _order("drf", [big, small], core) == [1, 0]


def test_tetris_takes_the_demand_best_aligned_with_the_free_resources():
    # running: a CPU-heavy task leaves free (1000 CPU, 32768 MiB, 4000 GPU) = (0.125, 1, 1)
    core = _core([task(9, 0, 99, cpu_milli=7000)])
    assert list(core.context(0.0).free()) == [0.125, 1.0, 1.0]
    cpu_task = task(0, 0, 5, cpu_milli=1000)                 # demand (0.125, 0, 0): 0.015625
    gpu_task = task(1, 1, 5, gpus=1, cpu_milli=500)          # (0.0625, 0, 0.25): 0.2578125
    mem_task = task(2, 2, 5, cpu_milli=500, mem_mib=16384)   # (0.0625, 0.5, 0): 0.5078125
    assert _order("tetris", [cpu_task, gpu_task, mem_task], core) == [2, 1, 0]


def test_las_serves_the_tenant_with_the_fewest_gpu_seconds_first():
    # X ran 2 GPUs for 0..50 (100 GPU-s) and then nothing; Y runs half a GPU since 0 (at t=100:
    # 50 GPU-s); Z runs 1 GPU since 0 (at t=100: 100 GPU-s, ties X: submission order)
    x = task(10, 0, 50, gpus=2, tenant="X")
    y = task(11, 0, 999, gpus=1, milli=500, tenant="Y")
    z = task(12, 0, 999, gpus=1, tenant="Z")
    core = _core([x, y, z])
    core.complete(x, 50.0)
    assert core.ledger.attained_gpu_s("X", 100.0) == pytest.approx(100.0)
    assert core.ledger.attained_gpu_s("Y", 100.0) == pytest.approx(50.0)
    assert core.ledger.attained_gpu_s("Z", 100.0) == pytest.approx(100.0)
    queue = [task(0, 60, 5, tenant="Z"), task(1, 61, 5, tenant="X"), task(2, 62, 5, tenant="Y"),
             task(3, 63, 5, tenant="V")]
    assert _order("las", queue, core, now=100.0) == [3, 2, 0, 1]


def test_tenants_come_from_the_user_then_the_qos_then_the_task():
    t = task(0, 0, 1)
    assert tenant_of(t) == "job:0"
    t.extra["qos"] = "LS"
    assert tenant_of(t) == "qos:LS"
    t.user_id = 7
    assert tenant_of(t) == "user:7"


def test_policy_names_resolve_and_unknown_ones_suggest():
    assert resolve_gpu_policy("drf").name == "drf-fgd"
    assert resolve_gpu_policy("Tetris-best_fit").name == "tetris-best_fit"
    assert resolve_gpu_policy("fcfs").name == "fifo-fgd"
    with pytest.raises(ConfigError, match=r"--policy: unknown GPU policy 'drf-bestfit'; .*"
                                          r"did you mean.*drf-best_fit"):
        resolve_gpu_policy("drf-bestfit", "--policy")
