"""render() of the environment on a GPU platform: the text view computed by hand on a tiny
cluster, the image, and rendering that leaves the episode as it is."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from hdrm.env import SchedulingEnv
from hdrm.env.gpu_render import node_allocation
from gpu_builders import SLICE, write_tiny  # noqa: E402

#: a: 8 cores, 2 T4; b: 8 cores, 1 V100M32; c: 4 cores, no GPU
NODES = ("sn,cpu_milli,memory_mib,gpu,model\na,8000,16384,2,T4\nb,8000,16384,1,V100M32\n"
         "c,4000,8192,0,\n")


@pytest.fixture
def tiny(tmp_path: Path) -> dict:
    return dict(write_tiny(tmp_path, nodes=NODES), selection=("fifo-best_fit",))


def test_text_view_computed_by_hand(tiny):
    env = SchedulingEnv(**tiny, render_mode="ansi")
    env.reset(seed=0)
    # t = 0: t1 (1 GPU) and t2 (half a GPU) wait on an empty cluster. Task types t1, t2, t3
    # (1/3 each): only t3 (no GPU) strands GPUs, all 3000 free milli-GPU: 1000 expected
    assert env.render() == (
        "t = 0.0 s | tasks: 2 queued, 0 running, 0/3 done | GPUs allocated 0.00/3 (0%) | "
        "fragmentation 1000 milli-GPU (33% of the free)\n"
        "T4: 1 node, 2 GPUs, free 2.00 (100%), 2 wholly free\n"
        "V100M32: 1 node, 1 GPU, free 1.00 (100%), 1 wholly free\n"
        "no GPU: 1 node, milli-CPU busy 0/4000\n"
        "nodes (GPU shares allocated: # all, + some, . none; without GPUs: c CPU busy, _ idle):\n"
        "  .._\n"
        "queue head (2 of 2):\n"
        "  task t1: 1 GPU x 1000 milli, 2000 milli-CPU, 1024 MiB, waiting 0 s\n"
        "  task t2: 1 GPU x 500 milli, 4000 milli-CPU, 2048 MiB, waiting 0 s\n")
    env.step(0)
    # fifo-best_fit: t1 takes b's V100, t2 half of a T4; t3 arrives at 100 s. a keeps 4 cores
    # and GPUs [500, 1000]: fragment 500 for t1, 0 for t2, 1500 for t3 -> 2000 / 3 = 667 of
    # the 1500 free (44%)
    assert env.render() == (
        "t = 100.0 s | tasks: 1 queued, 2 running, 0/3 done | GPUs allocated 1.50/3 (50%) | "
        "fragmentation 667 milli-GPU (44% of the free)\n"
        "T4: 1 node, 2 GPUs, free 1.50 (75%), 1 wholly free\n"
        "V100M32: 1 node, 1 GPU, free 0.00 (0%), 0 wholly free\n"
        "no GPU: 1 node, milli-CPU busy 0/4000\n"
        "nodes (GPU shares allocated: # all, + some, . none; without GPUs: c CPU busy, _ idle):\n"
        "  +#_\n"
        "queue head (1 of 1):\n"
        "  task t3: no GPU, 1000 milli-CPU, 1024 MiB, waiting 0 s\n")
    assert list(node_allocation(env)) == [0.25, 1.0, 0.0]
    env.step(0)  # t3 -> c (best fit on the node without GPUs), then everything ends
    assert "milli-CPU busy" in env.render() and env.render().endswith("queue: empty\n")


def test_image_view_and_rendering_leaves_the_episode_alone(tiny):
    drawn = SchedulingEnv(**tiny, render_mode="rgb_array")
    plain = SchedulingEnv(**tiny)
    obs_a, _ = drawn.reset(seed=3)
    obs_b, _ = plain.reset(seed=3)
    image = drawn.render()
    assert image.shape == (360, 640, 3) and image.dtype == np.uint8 and image.std() > 0
    done = False
    while not done:
        assert np.array_equal(obs_a, obs_b)
        drawn.render()
        obs_a, r_a, done, _, _ = drawn.step(0)
        obs_b, r_b, _, _, _ = plain.step(0)
        assert r_a == r_b
    assert plain.render() is None


@pytest.mark.filterwarnings("ignore:.*alternative render modes")
def test_gymnasium_checker_with_the_render_check():
    env = SchedulingEnv(**SLICE, nb_jobs=40, render_mode="ansi")
    check_env(env)
    assert env.render().startswith("t = ")
