"""The environment on a GPU platform: observations, rewards and objectives computed by hand on a
three-task case; the incremental cluster view against brute force; Gymnasium's checker;
determinism; one-line errors."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from hdrm.env import SchedulingEnv
from hdrm.env.gpu_env import GpuSchedulingEnv, gpu_pair_names
from hdrm.env.gpu_observations import GpuJobWindowObservation
from hdrm.errors import ConfigError
from hdrm.policies.gpu_frag import FragMeter
from hdrm.policies.gpu_state import MILLI

from gpu_builders import SLICE, write_tiny  # noqa: E402

LOG_YEAR = math.log1p(365 * 24 * 3600.0)



@pytest.fixture
def tiny(tmp_path: Path) -> dict:
    return dict(write_tiny(tmp_path), selection=("fifo-best_fit",), observation="gpu")


def test_observations_on_the_tiny_cluster_computed_by_hand(tiny):
    env = SchedulingEnv(**tiny)
    assert isinstance(env, GpuSchedulingEnv) and env.observation_space.shape == (37,)
    obs, _ = env.reset(seed=0)
    # t = 0: t1 and t2 queued. Percentiles of two values x < y: x, x + (y-x)/4, mid, ..., y
    spread = np.array([0, 0.25, 0.5, 0.75, 1])
    low, high = np.log1p(3600) / LOG_YEAR, np.log1p(7200) / LOG_YEAR  # durations 1 h, 2 h
    assert obs[0:5] == pytest.approx(low + (high - low) * spread, rel=1e-5)
    assert obs[5:10] == pytest.approx(0.25 + 0.25 * spread)        # CPU 2000, 4000 of 8000
    assert obs[10:15] == pytest.approx(0.0625 + 0.0625 * spread)   # memory 1024, 2048 of 16384
    assert obs[15:20] == pytest.approx(0.5 - 0.25 * spread[::-1])  # GPUs 1000, 500 of 2000
    assert obs[20:25] == pytest.approx(0)                           # nobody has waited
    assert obs[25] == pytest.approx(2 / 130) and obs[26] == pytest.approx(0.5 + 0.5 * np.tanh(0.1))
    # empty cluster; task types t1, t2, t3 (1/3 each): only t3 (no GPU) sees fragments, every
    # free GPU: a 2000/3, b 1000/3 -> 1000 of 3000 free milli-GPU
    assert obs[27:32] == pytest.approx([1, 1, 0, 1 / 3, 1 / 3])
    assert obs[33:37] == pytest.approx([1, 1, 1, 1])  # T4, V100M32: free share, whole GPUs
    # fifo-best_fit: t1 -> b (best fit 62 against 37), t2 -> a's GPU 0; then t3 arrives at 100 s
    obs, reward, done, _, info = env.step(0)
    assert not done and info["time"] == 100.0
    assert obs[5:10] == pytest.approx([0.125] * 5) and obs[15:20] == pytest.approx([0] * 5)
    # a keeps 4 cores and GPUs [500, 1000]: fragment 500 for t1, 0 for t2, 1500 for t3; b: none
    free, frag = 1500, (500 + 0 + 1500) / 3
    assert obs[27:32] == pytest.approx([10000 / 16000, 29696 / 32768, 0.5, frag / free,
                                        frag / 3000])
    assert obs[33:37] == pytest.approx([0.75, 0, 0.5, 0])
    placements = env.sim.core.placements
    assert (placements[0].node, placements[0].model) == (1, "V100M32")
    assert (placements[1].node, placements[1].gpus) == (0, (0,))
    obs, reward, done, _, _ = env.step(0)
    assert done


@pytest.mark.parametrize("objective, value", [
    # t1: 1 V100M32 GPU for 1 h = 3.90 USD; t2: half a T4 for 2 h = 0.35 USD; t3: no GPU
    ("gpu_cost", 3.90 + 0.35),
    # JCTs 3600, 7200 and 1800 s: 1.1667 h
    ("avg_jct", (3600 + 7200 + 1800) / 3 / 3600),
    # 1000 x 3600 + 500 x 7200 milli-GPU-seconds over 3000 milli-GPU x 7200 s: 1/3 allocated
    ("gpu_allocation", 1 - 1 / 3),
])
def test_objectives_computed_by_hand(tiny, objective, value):
    env = SchedulingEnv(**tiny, objective=objective)
    env.reset(seed=0)
    total, done = 0.0, False
    while not done:
        _, reward, done, _, info = env.step(0)
        total += reward
    assert total == pytest.approx(-value) and info["objective"] == pytest.approx(value)


@pytest.mark.parametrize("objective, key", [("gpu_cost", "cost_usd"),
                                            ("gpu_allocation", "gpu_allocation_rate_all"),
                                            ("avg_jct", "mean_jct_s")])
def test_return_is_minus_the_objective_of_the_outputs(objective, key):
    """Random pairs on the openb slice: the return against ``hdrm replay``'s own summary of the
    episode (cost, time-averaged allocation from the timeline, JCT over the tasks that ran)."""
    from hdrm.sim.gpu_outputs import gpu_summary

    env = SchedulingEnv(**SLICE, nb_jobs=120, objective=objective, timeline=True)
    env.reset(seed=2)
    rng, total, done = np.random.default_rng(2), 0.0, False
    while not done:
        _, reward, done, _, _ = env.step(int(rng.integers(env.action_space.n)))
        total += reward
    summary = gpu_summary(env.result())
    expected = {"gpu_cost": summary["cost_usd"],
                "gpu_allocation": 1 - summary["gpu_allocation_rate_all"],
                # the objective averages over every task, rejected ones counting 0
                "avg_jct": summary["mean_jct_s"] * summary["nb_finished"] / 120 / 3600}[objective]
    assert total == pytest.approx(-expected, rel=1e-9)


def test_the_incremental_view_matches_the_cluster_at_every_step():
    env = SchedulingEnv(**SLICE, nb_jobs=150)
    env.reset(seed=3)
    window = GpuJobWindowObservation(env)
    rng = np.random.default_rng(3)
    done, steps = False, 0
    while not done:
        _, _, done, _, _ = env.step(int(rng.integers(env.action_space.n)))
        steps += 1
        view, cluster = env.view, env.sim.core.cluster
        view.refresh()
        assert view.cpu_left == cluster.cpu_left.sum() and view.mem_left == cluster.mem_left.sum()
        for k in range(len(cluster.model_names)):
            rows = cluster.gpu_left[cluster.model == k]
            assert view.free_by_model[k] == rows.sum()
            assert view.whole_by_model[k] == (rows == MILLI).sum()
        meter = FragMeter(cluster, env.sim.core.types)
        assert view.fragmentation() == pytest.approx(meter.of_cluster(cluster).sum())
        assert window.free_gpu_share() == pytest.approx(
            cluster.gpu_left.sum() / cluster.total_gpu_milli)
        queue = env.sim.core.queue
        fits = env.fits_mask(queue)
        assert list(fits) == [bool(cluster.feasible(env.sim.core.shape(j)).any()) for j in queue]
    assert steps > 50


@pytest.mark.parametrize("settings", [dict(observation="gpu", void=True),
                                      dict(mode="job_pick", window=16),
                                      dict(mode="job_pick", window=8, decision="commit")])
def test_gymnasium_checker_passes(settings):
    env = SchedulingEnv(**SLICE, nb_jobs=60, **settings)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=".*render.*")
        check_env(env, skip_render_check=True)


def test_actions_are_every_order_with_every_placement_and_two_rollouts_agree():
    env = SchedulingEnv(**SLICE, nb_jobs=80)
    assert env.action_names == gpu_pair_names() and "fifo-price_aware" in env.action_names

    def rollout(seed):
        obs, _ = env.reset(seed=seed)
        rng, seen, done = np.random.default_rng(seed), [obs], False
        while not done:
            obs, reward, done, _, _ = env.step(int(rng.integers(env.action_space.n)))
            seen.append(np.append(obs, reward))
        return seen

    first, second = rollout(5), rollout(5)
    assert len(first) == len(second) and all(np.array_equal(a, b) for a, b in zip(first, second))


def test_default_actions_are_the_decision_cores_pair_list(monkeypatch):
    """The env's default pairs are gpu_pairs() (one definition, so the env, the sweeps'
    all_gpu_pairs and the replay agree in order): 5 orders x 9 placements, order-major, own
    names only; a change to gpu_pairs reaches the env."""
    from hdrm.core import gpu_scheduler

    pairs = gpu_scheduler.gpu_pairs()
    assert gpu_pair_names() == pairs and len(pairs) == 45
    assert pairs[:2] == ["drf-best_fit", "drf-dot_product"] and "fcfs-fgd" not in pairs
    assert [p.split("-")[0] for p in pairs[::9]] == ["drf", "fifo", "las", "sjf", "tetris"]
    import hdrm.env.gpu_env as gpu_env

    monkeypatch.setattr(gpu_env, "gpu_pairs", lambda: ["sjf-fgd", "fifo-best_fit"],
                        raising=False)
    env = SchedulingEnv(**SLICE, nb_jobs=10)
    assert env.action_names == ["sjf-fgd", "fifo-best_fit"]


@pytest.mark.parametrize("settings, message", [
    (dict(**SLICE, engine="batsim"), "engine: 'batsim' cannot run GPU platforms"),
    (dict(**SLICE, selection=("fifo-fgdd",)), "actions.selection: unknown GPU policy "
                                              "'fifo-fgdd'; did you mean 'fifo-fgd'"),
    (dict(**SLICE, mode="job_pick", placement="bestfit"), "placement: unknown placement "
                                                          "policy 'bestfit'; did you mean"),
    (dict(objective="gpu_cost"), "objective: 'gpu_cost' counts GPUs; it needs a GPU platform"),
    (dict(observation="gpu"), "observation: 'gpu' needs a GPU platform"),
])
def test_errors_are_one_line(settings, message):
    with pytest.raises(ConfigError) as info:
        SchedulingEnv(**settings)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_pick_limit_easy_is_refused_on_a_gpu_platform():
    with pytest.raises(ConfigError, match="pick_limit: 'easy' reserves cores.*pick_limit 'fits'"):
        SchedulingEnv(**SLICE, nb_jobs=10, mode="job_pick", pick_limit="easy")
