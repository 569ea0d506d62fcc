"""price_aware on a tiny two-model cluster: every choice computed by hand from the library's prices.

K80 costs 0.45 USD per GPU-hour, V100M16 2.48 (hdrm/platform/data/accelerators.json). A task
whose K80 speed is s (V100 = 1) gets s / 0.45 work per dollar there and 1 / 2.48 on the V100:
the K80 is the better buy while s > 0.45 / 2.48 = 0.181.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from hdrm.errors import ConfigError
from hdrm.policies.gpu_placer import Placer
from hdrm.policies.gpu_price import work_per_dollar
from hdrm.policies.gpu_state import GpuCluster, TaskShape
from hdrm.policies.placement import make_placement
from hdrm.workload.job import AcceleratorDemand, Job

ONE_GPU = TaskShape(4000, 1024, 1, 1000)


def two_models() -> GpuCluster:
    """k80a: 16 cores, 2 K80; v100: 16 cores, 2 V100M16; k80b: 16 cores, 4 K80."""
    return GpuCluster([16000] * 3, [65536] * 3, [2, 2, 4], ["K80", "V100M16", "K80"],
                      ["k80a", "v100", "k80b"])


def gavel_job(k80_s: float, v100_s: float) -> Job:
    times = {"K80": k80_s, "V100M16": v100_s}
    return Job(idx=0, id=0, submit_s=0, res=4, walltime_s=math.inf, run_time_s=min(times.values()),
               extra={"gavel": {"run_time_s": times}},
               accel=AcceleratorDemand(1, 1000, tuple(sorted(times))))


def _scores(shape: TaskShape, cluster: GpuCluster | None = None, **kwargs) -> np.ndarray:
    cluster = cluster or two_models()
    return make_placement("price_aware", cluster, **kwargs).score(shape, np.arange(3))


def test_without_throughputs_the_cheapest_model_then_best_fit():
    # ranks: K80 (2.22 work/$) 2, V100M16 (0.403) 1; best fit k80a: 1 - 12/16/2 - 1/4/2 = 0.5
    # -> 50, v100 50, k80b: 1 - 0.375 - 3/4/2 = 0.25 -> 25
    assert list(_scores(ONE_GPU)) == [2050, 1050, 2025]


def test_a_gavel_job_goes_where_its_speed_per_dollar_is_highest():
    slow_k80 = TaskShape.of_job(gavel_job(k80_s=1000, v100_s=100))
    assert slow_k80.speeds == (("K80", 0.1), ("V100M16", 1.0))
    # K80 0.1 / 0.45 = 0.222 < V100 1 / 2.48 = 0.403: the V100 wins although it costs more per hour
    assert list(_scores(slow_k80)) == [1050, 2050, 1025]
    fair_k80 = TaskShape.of_job(gavel_job(k80_s=400, v100_s=100))
    # K80 0.25 / 0.45 = 0.556 > 0.403: the K80 is the better buy
    assert list(_scores(fair_k80)) == [2050, 1050, 2025]
    assert work_per_dollar(fair_k80, ["K80", "V100M16"], np.array([0.45, 2.48])) == \
        pytest.approx([0.25 / 0.45, 1 / 2.48])


def test_model_constraint_full_nodes_and_given_prices():
    cluster = two_models()
    placer = Placer(make_placement("price_aware", cluster), np.random.default_rng(0))
    assert placer.place(TaskShape(4000, 1024, 1, 1000, ("V100M16",))) == (1, (0,))
    assert placer.place(TaskShape(1000, 0, 4, 1000)) == (2, (0, 1, 2, 3))
    assert placer.place(TaskShape(1000, 0, 2, 1000)) == (0, (0, 1))
    # no K80 left: the only node that fits is the V100's
    assert placer.place(ONE_GPU) == (1, (1,))
    assert placer.place(ONE_GPU) is None
    # prices given (a platform's own): the V100 is now the cheaper buy
    assert list(_scores(ONE_GPU, prices={"K80": 3.0, "V100M16": 1.0})) == [1050, 2050, 1025]


def test_a_cpu_task_avoids_stranding_expensive_free_gpus():
    cluster = two_models()
    # stranded: k80a 2 x 0.45 = 90 cents/h, v100 2 x 2.48 = 496, k80b 4 x 0.45 = 180;
    # best fit k80a/v100: 1 - 14/16/2 - 2/4/2 = 0.3125 -> 31, k80b: 1 - 0.4375 - 0.5 -> 6
    cpu_task = TaskShape(2000, 1024)
    assert list(_scores(cpu_task, cluster)) == [-90000 + 31, -496000 + 31, -180000 + 6]
    cluster.allocate(1, TaskShape(0, 0, 2, 1000), (0, 1))
    # the V100s are busy: the CPU task strands nothing there (best fit 1 - 7/16 - 0 -> 56)
    assert list(_scores(cpu_task, cluster)) == [-90000 + 31, 56, -180000 + 6]


def test_a_model_without_a_price_is_one_line():
    cluster = GpuCluster([1000], [0], [1], ["X9"], ["n0"])
    with pytest.raises(ConfigError, match=r"^price_aware: GPU model\(s\) X9 not in the type "
                                          r"library; add them to accelerator_types"):
        make_placement("price_aware", cluster)
    with pytest.raises(ConfigError, match=r"^price_aware: no price for GPU model\(s\) V100M16; "
                                          r"prices given for: K80$"):
        make_placement("price_aware", two_models(), prices={"K80": 1.0})


def test_usable_by_name_in_the_time_based_replay():
    """hdrm replay's engine with 'fifo-price_aware': a Gavel-like job 10x slower on a K80 takes
    the V100 and runs for its V100 time; one 4x slower takes a K80 and runs for its K80 time."""
    from tests.gpu_builders import gpu_platform, replay

    platform = gpu_platform([(8, 65536, 2, "K80"), (8, 65536, 2, "V100M16")])
    slow, fair = gavel_job(k80_s=1000, v100_s=100), gavel_job(k80_s=400, v100_s=100)
    fair.idx = fair.id = 1
    result = replay(platform, [slow, fair], policy="fifo-price_aware")
    placed = result.gpu.placements
    assert (placed[0].model, placed[0].run_s) == ("V100M16", 100)
    assert (placed[1].model, placed[1].run_s) == ("K80", 400)
    assert result.gpu.policy == "fifo-price_aware"


def _own_types_platform() -> dict:
    """Three GPU nodes in a platform file that prices its accelerators itself:
    ``K80`` redefined at 5.00 USD/h (the library says 0.45), ``X9`` a type of its own at 0.10
    USD/h with one GPU, and a library ``V100M16`` (2.48 USD/h)."""
    def gpu_node(model: str, count: int) -> dict:
        return {"processors": [{"type": "xeon_gold_6148", "count": 1}], "memory_gb": 64,
                "accelerators": [{"type": model, "count": count}]}

    return {"name": "own-prices",
            "accelerator_types": {
                "K80": {"memory_gb": 12, "idle_w": 25, "busy_w": 150, "price_usd_per_hour": 5.0},
                "X9": {"memory_gb": 8, "idle_w": 5, "busy_w": 40, "price_usd_per_hour": 0.1}},
            "node_types": {"k80": gpu_node("K80", 2), "v100": gpu_node("V100M16", 2),
                           "x9": gpu_node("X9", 1)},
            "clusters": [{"name": "c", "network": "ethernet_25g",
                          "nodes": [{"type": "k80", "count": 1}, {"type": "v100", "count": 1},
                                    {"type": "x9", "count": 1}]}]}


def test_the_decision_core_prices_with_the_platforms_own_accelerator_types():
    """Two one-GPU openb-like tasks (no throughputs: the cheapest model wins), 1 h each, with
    fifo-price_aware on a platform file that defines X9 (0.10 USD/h) and redefines K80 (5.00):
    the first takes the X9, the second the V100M16 (2.48 < 5.00; with the library's K80 price,
    0.45, it would take a K80). Cost: 0.10 + 2.48 USD."""
    from hdrm.platform.loader import platform_from_dict
    from hdrm.policies.gpu_price import platform_prices
    from hdrm.results.gpu_metrics import gpu_cost_usd
    from tests.gpu_builders import replay, task

    platform = platform_from_dict(_own_types_platform(), source="<own-prices>")
    assert platform_prices(platform) == {"K80": 5.0, "V100M16": 2.48, "X9": 0.1}
    result = replay(platform, [task(0, 0, 3600, gpus=1), task(1, 0, 3600, gpus=1)],
                    policy="fifo-price_aware")
    placed = result.gpu.placements
    assert [(placed[i].model, placed[i].start_s) for i in (0, 1)] == [("X9", 0), ("V100M16", 0)]
    cost = sum(gpu_cost_usd(len(p.gpus), p.shape.milli, p.run_s,
                            result.gpu.price_usd_per_hour[p.model]) for p in placed.values())
    assert cost == pytest.approx(0.10 + 2.48)
